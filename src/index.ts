/**
 * The main entry, `effect-chat-bridge`: let a model call your in-process tools on any provider
 * (Anthropic, OpenAI or a compatible server, Gemini, a fallback chain, the `claude` CLI), and
 * decide from one declarative registry which Claude Code tools an agent may use.
 *
 * Needs: `effect` ^4.1.0 and `@effect/platform-node` ^4.1.0 (peers), Node ≥ 22.19. This entry
 * loads no optional peer. The parts that need one have their own entry points:
 * `effect-chat-bridge/claude-agent` (the Claude Agent SDK) and `effect-chat-bridge/drift-guard`
 * (`typescript`); `effect-chat-bridge/agent-settings-sqlite` (on `node:sqlite`),
 * `effect-chat-bridge/session-store-sql`, `effect-chat-bridge/cluster` and
 * `effect-chat-bridge/effect-ai` (on `effect/ai`) need no peer but stay apart to keep this entry light.
 *
 * Where to start: {@link ChatClient} is the contract every provider implements, {@link Tool}
 * defines your tools, and a layer from "Chat providers" gives a `ChatClient`. Test doubles are
 * apart, under "Testing".
 *
 * @summary Chat clients for every provider, tools, the MCP bridge, the Claude Code tool policy, test doubles.
 * @groupDescription Chat
 * The provider-neutral contract: a conversation with a model that can call your tools.
 * @groupDescription Chat providers
 * Layers that provide a `ChatClient`, and what the two Claude Code providers share.
 * @groupDescription Tools
 * Your in-process tools, and the loopback MCP bridge that lets the `claude` CLI call them.
 * @groupDescription Claude Code tool policy
 * Which built-in Claude Code tools an agent may use: registry, catalog, policy, per-agent settings.
 * @groupDescription Sessions & storage
 * Where Claude Code conversations are kept so they outlive a process.
 * @groupDescription Telemetry
 * What the chat clients report to Effect's tracer and metrics.
 * @groupDescription Processes & files
 * The child processes and secret files the `claude` CLI provider relies on, and their Node layers.
 * @groupDescription Testing
 * Deterministic doubles for tests and offline examples; not for production.
 * @since 0.1.0
 * @module effect-chat-bridge
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
