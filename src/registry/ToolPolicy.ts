/**
 * Which Claude Code tools an agent may use in a session, computed purely from the registry, the
 * agent's opt-outs and the session context, and its translations to `claude` CLI flags and to
 * Claude Agent SDK options.
 *
 * @since 0.1.0
 * @module
 */
import * as Either from "effect/Either"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type * as Registry from "./Registry.js"
import { McpServerName } from "./ToolDescriptor.js"

/** The part of an agent the policy reads. Other fields are ignored. */
export const AgentToolSettings = Schema.Struct({
  /** Opt-outs: tool names (or `mcp__…` names and wildcards); empty means everything enabled. */
  disabledTools: Schema.Array(Schema.String)
})
/** The type of {@link AgentToolSettings}. */
export type AgentToolSettings = typeof AgentToolSettings.Type

/** The session the policy is resolved for. */
export const PolicyContext = Schema.Struct({
  /** Condition values; a missing condition counts as false. */
  conditions: Schema.Record({ key: Schema.String, value: Schema.Boolean }),
  /** No one can answer interactive tools (every `claude -p` run). */
  headless: Schema.Boolean,
  /**
   * MCP servers mounted besides the registry's, whose tools are all auto-approved with a
   * `mcp__<server>__*` allow entry — e.g. the bridge's `gtb`.
   */
  mcpServers: Schema.optionalWith(Schema.Array(McpServerName), { exact: true })
})
/** The type of {@link PolicyContext}. */
export type PolicyContext = typeof PolicyContext.Type

/** The resolved policy; every list is sorted and free of duplicates. */
export interface ToolPolicy {
  /** Hard blocks: the CLI's `--disallowedTools`, the SDK's `disallowedTools`. */
  readonly disallowedTools: ReadonlyArray<string>
  /** The MCP auto-approve list: enabled registry MCP tools and `mcp__<server>__*` for extra servers. */
  readonly allowedTools: ReadonlyArray<string>
  /** MCP servers to mount (the registry's and the extra ones, minus servers the agent disabled wholesale). */
  readonly mountedServers: ReadonlyArray<string>
  /** Allowed tools that need an interactive responder; the SDK hook denies them on headless turns. */
  readonly responderTools: ReadonlyArray<string>
}

