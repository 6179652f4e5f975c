/**
 * The tool policy compiled to Gemini CLI's own controls: a `--policy` TOML file, the bridge
 * entries' `includeTools`/`excludeTools` and `--allowed-mcp-server-names`. Pure: the same input a
 * Claude provider's `toolPolicy` option takes (opt-outs in either CLI's tool names), resolved
 * against the Gemini CLI catalog, and plain data out. Re-exported by `registry/ToolPolicy.ts`.
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Headless from "../../internal/policy/headlessTools.ts"
import * as GeminiCliCatalog from "../GeminiCliCatalog.ts"
import type * as Registry from "../Registry.ts"
import type { ToolDescriptor } from "../ToolDescriptor.ts"
import type { IgnoredOptOut, PermissionMode, ToolPolicy, WithheldTool } from "./model.ts"
import * as OtherCliNames from "./otherCliNames.ts"

/**
 * The agent's side: the shape of `ClaudeLocal`'s `toolPolicy` option, so one object configures
 * both CLIs. Opt-outs and `allowedTools` may name Claude Code tools (`Bash`, `Edit`): each stands
 * for its Gemini CLI equivalents (`GeminiCliCatalog.claudeEquivalents`); a Claude Code tool
 * Gemini CLI has no counterpart of has nothing to turn off there.
 *
 * @category models
 * @since 2.2.0
 */
export interface GeminiPolicyInput {
  /**
   * A Gemini CLI registry (`GeminiCliCatalog.makeRegistry`), or any registry (the Claude one the
   * same settings use): then only its MCP descriptors are taken, with the Gemini CLI catalog.
   * Default: the Gemini CLI catalog.
   */
  readonly registry?: Registry.Registry | undefined
  /** The agent's opt-outs, in either CLI's names (empty: everything the registry exposes). */
  readonly disabledTools?: ReadonlyArray<string> | undefined
  /** Condition values; a missing condition counts as false. */
  readonly conditions?: Readonly<Record<string, boolean>> | undefined
  /** Built-in tools to run without confirmation, in either CLI's names. */
  readonly allowedTools?: ReadonlyArray<string> | undefined
  /** `true`: anything in `ignored` is a `GeminiPolicyError` instead of a report. */
  readonly strict?: boolean | undefined
}

/**
 * The run's side.
 *
 * @category models
 * @since 2.2.0
 */
export interface GeminiSession {
  /** Servers mounted besides the registry's (the bridge, `gtb`): their tools are allowed as a whole. */
  readonly mcpServers?: ReadonlyArray<string> | undefined
  /** Read as for Claude Code: `acceptEdits` runs edits, `bypassPermissions` everything, unconfirmed. */
  readonly permissionMode?: PermissionMode | undefined
  /** The application answers confirmations (ACP permission requests): tools that ask get `ask_user`. */
  readonly canUseTool?: boolean | undefined
  /** Default `true` (`gemini -p`, ACP): interactive tools are denied unless `bypassPermissions`. */
  readonly headless?: boolean | undefined
}

/**
 * One `[[rule]]` of the policy file. `decision: "ask_user"` is a confirmation: `gemini -p` removes
 * such a tool from the model's list, ACP sends the client a permission request.
 *
 * @category models
 * @since 2.2.0
 */
export interface GeminiRule {
  readonly toolName: ReadonlyArray<string>
  readonly mcpName?: string
  readonly decision: "allow" | "deny" | "ask_user"
  readonly priority: number
}

/**
 * An opt-out the compile reports: the policy's own reports (with the entry as the agent wrote
 * it), and `inexpressible` for what Gemini CLI's controls cannot say (a partial wildcard over a
 * mounted server's tools: its policy rules know only `*` and `mcp_<server>_*`).
 *
 * @category models
 * @since 2.2.0
 */
export interface GeminiIgnored extends Omit<IgnoredOptOut, "kind"> {
  readonly kind: IgnoredOptOut["kind"] | "inexpressible"
}

/**
 * Gemini CLI's inputs for the policy: write `policyToml` to a file for `--policy <file>`, merge
 * `mcpServers` into the settings' server entries, pass `--allowed-mcp-server-names` (and mount
 * nothing else).
 *
 * @category models
 * @since 2.2.0
 */
