/**
 * `resolveToolPolicy` on the full catalog (plus a few app MCP tools), Schema-validating its input,
 * against a plain Set-based loop that applies the same rules to the same catalog with no
 * validation and no pair groups, MCP or headless handling — the floor a hand-written policy costs.
 */
import * as Result from "effect/Result"
import { performance } from "node:perf_hooks"
import * as ClaudeCodeCatalog from "../src/registry/ClaudeCodeCatalog.ts"
import * as Registry from "../src/registry/Registry.ts"
import * as ToolPolicy from "../src/registry/ToolPolicy.ts"
import { compare, median, sample } from "./util.ts"

const registry = Registry.unsafeMake([
  ...ClaudeCodeCatalog.descriptors,
  Registry.mcpTool({ server: "memory", wireName: "recall", category: "context" }),
  Registry.mcpTool({ server: "memory", wireName: "remember", category: "context" })
])
// A literal user tool, a registry MCP tool, a server wildcard and a CLI glob that reaches a pair group.
const agent = { disabledTools: ["Bash", "Read", "mcp__memory__remember", "mcp__docs__*", "Wri*"] }
const ctx = { conditions: { "workspace-has-git": true }, headless: true, mcpServers: ["gtb"] }
const descriptors = registry.descriptors

const baseline = () => {
  const disabled = new Set(agent.disabledTools)
  const out = new Set<string>()
  for (const d of descriptors) {
    if (
      d.exposure === "disabled" ||
      (d.exposure === "conditional" && !(ctx.conditions as Record<string, boolean>)[d.condition!]) ||
      (d.exposure === "user" && disabled.has(d.name))
    ) out.add(d.name)
  }
  return Array.from(out).sort()
}

const CALLS = 200
let sink = 0
const ratio = await compare(
  `resolveToolPolicy, median per call (${descriptors.length} tools)`,
  async () => {
    for (let i = 0; i < CALLS; i++) {
      sink += Result.getOrThrow(ToolPolicy.resolveToolPolicy(registry, agent, ctx)).disallowedTools.length
    }
  },
  async () => {
    for (let i = 0; i < CALLS; i++) sink += baseline().length
  },
  { unit: "µs", rounds: 5, perRound: 40, operationsPerSample: CALLS }
)
const single = await compare(
  "resolveValidated (no input decoding), median per call",
  async () => {
    for (let i = 0; i < CALLS; i++) sink += ToolPolicy.resolveValidated(registry, agent, ctx).disallowedTools.length
  },
  async () => {
    for (let i = 0; i < CALLS; i++) sink += baseline().length
  },
  { unit: "µs", rounds: 5, perRound: 40, operationsPerSample: CALLS }
)
// Hostile settings (issue 43): the largest accepted list — 1,000 distinct unknown names, each
// close enough to a built-in to reach the typo search — against a normal 10-entry policy.
// Fresh names per call, so the suggestion cache never answers.
const normal = {
  disabledTools: [
    "Bash",
    "Read",
    "Write",
    "Edit",
    "Glob",
    "mcp__memory__remember",
    "mcp__docs__*",
    "Wri*",
    "Grep",
    "Workflow"
  ]
}
let fresh = 0
const hostile = () =>
  Array.from(
    { length: ToolPolicy.MaxOptOuts },
    () => `Q${(fresh++).toString(36)}ShowOnboardingRolePicker`.slice(0, 8 + (fresh % 17))
  )
const worst = await compare(
  `resolveToolPolicy of ${ToolPolicy.MaxOptOuts} distinct unknown names vs a normal 10-entry policy, median per call`,
  async () => {
    sink += Result.getOrThrow(ToolPolicy.resolveToolPolicy(registry, { disabledTools: hostile() }, ctx)).ignored.length
  },
  async () => {
    sink += Result.getOrThrow(ToolPolicy.resolveToolPolicy(registry, normal, ctx)).disallowedTools.length
  },
  { rounds: 3, perRound: 10 }
)
const hostileMs = median(
  await sample(20, async () => {
    sink += Result.getOrThrow(ToolPolicy.resolveToolPolicy(registry, { disabledTools: hostile() }, ctx)).ignored.length
  })
)
const refused = Array.from({ length: 100_000 }, (_, i) => `Tool${i}x`)
const started = performance.now()
const rejected = Result.isFailure(ToolPolicy.resolveToolPolicy(registry, { disabledTools: refused }, ctx))
const rejectMs = performance.now() - started
if (sink === 0) console.log("unreachable")
console.log(
  `(hostile input: ${worst.toFixed(0)}× a normal policy; 100,000 names ${rejected ? "refused" : "ACCEPTED"} in ${
    rejectMs.toFixed(1)
  } ms; largest accepted input ${hostileMs.toFixed(1)} ms, target < 100 ms: ${hostileMs < 100 ? "met" : "MISSED"})`
)
console.log(
  `(${CALLS} calls per sample; ratios ${ratio.toFixed(2)}× validated input, ${
    single.toFixed(2)
  }× pre-validated; target ≤ 3×: ${ratio <= 3 ? "met" : "MISSED"})`
)
