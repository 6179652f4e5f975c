/**
 * A ChatClient on the Anthropic Messages API (`POST /v1/messages`), over `effect/http`'s
 * HttpClient: provide `NodeHttpClient.layerUndici` or `FetchHttpClient.layer`.
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
 * @example
 * const Live = ClaudeApi.layerConfig().pipe(Layer.provide(NodeHttpClient.layerUndici))
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

/** Provider name in errors and logs. */
export const provider = "anthropic"

/** Where requests go unless `baseUrl` (or `ANTHROPIC_BASE_URL`) says otherwise. */
export const DefaultBaseUrl = "https://api.anthropic.com"
/** The model used when none is configured (`ANTHROPIC_MODEL`). */
export const DefaultModel = "claude-sonnet-4-5"
/** `max_tokens` per model turn when none is configured; the Messages API requires one. */
export const DefaultMaxTokens = 4096
/** The `anthropic-version` header sent by default. */
export const DefaultApiVersion = "2023-06-01"

/** Options of {@link make} and {@link layer}: the common HTTP provider options plus the API key. */
export interface Options extends CommonOptions {
  /** The API key; kept `Redacted`, sent only in its header, never logged. */
  readonly apiKey: Redacted.Redacted<string>
  /** The `anthropic-version` header; default `2023-06-01`. */
  readonly apiVersion?: string | undefined
}

/** Builds a ChatClient on the Messages API. Fails with a `ConfigurationError` ProviderError on a bad base URL. */
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

/** The ChatClient layer; needs an `HttpClient`. */
export const layer = (options: Options): Layer.Layer<ChatClient, ProviderError, HttpClient.HttpClient> =>
  Layer.effect(ChatClient, make(options))

/**
 * Reads `ANTHROPIC_API_KEY` (redacted) and the optional `ANTHROPIC_BASE_URL`, `ANTHROPIC_MODEL`,
 * `ANTHROPIC_MAX_TOKENS`, `ANTHROPIC_REQUEST_TIMEOUT`, `ANTHROPIC_MAX_STEPS`,
 * `ANTHROPIC_TOOL_CONCURRENCY`, `ANTHROPIC_MAX_RETRIES`, `ANTHROPIC_ALLOW_INSECURE_HTTP`;
 * `overrides` win over the configuration.
 */
export const config = (overrides: Partial<Options> = {}): Config.Config<Options> =>
  Config.all({
    apiKey: overrides.apiKey === undefined ? Config.Redacted("ANTHROPIC_API_KEY") : Config.succeed(overrides.apiKey),
    common: commonConfig("ANTHROPIC", DefaultModel)
  }).pipe(Config.map(({ apiKey, common }): Options => ({ ...common, apiKey, ...defined(overrides) })))

/** The ChatClient layer, configured from the environment (see `config`). */
export const layerConfig = (
  overrides: Partial<Options> = {}
): Layer.Layer<ChatClient, ProviderError | Config.ConfigError, HttpClient.HttpClient> =>
  Layer.effect(
    ChatClient,
    Effect.flatMap(
      requiredApiKey("anthropic", "ANTHROPIC_API_KEY", "https://console.anthropic.com/settings/keys", overrides.apiKey),
      (apiKey) => Effect.flatMap(config({ ...overrides, apiKey }), make)
    )
  )