export interface GeminiPolicy {
  /** The rules, highest priority first; deny by default (a last `*` rule). */
  readonly rules: ReadonlyArray<GeminiRule>
  /** `rules` as the TOML `--policy` reads. */
  readonly policyToml: string
  /** Per mounted server: `includeTools` (registry servers: their known, enabled tools) and `excludeTools`. */
  readonly mcpServers: Readonly<
    Record<string, { readonly includeTools?: ReadonlyArray<string>; readonly excludeTools?: ReadonlyArray<string> }>
  >
  /** `--allowed-mcp-server-names`: the servers to mount, sorted. */
  readonly allowedMcpServerNames: ReadonlyArray<string>
  /** Built-ins the model is offered (allowed or, with `canUseTool`, confirmed), sorted. */
  readonly offeredTools: ReadonlyArray<string>
  /** Built-ins denied, sorted. */
  readonly deniedTools: ReadonlyArray<string>
  /** See {@link GeminiIgnored}; empty when every opt-out was applied as written. */
  readonly ignored: ReadonlyArray<GeminiIgnored>
  /** Tools a headless run withholds, with why (the policy's `withheld`). */
  readonly withheld: ReadonlyArray<WithheldTool>
  /** The resolved policy the rules were built from, in Gemini CLI names. */
  readonly policy: ToolPolicy
}

/**
 * The settings could not be read (not shaped like the policy's input).
 *
 * @category errors
 * @since 2.2.0
 */
