import { describe, expect, it } from "@effect/vitest"
import * as Result from "effect/Result"
import * as fc from "fast-check"
import * as ClaudeCodeCatalog from "../../src/registry/ClaudeCodeCatalog.ts"
import * as Registry from "../../src/registry/Registry.ts"
import type * as ToolDescriptor from "../../src/registry/ToolDescriptor.ts"
import * as ToolPolicy from "../../src/registry/ToolPolicy.ts"

const resolve = (registry: Registry.Registry, disabledTools: ReadonlyArray<string>, ctx: ToolPolicy.PolicyContext) =>
  Result.getOrThrow(ToolPolicy.resolveToolPolicy(registry, { disabledTools }, ctx))

const glob = (pattern: string) =>
  new RegExp(`^${pattern.split("*").map((p) => p.replace(/[.+?^${}()|[\]\\/-]/g, "\\$&")).join(".*")}$`)

/** Whether an allow rule approves a tool, as the claude CLI reads rules (any version). */
const covers = (rule: string, tool: string): boolean => {
  if (rule === tool) return true
  if (rule.includes("*")) return glob(rule).test(tool)
  // The server form `mcp__<server>` approves every tool of that server.
  return rule.startsWith("mcp__") && !rule.includes("__", 5) && tool.startsWith(`${rule}__`)
}

/** Every allow-list a provider receives for a policy. */
const allowLists = (policy: ToolPolicy.ToolPolicy): ReadonlyArray<ReadonlyArray<string>> => {
  const flags = ToolPolicy.toCliFlags(policy)
  const at = flags.indexOf("--allowedTools")
  const bounded = Result.getOrThrow(ToolPolicy.boundPolicy(policy))
  return [
    policy.allowedTools,
    at < 0 ? [] : flags[at + 1]!.split(","),
    ToolPolicy.toAgentSdkOptions(policy, { permissionMode: "default", headless: true }).allowedTools,
    bounded.allowedTools,
    bounded.settings?.permissions.allow ?? []
  ]
}

describe("gated tools are always asked for", () => {
  const ctx = { conditions: {}, headless: true }

  it("a gated tool's server passed in mcpServers gets no server allow entry (issue 29.2)", () => {
    const registry = Registry.unsafeMake([
      Registry.mcpTool({ server: "memory", wireName: "a", category: "context", exposure: "gated" })
    ])
    const policy = resolve(registry, [], { ...ctx, mcpServers: ["memory"] })
    expect(policy.allowedTools).toEqual([])
    expect(policy.mountedServers).toEqual(["memory"])
    expect(ToolPolicy.toCliFlags(policy)).toEqual([])
  })

  it("the server's other known tools are approved by name; the bridge keeps its server entry", () => {
    const registry = Registry.unsafeMake([
      ...ClaudeCodeCatalog.descriptors,
      Registry.mcpTool({ server: "skills", wireName: "search_skills", category: "context", exposure: "internal" }),
      Registry.mcpTool({ server: "skills", wireName: "install_skill", category: "context", exposure: "gated" }),
      Registry.mcpTool({ server: "skills", wireName: "rate_skill", category: "context" })
    ])
    const policy = resolve(registry, ["mcp__skills__rate_skill"], { ...ctx, mcpServers: ["gtb", "skills"] })
    expect(policy.allowedTools).toEqual(["mcp__gtb__*", "mcp__skills__search_skills"])
    expect(policy.mountedServers).toEqual(["gtb", "skills"])
    const options = ToolPolicy.toAgentSdkOptions(policy, { permissionMode: "default", headless: true })
    expect(options.allowedTools).toEqual(["mcp__gtb__*", "mcp__skills__search_skills"])
  })

  it("a server without gated tools still gets its server entry", () => {
    const registry = Registry.unsafeMake([
      Registry.mcpTool({ server: "memory", wireName: "recall", category: "context" })
    ])
    expect(resolve(registry, [], { ...ctx, mcpServers: ["memory"] }).allowedTools).toEqual([
      "mcp__memory__*",
      "mcp__memory__recall"
    ])
  })
})

describe("property: no allow entry covers a gated tool", () => {
  const servers = ["memory", "skills", "docs", "gtb"] as const
  const wires = ["a", "b", "run", "install_skill", "search"] as const
  const exposures = ["user", "internal", "gated", "disabled", "conditional"] as const
  const toolArb = fc.record({
    server: fc.constantFrom(...servers),
    wire: fc.constantFrom(...wires),
    exposure: fc.constantFrom(...exposures),
    paired: fc.boolean()
  })
  const descriptor = (t: typeof toolArb extends fc.Arbitrary<infer A> ? A : never) =>
    Registry.mcpTool({
      server: t.server,
      wireName: t.wire,
      category: "context",
      exposure: t.exposure,
      ...(t.exposure === "conditional" ? { condition: "agent-has-channel" } : {}),
      ...(t.paired ? { pairGroup: "pair" } : {})
    })
  const registryArb = fc.record({
    tools: fc.uniqueArray(toolArb, { selector: (t) => `${t.server}/${t.wire}`, minLength: 1, maxLength: 8 }),
    catalog: fc.boolean()
  }).map(({ catalog, tools }): Registry.Registry => {
    const own: Array<ToolDescriptor.ToolDescriptorInput> = tools.map(descriptor)
    return Registry.unsafeMake([...(catalog ? ClaudeCodeCatalog.descriptors : []), ...own], { pairGroups: ["pair"] })
  })
  const entryArb = fc.oneof(
    fc.constantFrom("*", "mcp__*", "Bash", "m*", "*_skill", "*a"),
    fc.constantFrom(...servers).chain((s) =>
      fc.constantFrom(`mcp__${s}`, `mcp__${s}__*`, `mcp__${s}__i*`, ...wires.map((w) => `mcp__${s}__${w}`))
    )
  )
  const agentArb = fc.record({ disabledTools: fc.array(entryArb, { maxLength: 6 }) })
  const ctxArb = fc.record({
    conditions: fc.dictionary(fc.constantFrom("agent-has-channel", "workspace-has-git"), fc.boolean()),
    headless: fc.boolean(),
    permissionMode: fc.constantFrom("default", "bypassPermissions"),
    mcpServers: fc.uniqueArray(fc.constantFrom(...servers), { maxLength: 4 })
  })

  it("for random registries, agents and contexts, on every provider's allow-list", () => {
    fc.assert(
      fc.property(registryArb, agentArb, ctxArb, (registry, agent, ctx) => {
        const gated = registry.descriptors.filter((d) => d.exposure === "gated").map((d) => d.name)
        const policy = resolve(registry, agent.disabledTools, ctx)
        for (const list of allowLists(policy)) {
          for (const rule of list) for (const tool of gated) expect(covers(rule, tool), `${rule} ⊇ ${tool}`).toBe(false)
        }
      }),
      { numRuns: 400 }
    )
  })
})
