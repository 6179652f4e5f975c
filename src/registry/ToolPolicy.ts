/**
 * Which Claude Code tools an agent may use in a session, computed purely from the registry, the
 * agent's opt-outs and the session context, and its translations to `claude` CLI flags and to
 * Claude Agent SDK options.
 *
 * @summary Which Claude Code tools an agent may use in a session, as `claude` CLI flags or Agent SDK options.
 * @group Claude Code tool policy
 * @since 0.1.0
 * @module
 */
import * as Cause from "effect/Cause"
import * as Exit from "effect/Exit"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as Headless from "../internal/policy/headlessTools.ts"
import * as NearestName from "../internal/policy/nearestName.ts"
import type * as Registry from "./Registry.ts"
import { McpServerName, SdkToolNamePattern } from "./ToolDescriptor.ts"

/**
 * The most opt-outs an agent may have. A registry has a few dozen tools and `mcp__<server>__*`
 * covers a whole server, so a longer list is a mistake or hostile input, refused before any work.
 */
export const MaxOptOuts = 1_000

/** The longest opt-out, in characters (the CLI's own limit on one name is far below the 128 KiB of an argument). */
export const MaxOptOutLength = 256

/**
 * The part of an agent the policy reads. Other fields are ignored. At most {@link MaxOptOuts}
 * entries of at most {@link MaxOptOutLength} characters: anything larger is a `SchemaError`.
 */
export const AgentToolSettings = Schema.Struct({
  /** Opt-outs: tool names, `mcp__…` names and `*` wildcards (see {@link OptOutEntry}); empty means everything enabled. */
  disabledTools: Schema.Array(
    Schema.String.check(
      Schema.isMaxLength(MaxOptOutLength, { message: `an opt-out has at most ${MaxOptOutLength} characters` })
    )
  ).check(Schema.isMaxLength(MaxOptOuts, { message: `an agent has at most ${MaxOptOuts} opt-outs` }))
})
/** The type of {@link AgentToolSettings}. */
export type AgentToolSettings = typeof AgentToolSettings.Type

/**
 * The syntax of one opt-out, independent of any registry: a tool name (`Bash`), an MCP tool
 * (`mcp__docs__search`; `.` and `/` are allowed as in MCP tool names), a whole server
 * (`mcp__docs`, `mcp__docs__*`) or a `*` wildcard, which the CLI matches anywhere in a name
 * (`mcp__*`, `mcp__docs__read_*`, `Web*`). Letters, digits, `_ - . / *` only, at most 256
 * characters: the CLI splits its lists on commas and spaces.
 */
export const OptOutEntry = Schema.String.check(
  Schema.makeFilter((s) => syntaxError(s) ?? true, { identifier: "OptOutEntry" })
)

