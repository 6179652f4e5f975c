/**
 * The option vocabulary `ClaudeLocal` and `ClaudeAgent` share: isolation (environment, settings
 * sources), sessions, bounds and prompts, permission decisions made by the application, and the
 * application's own MCP servers. `docs/claude-code.md` has a table of which provider supports which option.
 *
 * @summary Options `ClaudeLocal` and `ClaudeAgent` share: isolation, sessions, bounds, permissions, MCP servers.
 * @group Chat providers
 * @since 0.1.0
 * @module
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as ToolPolicy from "../registry/ToolPolicy.ts"
import { type ProviderError, Usage } from "./ChatClient.ts"
import type { AgentToolEnd, AgentToolStart } from "./ChatEvent.ts"
import type * as ClaudeHooks from "./ClaudeHooks.ts"
import { type SessionStoreError, TranscriptEntry } from "./ClaudeSessionStore.ts"

/**
 * Claude Code settings files a run may load (`--setting-sources`).
 *
 * @category models
 * @since 1.0.0
 */
export type SettingSource = "user" | "project" | "local"

/**
 * `--effort` levels of claude 2.1.x.
 *
 * @category models
 * @since 1.0.0
 */
export type Effort = "low" | "medium" | "high" | "xhigh" | "max"

/**
 * A subagent the main agent may delegate to (`--agents`). Its `tools` go through the tool policy:
 * a tool the policy denies is left out of them (and reported in `ToolPolicy.ignored`).
 *
 * @category schemas
 * @since 2.1.0
 */
export const AgentDefinition = Schema.Struct({
  /** When the main agent should use it. */
  description: Schema.String,
  /** Its system prompt. */
  prompt: Schema.String,
  /** The tools it may use; default: the main agent's. */
  tools: Schema.optional(Schema.Array(Schema.String)),
  /** Tools it may not use. */
  disallowedTools: Schema.optional(Schema.Array(Schema.String)),
  /** Its model (an alias such as `haiku` or a full name); default: the main agent's. */
  model: Schema.optional(Schema.String)
})

/**
 * A subagent the main agent may delegate to (`--agents`).
 *
 * @category models
 * @since 1.0.0
 */
export interface AgentDefinition extends Schema.Schema.Type<typeof AgentDefinition> {}

/**
 * How much the model thinks before it answers: `adaptive` (it decides; the default of models that
 * support it), `enabled` with a fixed budget of tokens (older models), or `disabled`.
 *
 * @category schemas
 * @since 2.1.0
 */
export const Thinking = Schema.Union([
  Schema.Struct({ type: Schema.Literal("adaptive") }),
  Schema.Struct({
    type: Schema.Literal("enabled"),
    /** The thinking budget in tokens. */
    budgetTokens: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))
  }),
  Schema.Struct({ type: Schema.Literal("disabled") })
])

/**
 * The type of {@link Thinking}.
 *
 * @category models
 * @since 2.1.0
 */
export type Thinking = typeof Thinking.Type

/**
 * The built-in tools the CLI offers (`--tools`): `"default"`, Claude Code's whole set, or exactly
 * the listed tools (`[]`: none). The tool policy still applies to either.
 *
 * @category schemas
 * @since 2.1.0
 */
export const ToolsPreset = Schema.Union([Schema.Literal("default"), Schema.Array(Schema.String)])

/**
 * The type of {@link ToolsPreset}.
 *
 * @category models
 * @since 2.1.0
 */
export type ToolsPreset = typeof ToolsPreset.Type

const Paths = Schema.optional(Schema.Array(Schema.String))

/**
 * The sandbox Claude Code runs `Bash` commands in (the `sandbox` settings block; Linux needs
 * `bubblewrap`): a typed subset of Claude Code's settings.
 *
 * @category schemas
 * @since 2.1.0
 */
