import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as fc from "fast-check"
import * as ClaudeCodeCatalog from "../../src/registry/ClaudeCodeCatalog.ts"
import * as GeminiCliCatalog from "../../src/registry/GeminiCliCatalog.ts"
import * as Registry from "../../src/registry/Registry.ts"
import * as ToolPolicy from "../../src/registry/ToolPolicy.ts"

const claudeRegistry = Registry.unsafeMake([
  ...ClaudeCodeCatalog.descriptors,
  Registry.mcpTool({ server: "crm", wireName: "lookup", category: "search" }),
  Registry.mcpTool({ server: "crm", wireName: "drop", category: "search" }),
  Registry.mcpTool({ server: "crm", wireName: "approve", category: "search", exposure: "gated" })
])

const compile = (input: ToolPolicy.GeminiPolicyInput, session: ToolPolicy.GeminiSession = { mcpServers: ["gtb"] }) => {
  const result = ToolPolicy.toGeminiPolicy(input, session)
  if (Result.isFailure(result)) throw result.failure
  return result.success
}

/** The decision the rules give a call, as Gemini CLI's engine picks it: highest priority first. */
const decide = (policy: ToolPolicy.GeminiPolicy, tool: string, server?: string) => {
  for (const rule of policy.rules) {
    if (rule.mcpName !== undefined && rule.mcpName !== "*" && rule.mcpName !== server) continue
    if (rule.mcpName === "*" && server === undefined) continue
    if (rule.mcpName === undefined && server !== undefined && !rule.toolName.includes("*")) continue
    if (rule.toolName.includes("*") || rule.toolName.includes(tool)) return rule.decision
  }
  return "none"
}