/** Why an entry is not valid syntax, or undefined when it is. */
const syntaxError = (s: string): string | undefined => {
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

/** The session the policy is resolved for. */
export const PolicyContext = Schema.Struct({
  /** Condition values; a missing condition counts as false. */
  conditions: Schema.Record(Schema.String, Schema.Boolean),
  /** No one can answer interactive tools (every `claude -p` run, every Agent SDK turn of this library). */
  headless: Schema.Boolean,
  /**
   * The session's permission mode. On a headless session, tools that need an interactive
   * responder are blocked unless it is `bypassPermissions` — the same rule on both Claude providers.
   */
  permissionMode: Schema.optionalKey(Schema.String),
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
/** The type of {@link PolicyContext}. */
export type PolicyContext = typeof PolicyContext.Type

/**
 * An opt-out a settings screen should flag. `malformed`: not valid {@link OptOutEntry} syntax;
 * `always-on`: it only names tools that cannot be opted out (`internal`, `gated` or
 * `conditional` tools outside a toggleable pair group); `partly-applied`: a wildcard that also
 * matches such tools was expanded to the tools and servers it may turn off (listed in
 * `applied`), and is not passed to the CLI as written; `unknown`: a built-in tool name (no
 * `mcp__`) the registry does not know — almost always a typo, with the nearest registry name in
 * `suggestion` — which is still passed to the CLI, so a tool the registry does not know yet
 * stays off.
 */
export interface IgnoredOptOut {
  /** The entry as the agent wrote it. */
  readonly entry: string
  /** What happened to it. */
  readonly kind: "malformed" | "always-on" | "partly-applied" | "unknown"
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

/** The resolved policy; every list is sorted and free of duplicates. */
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

/** A tool a headless session cannot use, and why (see {@link ToolPolicy.withheld}). */
export interface WithheldTool {
  readonly tool: string
  readonly reason: string
}

// `reportInput`: Effect 4's messages leave out the rejected value unless asked ("Expected string,
// got 1" rather than "Expected string"); Effect 3's always had it, and a settings screen needs it.
const decodeAgent = Schema.decodeUnknownExit(AgentToolSettings, { reportInput: true })
const decodeContext = Schema.decodeUnknownExit(PolicyContext, { reportInput: true })

const sorted = (set: Set<string>): ReadonlyArray<string> => Array.from(set).sort()

const couldNotRead = (what: string, e: unknown): Result.Result<never, Schema.SchemaError> =>
  Result.fail(
    new Schema.SchemaError(
      new SchemaIssue.InvalidValue({
        message: `the ${what} could not be read: ${e instanceof Error ? e.message : String(e)}`
      })
    )
  )

/**
 * Decodes hostile values (throwing getters, Proxies with throwing traps) as a `SchemaError`. The
 * Schema decoder reads properties; Effect 4's decoder turns a throw there into a defect of its
 * `Exit` (the `Result` decoder would rethrow it as "Result adapter can only return schema
 * issues"), so the `Exit` is read here and a defect becomes the error, with the thrown message.
 * The issue keeps no input: formatting it would read the hostile value again.
 */
const safeDecode = <A>(
  decode: (u: unknown) => Exit.Exit<A, Schema.SchemaError>,
  u: unknown,
  what: string
): Result.Result<A, Schema.SchemaError> => {
  let exit: Exit.Exit<A, Schema.SchemaError>
  try {
    exit = decode(u)
  } catch (e) {
    return couldNotRead(what, e)
  }
  if (Exit.isSuccess(exit)) return Result.succeed(exit.value)
  const defect = Cause.findDefect(exit.cause)
  if (Result.isSuccess(defect)) return couldNotRead(what, defect.success)
  const error = Cause.findError(exit.cause)
  return Result.isSuccess(error) ? Result.fail(error.success) : couldNotRead(what, Cause.squash(exit.cause))
}

/**
 * Resolves the policy. Pure and total over its input: anything not shaped like
 * `AgentToolSettings` / `PolicyContext` — including values whose getters or Proxy traps throw —
 * is a `SchemaError`, never a throw.
 *
 * Rules (the design's, plus what claude 2.1.332 does with wildcards):
 * - `disabled` → always disallowed; `internal` and `gated` → never (unless their pair group has
 *   a `user` member that is blocked); `conditional` → disallowed iff its condition is not true.
 * - An opt-out naming a `user` tool, or any member of a pair group with a `user` member
 *   (`BashOutput`), blocks the whole group, internal members included.
 * - `mcp__<server>` means `mcp__<server>__*`. `.` and `/` in `mcp__` names become `_`, as the CLI
 *   renames MCP tools. Unknown names pass through to the disallow-list (stricter never hurts);
 *   an unknown name without `mcp__` is also reported as `unknown`, with the nearest registry
 *   name as its `suggestion` (`Bsh`, `bash` → `Bash`), since it is almost always a typo.
 * - A `*` wildcard is matched against the registry: the tools it covers are blocked as if named
 *   (pair groups included). If it covers no always-on tool it also passes through unchanged, so
 *   tools the registry does not know are blocked too, and servers it covers entirely are not
 *   mounted; otherwise it is expanded to the tools and the servers without an always-on tool
 *   it covers, and reported as `partly-applied` with all of them listed — a wildcard never
 *   disallows or unmounts an always-on tool.
 * - On a headless session, interactive tools are blocked unless `permissionMode` is
 *   `bypassPermissions`.
 * - No allow entry covers a `gated` tool: a server with one is auto-approved tool by tool (its
 *   known, enabled, non-gated tools), never as `mcp__<server>__*`, even when it is in
 *   `ctx.mcpServers` — its tools the registry does not know are asked for too (fail closed).
 * - Entries applied differently from how they are written, or naming unknown built-ins, are
 *   listed in `ignored`.
 *
 * @example
 * ```ts
 * import { Result } from "effect"
 * import { ClaudeCodeCatalog, ToolPolicy } from "effect-chat-bridge"
 *
 * const policy = ToolPolicy.resolveToolPolicy(
 *   ClaudeCodeCatalog.registry,
 *   { disabledTools: ["WebFetch"] },
 *   { conditions: { "workspace-has-git": true }, headless: true }
 * )
 * if (Result.isSuccess(policy)) {
 *   console.log(ToolPolicy.toCliFlags(policy.success)) // the --disallowedTools / --allowedTools arguments
 * }
 * ```
 */
export const resolveToolPolicy = (
  registry: Registry.Registry,
  agent: typeof AgentToolSettings.Encoded,
  ctx: typeof PolicyContext.Encoded
): Result.Result<ToolPolicy, Schema.SchemaError> => resolveToolPolicyUnknown(registry, agent, ctx)

/**
 * {@link resolveToolPolicy} for input whose type is not known (a request body, a settings file):
 * the same validation, the same result.
 */
export const resolveToolPolicyUnknown = (
  registry: Registry.Registry,
  agent: unknown,
  ctx: unknown
): Result.Result<ToolPolicy, Schema.SchemaError> => {
  const tooLarge = oversized(agent)
  if (tooLarge !== undefined) return Result.fail(invalid(tooLarge))
  const a = fastAgent(agent) ?? safeDecode(decodeAgent, agent, "agent settings")
  if (Result.isFailure(a)) return Result.fail(a.failure)
  const c = fastContext(ctx) ?? safeDecode(decodeContext, ctx, "policy context")
  if (Result.isFailure(c)) return Result.fail(c.failure)
  return Result.succeed(resolveValidated(registry, a.success, c.success))
}

const invalid = (message: string) => new Schema.SchemaError(new SchemaIssue.InvalidValue({ message }))

/**
 * Why a list is over the bounds, said briefly: the decoder's own message would quote the whole
 * input (a 100,000-entry list, a 1 MB name). Undefined when within them or not a list at all
 * (the decoder then says what is wrong).
 */
export const oversized = (agent: unknown): string | undefined => {
  try {
    if (typeof agent !== "object" || agent === null) return undefined
    const list: unknown = (agent as Record<string, unknown>)["disabledTools"]
    if (!Array.isArray(list)) return undefined
    if (list.length > MaxOptOuts) {
      return `disabledTools has ${list.length} entries; an agent has at most ${MaxOptOuts} opt-outs ` +
        "(use mcp__<server>__* for a whole server)"
    }
    for (let i = 0; i < list.length; i++) {
      const item: unknown = list[i]
      if (typeof item === "string" && item.length > MaxOptOutLength) {
        return `disabledTools[${i}] has ${item.length} characters (${
          JSON.stringify(item.slice(0, 40))
        }…); an opt-out has at most ${MaxOptOutLength}`
      }
    }
    return undefined
  } catch {
    return undefined
  }
}

const isPlainObject = (u: unknown): u is Record<string, unknown> => {
  if (typeof u !== "object" || u === null || Array.isArray(u)) return false
  const proto = Object.getPrototypeOf(u)
  return proto === Object.prototype || proto === null
}

// Fast paths for plain, well-formed input: they accept a subset of what the schemas accept and
// build the same value; anything else (including anything that throws) goes to the decoder.
const fastAgent = (u: unknown): Result.Result<AgentToolSettings, never> | undefined => {
  try {
    if (!isPlainObject(u)) return undefined
    const list = u["disabledTools"]
    if (!Array.isArray(list)) return undefined
    const copy: Array<string> = new Array(list.length)
    for (let i = 0; i < list.length; i++) {
      const item: unknown = list[i]
      if (typeof item !== "string") return undefined
      copy[i] = item
    }
    return Result.succeed({ disabledTools: copy })
  } catch {
    return undefined
  }
}

const fastContext = (u: unknown): Result.Result<PolicyContext, never> | undefined => {
  try {
    if (!isPlainObject(u) || typeof u["headless"] !== "boolean" || !isPlainObject(u["conditions"])) return undefined
    const conditions: Record<string, boolean> = {}
    for (const key of Object.keys(u["conditions"])) {
      const value = u["conditions"][key]
      if (typeof value !== "boolean") return undefined
      conditions[key] = value
    }
    const out: { -readonly [K in keyof PolicyContext]: PolicyContext[K] } = { conditions, headless: u["headless"] }
    if ("permissionMode" in u) {
      if (typeof u["permissionMode"] !== "string") return undefined
      out.permissionMode = u["permissionMode"]
    }
    if ("canUseTool" in u) {
      if (typeof u["canUseTool"] !== "boolean") return undefined
      out.canUseTool = u["canUseTool"]
    }
    if ("allowedTools" in u) {
      const names = u["allowedTools"]
      if (!Array.isArray(names) || names.length > 64) return undefined
      const copy: Array<string> = []
      for (const n of names as ReadonlyArray<unknown>) {
        if (typeof n !== "string" || !SdkToolNamePattern.test(n)) return undefined
        copy.push(n)
      }
      out.allowedTools = copy
    }
    if ("mcpServers" in u) {
      const servers = u["mcpServers"]
      if (!Array.isArray(servers)) return undefined
      const copy: Array<string> = []
      for (const s of servers as ReadonlyArray<unknown>) {
        if (typeof s !== "string" || s.length > 64 || !ServerPattern.test(s)) return undefined
        copy.push(s)
      }
      out.mcpServers = copy
    }
    return Result.succeed(out)
  } catch {
    return undefined
  }
}
const ServerPattern = /^[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*$/

/** What the policy reads from a registry, precomputed once per registry. */
interface Plan {
  readonly disabled: ReadonlyArray<string>
  readonly conditional: ReadonlyArray<readonly [name: string, condition: string]>
  readonly interactive: ReadonlyArray<string>
  /** Tools Claude Code asks permission for, and when. */
  readonly asking: ReadonlyArray<readonly [name: string, asks: Headless.Asks]>
  /** Registry MCP tools that are auto-approved when enabled (every exposure but `gated`). */
  readonly mcp: ReadonlyArray<readonly [name: string, server: string, autoApprove: boolean]>
  readonly groups: ReadonlyArray<ReadonlyArray<string>>
  /** Tool → its pair group's members. */
  readonly groupOf: ReadonlyMap<string, ReadonlyArray<string>>
  /** Tools an opt-out can turn off: `user` and `disabled` ones, and members of a group with a `user` member. */
  readonly toggleable: ReadonlySet<string>
  /** Registry MCP servers with at least one tool an opt-out cannot turn off. */
  readonly protectedServers: ReadonlySet<string>
  /** Registry MCP servers with a `gated` tool: never auto-approved as a whole. */
  readonly gatedServers: ReadonlySet<string>
  /** Registry names without `mcp__`: what a mistyped bare name is compared with. */
  readonly builtins: NearestName.NameIndex
  /** {@link nearestBuiltin} by entry. */
  readonly suggestions: Map<string, string | undefined>
  readonly names: ReadonlyArray<string>
  /** {@link baseBlocked} by session shape. */
  readonly base: Map<string, Base>
}

const plans = new WeakMap<Registry.Registry, Plan>()

const planOf = (registry: Registry.Registry): Plan => {
  const cached = plans.get(registry)
  if (cached !== undefined) return cached
  const groups = Array.from(registry.groups.values(), (members) => members.map((m) => m.name))
  const groupOf = new Map<string, ReadonlyArray<string>>()
  for (const members of groups) for (const n of members) groupOf.set(n, members)
  const ds = registry.descriptors
  const toggleable = new Set<string>()
  for (const d of ds) {
    if (d.exposure === "user" || d.exposure === "disabled") toggleable.add(d.name)
    if (d.exposure === "user" && d.pairGroup !== undefined) {
      for (const m of registry.groups.get(d.pairGroup) ?? []) toggleable.add(m.name)
    }
  }
  const protectedServers = new Set<string>()
  for (const d of ds) if (d.mcpServer !== undefined && !toggleable.has(d.name)) protectedServers.add(d.mcpServer)
  const plan: Plan = {
    disabled: ds.filter((d) => d.exposure === "disabled").map((d) => d.name),
    conditional: ds.filter((d) => d.exposure === "conditional").map((d) => [d.name, d.condition!] as const),
    interactive: ds.filter((d) => d.interactive === true).map((d) => d.name),
    asking: ds.flatMap((d) => d.asks === undefined ? [] : [[d.name, d.asks] as const]),
    mcp: ds.filter((d) => d.kind === "mcp").map((d) => [d.name, d.mcpServer!, d.exposure !== "gated"] as const),
    groups,
    groupOf,
    toggleable,
    protectedServers,
    gatedServers: new Set(ds.flatMap((d) => d.exposure === "gated" && d.mcpServer !== undefined ? [d.mcpServer] : [])),
    names: ds.map((d) => d.name),
    builtins: NearestName.make(ds.filter((d) => !d.name.startsWith("mcp__")).map((d) => d.name)),
    suggestions: new Map(),
    base: new Map()
  }
  plans.set(registry, plan)
  return plan
}

const globCache = new Map<string, { readonly full: RegExp; readonly prefix: RegExp; readonly literal: string }>()

/** The CLI's wildcard: `*` matches any run of characters, anywhere in the name. */
const globOf = (pattern: string) => {
  const cached = globCache.get(pattern)
  if (cached !== undefined) return cached
  const body = pattern.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\/-]/g, "\\$&")).join(".*")
  // `prefix` matches when the pattern minus its final `*` matches a prefix of a string, i.e. the
  // pattern covers every name starting with that string (a whole server for `mcp__<server>__`).
  const head = pattern.endsWith("*") ? pattern.slice(0, -1) : undefined
  const prefixBody = head === undefined
    ? "(?!)"
    : head.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\/-]/g, "\\$&")).join(".*")
  const compiled = {
    full: new RegExp(`^${body}$`),
    prefix: new RegExp(`^${prefixBody}`),
    literal: pattern.slice(0, pattern.indexOf("*"))
  }
  if (globCache.size > 1_000) globCache.clear()
  globCache.set(pattern, compiled)
  return compiled
}

