/**
 * A ChatClient on OpenAI Chat Completions (`POST <baseUrl>/chat/completions`), over
 * `effect/http`'s HttpClient. Point `baseUrl` at any OpenAI-compatible server (vLLM, Ollama,
 * LM Studio, llama.cpp, a gateway); plain `http` is accepted for loopback hosts.
 *
 * **Details**
 *
 * - Tools: `tool_calls` are dispatched together (bounded) and answered in order with `role: "tool"`
 *   messages. Chat Completions has no error flag there, so a failed tool's content is the JSON
 *   `{"error": "<message>"}`.
 * - `ask`: `response_format: { type: "json_schema", strict }` on that request only — `chat` after
 *   `ask` sends none. `strict` is on when the schema allows it (every property required, no extra
 *   properties), otherwise the schema is still sent, non-strict. The answer is decoded with your schema.
 * - Images (`Content` parts) go as `image_url` parts (a base64 data URL, or the URL), PDFs as
 *   `file` parts with `file_data`; PDF URLs are refused before any request. A tool's images cannot
 *   go in a `tool` message: the model gets the text plus a note naming them.
 * - `chatStream`: `stream: true` with `stream_options.include_usage`; text deltas as they arrive,
 *   tool calls assembled by index before they run (empty arguments become `{}`).
 * - Retries 408/429/5xx with backoff and jitter, honouring `retry-after(-ms)`. The API key is
 *   `Redacted`, sent only as a bearer token, never logged; logs carry only the base URL's host.
 *
 * **Example** (Configured from the environment, on Node's HTTP client)
 *
 * ```ts
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { Layer } from "effect"
 * import { OpenAi } from "effect-chat-bridge"
 *
 * const Live = OpenAi.layerFromEnv().pipe(Layer.provide(NodeHttpClient.layerUndici))
 * ```
 *
 * @module
 * @summary OpenAI Chat Completions (or any compatible server) as a `ChatClient`.
 * @group Chat providers
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as HttpClient from "effect/http/HttpClient"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import { makeLoopClient } from "../internal/chat/loopClient.ts"
import * as Media from "../internal/chat/media.ts"
import { baseUrlOrFail } from "../internal/http/baseUrl.ts"
import * as Wire from "../internal/http/openAiWire.ts"
import {
  commonConfig,
  type CommonOptions,
  defined,
  loopSettings,
  retrySettings
} from "../internal/http/providerConfig.ts"
import { decodeWire, type HttpSettings, postJson, postSse } from "../internal/http/transport.ts"
import { truncatedStream, turnStream } from "../internal/http/turnStream.ts"
import { ChatClient, ConfigurationError, ProviderError } from "../services/ChatClient.ts"
import type { TurnRequest, TurnStreamEvent } from "../services/ModelTurn.ts"

/**
 * Where requests go unless `baseUrl` (or `OPENAI_BASE_URL`, e.g. a local compatible server) says otherwise.
 *
 * @category config
 * @since 1.0.0
 */
export const DefaultBaseUrl = "https://api.openai.com/v1"
/**
 * The model used when none is configured (`OPENAI_MODEL`).
 *
 * @category config
 * @since 1.0.0
 */
export const DefaultModel = "gpt-4.1-mini"

/**
 * Options of {@link make} and {@link layer}: the common HTTP provider options, an optional key and compatibility switches.
 *
 * @category config
 * @since 1.0.0
 */
export interface Options extends CommonOptions {
  /** Optional: local OpenAI-compatible servers often need none. */
  readonly apiKey?: Redacted.Redacted<string> | undefined
  /** Provider name in errors and logs; default "openai" (set it for a compatible server). */
  readonly name?: string | undefined
  /** Which field carries `maxTokens`; default `max_completion_tokens`, `max_tokens` for older servers. */
  readonly maxTokensField?: "max_completion_tokens" | "max_tokens" | undefined
}

/**
 * Builds a ChatClient on Chat Completions. Fails with a `ConfigurationError` ProviderError on a bad base URL,
 * or without an API key for the default (OpenAI's own) base URL.
 *
 * @category constructors
 * @since 1.0.0
 */
