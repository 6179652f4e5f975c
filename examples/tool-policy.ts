/**
 * Resolves the Claude Code tool policy for a sample agent — the catalog plus an application's
 * own MCP tools — and prints it with the `claude` CLI flags it becomes.
 *
 * Run: npx tsx examples/tool-policy.ts
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as ClaudeCodeCatalog from "../src/registry/ClaudeCodeCatalog.ts"
import * as Conditions from "../src/registry/Conditions.ts"
import * as Registry from "../src/registry/Registry.ts"
import * as ToolPolicy from "../src/registry/ToolPolicy.ts"
import { runExample } from "./support/providers.ts"

const program = Effect.gen(function*() {
  // The application's memory server, with a tool the user can switch off.
  const registry = yield* ClaudeCodeCatalog.makeRegistry([
    Registry.mcpTool({ server: "memory", wireName: "recall", category: "context" }),
    Registry.mcpTool({ server: "memory", wireName: "remember", category: "context" })
  ])
  const agent = { disabledTools: ["Bash", "mcp__memory__remember", "mcp__docs__*"] }
  const conditions = yield* Conditions.detectConditions({ cwd: process.cwd() })
  // A `claude -p` turn: headless, with the bridge's tools served as `mcp__gtb__*`.
  const policy = yield* Effect.fromResult(ToolPolicy.resolveToolPolicy(registry, agent, {
    conditions,
    headless: true,
    mcpServers: ["gtb"]
  }))
  yield* Console.log(`agent.disabledTools: ${agent.disabledTools.join(", ")}`)
  yield* Console.log(`conditions: ${JSON.stringify(conditions)}`)
  yield* Console.log(`disallowedTools: ${policy.disallowedTools.join(", ")}`)
  yield* Console.log(`allowedTools: ${policy.allowedTools.join(", ")}`)
  yield* Console.log(`mountedServers: ${policy.mountedServers.join(", ")}`)
  yield* Console.log(`claude flags: ${JSON.stringify(ToolPolicy.toCliFlags(policy))}`)
})

program.pipe(Effect.provide(NodeServices.layer), runExample)