const entryCache = new Map<string, { readonly problem: string | undefined; readonly name: string }>()

/** An entry's syntax verdict and its name as the CLI reads it; cached, agents repeat their lists. */
const parseEntry = (entry: string) => {
  const cached = entryCache.get(entry)
  if (cached !== undefined) return cached
  const problem = syntaxError(entry)
  let name = problem === undefined ? runtimeName(entry) : entry
  if (name.startsWith("mcp__") && !name.includes("*") && !name.includes("__", 5)) name = `${name}__*`
  const parsed = { problem, name }
  if (entryCache.size > 10_000) entryCache.clear()
  entryCache.set(entry, parsed)
  return parsed
}

/** `.` and `/` (valid in MCP tool names) as the CLI spells them in runtime names. */
const runtimeName = (entry: string): string =>
  entry.startsWith("mcp__") && /[./]/.test(entry) ? entry.replace(/[./]/g, "_") : entry

/** What {@link baseBlocked} gives: the blocked tools, and the headless session's withheld ones. */
interface Base {
  readonly blocked: ReadonlyArray<string>
  readonly withheld: ReadonlyArray<WithheldTool>
}

const headlessSession = (ctx: PolicyContext): Headless.HeadlessSession => ({
  permissionMode: ctx.permissionMode,
  canUseTool: ctx.canUseTool === true,
  allowed: new Set(ctx.allowedTools ?? [])
})

