import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as ClaudeCodeCatalog from "../../src/registry/ClaudeCodeCatalog.ts"
import * as Registry from "../../src/registry/Registry.ts"
import type { ToolDescriptorInput } from "../../src/registry/ToolDescriptor.ts"
import { formatIssues } from "./issues.ts"

const issues = (descriptors: ReadonlyArray<unknown>, options?: Registry.MakeOptions) => {
  const r = Registry.makeResult(descriptors as ReadonlyArray<ToolDescriptorInput>, options)
  if (Result.isSuccess(r)) throw new Error("expected a SchemaError")
  expect(Schema.isSchemaError(r.failure)).toBe(true)
  return formatIssues(r.failure).map((i) => ({ path: i.path, message: i.message }))
}

const sdk = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  category: "file",
  exposure: "user",
  kind: "sdk",
  labelKey: `tools.${name}.label`,
  descriptionKey: `tools.${name}.description`,
  ...extra
})

describe("Registry", () => {
  it.effect("the catalog merges with application MCP tools", () =>
    Effect.gen(function*() {
      const registry = yield* ClaudeCodeCatalog.makeRegistry([
        Registry.mcpTool({ server: "gtb", wireName: "add", category: "orchestration" })
      ])
      expect(registry.byName.get("mcp__gtb__add")).toMatchObject({ kind: "mcp", mcpServer: "gtb", mcpWireName: "add" })
      expect(registry.mcpServers).toEqual(["gtb"])
      expect(registry.descriptors.length).toBe(ClaudeCodeCatalog.descriptors.length + 1)
      expect(Registry.isRegistry(registry)).toBe(true)
    }))

  it("every catalog tool has a classification; the new 0.3.332 tools each say why", () => {
    const newTools = [
      "RefreshMcpTools",
      "ReportFindings",
      "SendFeedback",
      "ClaudeDesign",
      "Projects",
      "ShowOnboardingRolePicker",
      "OfferChromeSetup",
      "ReadNotifications",
      "propose_skills",
      "SetGoal",
      "Artifact"
    ]
    for (const name of newTools) {
      const d = ClaudeCodeCatalog.registry.byName.get(name)
      expect(d?.reason, name).toMatch(/^.{10,}$/)
    }
  })

  it.effect("duplicate names fail, naming the entry and field", () =>
    Effect.gen(function*() {
      const e = yield* Effect.flip(ClaudeCodeCatalog.makeRegistry([sdk("Bash") as ToolDescriptorInput]))
      const found = formatIssues(e)
      expect(found).toHaveLength(1)
      expect(found[0]!.path).toEqual([ClaudeCodeCatalog.descriptors.length, "name"])
      expect(found[0]!.message).toContain("duplicate tool name Bash")
    }))

  it("cross-field rules name the offending entry and field", () => {
    expect(issues([sdk("A"), sdk("B", { exposure: "conditional" })])).toEqual([
      { path: [1, "condition"], message: "a conditional tool needs a condition" }
    ])
    expect(issues([sdk("A", { condition: "workspace-has-git" })])[0]!.path).toEqual([0, "condition"])
    expect(issues([{ ...sdk("mcp__x__y"), kind: "mcp", mcpServer: "x", mcpWireName: "y", sdkTyped: true }])).toEqual([
      { path: [0, "sdkTyped"], message: "only sdk tools have sdkTyped" }
    ])
    expect(issues([sdk("A", { mcpServer: "x" })])[0]!.path).toEqual([0, "mcpServer"])
    expect(issues([{ ...sdk("mcp__x__y"), kind: "mcp", mcpServer: "x" }])).toEqual([
      { path: [0, "mcpWireName"], message: "an mcp tool needs an mcpWireName" }
    ])
    expect(issues([{ ...sdk("mcp__x__z"), kind: "mcp", mcpServer: "x", mcpWireName: "y" }])).toEqual([
      { path: [0, "name"], message: "an mcp tool must be named mcp__x__y" }
    ])
  })

  it("unknown pair groups and conditions fail unless declared", () => {
    expect(issues([sdk("A", { pairGroup: "mine" })])[0]).toMatchObject({ path: [0, "pairGroup"] })
    expect(
      issues([sdk("A", { exposure: "conditional", condition: "app-has-inbox" })])[0]
    ).toMatchObject({ path: [0, "condition"] })
    expect(
      Result.isSuccess(
        Registry.makeResult([
          sdk("A", {
            pairGroup: "mine",
            exposure: "conditional",
            condition: "app-has-inbox"
          }) as ToolDescriptorInput
        ], {
          pairGroups: ["mine"],
          conditions: ["app-has-inbox"]
        })
      )
    ).toBe(true)
  })

  it("shape errors name the path", () => {
    expect(issues([sdk("A", { category: "weather" })])[0]!.path).toEqual([0, "category"])
    // The rejected value is named (Effect 4 needs `reportInput` for that; Effect 3 always did).
    expect(issues([sdk("A", { category: "weather" })])[0]!.message).toContain("got \"weather\"")
    expect(issues([sdk("A"), { name: "B" }]).map((i) => i.path)).toContainEqual([1, "category"])
    expect(issues([{ ...sdk("mcp__bad__name__x"), kind: "mcp", mcpServer: "bad__name", mcpWireName: "x" }])[0]!.path)
      .toEqual([0, "mcpServer"])
    expect(issues([sdk("A", { extra: 1 })])[0]!.path).toEqual([0, "extra"])
    expect(issues([sdk("has space", { labelKey: "k.l", descriptionKey: "k.d" })])[0]!.path).toEqual([0, "name"])
  })

  it("unsafeMake throws the ParseError", () => {
    expect(() => Registry.unsafeMake([sdk("A"), sdk("A")] as Array<ToolDescriptorInput>)).toThrow(
      /duplicate tool name A/
    )
  })
})

