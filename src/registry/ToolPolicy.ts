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
import type * as Registry from "./Registry.ts"
import { SdkToolNamePattern } from "./ToolDescriptor.ts"
import * as CodexPolicy from "./toolPolicy/codexPolicy.ts"
import * as GeminiPolicy from "./toolPolicy/geminiPolicy.ts"
import { alwaysOn, unknownName, wildcardReport } from "./toolPolicy/ignored.ts"
import {
  AgentToolSettings,
  type IgnoredOptOut,
  MaxOptOutLength,
  MaxOptOuts,
  PermissionMode,
  PolicyContext,
  syntaxError,
  type ToolPolicy,
  type WithheldTool
} from "./toolPolicy/model.ts"
import { type Base, type Plan, planOf } from "./toolPolicy/plan.ts"

export {
  boundPolicy,
  defaultArgvBounds,
  PolicyTooLargeError,
  toBoundedCliFlags,
  toCliFlags
} from "./toolPolicy/cliFlags.ts"
export type { ArgvBounds, BoundedPolicy } from "./toolPolicy/cliFlags.ts"
export { CodexPolicyError } from "./toolPolicy/codexPolicy.ts"
export type {
  CodexIgnored,
  CodexMcpServerPolicy,
  CodexPolicy,
  CodexPolicyInput,
  CodexSession
} from "./toolPolicy/codexPolicy.ts"
export { GeminiPolicyError, InvalidSettings, StrictRefusal, toToml } from "./toolPolicy/geminiPolicy.ts"
export type {
  GeminiIgnored,
  GeminiPolicy,
  GeminiPolicyInput,
  GeminiRule,
  GeminiSession
} from "./toolPolicy/geminiPolicy.ts"
export {
  AgentSdkPermissionMode,
  AgentToolSettings,
  MaxOptOutLength,
  MaxOptOuts,
  OptOutEntry,
  PermissionMode,
  PolicyContext
} from "./toolPolicy/model.ts"
export type { IgnoredOptOut, ToolPolicy, WithheldTool } from "./toolPolicy/model.ts"
export { headlessDenialReason, toAgentSdkOptions } from "./toolPolicy/sdkOptions.ts"
export type {
  AgentSdkOptions,
  AgentSdkOptionsInput,
  HookCallback,
  HookInput,
  HookOutput
} from "./toolPolicy/sdkOptions.ts"

// `reportInput`: Effect 4's messages leave out the rejected value unless asked ("Expected string,
// got 1" rather than "Expected string"); Effect 3's always had it, and a settings screen needs it.
const decodeAgent = Schema.decodeUnknownExit(AgentToolSettings, { reportInput: true })
const decodeContext = Schema.decodeUnknownExit(PolicyContext, { reportInput: true })
const isPermissionMode = Schema.is(PermissionMode)

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
 * **Details**
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
 * **Example** (The claude -p flags for an agent)
 *
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
 *
 * @category utils
 * @since 1.0.0
 */
export const resolveToolPolicy = (
  registry: Registry.Registry,
  agent: typeof AgentToolSettings.Encoded,
  ctx: typeof PolicyContext.Encoded
): Result.Result<ToolPolicy, Schema.SchemaError> => resolveToolPolicyUnknown(registry, agent, ctx)

/**
 * {@link resolveToolPolicy} for input whose type is not known (a request body, a settings file):
 * the same validation, the same result.
 *
 * @category utils
 * @since 1.0.0
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
 *
 * @category utils
 * @since 1.0.0
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
      // An unknown mode goes to the decoder, whose error lists the modes.
      if (!isPermissionMode(u["permissionMode"])) return undefined
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
  for (const [, condition] of plan.conditional) key += ctx.conditions?.[condition] === true ? "1" : "0"
  const cached = plan.base.get(key)
  if (cached !== undefined) return cached
  const blocked = new Set<string>(plan.disabled)
  for (const [name, condition] of plan.conditional) if (ctx.conditions?.[condition] !== true) blocked.add(name)
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

/**
 * `resolveToolPolicy` for input already typed as the schemas' types (no decoding).
 *
 * @category utils
 * @since 1.0.0
 */
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

/**
 * Checks opt-outs against a registry: the entries `resolveToolPolicy` would not apply at all
 * (`malformed` and `always-on`) and the built-in names it does not know (`unknown`, with a
 * `suggestion` when one is close). A settings store refuses to save these; `partly-applied`
 * wildcards are accepted (they turn off what they may).
 *
 * @category utils
 * @since 1.0.0
 */
