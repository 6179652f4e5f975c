import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { editDistance, make as makeNameIndex } from "../../src/internal/policy/nearestName.ts"
import * as AgentSettingsMemory from "../../src/layers/AgentSettingsMemory.ts"
import * as ClaudeCodeCatalog from "../../src/registry/ClaudeCodeCatalog.ts"
import * as ToolPolicy from "../../src/registry/ToolPolicy.ts"
import { AgentSettings } from "../../src/services/AgentSettings.ts"

// Hostile settings are refused before any work, with a short message, and anything accepted is
// small enough to resolve at once (the timing is bench/policy.bench.ts's, not a test's).
const ctx = { conditions: {}, headless: true }
const resolve = (disabledTools: ReadonlyArray<string>) =>
  ToolPolicy.resolveToolPolicy(ClaudeCodeCatalog.registry, { disabledTools }, ctx)

const distinctUnknown = (n: number) => Array.from({ length: n }, (_, i) => `Tool${i.toString(36)}x`)

const failureMessage = (result: Result.Result<unknown, { readonly message: string }>) =>
  Result.isFailure(result) ? result.failure.message : "resolved"

describe("ToolPolicy bounds", () => {
  it("100,000 distinct unknown names are a SchemaError naming the bound, not a slow resolve", () => {
    const result = resolve(distinctUnknown(100_000))
    expect(Result.isFailure(result) && result.failure._tag).toBe("SchemaError")
    const message = failureMessage(result)
    expect(message).toContain("disabledTools has 100000 entries; an agent has at most 1000 opt-outs")
    expect(message.length).toBeLessThan(300)
  })

  it("a 1 MB name is a SchemaError that quotes only its start", () => {
    const result = resolve(["Bash", "a".repeat(1 << 20)])
    expect(Result.isFailure(result) && result.failure._tag).toBe("SchemaError")
    const message = failureMessage(result)
    expect(message).toContain("disabledTools[1] has 1048576 characters")
    expect(message).toContain("an opt-out has at most 256")
    expect(message.length).toBeLessThan(300)
  })

  it("the bounds hold on the decoder's path too (input that is not a plain object)", () => {
    const agent = Object.create({ extra: true }) as { disabledTools: Array<string> }
    agent.disabledTools = ["x".repeat(300)]
    const result = ToolPolicy.resolveToolPolicyUnknown(ClaudeCodeCatalog.registry, agent, ctx)
    expect(failureMessage(result)).toContain("at most 256")
  })

  it("exactly the bound is accepted: 1,000 names of 256 characters each get their reports", () => {
    const names = distinctUnknown(ToolPolicy.MaxOptOuts).map((n) => n.padEnd(ToolPolicy.MaxOptOutLength, "z"))
    const result = resolve(names)
    // Longer than a Claude Code tool name may be: reported as malformed, one report each.
    expect(Result.isSuccess(result) && new Set(result.success.ignored.map((i) => i.kind))).toEqual(
      new Set(["malformed"])
    )
    expect(Result.isSuccess(result) && result.success.ignored.length).toBe(1_000)
    const typos = resolve(distinctUnknown(ToolPolicy.MaxOptOuts))
    expect(Result.isSuccess(typos) && typos.success.ignored.filter((i) => i.kind === "unknown").length).toBe(1_000)
  })

  it("typo suggestions are unchanged by the faster search", () => {
    const result = resolve(["Bsh", "WebSerch", "edit", "Gerp", "ShowOnboardingRolePickr", "Zzzzzz"])
    expect(Result.isSuccess(result) && result.success.ignored.map((i) => [i.entry, i.suggestion])).toEqual([
      ["Bsh", "Bash"],
      ["WebSerch", "WebSearch"],
      ["edit", "Edit"],
      ["Gerp", "Grep"],
      ["ShowOnboardingRolePickr", "ShowOnboardingRolePicker"],
      ["Zzzzzz", undefined]
    ])
  })

  it("the bounded edit distance agrees with the full one within its limit, swaps counting one", () => {
    expect(editDistance("bsh", "bash", 1)).toBe(1)
    expect(editDistance("gerp", "grep", 1)).toBe(1)
    expect(editDistance("abcdef", "uvwxyz", 2)).toBe(3)
    expect(editDistance("kitten", "sitting", 3)).toBe(3)
    const index = makeNameIndex(["Read", "Edit"])
    expect(index.nearest("EDIT")).toBe("Edit")
    expect(index.nearest("Raed")).toBe("Read")
    expect(index.nearest("Write")).toBeUndefined()
  })

  it.effect("AgentSettings refuses 100,000 names, a 1 MB name and a list growing past the bound", () =>
    Effect.gen(function*() {
      const settings = yield* AgentSettings
      yield* settings.create("a")
      const many = yield* Effect.flip(settings.disable("a", distinctUnknown(100_000)))
      expect(many._tag).toBe("InvalidSettingsInputError")
      expect(many.message).toContain("at most 1000 opt-outs")
      const long = yield* Effect.flip(settings.setDisabledTools("a", ["a".repeat(1 << 20)]))
      expect(long._tag).toBe("InvalidSettingsInputError")
      expect(long.message.length).toBeLessThan(300)
      const removeMany = yield* Effect.flip(settings.enable("a", distinctUnknown(100_000)))
      expect(removeMany._tag).toBe("InvalidSettingsInputError")
      // Unknown names stay refused, as before the bounds.
      const typo = yield* Effect.flip(settings.disable("a", ["Bsh"]))
      expect(typo.message).toContain("did you mean Bash?")
      // 1,000 wildcard servers are accepted; one more, added later, is refused and nothing changes.
      const servers = Array.from({ length: 1_000 }, (_, i) => `mcp__s${i}__*`)
      expect((yield* settings.disable("a", servers)).disabledTools.length).toBe(1_000)
      const over = yield* Effect.flip(settings.disable("a", ["mcp__one_more__*"]))
      expect(over.message).toContain("would have 1001 opt-outs")
      expect((yield* settings.get("a")).disabledTools.length).toBe(1_000)
    }).pipe(Effect.provide(AgentSettingsMemory.layerMemory)))
})