describe("Registry: more descriptor rules", () => {
  it("an sdk tool cannot carry an mcpWireName; an mcp tool needs its server", () => {
    expect(issues([sdk("A", { mcpWireName: "a" })])).toEqual([
      { path: [0, "mcpWireName"], message: "only mcp tools have an mcpWireName" }
    ])
    expect(issues([{ ...sdk("mcp__x__y"), kind: "mcp", mcpWireName: "y" }])).toEqual([
      { path: [0, "mcpServer"], message: "an mcp tool needs an mcpServer" }
    ])
  })

  it("mcpTool passes condition, pair group, interactive and reason through; a conditional one is valid", () => {
    const descriptor = Registry.mcpTool({
      server: "gtb",
      wireName: "deploy",
      category: "orchestration",
      exposure: "conditional",
      condition: "agent-has-channel",
      pairGroup: "deploys",
      interactive: true,
      reason: "asks before deploying",
      labelKey: "deploy.label"
    })
    expect(descriptor).toMatchObject({
      name: "mcp__gtb__deploy",
      condition: "agent-has-channel",
      pairGroup: "deploys",
      interactive: true,
      reason: "asks before deploying",
      labelKey: "deploy.label",
      descriptionKey: "tools.mcp.gtb.deploy.description"
    })
    const made = Registry.makeResult([descriptor], { pairGroups: ["deploys"], conditions: ["agent-has-channel"] })
    expect(Result.isSuccess(made)).toBe(true)
    // Without the condition, a conditional tool is rejected.
    const { condition: _dropped, ...withoutCondition } = descriptor
    expect(issues([withoutCondition], { pairGroups: ["deploys"] })[0]!.path).toEqual([0, "condition"])
  })
})

describe("Registry: conditions", () => {
  it("agent-has-channel is known without declaring it; gated is an exposure", () => {
    expect(Registry.knownConditions).toContain("agent-has-channel")
    const r = Registry.makeResult([
      Registry.mcpTool({
        server: "chan",
        wireName: "notify",
        category: "context",
        exposure: "conditional",
        condition: "agent-has-channel"
      }),
      Registry.mcpTool({ server: "skills", wireName: "install_skill", category: "context", exposure: "gated" })
    ])
    expect(Result.isSuccess(r)).toBe(true)
  })
})