export const checkOptOuts = (
  registry: Registry.Registry,
  entries: ReadonlyArray<string>
): ReadonlyArray<IgnoredOptOut> =>
  resolveValidated(registry, { disabledTools: entries }, { conditions: {}, headless: false }).ignored.filter((i) =>
    i.kind !== "partly-applied"
  )

/**
 * Compiles the policy for Gemini CLI: every built-in of the catalog gets a rule (`allow`,
 * `ask_user` for a tool that asks and is not approved, `deny` for what the policy blocks), the
 * registry's MCP tools by name, each extra server (the bridge) as a whole with its opted-out
 * tools denied above it, and a last rule denies everything else — tools the catalog does not know
 * (a newer CLI's) and servers not mounted.
 *
 * **Details**
 *
 * The same rules as the Claude compile (pair groups, conditions, interactive tools on headless
 * runs, tools that ask withheld unless `allowedTools`, `permissionMode` or `canUseTool` lets them
 * run); `ignored` as there, with the entries as written, plus `inexpressible` partial wildcards
 * over a mounted server (a `mcp__gtb__read_*`: the registry tools it matches are denied by name,
 * the server's other tools are not). Wildcards over built-ins lose nothing: the last rule denies
 * what the catalog does not know.
 *
 * **Example** (One agent's settings for Gemini CLI)
 *
 * ```ts
 * import { Result } from "effect"
 * import { ToolPolicy } from "effect-chat-bridge"
 *
 * const gemini = ToolPolicy.toGeminiPolicy({ disabledTools: ["Bash", "mcp__gtb__delete_row"] }, { mcpServers: ["gtb"] })
 * if (Result.isSuccess(gemini)) {
 *   console.log(gemini.success.policyToml) // for --policy <file>
 *   console.log(gemini.success.mcpServers) // { gtb: { excludeTools: ["delete_row"] } }
 * }
 * ```
 *
 * @category utils
 * @since 2.2.0
 */
export const toGeminiPolicy = (
  input: GeminiPolicy.GeminiPolicyInput,
  session: GeminiPolicy.GeminiSession = {}
): Result.Result<GeminiPolicy.GeminiPolicy, GeminiPolicy.GeminiPolicyError> =>
  GeminiPolicy.compile(input, session, resolveToolPolicyUnknown)

/**
 * Compiles the policy for Codex CLI: each built-in the policy blocks is taken out of the request
 * by its switch (`--disable shell_tool unified_exec`, `--disable view_image`, `-c
 * web_search="disabled"`, …; features that bring tools from outside the catalog — connectors,
 * plugins, image generation — are always off), `apply_patch`, which no switch removes, is refused
 * by the `read-only` sandbox, and the MCP servers get `enabled_tools`/`disabled_tools` and
 * approval modes so the allowed tools run under `codex exec` (whose approval policy is `never`).
 *
 * **Details**
 *
 * The same rules as the Claude and Gemini compiles (pair groups, conditions, tools that ask
 * withheld on headless runs unless `allowedTools`, `permissionMode` or `canUseTool` lets them
 * run); `ignored` as there, with the entries as written, plus `inexpressible`: a partial wildcard
 * over a mounted server (`disabled_tools` lists names), a blocked built-in no switch removes.
 *
 * **Gotchas**
 *
 * Codex has no "deny everything else": a built-in a newer CLI adds is on until the catalog knows
 * it (`CodexDriftGuard` says when).
 *
 * **Example** (One agent's settings for Codex CLI)
 *
 * ```ts
 * import { Result } from "effect"
 * import { ToolPolicy } from "effect-chat-bridge"
 *
 * const codex = ToolPolicy.toCodexPolicy({ disabledTools: ["Bash", "mcp__gtb__delete_row"] }, { mcpServers: ["gtb"] })
 * if (Result.isSuccess(codex)) {
 *   console.log(codex.success.args) // ["--disable", "shell_tool", …, "-c", "web_search=\"disabled\"", …]
 *   console.log(codex.success.mcpServers) // { gtb: { disabled_tools: ["delete_row"], default_tools_approval_mode: "approve" } }
 * }
 * ```
 *
 * @category utils
 * @since 2.2.0
 */
export const toCodexPolicy = (
  input: CodexPolicy.CodexPolicyInput,
  session: CodexPolicy.CodexSession = {}
): Result.Result<CodexPolicy.CodexPolicy, CodexPolicy.CodexPolicyError> =>
  CodexPolicy.compile(input, session, resolveToolPolicyUnknown)