export const Sandbox = Schema.Struct({
  /** Run commands sandboxed. */
  enabled: Schema.optional(Schema.Boolean),
  /**
   * Fail the run when the sandbox cannot start (missing dependencies, unsupported platform)
   * instead of running commands unsandboxed. Default `true` when `enabled` is (as the Agent SDK).
   */
  failIfUnavailable: Schema.optional(Schema.Boolean),
  /** Which domains sandboxed commands may reach. */
  network: Schema.optional(Schema.Struct({
    /** Domains commands may reach (wildcards such as `*.example.com`). */
    allowedDomains: Paths,
    /** Domains commands may never reach, whatever else allows them. */
    deniedDomains: Paths
  })),
  /** Which paths sandboxed commands may read and write. */
  filesystem: Schema.optional(Schema.Struct({
    /** Paths readable again inside a denied one. */
    allowRead: Paths,
    /** Paths commands may not read. */
    denyRead: Paths,
    /** Paths commands may write besides the working directory. */
    allowWrite: Paths,
    /** Paths commands may not write. */
    denyWrite: Paths
  }))
})

/**
 * The type of {@link Sandbox}.
 *
 * @category models
 * @since 2.1.0
 */
export type Sandbox = typeof Sandbox.Type

/**
 * A local Claude Code plugin (a directory with `.claude-plugin/plugin.json`): its commands,
 * agents, skills and hooks load for the run.
 *
 * @category schemas
 * @since 2.1.0
 */
export const Plugin = Schema.Struct({
  /** The plugin's directory. */
  path: Schema.String,
  /**
   * Skip the MCP servers the plugin declares. Default `true`, so a plugin cannot bring a server
   * the application did not mount; `false` mounts them (only with no `settingSources`), and the
   * tool policy applies to their tools as to any server's.
   */
  skipMcpDiscovery: Schema.optional(Schema.Boolean)
})

/**
 * The type of {@link Plugin}.
 *
 * @category models
 * @since 2.1.0
 */
export type Plugin = typeof Plugin.Type

/**
 * Skills the model may use: `"all"` or their names (a `SKILL.md` name, or `plugin:skill`).
 *
 * @category schemas
 * @since 2.1.0
 */
export const Skills = Schema.Union([
  Schema.Literal("all"),
  Schema.Array(Schema.String.check(Schema.isPattern(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/)))
])

/**
 * The type of {@link Skills}.
 *
 * @category models
 * @since 2.1.0
 */
export type Skills = typeof Skills.Type

/**
 * An application MCP server started by the CLI as a child process.
 *
 * @category models
 * @since 1.0.0
 */
export interface McpStdioServer {
  /** The transport; optional, as in Claude Code's own config. */
  readonly type?: "stdio" | undefined
  /** The command to run. */
  readonly command: string
  /** Its arguments. */
  readonly args?: ReadonlyArray<string> | undefined
  /** Its environment additions. They stay out of argv: the config is a 0600 file (ClaudeLocal) or the SDK's input. */
  readonly env?: Readonly<Record<string, string>> | undefined
  /**
   * Put the server's tools in the model's first request instead of behind tool search (which
   * costs a round trip). Also makes the CLI wait (up to 5 s) for the server at start-up.
   */
  readonly alwaysLoad?: boolean | undefined
}

/**
 * An application MCP server reached over Streamable HTTP.
 *
 * @category models
 * @since 1.0.0
 */
export interface McpHttpServer {
  /** The transport. */
  readonly type: "http"
  /** The server's endpoint. */
  readonly url: string
  /** Request headers, such as an `Authorization` bearer; kept out of argv like `env`. */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /**
   * Put the server's tools in the model's first request instead of behind tool search (which
   * costs a round trip). Also makes the CLI wait (up to 5 s) for the server at start-up.
   */
  readonly alwaysLoad?: boolean | undefined
}

/**
 * An application MCP server, mounted next to the bridge.
 *
 * @category models
 * @since 1.0.0
 */
export type McpServer = McpStdioServer | McpHttpServer