/**
 * What the registry and the session block before any opt-out (disabled tools, conditions that do
 * not hold, and on a headless turn interactive tools and tools nobody can approve, each of those
 * with its reason), closed over pair groups; cached per registry and session shape, since most
 * agents share a handful of them.
 */
const baseBlocked = (plan: Plan, ctx: PolicyContext): Base => {
  const responderOff = ctx.headless && ctx.permissionMode !== "bypassPermissions"
  const session = headlessSession(ctx)
  let key = ctx.headless ? Headless.sessionKey(session) : "-"
  for (const [, condition] of plan.conditional) key += ctx.conditions[condition] === true ? "1" : "0"
  const cached = plan.base.get(key)
  if (cached !== undefined) return cached
  const blocked = new Set<string>(plan.disabled)
  for (const [name, condition] of plan.conditional) if (ctx.conditions[condition] !== true) blocked.add(name)
  const withheld: Array<WithheldTool> = []
  if (responderOff) {
    for (const name of plan.interactive) {
      if (!blocked.has(name)) {
        withheld.push({ tool: name, reason: Headless.interactiveReason(name, ctx.permissionMode) })
      }
      blocked.add(name)
    }
  }
  if (ctx.headless) {
    for (const [name, asks] of plan.asking) {
      const reason = blocked.has(name) ? undefined : Headless.askingReason(name, asks, session)
      if (reason === undefined) continue
      withheld.push({ tool: name, reason })
      blocked.add(name)
    }
  }
  for (const members of plan.groups) {
    if (members.some((n) => blocked.has(n))) { for (const n of members) blocked.add(n) }
  }
  const base = { blocked: Array.from(blocked), withheld: withheld.sort((a, b) => a.tool < b.tool ? -1 : 1) }
  if (plan.base.size > 1_000) plan.base.clear()
  plan.base.set(key, base)
  return base
}

