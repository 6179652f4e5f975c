/**
 * A ChatClient on the Anthropic Messages API (`POST /v1/messages`), over `effect/http`'s
 * HttpClient: provide `NodeHttpClient.layerUndici` or `FetchHttpClient.layer`.
 *
 * **Details**
 *
 * - Tools: `tool_use` blocks are dispatched together (bounded) and answered in order with
 *   `tool_result` blocks; a failed tool sets `is_error: true`.
 * - `ask`: the answer schema becomes one extra tool. With no tools set it is forced
 *   (`tool_choice: { type: "tool" }`); with tools set the model must call a tool
 *   (`tool_choice: { type: "any" }`) and calling the answer tool gives the answer, so it can still
 *   use your tools first. The answer is decoded with your schema.
 * - Images and PDFs (`Content` parts) go as `image` / `document` blocks, inline (base64) or by
 *   URL; a tool's images go inside its `tool_result`. Limits checked before any request: 5 MB per
 *   image, 32 MB per document.
 * - `chatStream`: the Messages SSE stream (`stream: true`); text deltas as they arrive, tool input
 *   assembled from its JSON pieces before the tool runs.
 * - Retries 408/429/5xx/529 with backoff and jitter, honouring `retry-after`. The API key is
 *   `Redacted`, sent only as `x-api-key`, never logged; logs carry only the base URL's host.
 *
 * **Example** (Configured from the environment, on Node's HTTP client)
 *
 * ```ts
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { Layer } from "effect"
 * import { ClaudeApi } from "effect-chat-bridge"
 *
 * const Live = ClaudeApi.layerFromEnv().pipe(Layer.provide(NodeHttpClient.layerUndici))
 * ```
 *
 * @module
 * @summary Anthropic Messages API as a `ChatClient` (needs an `HttpClient` layer and an API key).
 * @group Chat providers
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as HttpClient from "effect/http/HttpClient"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import { makeLoopClient } from "../internal/chat/loopClient.ts"
import * as Media from "../internal/chat/media.ts"
import * as Wire from "../internal/http/anthropicWire.ts"
import { baseUrlOrFail } from "../internal/http/baseUrl.ts"
import {
  commonConfig,
  type CommonOptions,
  defined,
  loopSettings,
  requiredApiKey,
  retrySettings
} from "../internal/http/providerConfig.ts"
import { decodeWire, type HttpSettings, postJson, postSse } from "../internal/http/transport.ts"
import { truncatedStream, turnStream } from "../internal/http/turnStream.ts"
import { ChatClient, type ProviderError } from "../services/ChatClient.ts"
import type { TurnRequest, TurnStreamEvent } from "../services/ModelTurn.ts"

/**
 * Provider name in errors and logs.
 *
 * @category models
 * @since 1.0.0
 */
export const provider = "anthropic"

/**
 * Where requests go unless `baseUrl` (or `ANTHROPIC_BASE_URL`) says otherwise.
 *
 * @category config
 * @since 1.0.0
 */
export const DefaultBaseUrl = "https://api.anthropic.com"
/**
 * The model used when none is configured (`ANTHROPIC_MODEL`).
 *
 * @category config
 * @since 1.0.0
 */
export const DefaultModel = "claude-sonnet-4-5"
/**
 * `max_tokens` per model turn when none is configured; the Messages API requires one.
 *
 * @category config
 * @since 1.0.0
 */
export const DefaultMaxTokens = 4096
/**
 * The `anthropic-version` header sent by default.
 *
 * @category config
 * @since 1.0.0
 */
export const DefaultApiVersion = "2023-06-01"

/**
 * Options of {@link make} and {@link layer}: the common HTTP provider options plus the API key.
 *
 * @category config
 * @since 1.0.0
 */
export interface Options extends CommonOptions {
  /** The API key; kept `Redacted`, sent only in its header, never logged. */
  readonly apiKey: Redacted.Redacted<string>
  /** The `anthropic-version` header; default `2023-06-01`. */
  readonly apiVersion?: string | undefined
}

/**
 * Builds a ChatClient on the Messages API. Fails with a `ConfigurationError` ProviderError on a bad base URL.
 *
 * @category constructors
 * @since 1.0.0
 */
