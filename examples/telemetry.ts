/**
 * Traces and metrics of a chat, exported with `@effect/opentelemetry`: one `ChatClient.chat` span
 * holding a `chat <model>` span per model turn (tokens, finish reason) and a `Tool.executeTool`
 * span per tool call; metrics for tokens, cost, turn and tool latency and tool errors.
 *
 *   npx tsx examples/telemetry.ts                                   # to the console
 *   OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 npx tsx examples/telemetry.ts   # to a collector
 *
 * Offline on the Scripted model unless a provider is chosen like in the quickstart (AI_PROVIDER
 * or an API key). The example needs `@effect/opentelemetry`, `@opentelemetry/api`,
 * `@opentelemetry/resources`, `@opentelemetry/sdk-trace-base` and `@opentelemetry/sdk-metrics`
 * (plus `@opentelemetry/semantic-conventions`), which the library itself does not.
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import * as Otlp from "@effect/opentelemetry/Otlp"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { ConsoleMetricExporter, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import { ConsoleSpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Config, Console, Effect, Layer, Option, Redacted } from "effect"
import { ChatClient, type ModelTurn, Scripted } from "../src/index.js"
import { providerFromEnv } from "./support/providers.js"
import { weatherTools } from "./support/weatherTools.js"

const serviceName = "effect-chat-bridge-example"

/**
 * OTLP over HTTP when the standard `OTEL_EXPORTER_OTLP_ENDPOINT` is set (with
 * `OTEL_EXPORTER_OTLP_HEADERS` as `key=value,…` for a collector that wants a key), else the
 * OpenTelemetry SDK's console exporters.
 */
export const TelemetryLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    const endpoint = yield* Config.option(Config.string("OTEL_EXPORTER_OTLP_ENDPOINT"))
    const headers = yield* Config.option(Config.redacted("OTEL_EXPORTER_OTLP_HEADERS"))
    const name = yield* Config.string("OTEL_SERVICE_NAME").pipe(Config.withDefault(serviceName))
    if (Option.isSome(endpoint)) {
      const parsed = Option.match(headers, {
        onNone: () => ({}),
        onSome: (h) =>
          Object.fromEntries(
            Redacted.value(h).split(",").map((pair) => {
              const i = pair.indexOf("=")
              return [pair.slice(0, i).trim(), decodeURIComponent(pair.slice(i + 1).trim())]
            })
          )
      })
      return Otlp.layerJson({
        baseUrl: endpoint.value.replace(/\/+$/, ""),
        resource: { serviceName: name },
        headers: parsed,
        metricsExportInterval: "1 second",
        tracerExportInterval: "200 millis"
      }).pipe(Layer.provide(NodeHttpClient.layerUndici))
    }
    return NodeSdk.layer(() => ({
      resource: { serviceName: name },
      spanProcessor: new SimpleSpanProcessor(new ConsoleSpanExporter()),
      // Exported once more when the layer closes, so a short run still prints its metrics.
      metricReader: new PeriodicExportingMetricReader({
        exporter: new ConsoleMetricExporter(),
        exportIntervalMillis: 60_000
      })
    }))
  })
)

const lastResults = (history: ReadonlyArray<ModelTurn.Message>) => {
  const last = history.at(-1)
  return last?.role === "tool" ? last.results : []
}

/** Offline: asks for the weather in two cities (one fails), then answers from the results. */
const offlineModel = Scripted.layer({
  respond: ({ history }) =>
    Effect.sync(() => {
      const results = lastResults(history)
      if (results.length === 0) {
        const reply: Scripted.ScriptedTurn = {
          _tag: "Reply",
          text: "",
          toolCalls: [
            { id: "call_paris", name: "get_weather", arguments: { city: "Paris" } },
            { id: "call_atlantis", name: "get_weather", arguments: { city: "Atlantis" } }
          ],
          usage: ChatClient.Usage.of({ inputTokens: 412, outputTokens: 38 })
        }
        return reply
      }
      return Scripted.text(
        `Paris: ${results[0]!.content}; Atlantis: ${results[1]!.content}`,
        ChatClient.Usage.of({ inputTokens: 530, outputTokens: 61 })
      )
    })
})

const program = Effect.gen(function*() {
  const chat = yield* ChatClient.ChatClient
  yield* chat.setTools(weatherTools)
  const answer = yield* chat.chat("What's the weather in Paris and in Atlantis?")
  yield* Console.log(`model: ${answer}`)
})

const choice = providerFromEnv({ scripted: { name: "scripted (offline)", layer: offlineModel } })

program.pipe(
  Effect.provide(choice.layer),
  Effect.provide(TelemetryLive),
  NodeRuntime.runMain
)