/**
 * A tool call the CLI asks the application to decide on.
 *
 * @category models
 * @since 1.0.0
 */
export interface PermissionRequest {
  /** The tool, such as `Bash` or `mcp__server__tool`. */
  readonly toolName: string
  /** The call's input as the model wrote it. */
  readonly input: Readonly<Record<string, unknown>>
  /** The call's id, when the CLI reports it. */
  readonly toolUseId: string | undefined
}

/**
 * The application's answer to a {@link PermissionRequest}.
 *
 * @category models
 * @since 1.0.0
 */
export type PermissionDecision = Data.TaggedEnum<{
  /** Run the call, with `updatedInput` instead of the model's input when given. */
  Allow: { readonly updatedInput?: Readonly<Record<string, unknown>> | undefined }
  /** Refuse the call; the model reads `message`. */
  Deny: { readonly message: string }
  /**
   * Decide later: the turn ends with `ApprovalRequired` and the call waits, stored with the
   * conversation, for `ClaudeApprovals.approve` or `deny` (see the approvals guide).
   *
   * @since 2.1.0
   */
  Defer: {}
}>

const decisions = Data.taggedEnum<PermissionDecision>()

/**
 * Allows the call, optionally with changed input.
 *
 * @category constructors
 * @since 1.0.0
 */
export const allow = (updatedInput?: Readonly<Record<string, unknown>>): PermissionDecision =>
  decisions.Allow(updatedInput === undefined ? {} : { updatedInput })

/**
 * Denies the call; the model reads `message`.
 *
 * @category constructors
 * @since 1.0.0
 */
export const deny = (message: string): PermissionDecision => decisions.Deny({ message })

/**
 * Decides later: the turn ends with a `ProviderError` whose reason is `ApprovalRequired`, and the
 * call waits for `ClaudeApprovals.approve` or `deny` — from this or any process sharing the
 * session store. Only a call of a tool that `needsApproval` can wait; any other call answered
 * `defer` is denied with a message saying so.
 *
 * @category constructors
 * @since 2.1.0
 */
export const defer = (): PermissionDecision => decisions.Defer()

/**
 * Decides a tool call the CLI would otherwise refuse or ask about (calls already allowed by the
 * tool policy or the permission mode are not asked). A failure or defect of the effect denies the
 * call.
 *
 * @category models
 * @since 1.0.0
 */
export type CanUseTool = (request: PermissionRequest) => Effect.Effect<PermissionDecision>

/**
 * Options both Claude Code providers understand, with the same meaning.
 *
 * @category config
 * @since 1.0.0
 */
