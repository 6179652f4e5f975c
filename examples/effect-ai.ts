/**
 * An unchanged `effect/ai` program — a Toolkit, `generateText`, `generateObject` — run on
 * Claude Code by its layer alone: the CLI calls the toolkit's handlers in this process (through
 * the loopback MCP bridge) and answers with a structured object through its own `--json-schema`.
 * Needs Claude Code installed and logged in (or ANTHROPIC_API_KEY); CLAUDE_BINARY and CLAUDE_CWD
 * choose the binary and its working directory.
 *
 *   npx tsx examples/effect-ai.ts                                  # Node >= 22.19
 *   bash scripts/with-node22.sh npx tsx examples/effect-ai.ts        # any Node
 */
import { Config, Console, Effect, Layer, Option, Schema } from "effect"
import { LanguageModel, Tool as AiTool, Toolkit } from "effect/ai"
import { ChatLanguageModel } from "../src/effect-ai.ts"
import { exampleClaudeBinary, runExample } from "./support/providers.ts"

// ---- the effect/ai program: nothing in it knows which model runs it ----

const GetWeather = AiTool.make("get_weather", {
  description: "Current weather for a city, in degrees Celsius",
  parameters: Schema.Struct({ city: Schema.String }),
  success: Schema.Struct({ city: Schema.String, celsius: Schema.Number, sky: Schema.String }),
  failure: Schema.Struct({ reason: Schema.String }),
  failureMode: "return"
})

const WeatherToolkit = Toolkit.make(GetWeather)

const WeatherLive = WeatherToolkit.toLayer({
  get_weather: ({ city }) =>
    city.toLowerCase() === "lisbon"
      ? Effect.succeed({ city, celsius: 24, sky: "sunny" })
      : Effect.fail({ reason: `no weather station in ${city}` })
})

const Report = Schema.Struct({ city: Schema.String, celsius: Schema.Number, advice: Schema.String })

const program = Effect.gen(function*() {
  const answer = yield* LanguageModel.generateText({ prompt: "What's the weather in Lisbon?", toolkit: WeatherToolkit })
  for (const call of answer.toolCalls) yield* Console.log(`  tool ${call.name}(${JSON.stringify(call.params)})`)
  for (const result of answer.toolResults) yield* Console.log(`  result ${JSON.stringify(result.encodedResult)}`)
  yield* Console.log(`claude: ${answer.text}`)
  const report = yield* LanguageModel.generateObject({
    prompt: `Write a weather report from this answer: ${answer.text}`,
    schema: Report
  })
  yield* Console.log(`report: ${JSON.stringify(report.value)}`)
})

// ---- the one line that picks the model: Claude Code ----

const ClaudeCode = Layer.unwrap(
  Effect.gen(function*() {
    const opt = (name: string) => Effect.map(Config.option(Config.String(name)), Option.getOrUndefined)
    return ChatLanguageModel.layerClaudeLocalNode({
      binary: exampleClaudeBinary(),
      cwd: yield* opt("CLAUDE_CWD"),
      systemPrompt: "Answer briefly. Use the tools for weather."
    })
  })
)

program.pipe(Effect.provide(WeatherLive), Effect.provide(ClaudeCode), runExample)
