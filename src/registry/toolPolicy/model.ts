/**
 * The tool policy's input and output: the agent's opt-outs and the session (Schemas, with their
 * bounds), and the resolved policy with its `ignored` and `withheld` reports. Re-exported by
 * `registry/ToolPolicy.ts`; a module of its own so that the resolution and both conversions (CLI
 * flags, Agent SDK options) can share it.
 */
import * as Schema from "effect/Schema"
import { PermissionMode } from "../../internal/core/permissionMode.ts"
import { McpServerName, SdkToolNamePattern } from "../ToolDescriptor.ts"

// Declared in internal/core so that services (`ClaudeLive.setPermissionMode`) can type with it too.
export { PermissionMode } from "../../internal/core/permissionMode.ts"

/**
 * The most opt-outs an agent may have. A registry has a few dozen tools and `mcp__<server>__*`
 * covers a whole server, so a longer list is a mistake or hostile input, refused before any work.
 *
 * @category config
 * @since 1.0.0
 */
export const MaxOptOuts = 1_000

/**
 * The longest opt-out, in characters (the CLI's own limit on one name is far below the 128 KiB of an argument).
 *
 * @category config
 * @since 1.0.0
 */
export const MaxOptOutLength = 256

/**
 * The part of an agent the policy reads. Other fields are ignored. At most {@link MaxOptOuts}
 * entries of at most {@link MaxOptOutLength} characters: anything larger is a `SchemaError`.
 *
 * @category schemas
 * @since 1.0.0
 */
export const AgentToolSettings = Schema.Struct({
  /** Opt-outs: tool names, `mcp__…` names and `*` wildcards (see {@link OptOutEntry}); empty means everything enabled. */
  disabledTools: Schema.Array(
    Schema.String.check(
      Schema.isMaxLength(MaxOptOutLength, { message: `an opt-out has at most ${MaxOptOutLength} characters` })
    )
  ).check(Schema.isMaxLength(MaxOptOuts, { message: `an agent has at most ${MaxOptOuts} opt-outs` }))
})
/**
 * The type of {@link AgentToolSettings}.
 *
 * @category models
 * @since 1.0.0
 */
export type AgentToolSettings = typeof AgentToolSettings.Type

/**
 * The syntax of one opt-out, independent of any registry: a tool name (`Bash`), an MCP tool
 * (`mcp__docs__search`; `.` and `/` are allowed as in MCP tool names), a whole server
 * (`mcp__docs`, `mcp__docs__*`) or a `*` wildcard, which the CLI matches anywhere in a name
 * (`mcp__*`, `mcp__docs__read_*`, `Web*`). Letters, digits, `_ - . / *` only, at most 256
 * characters: the CLI splits its lists on commas and spaces.
 *
 * @category schemas
 * @since 1.0.0
 */
export const OptOutEntry = Schema.String.check(
  Schema.makeFilter((s) => syntaxError(s) ?? true, { identifier: "OptOutEntry" })
)