export interface ClaudeCodeOptions {
  /**
   * `true` passes this process's whole environment to the CLI (plus `env`). Default `false`: only
   * what the CLI needs (PATH, HOME, locale, TMPDIR, proxies and CA settings, `ANTHROPIC_*`,
   * `CLAUDE_*`, Bedrock/Vertex variables), so the application's secrets stay out.
   */
  readonly inheritEnv?: boolean | undefined
  /**
   * Claude Code settings files the run loads (hooks, permission rules, output styles, env).
   * Default `[]`: none, so a user's or project's settings never change a library run.
   */
  readonly settingSources?: ReadonlyArray<SettingSource> | undefined
  /** Start from this existing session (its history) instead of a new one. */
  readonly resume?: string | undefined
  /** With `resume`: continue in a new session (new id, the old history); the old one is untouched. */
  readonly forkSession?: boolean | undefined
  /** Bound on the model turns of one run; reaching it fails with `RunLimitError`. */
  readonly maxTurns?: number | undefined
  /**
   * Bound in USD on the conversation's total cost (the client's `usage.costUsd`) across turns,
   * kept-alive or not: each run may spend what is left, and the run that reaches the bound fails
   * with `RunLimitError` (the CLI checks after each model call, so the total can pass the bound by
   * that call's cost). A turn that would start with nothing left fails with `RunLimitError`
   * (empty answer, zero usage) without running.
   */
  readonly maxBudgetUsd?: number | undefined
  /** Appended to Claude Code's default system prompt (unlike `systemPrompt`, which replaces it). */
  readonly appendSystemPrompt?: string | undefined
  /** The model to use when the main one is overloaded. */
  readonly fallbackModel?: string | undefined
  /** More directories the agent's file tools may access. */
  readonly addDirs?: ReadonlyArray<string> | undefined
  /** How much effort (and adaptive thinking) the model spends. */
  readonly effort?: Effort | undefined
  /**
   * Subagents by name. Their `tools` go through the tool policy: a tool the policy denies is left
   * out, and reported in `ClaudeSession.toolPolicy`'s `ignored` (a `config` error with
   * `toolPolicy.strict`).
   */
  readonly agents?: Readonly<Record<string, AgentDefinition>> | undefined
  /**
   * How much the model thinks (see {@link Thinking}); takes precedence over `maxThinkingTokens`.
   *
   * @since 2.1.0
   */
  readonly thinking?: Thinking | undefined
  /**
   * A thinking budget in tokens (`--max-thinking-tokens`); the older form of
   * `thinking: { type: "enabled", budgetTokens }`.
   *
   * @since 2.1.0
   */
  readonly maxThinkingTokens?: number | undefined
  /**
   * The built-in tools the CLI offers (see {@link ToolsPreset}). A listed tool the tool policy
   * denies is left out and reported like an ignored opt-out. Default: the CLI's own set.
   *
   * @since 2.1.0
   */
  readonly tools?: ToolsPreset | undefined
  /**
   * The sandbox `Bash` commands run in (see {@link Sandbox}), merged into the run's settings.
   *
   * @since 2.1.0
   */
  readonly sandbox?: Sandbox | undefined
  /**
   * Local plugins to load (see {@link Plugin}); their MCP servers are skipped unless a plugin
   * says `skipMcpDiscovery: false`.
   *
   * @since 2.1.0
   */
  readonly plugins?: ReadonlyArray<Plugin> | undefined
  /**
   * Skills the model may use (see {@link Skills}), given to the tool policy as allow entries
   * (`Skill`, `Skill(<name>)`); when the policy denies `Skill` they are left out and reported in
   * `ClaudeSession.toolPolicy`'s `ignored`.
   *
   * @since 2.1.0
   */
  readonly skills?: Skills | undefined
  /**
   * Decides, in the application, tool calls that would otherwise be refused, and each call of a
   * tool that `needsApproval` (which may also be answered `defer`).
   */
  readonly canUseTool?: CanUseTool | undefined
  /**
   * How long a deferred call waits for `ClaudeApprovals.approve` or `deny`; after that both fail
   * with `ApprovalExpired`. Default 24 hours.
   *
   * @since 2.1.0
   */
  readonly approvalTtl?: Duration.Input | undefined
  /**
   * Claude Code hooks as Effects (see `ClaudeHooks`), beside the tool policy's own: a `deny`
   * from either blocks a call. On `ClaudeLocal` they are served from a loopback bridge as HTTP
   * hooks in every run's settings, so they also fire on a resumed session.
   *
   * @since 2.0.0
   */
  readonly hooks?: ClaudeHooks.Hooks | undefined
  /**
   * The application's MCP servers by name, mounted next to the tool bridge; the registry policy
   * applies to them (an agent's `mcp__<name>__*` opt-out leaves a server unmounted).
   */
  readonly mcpServers?: Readonly<Record<string, McpServer>> | undefined
  /**
   * `true` lets the CLI interpret prompt text as if a person typed it: `@path` attaches that file
   * (whatever the tool policy says about `Read`), a leading `/command` runs locally, and the CLI
   * adds its turn-start context (nested `CLAUDE.md`, skill listings). Only for prompts from a
   * trusted operator. Default `false`: text reaches the model verbatim (claude ≥ 2.1.248; an
   * older CLI refuses a prompt it would interpret with a `ConfigurationError`).
   */
  readonly trustedPrompts?: boolean | undefined
  /**
   * The session store's project key for this client's sessions (see `ClaudeSessionStore`): a
   * tenant or project name, the same on every machine that continues them. It does not depend on
   * `cwd`. Default `"default"`. Used only when a `ClaudeSessionStore` is provided.
   */
  readonly projectKey?: string | undefined
  /**
   * Bound on each session-store call (storing a turn's transcript, loading one to resume); a call
   * that takes longer fails the turn with a retryable `SessionStoreError`. Default 10 seconds.
   */
  readonly storeTimeout?: Duration.Input | undefined
  /**
   * A run that prints nothing for this long while the model is answering fails with a retryable
   * `ProviderError` (reason `StalledError`), its CLI is stopped, and the next turn resumes the
   * session. Time spent running a tool, waiting for a permission decision or in a `hooks` hook
   * does not count.
   * Default 3 minutes; `requestTimeout` still bounds the whole run.
   */
  readonly stallTimeout?: Duration.Input | undefined
  /**
   * Continue a conversation exported with `ClaudeSession.snapshot` (on this machine or another):
   * the first turn resumes `snapshot.sessionId` with its transcript, and `usage` starts at the
   * snapshot's. Takes the place of `resume` (with `forkSession`, the first turn forks it).
   */
  readonly snapshot?: ClaudeSnapshot | undefined
}

