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
import * as OtelMetrics from "@effect/opentelemetry/OtelMetrics"
import * as OtelTracer from "@effect/opentelemetry/OtelTracer"
import * as Resource from "@effect/opentelemetry/Resource"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { ConsoleMetricExporter, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import { BasicTracerProvider, ConsoleSpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Config, Console, Effect, Layer, Option, Redacted } from "effect"
import { Otlp } from "effect/observability"
import { ChatClient, type ModelTurn, Scripted } from "../src/index.ts"
import { providerFromEnv, runExample } from "./support/providers.ts"
import { weatherTools } from "./support/weatherTools.ts"

const serviceName = "effect-chat-bridge-example"

/** OTLP/JSON over HTTP to a collector, flushed when the program ends. */
const otlpExporter = (
  baseUrl: string,
  name: string,
  headers: Readonly<Record<string, string>>
): Layer.Layer<never> =>
  Otlp.layerJson({
    baseUrl: baseUrl.replace(/\/+$/, ""),
    resource: { serviceName: name },
    headers,
    metricsExportInterval: "1 second",
    tracerExportInterval: "200 millis"
  }).pipe(Layer.provide(NodeHttpClient.layerUndici))

/**
 * The OpenTelemetry SDK's console exporters. Built from `@effect/opentelemetry`'s parts on
 * `sdk-trace-base`'s `BasicTracerProvider`: its `NodeSdk` (what v3's example used) needs
 * `@opentelemetry/sdk-trace-node` as well, for a context manager Effect's own tracer does not use.
 */
const consoleExporter = (name: string): Layer.Layer<never> => {
  const provider = Layer.effect(
    OtelTracer.OtelTracerProvider,
    Effect.flatMap(Resource.Resource, (resource) =>
      Effect.acquireRelease(
        Effect.sync(() =>
          new BasicTracerProvider({
            resource,
            spanProcessors: [new SimpleSpanProcessor(new ConsoleSpanExporter())]
          })
        ),
        (p) => Effect.promise(() => p.forceFlush().finally(() => p.shutdown()))
      ))
  )
  // Exported once more when the layer closes, so a short run still prints its metrics.
  const metrics = OtelMetrics.layer(() =>
    new PeriodicExportingMetricReader({ exporter: new ConsoleMetricExporter(), exportIntervalMillis: 60_000 })
  )
  return Layer.mergeAll(OtelTracer.layer.pipe(Layer.provide(provider)), metrics).pipe(
    Layer.provide(Resource.layerFromEnv(Resource.configToAttributes({ serviceName: name })))
  )
}

/** `key=value,…` (values URL-encoded), as in `OTEL_EXPORTER_OTLP_HEADERS`. */
const parseHeaders = (text: string): Record<string, string> =>
  Object.fromEntries(
    text.split(",").map((pair) => {
      const i = pair.indexOf("=")
      return [pair.slice(0, i).trim(), decodeURIComponent(pair.slice(i + 1).trim())]
    })
  )

/**
 * OTLP over HTTP when the standard `OTEL_EXPORTER_OTLP_ENDPOINT` is set (with
 * `OTEL_EXPORTER_OTLP_HEADERS` as `key=value,…` for a collector that wants a key), else the
 * OpenTelemetry SDK's console exporters.
 */
export const TelemetryLive = Layer.unwrap(
  Effect.gen(function*() {
    const endpoint = yield* Config.option(Config.String("OTEL_EXPORTER_OTLP_ENDPOINT"))
    const headers = yield* Config.option(Config.Redacted("OTEL_EXPORTER_OTLP_HEADERS"))
    const name = yield* Config.String("OTEL_SERVICE_NAME").pipe(Config.withDefault(serviceName))
    return Option.isSome(endpoint)
      ? otlpExporter(
        endpoint.value,
        name,
        Option.match(headers, { onNone: () => ({}), onSome: (h) => parseHeaders(Redacted.value(h)) })
      )
      : consoleExporter(name)
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
  runExample
)