/** What the opt-outs do, collected entry by entry. */
interface Effects {
  readonly blocked: Set<string>
  /** Entries that go to the disallow-list as written (in the CLI's spelling). */
  readonly passThrough: Set<string>
  readonly serversOff: Set<string>
  readonly ignored: Array<IgnoredOptOut>
}

/** `resolveToolPolicy` for input already typed as the schemas' types (no decoding). */
export const resolveValidated = (
  registry: Registry.Registry,
  agent: AgentToolSettings,
  ctx: PolicyContext
): ToolPolicy => {
  const plan = planOf(registry)
  const base = baseBlocked(plan, ctx)
  const out: Effects = {
    blocked: new Set<string>(base.blocked),
    passThrough: new Set<string>(),
    serversOff: new Set<string>(),
    ignored: []
  }
  const extraServers = ctx.mcpServers ?? []
  for (const entry of agent.disabledTools) applyEntry(registry, plan, extraServers, entry, out)
  const blocked = out.blocked
  // Pair-group atomicity: one blocked member blocks them all, internal members included (the
  // base set is already closed; only groups an opt-out reached need another look).
  if (agent.disabledTools.length > 0) {
    for (const members of plan.groups) {
      if (members.some((n) => blocked.has(n))) { for (const n of members) blocked.add(n) }
    }
  }

  const allowed = new Set<string>()
  const mounted = new Set<string>()
  for (const [name, server, autoApprove] of plan.mcp) {
    if (autoApprove && !blocked.has(name) && !out.serversOff.has(server)) allowed.add(name)
  }
  for (const server of registry.mcpServers) if (!out.serversOff.has(server)) mounted.add(server)
  for (const server of extraServers) {
    if (out.serversOff.has(server)) continue
    mounted.add(server)
    // A server entry would approve its gated tools too; its other known tools are already named.
    if (!plan.gatedServers.has(server)) allowed.add(`mcp__${server}__*`)
  }
  // Built-ins the application auto-approves by name (opt-outs win).
  for (const name of ctx.allowedTools ?? []) if (!blocked.has(name)) allowed.add(name)
  const responder = plan.interactive.filter((n) => !blocked.has(n))
  for (const name of out.passThrough) blocked.add(name)
  return {
    disallowedTools: sorted(blocked),
    allowedTools: sorted(allowed),
    mountedServers: sorted(mounted),
    responderTools: sorted(new Set(responder)),
    ignored: out.ignored,
    withheld: base.withheld
  }
}

