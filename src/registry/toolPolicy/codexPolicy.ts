/**
 * The tool policy compiled to Codex CLI's own controls: `--disable <feature>` for the built-ins it
 * turns off, `-c` overrides for web search, the sandbox, the approval policy and the MCP servers'
 * `enabled_tools`/`disabled_tools`/approval modes. Pure: the same input a Claude provider's
 * `toolPolicy` option and `toGeminiPolicy` take (opt-outs in any CLI's tool names), resolved
 * against the Codex CLI catalog, and plain data out. Re-exported by `registry/ToolPolicy.ts`.
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as CodexCliCatalog from "../CodexCliCatalog.ts"
import type * as Registry from "../Registry.ts"
import { InvalidSettings, StrictRefusal } from "./geminiPolicy.ts"
import type { IgnoredOptOut, PermissionMode, ToolPolicy, WithheldTool } from "./model.ts"
import * as OtherCliNames from "./otherCliNames.ts"

/**
 * The agent's side: the shape of `ClaudeLocal`'s `toolPolicy` option, so one object configures
 * every CLI. Opt-outs and `allowedTools` may name Claude Code tools (`Bash`, `Edit`): each stands
 * for its Codex CLI equivalents (`CodexCliCatalog.claudeEquivalents`).
 *
 * @category models
 * @since 2.2.0
 */
export interface CodexPolicyInput {
  /**
   * A Codex CLI registry (`CodexCliCatalog.makeRegistry`), or any registry (the Claude one the
   * same settings use): then only its MCP descriptors are taken, with the Codex CLI catalog.
   * Default: the Codex CLI catalog.
   */
  readonly registry?: Registry.Registry | undefined
  /** The agent's opt-outs, in any CLI's names (empty: everything the registry exposes). */
  readonly disabledTools?: ReadonlyArray<string> | undefined
  /** Condition values; a missing condition counts as false. */
  readonly conditions?: Readonly<Record<string, boolean>> | undefined
  /** Built-in tools to run without confirmation, in any CLI's names. */
  readonly allowedTools?: ReadonlyArray<string> | undefined
  /** `true`: anything in `ignored` is a `CodexPolicyError` instead of a report. */
  readonly strict?: boolean | undefined
}

/**
 * The run's side.
 *
 * @category models
 * @since 2.2.0
 */
export interface CodexSession {
  /** Servers mounted besides the registry's (the bridge, `gtb`): their tools are approved as a whole. */
  readonly mcpServers?: ReadonlyArray<string> | undefined
  /** Read as for Claude Code: `acceptEdits` lets `apply_patch` run, `bypassPermissions` everything. */
  readonly permissionMode?: PermissionMode | undefined
  /** The application answers approvals (`codex app-server` requests). */
  readonly canUseTool?: boolean | undefined
  /** Default `true` (`codex exec`): approval policy `never`, tools that ask withheld. */
  readonly headless?: boolean | undefined
}

/**
 * One MCP server's policy keys, as Codex reads them under `mcp_servers.<name>`.
 *
 * @category models
 * @since 2.2.0
 */
export interface CodexMcpServerPolicy {
  /** `false`: the server is not mounted (a wildcard turned all of it off). */
  readonly enabled?: boolean
  /** Registry servers: their known, enabled tools (the rest stays out). */
  readonly enabled_tools?: ReadonlyArray<string>
  /** The opted-out tools. */
  readonly disabled_tools?: ReadonlyArray<string>
  /** `approve` for a server approved as a whole; `prompt` (refused by `codex exec`) otherwise. */
  readonly default_tools_approval_mode: "approve" | "prompt"
  /** Per tool: `approve` for allowed tools, `prompt` for gated ones (the application decides). */
  readonly tools?: Readonly<Record<string, { readonly approval_mode: "approve" | "prompt" }>>
}

/**
 * An opt-out the compile reports: the policy's own reports (with the entry as the agent wrote
 * it), and `inexpressible` for what Codex's controls cannot say (a partial wildcard over a
 * mounted server's tools; a built-in no switch removes).
 *
 * @category models
 * @since 2.2.0
 */