describe("ToolPolicy.toGeminiPolicy", () => {
  it("with no opt-outs: read-only built-ins allowed, tools that ask withheld, the bridge allowed, the rest denied", () => {
    const p = compile({})
    expect(decide(p, "read_file")).toBe("allow")
    expect(decide(p, "glob")).toBe("allow")
    for (const t of ["run_shell_command", "write_file", "replace", "web_fetch", "google_web_search", "ask_user"]) {
      expect(decide(p, t), t).toBe("deny")
    }
    expect(decide(p, "any_tool", "gtb")).toBe("allow")
    expect(decide(p, "a_newer_cli_builtin")).toBe("deny")
    expect(decide(p, "tool", "some_other_server")).toBe("deny")
    expect(p.allowedMcpServerNames).toEqual(["gtb"])
    expect(p.withheld.map((w) => w.tool)).toEqual(
      expect.arrayContaining(["ask_user", "replace", "run_shell_command", "write_file"])
    )
    expect(p.rules.at(-1)).toEqual({ toolName: ["*"], decision: "deny", priority: 0 })
    expect(p.policyToml).toContain(`[[rule]]\nmcpName = "gtb"\ntoolName = "*"\ndecision = "allow"\npriority = 100`)
  })

  it("Claude Code names in opt-outs and allowedTools stand for their Gemini CLI equivalents", () => {
    const p = compile({ disabledTools: ["Read", "Grep", "NotebookEdit"], allowedTools: ["Bash", "Edit"] })
    expect(p.deniedTools).toEqual(expect.arrayContaining(["read_file", "read_many_files", "grep_search", "write_file"]))
    expect(p.offeredTools).toEqual(expect.arrayContaining(["run_shell_command", "replace", "glob"]))
    expect(p.offeredTools).not.toContain("read_file")
    // NotebookEdit has no Gemini counterpart: nothing to turn off, nothing to report.
    expect(p.ignored).toEqual([])
    // Gemini CLI names work as written too.
    expect(compile({ disabledTools: ["glob"] }).deniedTools).toContain("glob")
  })

  it("the registry's MCP tools: by name, opted-out ones excluded and denied, gated ones confirmed", () => {
    const p = compile({ registry: claudeRegistry, disabledTools: ["mcp__crm__drop", "mcp__gtb__secret"] })
    expect(decide(p, "lookup", "crm")).toBe("allow")
    expect(decide(p, "drop", "crm")).toBe("deny")
    expect(decide(p, "approve", "crm")).toBe("ask_user")
    expect(decide(p, "unknown", "crm")).toBe("deny")
    expect(decide(p, "secret", "gtb")).toBe("deny")
    expect(decide(p, "other", "gtb")).toBe("allow")
    expect(p.mcpServers).toEqual({
      crm: { includeTools: ["approve", "lookup"], excludeTools: ["drop"] },
      gtb: { excludeTools: ["secret"] }
    })
    expect(p.allowedMcpServerNames).toEqual(["crm", "gtb"])
  })

  it("a server turned off wholesale is not mounted and denied; one with a gated tool stays, as for Claude Code", () => {
    const plain = Registry.unsafeMake([
      ...ClaudeCodeCatalog.descriptors,
      Registry.mcpTool({ server: "crm", wireName: "lookup", category: "search" })
    ])
    const p = compile({ registry: plain, disabledTools: ["mcp__crm", "mcp__gtb__*"] })
    expect(p.allowedMcpServerNames).toEqual([])
    expect(decide(p, "lookup", "crm")).toBe("deny")
    expect(decide(p, "x", "gtb")).toBe("deny")
    expect(p.mcpServers).toEqual({})
    const gated = compile({ registry: claudeRegistry, disabledTools: ["mcp__crm"] })
    expect(gated.allowedMcpServerNames).toEqual(["crm", "gtb"])
    expect(decide(gated, "lookup", "crm")).toBe("deny")
    expect(decide(gated, "approve", "crm")).toBe("ask_user")
    expect(gated.ignored.map((i) => i.kind)).toEqual(["partly-applied"])
  })

  it("permission modes and canUseTool decide the tools that ask, as for Claude Code", () => {
    const edits = compile({}, { permissionMode: "acceptEdits" })
    expect(decide(edits, "replace")).toBe("allow")
    expect(decide(edits, "run_shell_command")).toBe("deny")
    const asked = compile({}, { canUseTool: true })
    expect(decide(asked, "run_shell_command")).toBe("ask_user")
    expect(asked.offeredTools).toContain("run_shell_command")
    const bypass = compile({}, { permissionMode: "bypassPermissions" })
    expect(decide(bypass, "ask_user")).toBe("allow")
    expect(decide(bypass, "run_shell_command")).toBe("allow")
    // web tools are `disabled` in the catalog, whatever the mode.
    expect(decide(bypass, "web_fetch")).toBe("deny")
  })

  it("reports what it cannot apply, with the entry as written; strict refuses", () => {
    const p = compile({ disabledTools: ["Agent", "mcp__gtb__read_*", "Bsh"] })
    expect(p.ignored.map((i) => [i.entry, i.kind])).toEqual([
      ["Agent", "always-on"],
      ["Bsh", "unknown"],
      ["mcp__gtb__read_*", "inexpressible"]
    ])
    const strict = ToolPolicy.toGeminiPolicy({ disabledTools: ["mcp__gtb__read_*"], strict: true }, {
      mcpServers: ["gtb"]
    })
    expect(Result.isFailure(strict) && strict.failure.reason._tag).toBe("StrictRefusal")
    // The same wildcard over a server that is not mounted as a whole is expressible: the last rule denies it.
    expect(compile({ disabledTools: ["mcp__gtb__read_*"] }, {}).ignored).toEqual([])
  })

  it.effect("invalid settings are a GeminiPolicyError with catchReason", () =>
    Effect.gen(function*() {
      const bad = ToolPolicy.toGeminiPolicy({ disabledTools: [1 as unknown as string] }, {})
      const reason = yield* Effect.fromResult(bad).pipe(
        Effect.catchReason("GeminiPolicyError", "InvalidSettings", (r) => Effect.succeed(r.message)),
        Effect.map(String)
      )
      expect(reason).toMatch(/Expected string/)
    }))

  it("a Gemini CLI registry is used as given", () => {
    const own = Registry.unsafeMake([
      ...GeminiCliCatalog.descriptors,
      Registry.mcpTool({ server: "docs", wireName: "search", category: "search" })
    ])
    const p = compile({ registry: own }, {})
    expect(decide(p, "search", "docs")).toBe("allow")
    expect(p.allowedMcpServerNames).toEqual(["docs"])
  })

  it("property: every catalog built-in gets exactly one decision, opted-out ones deny, the last rule denies all", () => {
    const names = GeminiCliCatalog.descriptors.map((d) => d.name)
    const claude = ClaudeCodeCatalog.descriptors.map((d) => d.name)
    fc.assert(
      fc.property(
        fc.subarray([...names, ...claude]),
        fc.constantFrom(undefined, "default", "acceptEdits", "bypassPermissions"),
        fc.boolean(),
        (disabledTools, permissionMode, canUseTool) => {
          const p = compile({ disabledTools }, { mcpServers: ["gtb"], permissionMode, canUseTool })
          const named = p.rules.filter((r) => r.mcpName === undefined && !r.toolName.includes("*"))
          const decided = named.flatMap((r) => r.toolName)
          expect([...decided].sort()).toEqual([...names].sort())
          expect(new Set(decided).size).toBe(decided.length)
          const blocked = new Set(p.policy.disallowedTools)
          for (const n of names) expect(decide(p, n) === "deny", n).toBe(blocked.has(n))
          for (const entry of disabledTools) {
            const d = GeminiCliCatalog.registry.byName.get(entry)
            if (d !== undefined && (d.exposure === "user" || d.exposure === "disabled")) {
              expect(decide(p, entry)).toBe("deny")
            }
          }
          expect(p.rules.at(-1)).toEqual({ toolName: ["*"], decision: "deny", priority: 0 })
          for (let i = 1; i < p.rules.length; i++) {
            expect(p.rules[i]!.priority).toBeLessThanOrEqual(p.rules[i - 1]!.priority)
          }
        }
      ),
      { numRuns: 200 }
    )
  })
})