const applyEntry = (
  registry: Registry.Registry,
  plan: Plan,
  extraServers: ReadonlyArray<string>,
  entry: string,
  out: Effects
): void => {
  const d = registry.byName.get(entry)
  if (d !== undefined) {
    if (plan.toggleable.has(entry)) out.blocked.add(entry)
    else out.ignored.push(alwaysOn(entry, d.exposure))
    return
  }
  const parsed = parseEntry(entry)
  if (parsed.problem !== undefined) {
    out.ignored.push({ entry, kind: "malformed", message: parsed.problem })
    return
  }
  const name = parsed.name
  if (name.includes("*")) {
    const report = applyWildcard(registry, plan, extraServers, entry, name, out)
    if (report !== undefined) out.ignored.push(report)
    return
  }
  const known = registry.byName.get(name)
  if (known === undefined) {
    // Stricter never hurts: a tool the registry does not know yet stays blocked. A bare name is
    // almost always a typo of a built-in, though, so it is reported too.
    out.passThrough.add(name)
    if (!name.startsWith("mcp__")) out.ignored.push(unknownName(plan, entry))
  } else if (plan.toggleable.has(name)) out.blocked.add(name)
  else out.ignored.push(alwaysOn(entry, known.exposure))
}

/**
 * A `*` entry: the registry tools it covers are blocked as if named. Passed through as written
 * only when it covers no always-on tool; otherwise expanded server by server.
 */
const applyWildcard = (
  registry: Registry.Registry,
  plan: Plan,
  extraServers: ReadonlyArray<string>,
  entry: string,
  name: string,
  out: Effects
): IgnoredOptOut | undefined => {
  const glob = globOf(name)
  const tools: Array<string> = []
  const keptOn: Array<string> = []
  for (const n of plan.names) {
    if (!n.startsWith(glob.literal) || !glob.full.test(n)) continue
    if (plan.toggleable.has(n)) tools.push(n)
    else keptOn.push(n)
  }
  for (const n of tools) out.blocked.add(n)
  const covered = Array.from(new Set([...registry.mcpServers, ...extraServers]))
    .filter((s) => glob.prefix.test(`mcp__${s}__`))
  if (keptOn.length === 0) {
    out.passThrough.add(name)
    for (const s of covered) out.serversOff.add(s)
    return undefined
  }
  const servers = covered.filter((s) => !plan.protectedServers.has(s)).sort()
  for (const s of servers) {
    out.serversOff.add(s)
    out.passThrough.add(`mcp__${s}__*`)
  }
  return wildcardReport(plan, entry, keptOn, tools, servers)
}