export interface CodexIgnored extends Omit<IgnoredOptOut, "kind"> {
  readonly kind: IgnoredOptOut["kind"] | "inexpressible"
}

/**
 * Codex CLI's inputs for the policy: pass `args` to `codex exec` / `codex app-server` (after the
 * provider's own `-c mcp_servers.<bridge>.url=…`), or read the parts.
 *
 * @category models
 * @since 2.2.0
 */
export interface CodexPolicy {
  /** `--disable <feature>` for each, sorted. */
  readonly disabledFeatures: ReadonlyArray<string>
  /** `read-only` when `apply_patch` is blocked (no switch removes it; the sandbox refuses its writes). */
  readonly sandboxMode: "read-only" | "workspace-write"
  /** `never` on a headless run (`codex exec`), `on-request` when the application answers approvals. */
  readonly approvalPolicy: "never" | "on-request"
  /** `disabled` unless the policy lets `web_search` run (`live`). */
  readonly webSearch: "disabled" | "live"
  /** Per mounted (or explicitly unmounted) server. */
  readonly mcpServers: Readonly<Record<string, CodexMcpServerPolicy>>
  /** The `-c key=value` overrides (values in TOML), in a stable order. */
  readonly config: ReadonlyArray<string>
  /** `--disable …` and `-c …`, ready for the command line. */
  readonly args: ReadonlyArray<string>
  /**
   * The same, as `CodexCli`'s options take them: spread into its `Options`
   * (`CodexCli.layer({ ...policy.cliOptions, … })`).
   */
  readonly cliOptions: {
    readonly disabledFeatures: ReadonlyArray<string>
    readonly sandbox: "read-only" | "workspace-write"
    /** `-c` overrides without the sandbox (`sandbox` says it): key → TOML value. */
    readonly config: Readonly<Record<string, string>>
  }
  /** Built-ins the model is offered, sorted. */
  readonly offeredTools: ReadonlyArray<string>
  /** Built-ins taken out of the request, sorted. */
  readonly deniedTools: ReadonlyArray<string>
  /** Built-ins left in the request whose effect the sandbox refuses (`apply_patch` when blocked). */
  readonly sandboxedTools: ReadonlyArray<string>
  /** See {@link CodexIgnored}; empty when every opt-out was applied as written. */
  readonly ignored: ReadonlyArray<CodexIgnored>
  /** Tools a headless run withholds, with why (the policy's `withheld`). */
  readonly withheld: ReadonlyArray<WithheldTool>
  /** The resolved policy, in Codex CLI names. */
  readonly policy: ToolPolicy
}

/**
 * The policy could not be compiled for Codex CLI (the same reasons as `GeminiPolicyError`:
 * `InvalidSettings`, `StrictRefusal`).
 *
 * @category errors
 * @since 2.2.0
 */
