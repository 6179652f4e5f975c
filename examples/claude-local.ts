/**
 * Your in-process tools, called by the locally installed `claude` CLI through the loopback MCP
 * bridge. Needs Claude Code installed and logged in (or ANTHROPIC_API_KEY); the CLI inherits the
 * environment, so ANTHROPIC_BASE_URL and friends apply. CLAUDE_BINARY points at another binary;
 * without it, the Agent SDK's pinned binary when installed, else `claude` on PATH. It prints which.
 *
 *   node --import tsx examples/claude-local.ts
 */
import { Console, Effect } from "effect"
import { ChatClient, ClaudeLocal } from "../src/index.ts"
import { describeClaude, exampleClaudeBinary, runExample } from "./support/providers.ts"
import { weatherTools } from "./support/weatherTools.ts"

const binary = exampleClaudeBinary()

const program = Effect.gen(function*() {
  yield* Console.log(yield* describeClaude(binary))
  const chat = yield* ChatClient.ChatClient
  yield* chat.setTools(weatherTools)
  for (const question of ["What's the weather in Lisbon, in Fahrenheit?", "And is it warmer than in Paris?"]) {
    yield* Console.log(`you: ${question}`)
    yield* Console.log(`claude: ${yield* chat.chat(question)}`)
  }
  const usage = yield* chat.usage
  yield* Console.log(
    `usage: ${usage.inputTokens} in / ${usage.outputTokens} out tokens` +
      (usage.costUsd === undefined ? "" : `, $${usage.costUsd.toFixed(4)}`)
  )
})

program.pipe(
  Effect.provide(ClaudeLocal.layerFromEnv({ binary, systemPrompt: "Answer briefly. Use the tools for weather." })),
  runExample
)