export const make = Effect.fn("ClaudeApi.make")(function*(options: Options) {
  const client = yield* HttpClient.HttpClient
  const baseUrl = yield* baseUrlOrFail(provider, options.baseUrl ?? DefaultBaseUrl, options.allowInsecureHttp)
  const settings: HttpSettings = {
    provider,
    baseUrl,
    secretHeaders: ["x-api-key"],
    secret: options.apiKey,
    envPrefix: "ANTHROPIC",
    ...retrySettings(options)
  }
  const headers = {
    "x-api-key": Redacted.value(options.apiKey),
    "anthropic-version": options.apiVersion ?? DefaultApiVersion,
    "content-type": "application/json"
  }
  const requestSettings: Wire.RequestSettings = {
    model: options.model,
    maxTokens: options.maxTokens ?? DefaultMaxTokens,
    system: options.system
  }
  const decode = decodeWire(provider, Wire.MessagesResponse)
  const turn = (request: TurnRequest) => {
    const { answerTool, body } = Wire.requestBody(requestSettings, request)
    return postJson(client, settings, "/v1/messages", headers, body).pipe(
      Effect.flatMap(decode),
      Effect.map((response) => Wire.turnResponse(response, answerTool))
    )
  }
  // Structured answers (`ask`) are not streamed: `chatStream` never asks for one.
  const streamTurn = (request: TurnRequest): Stream.Stream<TurnStreamEvent, ProviderError> => {
    if (request.responseFormat !== undefined) {
      return Stream.map(Stream.fromEffect(turn(request)), (response): TurnStreamEvent => ({ _tag: "Done", response }))
    }
    return Stream.suspend(() => {
      const { answerTool, body } = Wire.requestBody(requestSettings, request)
      const message = Wire.messageStream()
      return turnStream(provider, postSse(client, settings, "/v1/messages", headers, { ...body, stream: true }), {
        push: message.push,
        finish: () => {
          const response = message.response()
          return response === undefined
            ? Effect.fail(truncatedStream(provider))
            : Effect.succeed(Wire.turnResponse(response, answerTool))
        }
      })
    })
  }
  return yield* makeLoopClient({ provider, turn, streamTurn, media: Media.anthropic, ...loopSettings(options) })
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
 * The options read from the library's environment variables: `ANTHROPIC_API_KEY` (redacted) and
 * the optional `ANTHROPIC_BASE_URL`, `ANTHROPIC_MODEL`, `ANTHROPIC_MAX_TOKENS`,
 * `ANTHROPIC_REQUEST_TIMEOUT`, `ANTHROPIC_MAX_STEPS`, `ANTHROPIC_TOOL_CONCURRENCY`,
 * `ANTHROPIC_MAX_RETRIES`, `ANTHROPIC_ALLOW_INSECURE_HTTP`; `overrides` win over the variables
 * (an `apiKey` override means the key variable is not read).
 *
 * **Details**
 *
 * A `Config`, read through the current `ConfigProvider` (the process environment unless you
 * provide another): compose it, or pass it to {@link layerConfig}. A missing key or a malformed
 * value is a `ConfigError` naming the variable.
 *
 * @since 2.0.0
 * @category config
 */
export const configFromEnv = (overrides: Partial<Options> = {}): Config.Config<Options> =>
  Config.all({
    apiKey: overrides.apiKey === undefined ? Config.Redacted("ANTHROPIC_API_KEY") : Config.succeed(overrides.apiKey),
    common: commonConfig("ANTHROPIC", DefaultModel)
  }).pipe(Config.map(({ apiKey, common }): Options => ({ ...common, apiKey, ...defined(overrides) })))

/**
 * The ChatClient layer with its options read from `Config` values: each option is a `Config` (or
 * the whole options one `Config`), as `PgClient.layerConfig` takes them. Needs an `HttpClient`.
 *
 * **When to use**
 *
 * Your application names its own configuration (a secrets store, other variable names, a
 * `ConfigProvider` of its own). For the library's `ANTHROPIC_*` variables use {@link layerFromEnv}.
 *
 * **Example** (The key and model from your own variables)
 *
 * ```ts
 * import { Config, Layer } from "effect"
 * import { ClaudeApi } from "effect-chat-bridge"
 * import { FetchHttpClient } from "effect/http"
 *
 * const Live = ClaudeApi.layerConfig({
 *   apiKey: Config.Redacted("MY_ANTHROPIC_KEY"),
 *   model: Config.String("MY_MODEL").pipe(Config.withDefault(ClaudeApi.DefaultModel))
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
 * Without `ANTHROPIC_API_KEY` (and no `apiKey` override) it fails with a `config` ProviderError
 * naming the variable, where to get a key and what runs without one. Needs an `HttpClient`.
 *
 * @since 2.0.0
 * @category layers
 */
export const layerFromEnv = (
  overrides: Partial<Options> = {}
): Layer.Layer<ChatClient, ProviderError | Config.ConfigError, HttpClient.HttpClient> =>
  Layer.effect(
    ChatClient,
    Effect.flatMap(
      requiredApiKey("anthropic", "ANTHROPIC_API_KEY", "https://console.anthropic.com/settings/keys", overrides.apiKey),
      (apiKey) => Effect.flatMap(configFromEnv({ ...overrides, apiKey }), make)
    )
  )