export class CodexPolicyError extends Schema.TaggedError<CodexPolicyError>()("CodexPolicyError", {
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

const fail = (reason: InvalidSettings | StrictRefusal) => Result.fail(new CodexPolicyError({ reason }))

const names = OtherCliNames.makeNames(CodexCliCatalog)

/** A TOML value: names are validated ASCII, and JSON's string escapes are TOML's. */
const toml = (value: unknown): string =>
  Array.isArray(value)
    ? `[${value.map(toml).join(", ")}]`
    : typeof value === "string"
    ? JSON.stringify(value)
    : String(value)

/** A key segment of a dotted `-c` path: bare when TOML allows it, quoted otherwise. */
const key = (segment: string): string => /^[A-Za-z0-9_-]+$/.test(segment) ? segment : JSON.stringify(segment)

/** `ToolPolicy.toCodexPolicy`, with the resolution passed in (`ToolPolicy.ts` re-exports this module). */
export const compile = (
  input: CodexPolicyInput,
  session: CodexSession,
  resolve: OtherCliNames.Resolve
): Result.Result<CodexPolicy, CodexPolicyError> => {
  const resolvedIn = OtherCliNames.resolveIn(names, input, session, resolve)
  if (Result.isFailure(resolvedIn)) return fail(new InvalidSettings({ message: resolvedIn.failure }))
  const { disabled, extra, headless, policy, registry: reg } = resolvedIn.success
  const ignored: Array<CodexIgnored> = [...resolvedIn.success.ignored]
  const blocked = new Set(policy.disallowedTools)
  const builtins = reg.descriptors.filter((d) => d.kind === "sdk")
  const features = new Set(CodexCliCatalog.alwaysDisabledFeatures)
  const denied: Array<string> = []
  const sandboxed: Array<string> = []
  const offered: Array<string> = []
  let webSearch: CodexPolicy["webSearch"] = "live"
  let sandboxMode: CodexPolicy["sandboxMode"] = "workspace-write"
  for (const d of builtins) {
    if (!blocked.has(d.name)) {
      offered.push(d.name)
      continue
    }
    const control = (CodexCliCatalog.controls as Readonly<
      Record<
        string,
        (typeof CodexCliCatalog.controls)[
          CodexCliCatalog.ToolName
        ]
      >
    >)[d.name]
    if (control?.features !== undefined) {
      for (const f of control.features) features.add(f)
      denied.push(d.name)
    } else if (control?.config?.["web_search"] !== undefined) {
      webSearch = "disabled"
      denied.push(d.name)
    } else if (control?.sandbox === "read-only") {
      sandboxMode = "read-only"
      sandboxed.push(d.name)
    } else {
      // A blocked built-in no switch removes (an application registry's own `sdk` entry, or a
      // catalog tool the policy blocks through a pair group): it stays in the request.
      const entry = disabled.origin.get(d.name) ?? d.name
      ignored.push({
        entry,
        kind: "inexpressible",
        message: `${d.name}: no Codex CLI switch removes this built-in; it stays in the model's tool list`
      })
      offered.push(d.name)
    }
  }
  const mcpServers = serverPolicies(reg, policy, blocked, extra, disabled.names)
  for (const entry of input.disabledTools ?? []) {
    const report = inexpressible(entry, policy.mountedServers.filter((s) => extra.includes(s)))
    if (report !== undefined) ignored.push(report)
  }
  if (input.strict === true && ignored.length > 0) {
    return fail(
      new StrictRefusal({
        entries: ignored.map((i) => i.entry),
        message: `toolPolicy.strict: ${ignored.length} opt-out${
          ignored.length === 1 ? "" : "s"
        } cannot be applied to Codex CLI as written: ${ignored.map((i) => i.message).join("; ")}`
      })
    )
  }
  const approvalPolicy = !headless && session.canUseTool === true ? "on-request" : "never"
  const config = [
    `web_search=${toml(webSearch)}`,
    `sandbox_mode=${toml(sandboxMode)}`,
    `approval_policy=${toml(approvalPolicy)}`,
    ...Object.entries(mcpServers).flatMap(([server, p]) => serverConfig(server, p))
  ]
  const disabledFeatures = [...features].sort()
  return Result.succeed({
    disabledFeatures,
    sandboxMode,
    approvalPolicy,
    webSearch,
    mcpServers,
    config,
    args: [...disabledFeatures.flatMap((f) => ["--disable", f]), ...config.flatMap((c) => ["-c", c])],
    cliOptions: {
      disabledFeatures,
      sandbox: sandboxMode,
      config: Object.fromEntries(
        config.filter((c) => !c.startsWith("sandbox_mode=")).map((c) => {
          const at = c.indexOf("=")
          return [c.slice(0, at), c.slice(at + 1)]
        })
      )
    },
    offeredTools: offered.sort(),
    deniedTools: denied.sort(),
    sandboxedTools: sandboxed.sort(),
    ignored,
    withheld: policy.withheld,
    policy
  })
}

/** One server's keys as `-c` overrides. */
const serverConfig = (server: string, p: CodexMcpServerPolicy): ReadonlyArray<string> => {
  const at = `mcp_servers.${key(server)}`
  if (p.enabled === false) return [`${at}.enabled=false`]
  return [
    ...(p.enabled_tools === undefined ? [] : [`${at}.enabled_tools=${toml(p.enabled_tools)}`]),
    ...(p.disabled_tools === undefined ? [] : [`${at}.disabled_tools=${toml(p.disabled_tools)}`]),
    `${at}.default_tools_approval_mode=${toml(p.default_tools_approval_mode)}`,
    ...Object.entries(p.tools ?? {}).map(([tool, t]) =>
      `${at}.tools.${key(tool)}.approval_mode=${toml(t.approval_mode)}`
    )
  ]
}

/**
 * Per server: the registry's servers list their known, enabled tools (`enabled_tools`) and
 * approve them one by one; an extra server (the bridge) is approved as a whole unless the
 * registry gates one of its tools (then tool by tool, and tools it does not know are left to
 * `prompt`: fail closed); opted-out tools go to `disabled_tools`; a server a wildcard turned off
 * entirely is `enabled = false`.
 */
const serverPolicies = (
  reg: Registry.Registry,
  policy: ToolPolicy,
  blocked: ReadonlySet<string>,
  extra: ReadonlyArray<string>,
  optOuts: ReadonlyArray<string>
): Record<string, CodexMcpServerPolicy> => {
  const mounted = new Set(policy.mountedServers)
  const out: Record<string, CodexMcpServerPolicy> = {}
  const servers = [...new Set([...reg.mcpServers, ...extra])].sort()
  for (const server of servers) {
    if (!mounted.has(server)) {
      out[server] = { enabled: false, default_tools_approval_mode: "prompt" }
      continue
    }
    const known = reg.descriptors.filter((d) => d.kind === "mcp" && d.mcpServer === server)
    const gated = known.some((d) => d.exposure === "gated")
    const off = new Set<string>()
    const tools: Record<string, { approval_mode: "approve" | "prompt" }> = {}
    const on: Array<string> = []
    for (const d of known) {
      const wire = d.mcpWireName!
      if (blocked.has(d.name)) off.add(wire)
      else {
        on.push(wire)
        if (d.exposure === "gated") tools[wire] = { approval_mode: "prompt" }
        else if (!extra.includes(server) || gated) tools[wire] = { approval_mode: "approve" }
      }
    }
    // Opt-outs of tools the registry does not know (`mcp__gtb__drop_table`): named, so turned off.
    for (const name of [...policy.disallowedTools, ...optOuts]) {
      const m = /^mcp__([A-Za-z0-9_-]+?)__([A-Za-z0-9_-]+)$/.exec(name)
      if (m !== null && m[1] === server) off.add(m[2]!)
    }
    out[server] = {
      ...(extra.includes(server) ? {} : { enabled_tools: on.sort() }),
      ...(off.size === 0 ? {} : { disabled_tools: [...off].sort() }),
      default_tools_approval_mode: extra.includes(server) && !gated ? "approve" : "prompt",
      ...(Object.keys(tools).length === 0 ? {} : { tools: sortedRecord(tools) })
    }
  }
  return out
}

const sortedRecord = <A>(record: Record<string, A>): Record<string, A> =>
  Object.fromEntries(Object.entries(record).sort(([a], [b]) => a < b ? -1 : 1))

/** A partial wildcard over a mounted extra server's tools, which `disabled_tools` (names only) cannot say. */
const inexpressible = (entry: string, extraMounted: ReadonlyArray<string>): CodexIgnored | undefined => {
  if (!entry.startsWith("mcp__") || !entry.includes("*") || entry === "mcp__*") return undefined
  const m = /^mcp__(.+?)__(.*)$/.exec(entry)
  if (m === null || m[2] === "*") return undefined
  const server = OtherCliNames.globOf(m[1]!)
  const hit = extraMounted.filter((s) => server.test(s))
  if (hit.length === 0) return undefined
  return {
    entry,
    kind: "inexpressible",
    message: `${entry}: Codex's disabled_tools lists tool names, not patterns; the registry's tools it matches ` +
      `are turned off, other tools of ${hit.join(", ")} stay on — name them, or use mcp__${hit[0]}__*`
  }
}
