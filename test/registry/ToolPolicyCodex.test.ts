import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as fc from "fast-check"
import * as ClaudeCodeCatalog from "../../src/registry/ClaudeCodeCatalog.ts"
import * as CodexCliCatalog from "../../src/registry/CodexCliCatalog.ts"
import * as Registry from "../../src/registry/Registry.ts"
import * as ToolPolicy from "../../src/registry/ToolPolicy.ts"

const claudeRegistry = Registry.unsafeMake([
  ...ClaudeCodeCatalog.descriptors,
  Registry.mcpTool({ server: "crm", wireName: "lookup", category: "search" }),
  Registry.mcpTool({ server: "crm", wireName: "drop", category: "search" }),
  Registry.mcpTool({ server: "crm", wireName: "approve", category: "search", exposure: "gated" })
])

const compile = (input: ToolPolicy.CodexPolicyInput, session: ToolPolicy.CodexSession = { mcpServers: ["gtb"] }) => {
  const result = ToolPolicy.toCodexPolicy(input, session)
  if (Result.isFailure(result)) throw result.failure
  return result.success
}

/** The `-c` values of a policy's argv, keyed by their dotted path. */
const overrides = (p: ToolPolicy.CodexPolicy) => {
  const out: Record<string, string> = {}
  for (let i = 0; i < p.args.length; i++) {
    if (p.args[i] !== "-c") continue
    const [k, ...v] = p.args[i + 1]!.split("=")
    out[k!] = v.join("=")
  }
  return out
}
const disables = (p: ToolPolicy.CodexPolicy) => p.args.filter((_, i) => p.args[i - 1] === "--disable")