/** What an expanded wildcard turned off: every tool (pair groups included) and every server. */
const wildcardReport = (
  plan: Plan,
  entry: string,
  keptOn: ReadonlyArray<string>,
  tools: ReadonlyArray<string>,
  servers: ReadonlyArray<string>
): IgnoredOptOut => {
  const kept = `(${keptOn.join(", ")})`
  if (tools.length === 0 && servers.length === 0) {
    return {
      entry,
      kind: "always-on",
      message: `${entry} only matches tools that are always on ${kept}; it turns nothing off`
    }
  }
  const off = new Set<string>()
  for (const n of tools) for (const m of plan.groupOf.get(n) ?? [n]) off.add(m)
  const whole = servers.length === 0
    ? ""
    : ` and every tool of the server${servers.length === 1 ? "" : "s"} ${servers.join(", ")}, which ${
      servers.length === 1 ? "is" : "are"
    } not mounted`
  const rest = servers.length === 0 ? "tools" : "on other servers, tools"
  return {
    entry,
    kind: "partly-applied",
    message: `${entry} also matches tools that are always on ${kept}; it turns off ${off.size} tool${
      off.size === 1 ? "" : "s"
    } the registry knows${whole}; ${rest} the registry does not know stay on`,
    applied: [...off, ...servers.map((s) => `mcp__${s}__*`)].sort(),
    ...(servers.length === 0 ? {} : { servers })
  }
}

const unknownName = (plan: Plan, entry: string): IgnoredOptOut => {
  const suggestion = nearestBuiltin(plan, entry)
  const what = `${entry} is not a tool the registry knows`
  return suggestion === undefined
    ? { entry, kind: "unknown", message: `${what}; it is passed on as written and turns off only a tool of that name` }
    : {
      entry,
      kind: "unknown",
      message: `${what}: did you mean ${suggestion}?${
        suggestion.toLowerCase() === entry.toLowerCase() ? " Tool names are case-sensitive." : ""
      }`,
      suggestion
    }
}

/** The registry built-in an unknown bare name most likely means (see `NearestName.nearest`), cached. */
const nearestBuiltin = (plan: Plan, entry: string): string | undefined => {
  if (plan.suggestions.has(entry)) return plan.suggestions.get(entry)
  const best = plan.builtins.nearest(entry)
  if (plan.suggestions.size > 1_000) plan.suggestions.clear()
  plan.suggestions.set(entry, best)
  return best
}

const alwaysOn = (entry: string, exposure: string): IgnoredOptOut => ({
  entry,
  kind: "always-on",
  message: `${entry} is ${exposure === "conditional" ? "a conditional" : `an ${exposure}`} tool, which is always ${
    exposure === "conditional" ? "decided by its condition" : "on"
  }; remove it from the opt-outs`
})

/**
 * Checks opt-outs against a registry: the entries `resolveToolPolicy` would not apply at all
 * (`malformed` and `always-on`) and the built-in names it does not know (`unknown`, with a
 * `suggestion` when one is close). A settings store refuses to save these; `partly-applied`
 * wildcards are accepted (they turn off what they may).
 */
export const checkOptOuts = (
  registry: Registry.Registry,
  entries: ReadonlyArray<string>
): ReadonlyArray<IgnoredOptOut> =>
  resolveValidated(registry, { disabledTools: entries }, { conditions: {}, headless: false }).ignored.filter((i) =>
    i.kind !== "partly-applied"
  )

/**
 * `claude` CLI arguments. Each list is one comma-joined argument, so a following positional
 * (the prompt) cannot be swallowed by the variadic flag; empty lists are omitted.
 */
export const toCliFlags = (policy: ToolPolicy): ReadonlyArray<string> => [
  ...(policy.disallowedTools.length > 0 ? ["--disallowedTools", policy.disallowedTools.join(",")] : []),
  ...(policy.allowedTools.length > 0 ? ["--allowedTools", policy.allowedTools.join(",")] : [])
]

/**
 * A policy too large for any command line and settings file the CLI accepts. Split the agent's
 * opt-outs with wildcards (`mcp__<server>__*`) instead of naming every tool.
 */
export class PolicyTooLargeError extends Schema.TaggedError<PolicyTooLargeError>()("PolicyTooLargeError", {
  /** Entries in the disallow- and allow-lists. */
  entries: Schema.Number,
  /** Bytes the lists need. */
  bytes: Schema.Number,
  /** Bytes that fit (settings file plus command line). */
  limit: Schema.Number
}) {
  /** Says how large, and what to do. */
  override get message(): string {
    return `The tool policy has ${this.entries} entries (${this.bytes} bytes), more than the ${this.limit} bytes the ` +
      "claude CLI can take in a settings file and on its command line; replace long lists of names with " +
      "wildcards such as mcp__<server>__*"
  }
}

