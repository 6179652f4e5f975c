import { describe, expect, it } from "@effect/vitest"
import * as Result from "effect/Result"
import * as fc from "fast-check"
import * as ClaudeCodeCatalog from "../../src/registry/ClaudeCodeCatalog.ts"
import * as Registry from "../../src/registry/Registry.ts"
import * as ToolPolicy from "../../src/registry/ToolPolicy.ts"

const resolve = (
  registry: Registry.Registry,
  disabledTools: ReadonlyArray<string>,
  ctx: Partial<ToolPolicy.PolicyContext> = {}
) =>
  Result.getOrThrow(
    ToolPolicy.resolveToolPolicy(registry, { disabledTools }, { conditions: {}, headless: true, ...ctx })
  )

describe("a wildcard's report says what it turned off (issue 29.3)", () => {
  const registry = Registry.unsafeMake([
    Registry.mcpTool({ server: "skills", wireName: "run", category: "context", exposure: "internal" }),
    Registry.mcpTool({ server: "memory", wireName: "a5", category: "context" })
  ])

  it("mcp__* lists the tool and the server it unmounts, and does not say they stay on", () => {
    const policy = resolve(registry, ["mcp__*"])
    expect(policy.disallowedTools).toEqual(["mcp__memory__*", "mcp__memory__a5"])
    expect(policy.mountedServers).toEqual(["skills"])
    expect(policy.ignored).toHaveLength(1)
    const report = policy.ignored[0]!
    expect(report).toMatchObject({
      entry: "mcp__*",
      kind: "partly-applied",
      applied: ["mcp__memory__*", "mcp__memory__a5"],
      servers: ["memory"]
    })
    expect(report.message).toContain("mcp__skills__run")
    expect(report.message).toContain("every tool of the server memory, which is not mounted")
    expect(report.message).toContain("on other servers, tools the registry does not know stay on")
  })

  it("extra servers it turns off are listed too", () => {
    const report = resolve(registry, ["mcp__*"], { mcpServers: ["gtb"] }).ignored[0]!
    expect(report.applied).toEqual(["mcp__gtb__*", "mcp__memory__*", "mcp__memory__a5"])
    expect(report.servers).toEqual(["gtb", "memory"])
    expect(report.message).toContain("the servers gtb, memory, which are not mounted")
  })

  it("without a server turned off, the message says unknown tools stay on, and pair siblings are listed", () => {
    const report = resolve(ClaudeCodeCatalog.registry, ["Bas*", "Task*"], { headless: false }).ignored
    expect(report).toEqual([expect.objectContaining({ entry: "Task*", kind: "always-on" })])
    const star = resolve(ClaudeCodeCatalog.registry, ["*"]).ignored[0]!
    expect(star.kind).toBe("partly-applied")
    expect(star.applied).toEqual(expect.arrayContaining(["Bash", "BashOutput"]))
    expect(star.servers).toBeUndefined()
    expect(star.message).toMatch(/; tools the registry does not know stay on$/)
  })

  it("property: every tool and server a reported wildcard lists is off, and every server it unmounts is listed", () => {
    const app = Registry.unsafeMake([
      ...ClaudeCodeCatalog.descriptors,
      Registry.mcpTool({ server: "skills", wireName: "run", category: "context", exposure: "internal" }),
      Registry.mcpTool({ server: "skills", wireName: "rate", category: "context" }),
      Registry.mcpTool({ server: "memory", wireName: "a5", category: "context" }),
      Registry.mcpTool({ server: "memory", wireName: "old", category: "context", exposure: "disabled" })
    ])
    const entryArb = fc.constantFrom("*", "mcp__*", "m*", "mcp__m*", "*a*", "*5", "mcp__*__r*", "mcp__skills__*")
    const ctxArb = fc.record({ mcpServers: fc.uniqueArray(fc.constantFrom("gtb", "docs", "skills"), { maxLength: 3 }) })
    fc.assert(fc.property(fc.array(entryArb, { minLength: 1, maxLength: 3 }), ctxArb, (entries, ctx) => {
      const baseline = resolve(app, [], ctx)
      const p = resolve(app, entries, ctx)
      const off = new Set(p.disallowedTools)
      const reported = new Set(p.ignored.flatMap((i) => i.servers ?? []))
      for (const i of p.ignored) {
        for (const n of i.applied ?? []) expect(off.has(n)).toBe(true)
        for (const s of i.servers ?? []) expect(p.mountedServers).not.toContain(s)
      }
      // Every server an expanded (reported) wildcard unmounted is named in a report.
      const passed = entries.filter((e) => p.disallowedTools.includes(e))
      if (passed.length === 0) {
        for (const s of baseline.mountedServers) if (!p.mountedServers.includes(s)) expect(reported.has(s)).toBe(true)
      }
    }))
  })
})

describe("unknown built-in names are reported with the nearest registry name (issue 29.4)", () => {
  const registry = ClaudeCodeCatalog.registry

  it("typos and case slips are reported, still passed on, and Bash stays allowed", () => {
    // With canUseTool, so a headless session offers Bash at all (it asks before each call).
    const policy = resolve(registry, ["Bsh", "WebSerch", "bash"], { canUseTool: true })
    expect(policy.ignored.map((i) => [i.entry, i.kind, i.suggestion])).toEqual([
      ["Bsh", "unknown", "Bash"],
      ["WebSerch", "unknown", "WebSearch"],
      ["bash", "unknown", "Bash"]
    ])
    expect(policy.disallowedTools).toEqual(expect.arrayContaining(["Bsh", "WebSerch", "bash"]))
    expect(policy.disallowedTools).not.toContain("Bash")
    expect(policy.ignored[0]!.message).toBe("Bsh is not a tool the registry knows: did you mean Bash?")
    expect(policy.ignored[2]!.message).toContain("Tool names are case-sensitive")
    expect(ToolPolicy.checkOptOuts(registry, ["Bsh", "WebSerch", "bash", "Bash"]).map((i) => i.entry)).toEqual([
      "Bsh",
      "WebSerch",
      "bash"
    ])
  })

  it("a name close to nothing gets no suggestion; unknown mcp__ names and wildcards are not reported", () => {
    const policy = resolve(registry, ["Nope", "mcp__docs__serch", "mcp__docs", "Zzz*"])
    expect(policy.ignored).toEqual([
      {
        entry: "Nope",
        kind: "unknown",
        message:
          "Nope is not a tool the registry knows; it is passed on as written and turns off only a tool of that name"
      }
    ])
    expect(policy.disallowedTools).toEqual(expect.arrayContaining(["Nope", "mcp__docs__serch", "mcp__docs__*", "Zzz*"]))
  })

  it("suggestions are deterministic: ties go to the first name in sorted order, swaps count as one edit", () => {
    const { pairGroup: _, ...bash } = ClaudeCodeCatalog.descriptors.find((d) => d.name === "Bash")!
    const own = Registry.unsafeMake([{ ...bash, name: "Abc" }, { ...bash, name: "Abd" }])
    expect(resolve(own, ["Abx"]).ignored[0]!.suggestion).toBe("Abc")
    expect(resolve(own, ["Bac"]).ignored[0]!.suggestion).toBe("Abc")
    expect(resolve(registry, ["Raed", "TodoWirte", "Grpe"]).ignored.map((i) => i.suggestion)).toEqual([
      "Read",
      "TodoWrite",
      "Grep"
    ])
  })
})