export class InvalidSettings extends Schema.TaggedError<InvalidSettings>(
  "effect-chat-bridge/GeminiPolicyError/InvalidSettings"
)("InvalidSettings", { message: Schema.String }) {
  /** Never retryable: the same settings fail the same way. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * `strict` and an opt-out in `ignored`.
 *
 * @category errors
 * @since 2.2.0
 */
export class StrictRefusal extends Schema.TaggedError<StrictRefusal>(
  "effect-chat-bridge/GeminiPolicyError/StrictRefusal"
)("StrictRefusal", { entries: Schema.Array(Schema.String), message: Schema.String }) {
  /** Never retryable: the same settings fail the same way. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The policy could not be compiled for Gemini CLI.
 *
 * @category errors
 * @since 2.2.0
 */
export class GeminiPolicyError extends Schema.TaggedError<GeminiPolicyError>()("GeminiPolicyError", {
  reason: Schema.Union([InvalidSettings, StrictRefusal])
}) {
  /** The reason's message. */
  override get message(): string {
    return this.reason.message
  }
  /** The reason's verdict. */
  get isRetryable(): boolean {
    return this.reason.isRetryable
  }
}

const fail = (reason: InvalidSettings | StrictRefusal) => Result.fail(new GeminiPolicyError({ reason }))

const names = OtherCliNames.makeNames(GeminiCliCatalog)

const priority = { deny: 900, tool: 500, server: 100, fallback: 0 } as const

/** `ToolPolicy.toGeminiPolicy`, with the resolution passed in (`ToolPolicy.ts` re-exports this module). */
export const compile = (
  input: GeminiPolicyInput,
  session: GeminiSession,
  resolve: OtherCliNames.Resolve
): Result.Result<GeminiPolicy, GeminiPolicyError> => {
  const resolvedIn = OtherCliNames.resolveIn(names, input, session, resolve)
  if (Result.isFailure(resolvedIn)) return fail(new InvalidSettings({ message: resolvedIn.failure }))
  const { allowed, extra, policy, registry: reg } = resolvedIn.success
  const ignored: Array<GeminiIgnored> = [...resolvedIn.success.ignored]
  const blocked = new Set(policy.disallowedTools)
  const mounted = new Set(policy.mountedServers)
  const rules: Array<GeminiRule> = []
  const rule = (decision: GeminiRule["decision"], p: number, toolName: ReadonlyArray<string>, mcpName?: string) => {
    if (toolName.length > 0) {
      rules.push({ toolName, ...(mcpName === undefined ? {} : { mcpName }), decision, priority: p })
    }
  }
  const approved = {
    permissionMode: session.permissionMode,
    canUseTool: false,
    allowed: new Set(allowed)
  }
  const builtins = reg.descriptors.filter((d) => d.kind === "sdk")
  const decisionOf = (d: ToolDescriptor): GeminiRule["decision"] =>
    blocked.has(d.name)
      ? "deny"
      : d.asks !== undefined && Headless.askingReason(d.name, d.asks, approved) !== undefined
      ? "ask_user"
      : "allow"
  const denied = builtins.filter((d) => decisionOf(d) === "deny").map((d) => d.name).sort()
  const asked = builtins.filter((d) => decisionOf(d) === "ask_user").map((d) => d.name).sort()
  const allowedBuiltins = builtins.filter((d) => decisionOf(d) === "allow").map((d) => d.name).sort()
  rule("deny", priority.deny, denied)
  // MCP tools: by name for the registry's servers; the extra servers as a whole, under the denials.
  const servers = new Map<string, { include: Array<string>; exclude: Array<string> }>()
  const serverOf = (s: string) => {
    const existing = servers.get(s)
    if (existing !== undefined) return existing
    const created = { include: [], exclude: [] }
    servers.set(s, created)
    return created
  }
  const mcpAllow = new Map<string, Array<string>>()
  const mcpAsk = new Map<string, Array<string>>()
  for (const d of reg.descriptors) {
    if (d.kind !== "mcp") continue
    const s = d.mcpServer!
    const w = d.mcpWireName!
    if (blocked.has(d.name) || !mounted.has(s)) {
      if (mounted.has(s)) serverOf(s).exclude.push(w)
      rule("deny", priority.deny, [w], s)
      continue
    }
    if (!extra.includes(s)) serverOf(s).include.push(w)
    const target = d.exposure === "gated" ? mcpAsk : mcpAllow
    target.set(s, [...(target.get(s) ?? []), w])
  }
  for (const name of policy.disallowedTools) {
    const m = /^mcp__([A-Za-z0-9_-]+?)__(.+)$/.exec(name)
    if (name === "mcp__*") rule("deny", priority.deny, ["*"], "*")
    else if (m !== null && !reg.byName.has(name)) {
      const [, s, w] = m as unknown as [string, string, string]
      if (w === "*") rule("deny", priority.deny, ["*"], s)
      else if (!w.includes("*") && !s.includes("*")) {
        if (mounted.has(s)) serverOf(s).exclude.push(w)
        rule("deny", priority.deny, [w], s)
      }
    }
  }
  for (const entry of input.disabledTools ?? []) {
    const report = inexpressible(entry, [...mounted].filter((s) => extra.includes(s)))
    if (report !== undefined) ignored.push(report)
  }
  for (const [s, ws] of mcpAsk) rule("ask_user", priority.tool, ws, s)
  for (const [s, ws] of mcpAllow) rule("allow", priority.tool, ws, s)
  rule("ask_user", priority.tool, asked)
  rule("allow", priority.tool, allowedBuiltins)
  for (const s of [...mounted].sort()) {
    if (extra.includes(s) && !reg.descriptors.some((d) => d.mcpServer === s && d.exposure === "gated")) {
      rule("allow", priority.server, ["*"], s)
    }
  }
  rule("deny", priority.fallback, ["*"])
  if (input.strict === true && ignored.length > 0) {
    return fail(
      new StrictRefusal({
        entries: ignored.map((i) => i.entry),
        message: `toolPolicy.strict: ${ignored.length} opt-out${
          ignored.length === 1 ? "" : "s"
        } cannot be applied to Gemini CLI as written: ${ignored.map((i) => i.message).join("; ")}`
      })
    )
  }
  const mcpServers: Record<string, { includeTools?: ReadonlyArray<string>; excludeTools?: ReadonlyArray<string> }> = {}
  for (const [s, { exclude, include }] of [...servers].sort(([a], [b]) => a < b ? -1 : 1)) {
    if (!mounted.has(s)) continue
    mcpServers[s] = {
      ...(include.length === 0 ? {} : { includeTools: [...new Set(include)].sort() }),
      ...(exclude.length === 0 ? {} : { excludeTools: [...new Set(exclude)].sort() })
    }
  }
  return Result.succeed({
    rules,
    policyToml: toToml(rules),
    mcpServers,
    allowedMcpServerNames: [...mounted].sort(),
    offeredTools: [...allowedBuiltins, ...asked].sort(),
    deniedTools: denied,
    ignored,
    withheld: policy.withheld,
    policy
  })
}

/** A partial wildcard over a mounted extra server's tools, which no Gemini rule can say. */
const inexpressible = (entry: string, extraMounted: ReadonlyArray<string>): GeminiIgnored | undefined => {
  if (!entry.startsWith("mcp__") || !entry.includes("*") || entry === "mcp__*") return undefined
  const m = /^mcp__(.+?)__(.*)$/.exec(entry)
  if (m === null || m[2] === "*") return undefined
  const server = OtherCliNames.globOf(m[1]!)
  const hit = extraMounted.filter((s) => server.test(s))
  if (hit.length === 0) return undefined
  return {
    entry,
    kind: "inexpressible",
    message: `${entry}: Gemini CLI's policy rules match a whole server or one tool, not part of a name; the ` +
      `registry's tools it matches are denied, other tools of ${hit.join(", ")} stay on — name them, or use mcp__${
        hit[0]
      }__*`
  }
}

/** A TOML basic string: names are validated ASCII, and JSON's escapes are TOML's. */
const str = (s: string): string => JSON.stringify(s)

/**
 * The rules as a policy file.
 *
 * @category utils
 * @since 2.2.0
 */
export const toToml = (rules: ReadonlyArray<GeminiRule>): string =>
  [
    "# Generated by effect-chat-bridge from a tool policy (ToolPolicy.toGeminiPolicy); do not edit.",
    ...rules.map((r) =>
      [
        "",
        "[[rule]]",
        ...(r.mcpName === undefined ? [] : [`mcpName = ${str(r.mcpName)}`]),
        `toolName = ${r.toolName.length === 1 ? str(r.toolName[0]!) : `[${r.toolName.map(str).join(", ")}]`}`,
        `decision = ${str(r.decision)}`,
        `priority = ${r.priority}`
      ].join("\n")
    ),
    ""
  ].join("\n")
