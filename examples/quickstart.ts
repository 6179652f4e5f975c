/**
 * Quickstart: a model calls two of your in-process tools, one of which fails, recovers, and
 * answers. Runs offline on the Scripted model unless a real provider is chosen (see README):
 *
 *   AI_PROVIDER=anthropic npm start   # or openai, gemini, claude-local, claude-agent; or set an API key
 *
 *   npm start        # the same as: npx tsx examples/quickstart.ts
 */
import { Console, Effect, Layer } from "effect"
import { ClaudeAgent } from "../src/claude-agent.ts"
import { ChatClient, ClaudeLocal, type ModelTurn, Scripted } from "../src/index.ts"
import { exampleClaudeBinary, providerFromEnv, runExample } from "./support/providers.ts"
import { weatherTools } from "./support/weatherTools.ts"

// --- The offline model: a deterministic function of the conversation, so it really reads the
// tools' results (and their errors) instead of replaying canned text. ---

const lastToolResults = (history: ReadonlyArray<ModelTurn.Message>) => {
  const last = history.at(-1)
  return last?.role === "tool" ? last.results : []
}

const offlineModel = Scripted.layer({
  respond: ({ history }) =>
    Effect.sync(() => {
      const results = lastToolResults(history)
      if (results.length === 0) {
        return Scripted.toolCalls(
          { name: "get_weather", arguments: { city: "Paris" } },
          { name: "get_weather", arguments: { city: "Atlantis" } }
        )
      }
      if (results[0]!.name === "get_weather") {
        const paris = JSON.parse(results[0]!.content) as { celsius: number }
        return Scripted.toolCalls({ name: "to_fahrenheit", arguments: { celsius: paris.celsius } })
      }
      const weather = history.flatMap((m) => (m.role === "tool" ? m.results : [])).filter((r) =>
        r.name === "get_weather"
      )
      const paris = JSON.parse(weather[0]!.content) as { celsius: number; sky: string }
      const atlantis = weather[1]!
      return Scripted.text(
        `In Paris it is ${paris.celsius}°C (${results[0]!.content}°F) with ${paris.sky}. ` +
          `I could not get Atlantis: ${atlantis.content.replace(/^Error: /, "")}.`
      )
    })
})

// --- The program: provider-agnostic, it only needs a ChatClient. ---

const program = Effect.gen(function*() {
  const chat = yield* ChatClient.ChatClient
  yield* chat.setTools(weatherTools)
  const question = "What's the weather in Paris and in Atlantis? Give Paris in Fahrenheit too."
  yield* Console.log(`you: ${question}`)
  const answer = yield* chat.chat(question)
  yield* Console.log(`model: ${answer}`)
  const usage = yield* chat.usage
  yield* Console.log(`usage: ${usage.inputTokens} in / ${usage.outputTokens} out tokens`)
})

// AI_PROVIDER (scripted, anthropic, openai, gemini, claude-local, claude-agent) or the credentials present pick a
// real provider; with neither, the offline model runs.
const provider = providerFromEnv({
  scripted: { name: "scripted (offline)", layer: offlineModel },
  claudeLocal: {
    name: `claude-local (the claude CLI at ${exampleClaudeBinary()})`,
    layer: Layer.orDie(ClaudeLocal.layerFromEnv({ binary: exampleClaudeBinary() }))
  },
  claudeAgent: { name: "claude-agent (the Claude Agent SDK)", layer: Layer.orDie(ClaudeAgent.layerFromEnv()) }
})
console.log(`provider: ${provider.name}`)
program.pipe(Effect.provide(provider.layer), runExample)