describe("ToolPolicy.toCodexPolicy", () => {
  it("with no opt-outs on exec: shell withheld, apply_patch sandboxed, web search off, the bridge approved", () => {
    const p = compile({})
    expect(p.deniedTools).toEqual(expect.arrayContaining(["exec_command", "write_stdin", "web_search"]))
    expect(p.sandboxedTools).toEqual(["apply_patch"])
    expect(p.offeredTools).toEqual(expect.arrayContaining(["view_image", "request_user_input", "spawn_agent"]))
    expect(disables(p)).toEqual(p.disabledFeatures)
    expect(p.disabledFeatures).toEqual(expect.arrayContaining(["shell_tool", "unified_exec", "apps", "plugins"]))
    expect(p.disabledFeatures).not.toContain("view_image")
    expect(overrides(p)).toEqual({
      web_search: "\"disabled\"",
      sandbox_mode: "\"read-only\"",
      approval_policy: "\"never\"",
      "mcp_servers.gtb.default_tools_approval_mode": "\"approve\""
    })
    expect(p.withheld.map((w) => w.tool)).toEqual(["apply_patch", "exec_command"])
    expect(p.ignored).toEqual([])
    // The same for CodexCli's options: the sandbox as its own option, the rest as `config`.
    expect(p.cliOptions).toEqual({
      disabledFeatures: p.disabledFeatures,
      sandbox: "read-only",
      config: {
        web_search: "\"disabled\"",
        approval_policy: "\"never\"",
        "mcp_servers.gtb.default_tools_approval_mode": "\"approve\""
      }
    })
  })

  it("Claude Code names in opt-outs and allowedTools stand for their Codex equivalents; the bridge's opt-outs are disabled_tools", () => {
    const p = compile({
      disabledTools: ["Read", "NotebookEdit", "mcp__gtb__delete_row"],
      allowedTools: ["Bash", "Edit"]
    })
    expect(p.offeredTools).toEqual(expect.arrayContaining(["exec_command", "write_stdin", "apply_patch"]))
    expect(p.deniedTools).toContain("view_image")
    expect(p.disabledFeatures).toContain("view_image")
    expect(p.disabledFeatures).not.toContain("shell_tool")
    expect(p.sandboxMode).toBe("workspace-write")
    expect(p.mcpServers).toEqual({ gtb: { disabled_tools: ["delete_row"], default_tools_approval_mode: "approve" } })
    expect(overrides(p)["mcp_servers.gtb.disabled_tools"]).toBe("[\"delete_row\"]")
    // NotebookEdit has no Codex counterpart: nothing to turn off, nothing to report.
    expect(p.ignored).toEqual([])
    // Codex names work as written, and bypassPermissions runs the shell unasked.
    const q = compile({ disabledTools: ["view_image"] }, { permissionMode: "bypassPermissions" })
    expect(q.deniedTools).toEqual(["request_permissions", "send_message_to_user_async", "view_image", "web_search"])
    expect(q.sandboxMode).toBe("workspace-write")
  })

  it("a registry's MCP server: known tools enabled and approved one by one, gated ones left to prompt, opted-out ones disabled", () => {
    const p = compile({ registry: claudeRegistry, disabledTools: ["mcp__crm__drop"] }, {})
    expect(p.mcpServers["crm"]).toEqual({
      enabled_tools: ["approve", "lookup"],
      disabled_tools: ["drop"],
      default_tools_approval_mode: "prompt",
      tools: { approve: { approval_mode: "prompt" }, lookup: { approval_mode: "approve" } }
    })
    expect(overrides(p)).toMatchObject({
      "mcp_servers.crm.enabled_tools": "[\"approve\", \"lookup\"]",
      "mcp_servers.crm.tools.approve.approval_mode": "\"prompt\"",
      "mcp_servers.crm.tools.lookup.approval_mode": "\"approve\""
    })
    // A wildcard over a server keeps its gated (always-on) tool; over the bridge it unmounts it.
    const partly = compile({ registry: claudeRegistry, disabledTools: ["mcp__crm__*"] }, {})
    expect(partly.mcpServers["crm"]).toMatchObject({ enabled_tools: ["approve"], disabled_tools: ["drop", "lookup"] })
    const off = compile({ disabledTools: ["mcp__gtb__*"] })
    expect(off.mcpServers["gtb"]).toEqual({ enabled: false, default_tools_approval_mode: "prompt" })
    expect(overrides(off)["mcp_servers.gtb.enabled"]).toBe("false")
  })

  it("a partial wildcard over the bridge is inexpressible: reported, and a StrictRefusal under strict", () => {
    const p = compile({ disabledTools: ["mcp__gtb__read_*"] })
    expect(p.ignored).toMatchObject([{ entry: "mcp__gtb__read_*", kind: "inexpressible" }])
    const strict = ToolPolicy.toCodexPolicy({ disabledTools: ["mcp__gtb__read_*"], strict: true }, {
      mcpServers: ["gtb"]
    })
    expect(Result.isFailure(strict) && strict.failure.reason._tag).toBe("StrictRefusal")
    expect(Result.isFailure(strict) && strict.failure.message).toMatch(/cannot be applied to Codex CLI/)
    // An always-on tool named in the opt-outs is the policy's own report, with the entry as written.
    expect(compile({ disabledTools: ["AskUserQuestion"] }).ignored).toMatchObject([
      { entry: "AskUserQuestion", kind: "always-on" }
    ])
  })

  it.effect("invalid settings are a CodexPolicyError with catchReason", () =>
    Effect.gen(function*() {
      const bad = ToolPolicy.toCodexPolicy({ disabledTools: [1 as unknown as string] }, {})
      const reason = yield* Effect.fromResult(bad).pipe(
        Effect.catchReason("CodexPolicyError", "InvalidSettings", (r) => Effect.succeed(r.message)),
        Effect.map(String)
      )
      expect(reason).toMatch(/Expected string/)
    }))

  it("an app-server run whose application answers approvals asks instead of never", () => {
    const p = compile({}, { headless: false, canUseTool: true, mcpServers: ["gtb"] })
    expect(p.approvalPolicy).toBe("on-request")
    expect(p.offeredTools).toContain("exec_command")
  })

  it("property: every catalog built-in is offered, denied by a switch or sandboxed, as the policy says", () => {
    const names = CodexCliCatalog.descriptors.map((d) => d.name as string)
    const claude = ClaudeCodeCatalog.descriptors.map((d) => d.name as string)
    const switches = new Set([
      ...CodexCliCatalog.alwaysDisabledFeatures,
      ...Object.values(CodexCliCatalog.controls).flatMap((c) => c?.features ?? [])
    ])
    fc.assert(
      fc.property(
        fc.subarray([...names, ...claude]),
        fc.subarray(["Bash", "Edit", "exec_command", "view_image"]),
        fc.constantFrom(undefined, "default", "acceptEdits", "bypassPermissions"),
        (disabledTools, allowedTools, permissionMode) => {
          const p = compile({ disabledTools, allowedTools }, { mcpServers: ["gtb"], permissionMode })
          const all = [...p.offeredTools, ...p.deniedTools, ...p.sandboxedTools]
          expect([...all].sort()).toEqual([...names].sort())
          const blocked = new Set(p.policy.disallowedTools)
          for (const n of names) expect(p.offeredTools.includes(n), n).toBe(!blocked.has(n))
          for (const f of p.disabledFeatures) expect(switches.has(f), f).toBe(true)
          for (const f of CodexCliCatalog.alwaysDisabledFeatures) expect(p.disabledFeatures).toContain(f)
          expect(p.sandboxMode === "read-only").toBe(p.sandboxedTools.includes("apply_patch"))
          expect(p.webSearch === "disabled").toBe(p.deniedTools.includes("web_search"))
          for (const entry of [...disabledTools, ...CodexCliCatalog.fromClaudeNames(disabledTools)]) {
            const d = CodexCliCatalog.registry.byName.get(entry)
            if (d !== undefined && d.exposure === "user") expect(p.offeredTools, entry).not.toContain(entry)
          }
          expect(p.ignored.filter((i) => i.kind === "inexpressible")).toEqual([])
          expect(compile({ disabledTools, allowedTools }, { mcpServers: ["gtb"], permissionMode }).args).toEqual(p.args)
        }
      ),
      { numRuns: 200 }
    )
  })
})
