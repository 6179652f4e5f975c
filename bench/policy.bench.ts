/**
 * `resolveToolPolicy` on the full catalog (plus a few app MCP tools), Schema-validating its input,
 * against a plain Set-based loop that applies the same rules to the same catalog with no
 * validation and no pair groups, MCP or headless handling — the floor a hand-written policy costs.
 */
import * as Result from "effect/Result"
import * as ClaudeCodeCatalog from "../src/registry/ClaudeCodeCatalog.js"
import * as Registry from "../src/registry/Registry.js"
import * as ToolPolicy from "../src/registry/ToolPolicy.js"
import { compare } from "./util.js"

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
if (sink === 0) console.log("unreachable")
console.log(
  `(${CALLS} calls per sample; ratios ${ratio.toFixed(2)}× validated input, ${
    single.toFixed(2)
  }× pre-validated; target ≤ 3×: ${ratio <= 3 ? "met" : "MISSED"})`
)
