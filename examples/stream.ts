/**
 * Streaming: print the model's text as it arrives, and each tool call as it starts and ends.
 * Runs offline on the Scripted model (which streams one word at a time) unless a real provider is
 * chosen, as in the quickstart:
 *
 *   npx tsx examples/stream.ts
 *   AI_PROVIDER=anthropic npx tsx examples/stream.ts   # or openai, gemini; or set an API key
 */
import { Console, Effect, Stream } from "effect"
import { ChatClient, type ChatEvent, type ModelTurn, Scripted } from "../src/index.ts"
import { providerFromEnv, runExample } from "./support/providers.ts"
import { getWeather, toFahrenheit } from "./support/weatherTools.ts"

// --- The offline model: asks for the weather once, then answers from the tool's result. ---

const offlineModel = Scripted.layer({
  respond: ({ history }: ModelTurn.TurnRequest) =>
    Effect.sync(() => {
      const last = history.at(-1)
      if (last?.role !== "tool") {
        return {
          _tag: "Reply" as const,
          text: "Let me look that up. ",
          toolCalls: [{ name: "get_weather", arguments: { city: "Lisbon" } }]
        }
      }
      const lisbon = JSON.parse(last.results[0]!.content) as { celsius: number; sky: string }
      return Scripted.text(`It is ${lisbon.celsius}°C and ${lisbon.sky} in Lisbon: a fine day for a walk by the river.`)
    })
})

// --- The program: every event of the stream, printed as it comes. ---

const write = (text: string) => Effect.sync(() => process.stdout.write(text))

const show = (event: ChatEvent.ChatEvent): Effect.Effect<void> => {
  switch (event._tag) {
    case "TextDelta":
      return write(event.text)
    case "ToolCallStart":
      return write(`\n[tool ${event.name} ${JSON.stringify(event.arguments)}]\n`)
    case "ToolCallEnd":
      return write(`[${event.isError ? "failed" : "result"} ${event.name}: ${event.result}]\n`)
    case "ReasoningDelta":
      return write(`\x1b[2m${event.text}\x1b[0m`)
    case "AgentToolStart":
      return write(`\n[agent ${event.name} ${JSON.stringify(event.input)}]\n`)
    case "AgentToolEnd":
      return write(`[agent ${event.isError ? "failed" : "result"} ${event.name}]\n`)
    case "Usage":
      return Effect.void
    case "Complete":
      return write("\n")
    case "RateLimit":
      return write(`[plan window ${event.window}: ${event.status}]\n`)
    default:
      // The Claude Code providers also report argument deltas, tasks, hooks and MCP server status.
      return Effect.void
  }
}

const program = Effect.gen(function*() {
  const chat = yield* ChatClient.ChatClient
  yield* chat.setTools([getWeather, toFahrenheit])
  const question = "What's the weather like in Lisbon?"
  yield* Console.log(`you: ${question}`)
  yield* write("model: ")
  yield* Stream.runForEach(chat.chatStream(question), show)
  const usage = yield* chat.usage
  yield* Console.log(`usage: ${usage.inputTokens} in / ${usage.outputTokens} out tokens`)
})

const provider = providerFromEnv({ scripted: { name: "scripted (offline)", layer: offlineModel } })
console.log(`provider: ${provider.name}`)
program.pipe(Effect.provide(provider.layer), runExample)
