/**
 * Claude Code through the Claude Agent SDK, with two in-process tools served over the CLI's own
 * control channel (no port, no token, no config file). Two turns of one conversation: the second
 * resumes the first's session.
 *
 * Needs `@anthropic-ai/claude-agent-sdk` installed (it ships the `claude` binary) and either a
 * logged-in `claude` (run `claude` once) or `ANTHROPIC_API_KEY` (and optionally
 * `ANTHROPIC_BASE_URL` for a gateway or a local fake). `CLAUDE_MODEL`, `CLAUDE_CWD` and the other
 * `CLAUDE_*` variables of `ClaudeAgent.layerFromEnv` apply.
 *
 *   npx tsx examples/claude-agent.ts
 */
import { Console, Effect, Schema } from "effect"
import { ClaudeAgent } from "../src/claude-agent.ts"
import { ChatClient, Tool } from "../src/index.ts"
import { runExample } from "./support/providers.ts"

const stock = new Map([["A-1", 3], ["B-2", 40]])

const stockLevel = Tool.make("stock_level", {
  description: "Units in stock for a SKU",
  parameters: { sku: Schema.String },
  handler: ({ sku }) =>
    Effect.gen(function*() {
      const units = stock.get(sku)
      yield* Console.log(`tool stock_level(${sku}) → ${units ?? "unknown SKU"}`)
      if (units === undefined) return yield* Effect.fail(new Error(`unknown SKU ${sku}`))
      return { sku, units }
    })
})

const reorder = Tool.make("reorder", {
  description: "Orders more units of a SKU from the supplier",
  parameters: { sku: Schema.String, quantity: Schema.Int.check(Schema.isGreaterThan(0)) },
  handler: ({ quantity, sku }) =>
    Effect.gen(function*() {
      stock.set(sku, (stock.get(sku) ?? 0) + quantity)
      yield* Console.log(`tool reorder(${sku}, ${quantity}) → now ${stock.get(sku)}`)
      return `Ordered ${quantity} of ${sku}; ${stock.get(sku)} in stock after delivery`
    })
})

const program = Effect.gen(function*() {
  const chat = yield* ChatClient.ChatClient
  yield* chat.setTools([stockLevel, reorder])
  for (const question of ["How many units of A-1 do we have?", "Reorder 10 of it, please."]) {
    yield* Console.log(`you: ${question}`)
    yield* Console.log(`claude: ${yield* chat.chat(question)}`)
  }
  const usage = yield* chat.usage
  yield* Console.log(
    `usage: ${usage.inputTokens} in / ${usage.outputTokens} out tokens${
      usage.costUsd === undefined ? "" : `, ~$${usage.costUsd.toFixed(4)}`
    }`
  )
})

program.pipe(
  Effect.provide(ClaudeAgent.layerFromEnv({ systemPrompt: "You manage a small warehouse. Use the tools." })),
  runExample
)
