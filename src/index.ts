/**
 * effect-chat-bridge: let a model call your in-process tools on any provider, and decide from
 * one declarative registry which Claude Code tools an agent may use.
 *
 * This entry loads no optional peer. The parts that need one have their own entry points:
 * `effect-chat-bridge/claude-agent` (the Claude Agent SDK) and `effect-chat-bridge/drift-guard`
 * (`typescript`); `effect-chat-bridge/agent-settings-sqlite` (on `node:sqlite`) and
 * `effect-chat-bridge/effect-ai` (on `effect/ai`) need no peer but stay apart to keep this entry light.
 *
 * @since 0.1.0
 * @module
 */

// Chat
export * as ClaudeApi from "./layers/ClaudeApi.js"
export * as ClaudeLocal from "./layers/ClaudeLocal.js"
export * as Fallback from "./layers/Fallback.js"
export * as Gemini from "./layers/Gemini.js"
export * as OpenAi from "./layers/OpenAi.js"
export * as Scripted from "./layers/Scripted.js"
export * as ChatClient from "./services/ChatClient.js"
export * as ChatEvent from "./services/ChatEvent.js"
export * as ChatTelemetry from "./services/ChatTelemetry.js"
export * as ClaudeCodeOptions from "./services/ClaudeCodeOptions.js"
export * as ClaudeProcessPool from "./services/ClaudeProcessPool.js"
export * as ClaudeSessionStore from "./services/ClaudeSessionStore.ts"
export * as Content from "./services/Content.js"
export * as ModelTurn from "./services/ModelTurn.js"
export * as Tool from "./services/Tool.js"

// Infrastructure
export * as NodeMcpBridge from "./layers/NodeMcpBridge.js"
export * as NodeSecretFile from "./layers/NodeSecretFile.js"
export * as NodeSubprocess from "./layers/NodeSubprocess.js"
export * as TestSecretFile from "./layers/TestSecretFile.js"
export * as TestSubprocess from "./layers/TestSubprocess.js"
export * as McpBridge from "./services/McpBridge.js"
export * as SecretFile from "./services/SecretFile.js"
export * as Subprocess from "./services/Subprocess.js"

// Claude Code tool registry and policy
export * as AgentSettingsMemory from "./layers/AgentSettingsMemory.js"
export * as CatalogView from "./registry/CatalogView.js"
export * as ClaudeCodeCatalog from "./registry/ClaudeCodeCatalog.js"
export * as Conditions from "./registry/Conditions.js"
export * as Registry from "./registry/Registry.js"
export * as ToolDescriptor from "./registry/ToolDescriptor.js"
export * as ToolPolicy from "./registry/ToolPolicy.js"
export * as AgentSettings from "./services/AgentSettings.js"