/**
 * A conversation as one value: its session id, its transcript entries and what it has used.
 * Encode it with its schema to keep it anywhere; a client built with the `snapshot` option
 * continues it with the same history, on any machine.
 *
 * @category schemas
 * @since 1.0.0
 */
export class ClaudeSnapshot extends Schema.Class<ClaudeSnapshot>("effect-chat-bridge/ClaudeSnapshot")({
  /** The session the next turn continues. */
  sessionId: Schema.String,
  /** The session's transcript entries, in order. */
  transcript: Schema.Array(TranscriptEntry),
  /** What the conversation used so far. */
  usage: Usage
}) {}

/**
 * What a Claude Code client tells about its conversation.
 *
 * @category models
 * @since 1.0.0
 */
export interface ClaudeSessionService {
  /** The session the next turn continues: `resume` at first, then the last successful turn's. */
  readonly sessionId: Effect.Effect<Option.Option<string>>
  /**
   * The agent runtime's own tool calls (built-in tools, application MCP servers) of the last
   * successful turn, as `chatStream` reports them: the same activity for `chat` and `ask`.
   */
  readonly lastActivity: Effect.Effect<ReadonlyArray<AgentToolStart | AgentToolEnd>>
  /**
   * The conversation as one value (see {@link ClaudeSnapshot}): the transcript comes from the
   * session store when one is provided, otherwise from the CLI's session file. Fails with
   * `SessionStoreError` when there is no session yet or its transcript cannot be read.
   */
  readonly snapshot: Effect.Effect<ClaudeSnapshot, SessionStoreError>
  /**
   * The tool policy a turn started now runs with, for the tools set now: the lists the runtime
   * gets, the tools withheld from a headless run and why (`withheld`), and `ignored` — the
   * opt-outs not applied as written, each also logged once as a warning. Fails with the `config`
   * `ProviderError` every turn fails with when the policy was refused (opt-outs over the bounds,
   * or `toolPolicy.strict` with an ignored one); the provider's layer fails its build with it.
   */
  readonly toolPolicy: Effect.Effect<ToolPolicy.ToolPolicy, ProviderError>
}

/**
 * The session of the Claude Code client a `ClaudeLocal` or `ClaudeAgent` layer provides.
 *
 * @category services
 * @since 1.0.0
 */
export class ClaudeSession extends Context.Service<ClaudeSession, ClaudeSessionService>()(
  "effect-chat-bridge/ClaudeSession"
) {}
