/**
 * The main entry, `effect-chat-bridge`: let a model call your in-process tools on any provider
 * (Anthropic, OpenAI or a compatible server, Gemini, a fallback chain, the `claude` CLI), and
 * decide from one declarative registry which Claude Code tools an agent may use.
 *
 * **Details**
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
export * as ClaudeApi from "./layers/ClaudeApi.ts"
export * as ClaudeLocal from "./layers/ClaudeLocal.ts"
export * as CodexCli from "./layers/CodexCli.ts"
export * as Fallback from "./layers/Fallback.ts"
export * as Gemini from "./layers/Gemini.ts"
export * as GeminiCli from "./layers/GeminiCli.ts"
export * as OpenAi from "./layers/OpenAi.ts"
export * as Scripted from "./layers/Scripted.ts"
export * as ChatClient from "./services/ChatClient.ts"
export * as ChatEvent from "./services/ChatEvent.ts"
export * as ChatTelemetry from "./services/ChatTelemetry.ts"
export * as ClaudeApprovals from "./services/ClaudeApprovals.ts"
export * as ClaudeCodeOptions from "./services/ClaudeCodeOptions.ts"
export * as ClaudeHooks from "./services/ClaudeHooks.ts"
export * as ClaudeLive from "./services/ClaudeLive.ts"
export * as ClaudeProcessPool from "./services/ClaudeProcessPool.ts"
export * as ClaudeSessionStore from "./services/ClaudeSessionStore.ts"
export * as Content from "./services/Content.ts"
export * as ModelTurn from "./services/ModelTurn.ts"
export * as Tool from "./services/Tool.ts"

// Infrastructure
export * as NodeMcpBridge from "./layers/NodeMcpBridge.ts"
export * as NodeSecretFile from "./layers/NodeSecretFile.ts"
export * as NodeSubprocess from "./layers/NodeSubprocess.ts"
export * as TestSecretFile from "./layers/TestSecretFile.ts"
export * as TestSubprocess from "./layers/TestSubprocess.ts"
export * as McpBridge from "./services/McpBridge.ts"
export * as SecretFile from "./services/SecretFile.ts"
export * as Subprocess from "./services/Subprocess.ts"

// Claude Code tool registry and policy
export * as AgentSettingsMemory from "./layers/AgentSettingsMemory.ts"
export * as CatalogView from "./registry/CatalogView.ts"
export * as ClaudeCodeCatalog from "./registry/ClaudeCodeCatalog.ts"
export * as CodexCliCatalog from "./registry/CodexCliCatalog.ts"
export * as Conditions from "./registry/Conditions.ts"
export * as GeminiCliCatalog from "./registry/GeminiCliCatalog.ts"
export * as Registry from "./registry/Registry.ts"
export * as ToolDescriptor from "./registry/ToolDescriptor.ts"
export * as ToolPolicy from "./registry/ToolPolicy.ts"
export * as AgentSettings from "./services/AgentSettings.ts"