/** Where long lists go; every limit is in bytes. */
export interface ArgvBounds {
  /** Largest single argument (Linux refuses arguments over 128 KiB with E2BIG). Default 96 KiB. */
  readonly argBytes?: number
  /** Largest total of the list arguments on the command line. Default 1 MiB. */
  readonly inlineBytes?: number
  /** Largest settings file (claude 2.1.332 refuses files over 2 MiB). Default 2,000,000. */
  readonly settingsBytes?: number
}

/** Default {@link ArgvBounds}: 96 KiB per argument, 1 MiB in argv, 2,000,000 bytes in the settings file. */
export const defaultArgvBounds: Required<ArgvBounds> = {
  argBytes: 96 * 1024,
  inlineBytes: 1024 * 1024,
  settingsBytes: 2_000_000
}

/** A policy split between command-line arguments and a `--settings` file. */
export interface BoundedPolicy {
  /** `--disallowedTools` arguments, each at most `argBytes` when joined with commas. */
  readonly disallowedChunks: ReadonlyArray<ReadonlyArray<string>>
  /** The `--allowedTools` list (empty when it went to the settings file). */
  readonly allowedTools: ReadonlyArray<string>
  /** The settings the CLI reads with `--settings <file>` (`permissions.deny`/`allow`), when the lists are long. */
  readonly settings: {
    readonly permissions: { readonly deny: ReadonlyArray<string>; readonly allow: ReadonlyArray<string> }
  } | undefined
}

const joinedBytes = (names: ReadonlyArray<string>): number => {
  let n = names.length === 0 ? 0 : -1
  for (const s of names) n += Buffer.byteLength(s) + 1
  return n
}

/**
 * Keeps the command line bounded however long the policy is: short lists stay arguments; when a
 * list would not fit in one argument, the allow-list and as much of the disallow-list as fits go
 * to a settings file (`permissions.allow` / `permissions.deny`, which the CLI merges with its
 * flags), and the rest of the disallow-list follows in arguments of at most `argBytes`, up to
 * `inlineBytes` in all. With the defaults that is about 3 MB of names (some 150,000 names of 18
 * characters); beyond it a `PolicyTooLargeError`.
 */
export const boundPolicy = (
  policy: ToolPolicy,
  bounds: ArgvBounds = {}
): Result.Result<BoundedPolicy, PolicyTooLargeError> => {
  const { argBytes, inlineBytes, settingsBytes } = { ...defaultArgvBounds, ...bounds }
  const deny = policy.disallowedTools
  const allow = policy.allowedTools
  const chunk = (names: ReadonlyArray<string>, budget: number) => {
    const chunks: Array<Array<string>> = []
    let current: Array<string> = []
    let size = -1
    let total = 0
    for (const name of names) {
      const bytes = Buffer.byteLength(name) + 1
      if (current.length > 0 && size + bytes > argBytes) {
        chunks.push(current)
        current = []
        size = -1
      }
      current.push(name)
      size += bytes
      total += bytes
      if (size > argBytes || total > budget) return undefined
    }
    if (current.length > 0) chunks.push(current)
    return chunks
  }
  if (joinedBytes(deny) <= argBytes && joinedBytes(allow) <= argBytes) {
    return Result.succeed({ disallowedChunks: deny.length > 0 ? [deny] : [], allowedTools: allow, settings: undefined })
  }
  const tooLarge = () =>
    Result.fail(
      new PolicyTooLargeError({
        entries: deny.length + allow.length,
        bytes: joinedBytes(deny) + joinedBytes(allow),
        limit: settingsBytes + inlineBytes
      })
    )
  // JSON overhead: the envelope, quotes, commas and escapes (names are plain ASCII after validation).
  let used = 64 + joinedBytes(allow) + 2 * allow.length
  if (used > settingsBytes) return tooLarge()
  let inFile = 0
  while (inFile < deny.length) {
    const bytes = JSON.stringify(deny[inFile]).length + 1
    if (used + bytes > settingsBytes) break
    used += bytes
    inFile++
  }
  const rest = chunk(deny.slice(inFile), inlineBytes)
  if (rest === undefined) return tooLarge()
  return Result.succeed({
    disallowedChunks: rest,
    allowedTools: [],
    settings: { permissions: { deny: deny.slice(0, inFile), allow } }
  })
}

/** The CLI arguments of a bounded policy; `settingsPath` is where its `settings` were written. */
export const toBoundedCliFlags = (bounded: BoundedPolicy, settingsPath: string | undefined): ReadonlyArray<string> => [
  ...(settingsPath === undefined ? [] : ["--settings", settingsPath]),
  ...bounded.disallowedChunks.flatMap((names) => ["--disallowedTools", names.join(",")]),
  ...(bounded.allowedTools.length > 0 ? ["--allowedTools", bounded.allowedTools.join(",")] : [])
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