/** `mcp__server`, `mcp__server__*` (whole server) or `mcp__server__tool`: what may pass through. */
const McpReference = /^mcp__([A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*)(?:__(\*|[A-Za-z0-9_-]{1,64}))?$/

const decodeAgent = Schema.decodeUnknownEither(AgentToolSettings)
const decodeContext = Schema.decodeUnknownEither(PolicyContext)

const sorted = (set: Set<string>): ReadonlyArray<string> => Array.from(set).sort()

/**
 * Resolves the policy. Pure and total over its input: anything not shaped like
 * `AgentToolSettings` / `PolicyContext` is a ParseError naming the path, never a throw.
 *
 * Rules: `disabled` → always disallowed; `internal` → never (unless pulled in by its pair group,
 * or interactive on a headless session); `conditional` → disallowed iff its condition is not true;
 * `user` → disallowed iff it or a group sibling is in `disabledTools`; a blocked member blocks its
 * whole pair group; blocked MCP tools leave `allowedTools`; unknown `mcp__…` names and wildcards
 * in `disabledTools` pass through; other unknown or non-`user` names there are ignored;
 * `headless` also blocks interactive tools.
 *
 * @example
 * ```ts
 * import { Either } from "effect"
 * import { ClaudeCodeCatalog, ToolPolicy } from "effect-chat-bridge"
 *
 * const policy = ToolPolicy.resolveToolPolicy(
 *   ClaudeCodeCatalog.registry,
 *   { disabledTools: ["WebFetch"] },
 *   { conditions: { "workspace-has-git": true }, headless: true }
 * )
 * if (Either.isRight(policy)) {
 *   console.log(ToolPolicy.toCliFlags(policy.right)) // the --disallowedTools / --allowedTools arguments
 * }
 * ```
 */
export const resolveToolPolicy = (
  registry: Registry.Registry,
  agent: unknown,
  ctx: unknown
): Either.Either<ToolPolicy, ParseResult.ParseError> => {
  const a = decodeAgent(agent)
  if (Either.isLeft(a)) return Either.left(a.left)
  const c = decodeContext(ctx)
  if (Either.isLeft(c)) return Either.left(c.left)
  return Either.right(resolveValidated(registry, a.right, c.right))
}

/** What the policy reads from a registry, precomputed once per registry. */
interface Plan {
  readonly disabled: ReadonlyArray<string>
  readonly conditional: ReadonlyArray<readonly [name: string, condition: string]>
  readonly interactive: ReadonlyArray<string>
  readonly mcp: ReadonlyArray<readonly [name: string, server: string]>
  readonly groups: ReadonlyArray<ReadonlyArray<string>>
}

const plans = new WeakMap<Registry.Registry, Plan>()

const planOf = (registry: Registry.Registry): Plan => {
  const cached = plans.get(registry)
  if (cached !== undefined) return cached
  const groups = Array.from(registry.groups.values(), (members) => members.map((m) => m.name))
  const ds = registry.descriptors
  const plan: Plan = {
    disabled: ds.filter((d) => d.exposure === "disabled").map((d) => d.name),
    conditional: ds.filter((d) => d.exposure === "conditional").map((d) => [d.name, d.condition!] as const),
    interactive: ds.filter((d) => d.interactive === true).map((d) => d.name),
    mcp: ds.filter((d) => d.kind === "mcp").map((d) => [d.name, d.mcpServer!] as const),
    groups
  }
  plans.set(registry, plan)
  return plan
}

/** `resolveToolPolicy` for input already typed as the schemas' types (no decoding). */
export const resolveValidated = (
  registry: Registry.Registry,
  agent: AgentToolSettings,
  ctx: PolicyContext
): ToolPolicy => {
  const plan = planOf(registry)
  const blocked = new Set<string>(plan.disabled)
  const passThrough = new Set<string>()
  const serversOff = new Set<string>()
  const toolsOff = new Set<string>()
  const { conditions, headless } = ctx

  for (const [name, condition] of plan.conditional) if (conditions[condition] !== true) blocked.add(name)
  if (headless) { for (const name of plan.interactive) blocked.add(name) }
  for (const name of agent.disabledTools) {
    const d = registry.byName.get(name)
    if (d !== undefined) {
      if (d.exposure === "user") blocked.add(name)
      continue
    }
    const m = McpReference.exec(name)
    if (m === null) continue
    passThrough.add(name)
    if (m[2] === undefined || m[2] === "*") serversOff.add(m[1]!)
    else toolsOff.add(name)
  }
  // Pair-group atomicity: one blocked member blocks them all, internal members included.
  for (const members of plan.groups) {
    if (members.some((n) => blocked.has(n))) { for (const n of members) blocked.add(n) }
  }

  const allowed = new Set<string>()
  const mounted = new Set<string>()
  for (const [name, server] of plan.mcp) {
    if (!blocked.has(name) && !serversOff.has(server) && !toolsOff.has(name)) allowed.add(name)
  }
  for (const server of registry.mcpServers) if (!serversOff.has(server)) mounted.add(server)
  for (const server of ctx.mcpServers ?? []) {
    if (serversOff.has(server)) continue
    mounted.add(server)
    allowed.add(`mcp__${server}__*`)
  }
  const responder = plan.interactive.filter((n) => !blocked.has(n))
  for (const name of passThrough) blocked.add(name)
  return {
    disallowedTools: sorted(blocked),
    allowedTools: sorted(allowed),
    mountedServers: sorted(mounted),
    responderTools: sorted(new Set(responder))
  }
}

/**
 * `claude` CLI arguments. Each list is one comma-joined argument, so a following positional
 * (the prompt) cannot be swallowed by the variadic flag; empty lists are omitted.
 */
export const toCliFlags = (policy: ToolPolicy): ReadonlyArray<string> => [
  ...(policy.disallowedTools.length > 0 ? ["--disallowedTools", policy.disallowedTools.join(",")] : []),
  ...(policy.allowedTools.length > 0 ? ["--allowedTools", policy.allowedTools.join(",")] : [])
]

// The Agent SDK is an optional peer: these are structural copies of the slice of its types this
// module produces, so the main entry type-checks without it. test/registry/ToolPolicySdkTypes.test.ts
// asserts at compile time that they stay assignable to the SDK's own `Options`.

/** The Agent SDK's permission modes (its `PermissionMode`). */
export type PermissionMode = "default" | "acceptEdits" | "bypassPermissions" | "plan" | "dontAsk" | "auto"

/** The part of an Agent SDK hook input the headless guard reads. */
export interface HookInput {
  readonly hook_event_name: string
  readonly tool_name?: string
  readonly permission_mode?: string
}

/** What the headless guard answers: nothing to say, or a PreToolUse denial with its reason. */
export type HookOutput = {
  readonly hookSpecificOutput?: {
    readonly hookEventName: "PreToolUse"
    readonly permissionDecision: "deny"
    readonly permissionDecisionReason: string
  }
}

/** An Agent SDK hook callback (its `HookCallback`). */
export type HookCallback = (
  input: HookInput,
  toolUseID: string | undefined,
  options: { signal: AbortSignal }
) => Promise<HookOutput>

/** The Agent SDK `Options` fields this module sets; `C` is the SDK's `McpServerConfig`. */
export interface AgentSdkOptions<C> {
  disallowedTools: Array<string>
  allowedTools: Array<string>
  mcpServers: Record<string, C>
  strictMcpConfig: boolean
  permissionMode: PermissionMode
  hooks?: { PreToolUse: Array<{ matcher: string; hooks: Array<HookCallback> }> }
}

/** What the SDK conversion needs beyond the policy. */
export interface AgentSdkOptionsInput<C> {
  /** The SDK permission mode of the session. */
  readonly permissionMode: PermissionMode
  /** No one can answer interactive tools on this turn. */
  readonly headless: boolean
  /** Server configs by name; only the policy's `mountedServers` are passed on. */
  readonly mcpServers?: Readonly<Record<string, C>>
}

/** Why the headless hook denies a tool — shown to the model, so it says what to do instead. */
export const headlessDenialReason = (tool: string, mode: string): string =>
  `${tool} needs an interactive responder, and this turn is headless (permission mode ${mode}); ` +
  `continue without it, or run with permission mode bypassPermissions`

/**
 * Agent SDK options: the two lists, the mounted servers' configs with `strictMcpConfig` (no
 * stray `.mcp.json`), and on headless turns a `PreToolUse` hook denying the policy's
 * `responderTools` unless the live permission mode is `bypassPermissions`.
 */
export const toAgentSdkOptions = <C = never>(
  policy: ToolPolicy,
  input: AgentSdkOptionsInput<C>
): AgentSdkOptions<C> => {
  const mcpServers: Record<string, C> = {}
  for (const name of policy.mountedServers) {
    const config = input.mcpServers?.[name]
    if (config !== undefined) mcpServers[name] = config
  }
  const responder = new Set(policy.responderTools)
  const hook: HookCallback = async (hookInput) => {
    if (hookInput.hook_event_name !== "PreToolUse" || hookInput.tool_name === undefined) return {}
    if (!responder.has(hookInput.tool_name)) return {}
    const mode = hookInput.permission_mode ?? input.permissionMode
    if (mode === "bypassPermissions") return {}
    return {
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "deny",
        permissionDecisionReason: headlessDenialReason(hookInput.tool_name, mode)
      }
    }
  }
  return {
    disallowedTools: [...policy.disallowedTools],
    allowedTools: [...policy.allowedTools],
    mcpServers,
    strictMcpConfig: true,
    permissionMode: input.permissionMode,
    ...(input.headless && responder.size > 0
      ? { hooks: { PreToolUse: [{ matcher: [...responder].join("|"), hooks: [hook] }] } }
      : {})
  }
}