export const make = Effect.fn("OpenAi.make")(function*(options: Options) {
  const provider = options.name ?? "openai"
  const client = yield* HttpClient.HttpClient
  const baseUrl = yield* baseUrlOrFail(provider, options.baseUrl ?? DefaultBaseUrl, options.allowInsecureHttp)
  if (options.apiKey === undefined && baseUrl === DefaultBaseUrl) {
    return yield* new ProviderError({
      provider,
      reason: new ConfigurationError({
        message: "OPENAI_API_KEY is not set, and api.openai.com needs a key: set OPENAI_API_KEY (or pass apiKey), " +
          "or point OPENAI_BASE_URL at an OpenAI-compatible server that needs none (such as a local one)"
      })
    })
  }
  const settings: HttpSettings = {
    provider,
    baseUrl,
    secretHeaders: [],
    secret: options.apiKey,
    envPrefix: "OPENAI",
    ...retrySettings(options)
  }
  const headers: Record<string, string> = { "content-type": "application/json" }
  if (options.apiKey !== undefined) headers["authorization"] = `Bearer ${Redacted.value(options.apiKey)}`
  const requestSettings: Wire.RequestSettings = {
    model: options.model,
    system: options.system,
    maxTokens: options.maxTokens,
    maxTokensField: options.maxTokensField ?? "max_completion_tokens"
  }
  const decode = decodeWire(provider, Wire.ChatResponse)
  const turn = (request: TurnRequest) =>
    postJson(client, settings, "/chat/completions", headers, Wire.requestBody(requestSettings, request)).pipe(
      Effect.flatMap(decode),
      Effect.map(Wire.turnResponse)
    )
  // Structured answers (`ask`) are not streamed: `chatStream` never asks for one.
  const streamTurn = (request: TurnRequest): Stream.Stream<TurnStreamEvent, ProviderError> => {
    if (request.responseFormat !== undefined) {
      return Stream.map(Stream.fromEffect(turn(request)), (response): TurnStreamEvent => ({ _tag: "Done", response }))
    }
    return Stream.suspend(() => {
      const completion = Wire.completionStream()
      const events = postSse(
        client,
        settings,
        "/chat/completions",
        headers,
        Wire.streamRequestBody(requestSettings, request)
      )
      return turnStream(provider, events, {
        push: completion.push,
        finish: () => {
          const response = completion.response()
          return response === undefined
            ? Effect.fail(truncatedStream(provider))
            : Effect.succeed(Wire.turnResponse(response))
        }
      })
    })
  }
  return yield* makeLoopClient({ provider, turn, streamTurn, media: Media.openAi, ...loopSettings(options) })
})

/**
 * The ChatClient layer; needs an `HttpClient`.
 *
 * @category layers
 * @since 1.0.0
 */
export const layer = (options: Options): Layer.Layer<ChatClient, ProviderError, HttpClient.HttpClient> =>
  Layer.effect(ChatClient, make(options))

/**
 * The options read from the library's environment variables, all optional: `OPENAI_API_KEY`
 * (redacted), `OPENAI_BASE_URL`, `OPENAI_MODEL`, `OPENAI_MAX_TOKENS`, `OPENAI_REQUEST_TIMEOUT`,
 * `OPENAI_MAX_STEPS`, `OPENAI_TOOL_CONCURRENCY`, `OPENAI_MAX_RETRIES`,
 * `OPENAI_ALLOW_INSECURE_HTTP`; `overrides` win over the variables.
 *
 * **Details**
 *
 * A `Config`, read through the current `ConfigProvider` (the process environment unless you
 * provide another): compose it, or pass it to {@link layerConfig}. A malformed value is a
 * `ConfigError` naming the variable.
 *
 * @since 2.0.0
 * @category config
 */
export const configFromEnv = (overrides: Partial<Options> = {}): Config.Config<Options> =>
  Config.all({
    apiKey: Config.option(Config.Redacted("OPENAI_API_KEY")),
    common: commonConfig("OPENAI", DefaultModel)
  }).pipe(
    Config.map(({ apiKey, common }): Options => ({
      ...common,
      apiKey: Option.getOrUndefined(apiKey),
      ...defined(overrides)
    }))
  )

/**
 * The ChatClient layer with its options read from `Config` values: each option is a `Config` (or
 * the whole options one `Config`), as `PgClient.layerConfig` takes them. Needs an `HttpClient`.
 * For the library's `OPENAI_*` variables use {@link layerFromEnv}.
 *
 * **Example** (A local OpenAI-compatible server named by your own variables)
 *
 * ```ts
 * import { Config, Layer } from "effect"
 * import { OpenAi } from "effect-chat-bridge"
 * import { FetchHttpClient } from "effect/http"
 *
 * const Live = OpenAi.layerConfig({
 *   baseUrl: Config.String("LLM_URL").pipe(Config.withDefault("http://127.0.0.1:11434/v1")),
 *   model: Config.String("LLM_MODEL"),
 *   name: Config.succeed("ollama")
 * }).pipe(Layer.provide(FetchHttpClient.layer))
 * ```
 *
 * @since 2.0.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Wrap<Options>
): Layer.Layer<ChatClient, ProviderError | Config.ConfigError, HttpClient.HttpClient> =>
  Layer.effect(ChatClient, Effect.flatMap(Config.unwrap(config), make))

/**
 * The ChatClient layer configured from the environment ({@link configFromEnv}); `overrides` win.
 * Needs an `HttpClient`.
 *
 * @since 2.0.0
 * @category layers
 */
export const layerFromEnv = (
  overrides: Partial<Options> = {}
): Layer.Layer<ChatClient, ProviderError | Config.ConfigError, HttpClient.HttpClient> =>
  Layer.effect(ChatClient, Effect.flatMap(configFromEnv(overrides), make))