/** Why an entry is not valid syntax, or undefined when it is. */
export const syntaxError = (s: string): string | undefined => {
  if (s.length === 0 || s.length > MaxOptOutLength) {
    return `${JSON.stringify(s.slice(0, 80))}: an opt-out has 1 to ${MaxOptOutLength} characters`
  }
  if (!EntryChars.test(s)) {
    return `${JSON.stringify(s)} is not a tool name: use letters, digits, _ - . / and the wildcard *`
  }
  if (s.startsWith("mcp__")) {
    if (s.length === 5 || s.endsWith("__")) {
      return `${JSON.stringify(s)} names no server or tool: write mcp__<server>, mcp__<server>__<tool> or mcp__*`
    }
    return undefined
  }
  if (!s.includes("*") && !SdkToolNamePattern.test(s)) {
    return `${JSON.stringify(s)} is neither a Claude Code tool name (letters, digits, _) nor an mcp__ name`
  }
  if (s.includes("*") && !/^[A-Za-z0-9_*]+$/.test(s)) {
    return `${JSON.stringify(s)}: a wildcard over built-in tools has only letters, digits, _ and *`
  }
  return undefined
}
const EntryChars = /^[A-Za-z0-9_.\/*-]+$/

/**
 * The permission modes the Claude Agent SDK's `PermissionMode` type names: {@link PermissionMode}
 * without `manual` (the CLI's alias of `default`). `ClaudeAgent` and `toAgentSdkOptions` take these.
 *
 * @since 2.0.0
 * @category schemas
 */
export const AgentSdkPermissionMode = PermissionMode.pick([
  "default",
  "acceptEdits",
  "auto",
  "bypassPermissions",
  "dontAsk",
  "plan"
])

/**
 * The type of {@link AgentSdkPermissionMode}.
 *
 * @since 2.0.0
 * @category models
 */
export type AgentSdkPermissionMode = typeof AgentSdkPermissionMode.Type

/**
 * The session the policy is resolved for.
 *
 * @category schemas
 * @since 1.0.0
 */
export const PolicyContext = Schema.Struct({
  /** Condition values; a missing condition (or no `conditions` at all) counts as false. */
  conditions: Schema.optionalKey(Schema.Record(Schema.String, Schema.Boolean)),
  /** No one can answer interactive tools (every `claude -p` run, every Agent SDK turn of this library). */
  headless: Schema.Boolean,
  /**
   * The session's permission mode. On a headless session, tools that need an interactive
   * responder are blocked unless it is `bypassPermissions` — the same rule on both Claude providers.
   */
  permissionMode: Schema.optionalKey(PermissionMode),
  /**
   * MCP servers mounted besides the registry's, whose tools are all auto-approved with a
   * `mcp__<server>__*` allow entry — e.g. the bridge's `gtb`. A server the registry describes
   * with a `gated` tool gets no server entry: only its known tools that are not gated are
   * auto-approved by name, so a tool of that server the registry does not know is asked for too.
   */
  mcpServers: Schema.optionalKey(Schema.Array(McpServerName)),
  /**
   * The application answers permission prompts (`canUseTool` on `ClaudeLocal`/`ClaudeAgent`): on a
   * headless session, tools Claude Code asks about (`asks` in the registry) stay offered.
   */
  canUseTool: Schema.optionalKey(Schema.Boolean),
  /**
   * Built-in tools to auto-approve by name (`Edit`, `Bash`): they join `allowedTools` unless
   * blocked, and a tool that asks stays offered on a headless session. At most 64.
   */
  allowedTools: Schema.optionalKey(
    Schema.Array(Schema.String.check(Schema.isPattern(SdkToolNamePattern))).check(Schema.isMaxLength(64))
  )
})
/**
 * The type of {@link PolicyContext}.
 *
 * @category models
 * @since 1.0.0
 */
export type PolicyContext = typeof PolicyContext.Type

/**
 * An opt-out a settings screen should flag. `malformed`: not valid {@link OptOutEntry} syntax;
 * `always-on`: it only names tools that cannot be opted out (`internal`, `gated` or
 * `conditional` tools outside a toggleable pair group); `partly-applied`: a wildcard that also
 * matches such tools was expanded to the tools and servers it may turn off (listed in
 * `applied`), and is not passed to the CLI as written; `unknown`: a built-in tool name (no
 * `mcp__`) the registry does not know — almost always a typo, with the nearest registry name in
 * `suggestion` — which is still passed to the CLI, so a tool the registry does not know yet
 * stays off. `denied` (since 2.1.0, from a Claude provider's typed options): a tool that a
 * subagent's `tools`, the `tools` list or `skills` asks for and the policy denies; it is left out.
 *
 * @category models
 * @since 1.0.0
 */
export interface IgnoredOptOut {
  /** The entry as the agent wrote it. */
  readonly entry: string
  /** What happened to it. */
  readonly kind: "malformed" | "always-on" | "partly-applied" | "unknown" | "denied"
  /** A sentence for a settings screen. */
  readonly message: string
  /**
   * What the entry turned off (for `partly-applied`): registry tools, pair-group siblings
   * included, and `mcp__<server>__*` for each server it turned off entirely.
   */
  readonly applied?: ReadonlyArray<string>
  /** The MCP servers it turned off entirely and that are not mounted (for `partly-applied`), sorted. */
  readonly servers?: ReadonlyArray<string>
  /** The registry tool the entry most likely means (for `unknown`), e.g. `Bash` for `bash` or `Bsh`. */
  readonly suggestion?: string
}

/**
 * The resolved policy; every list is sorted and free of duplicates.
 *
 * @category models
 * @since 1.0.0
 */
export interface ToolPolicy {
  /** Hard blocks: the CLI's `--disallowedTools`, the SDK's `disallowedTools`. */
  readonly disallowedTools: ReadonlyArray<string>
  /**
   * The MCP auto-approve list: enabled registry MCP tools (not `gated`) by name, and
   * `mcp__<server>__*` for extra servers without a gated tool. No entry covers a gated tool.
   */
  readonly allowedTools: ReadonlyArray<string>
  /** MCP servers to mount (the registry's and the extra ones, minus servers the agent disabled wholesale). */
  readonly mountedServers: ReadonlyArray<string>
  /** Allowed tools that need an interactive responder; the SDK hook denies them on headless turns. */
  readonly responderTools: ReadonlyArray<string>
  /**
   * Opt-outs not applied as written, or naming a built-in the registry does not know, in input
   * order (empty when every entry was applied as written to tools the registry knows).
   */
  readonly ignored: ReadonlyArray<IgnoredOptOut>
  /**
   * Tools a headless session withholds from the model, sorted by tool, each with why: tools that
   * need an interactive responder, and tools Claude Code asks permission for when nothing can
   * answer (no `canUseTool`, no `allowedTools` entry, a permission mode that asks). They are in
   * `disallowedTools` too, whatever the opt-outs say. Empty on a session that is not headless.
   */
  readonly withheld: ReadonlyArray<WithheldTool>
}

/**
 * A tool a headless session cannot use, and why (see {@link ToolPolicy.withheld}).
 *
 * @category models
 * @since 1.0.0
 */
export interface WithheldTool {
  readonly tool: string
  readonly reason: string
}
