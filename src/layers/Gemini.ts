/**
 * A ChatClient on the Gemini API (`POST <baseUrl>/<apiVersion>/models/<model>:generateContent`),
 * over `effect/http`'s HttpClient.
 *
 * **Details**
 *
 * - Tools: `functionCall` parts are dispatched together (bounded) and answered in order with
 *   `functionResponse` parts: `{ output }` on success, `{ error }` on failure (Gemini's documented
 *   convention). Thought signatures are kept and sent back with their calls, as Gemini 3 requires.
 * - `ask`: `responseMimeType: application/json` and the answer's JSON Schema converted to Gemini's
 *   schema dialect (`$ref`s inlined, `nullable`, upper-case types), on that request only.
 * - Images and PDFs (`Content` parts) go as `inlineData` (20 MB per request); URLs are refused
 *   before any request (`fileData` takes only Files API URIs). A tool's images cannot go in a
 *   `functionResponse`: the model gets the text plus a note naming them.
 * - `chatStream`: `:streamGenerateContent?alt=sse`; text parts as they arrive, function calls (whole
 *   in their chunk) run once the stream has ended.
 * - Retries 408/429/5xx with backoff and jitter, honouring `retry-after`. The API key is
 *   `Redacted`, sent only in the `x-goog-api-key` header (never in the URL), never logged; logs
 *   carry only the base URL's host.
 *
 * **Example** (Configured from the environment, on Node's HTTP client)
 *
 * ```ts
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { Layer } from "effect"
 * import { Gemini } from "effect-chat-bridge"
 *
 * const Live = Gemini.layerFromEnv().pipe(Layer.provide(NodeHttpClient.layerUndici))
 * ```
 *
 * @module
 * @summary Gemini API as a `ChatClient` (needs an `HttpClient` layer and an API key).
 * @group Chat providers
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as HttpClient from "effect/http/HttpClient"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Ref from "effect/Ref"
import * as Stream from "effect/Stream"
import { makeLoopClient } from "../internal/chat/loopClient.ts"
import * as Media from "../internal/chat/media.ts"
import { baseUrlOrFail } from "../internal/http/baseUrl.ts"
import * as Wire from "../internal/http/geminiWire.ts"
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
import { ChatClient, ProviderError, UnknownError } from "../services/ChatClient.ts"
import type { TurnRequest, TurnResponse, TurnStreamEvent } from "../services/ModelTurn.ts"

/**
 * Provider name in errors and logs.
 *
 * @category models
 * @since 1.0.0
 */
export const provider = "gemini"

/**
 * Where requests go unless `baseUrl` (or `GEMINI_BASE_URL`) says otherwise.
 *
 * @category config
 * @since 1.0.0
 */
export const DefaultBaseUrl = "https://generativelanguage.googleapis.com"
/**
 * The API version path segment used by default.
 *
 * @category config
 * @since 1.0.0
 */
export const DefaultApiVersion = "v1beta"
/**
 * The model used when none is configured (`GEMINI_MODEL`).
 *
 * @category config
 * @since 1.0.0
 */
export const DefaultModel = "gemini-2.5-flash"

/** Thought signatures kept per conversation; old ones are dropped beyond this. */
const MaxSignatures = 1_000

/**
 * Options of {@link make} and {@link layer}: the common HTTP provider options plus the API key.
 *
 * @category config
 * @since 1.0.0
 */
export interface Options extends CommonOptions {
  /** The API key; kept `Redacted`, sent only in its header, never logged. */
  readonly apiKey: Redacted.Redacted<string>
  /** The path segment after the base URL; default `v1beta`. */
  readonly apiVersion?: string | undefined
}

/**
 * Builds a ChatClient on the Gemini API. Fails with a `ConfigurationError` ProviderError on a bad base URL.
 *
 * @category constructors
 * @since 1.0.0
 */
export const make = Effect.fn("Gemini.make")(function*(options: Options) {
  const client = yield* HttpClient.HttpClient
  const baseUrl = yield* baseUrlOrFail(provider, options.baseUrl ?? DefaultBaseUrl, options.allowInsecureHttp)
  const settings: HttpSettings = {
    provider,
    baseUrl,
    secretHeaders: ["x-goog-api-key"],
    secret: options.apiKey,
    envPrefix: "GEMINI",
    ...retrySettings(options)
  }
  const headers = { "x-goog-api-key": Redacted.value(options.apiKey), "content-type": "application/json" }
  const model = options.model.replace(/^models\//, "")
  const path = `/${encodeURIComponent(options.apiVersion ?? DefaultApiVersion)}/models/${encodeURIComponent(model)}`
  const requestSettings: Wire.RequestSettings = { system: options.system, maxTokens: options.maxTokens }
  const decode = decodeWire(provider, Wire.GenerateContentResponse)
  const signatures = yield* Ref.make<ReadonlyMap<string, string>>(new Map())
  let ids = 0
  const newId = () => `${Wire.LocalIdPrefix}${++ids}`

  /** Reads a whole response (streamed or not) into a turn, remembering its thought signatures. */
  const finishTurn = (response: Wire.GenerateContentResponse): Effect.Effect<TurnResponse, ProviderError> => {
    const read = Wire.turnResponse(response, newId)
    if (read._tag === "NoCandidate") {
      return Effect.fail(
        new ProviderError({
          provider,
          reason: new UnknownError({
            message: `gemini returned no answer (${read.reason})`
          })
        })
      )
    }
    if (read.signatures.length === 0) return Effect.succeed(read.turn)
    return Effect.as(
      Ref.update(signatures, (m) => new Map([...m, ...read.signatures].slice(-MaxSignatures))),
      read.turn
    )
  }

  const generatePath = `${path}:generateContent`
  const turn = (request: TurnRequest) =>
    Effect.flatMap(
      Ref.get(signatures),
      (known) =>
        postJson(client, settings, generatePath, headers, Wire.requestBody(requestSettings, request, known)).pipe(
          Effect.flatMap(decode),
          Effect.flatMap(finishTurn)
        )
    )

  // Structured answers (`ask`) are not streamed: `chatStream` never asks for one.
  const streamTurn = (request: TurnRequest): Stream.Stream<TurnStreamEvent, ProviderError> => {
    if (request.responseFormat !== undefined) {
      return Stream.map(Stream.fromEffect(turn(request)), (response): TurnStreamEvent => ({ _tag: "Done", response }))
    }
    return Stream.unwrap(Effect.map(Ref.get(signatures), (known) => {
      const content = Wire.contentStream()
      const body = Wire.requestBody(requestSettings, request, known)
      const events = postSse(client, settings, `${path}:streamGenerateContent?alt=sse`, headers, body)
      return turnStream(provider, events, {
        push: content.push,
        finish: () => {
          const response = content.response()
          return response === undefined ? Effect.fail(truncatedStream(provider)) : finishTurn(response)
        }
      })
    }))
  }

  return yield* makeLoopClient({ provider, turn, streamTurn, media: Media.gemini, ...loopSettings(options) })
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
 * The options read from the library's environment variables: `GEMINI_API_KEY` (redacted) and the
 * optional `GEMINI_BASE_URL`, `GEMINI_MODEL`, `GEMINI_MAX_TOKENS`, `GEMINI_REQUEST_TIMEOUT`,
 * `GEMINI_MAX_STEPS`, `GEMINI_TOOL_CONCURRENCY`, `GEMINI_MAX_RETRIES`,
 * `GEMINI_ALLOW_INSECURE_HTTP`; `overrides` win over the variables (an `apiKey` override means the
 * key variable is not read).
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
    apiKey: overrides.apiKey === undefined ? Config.Redacted("GEMINI_API_KEY") : Config.succeed(overrides.apiKey),
    common: commonConfig("GEMINI", DefaultModel)
  }).pipe(Config.map(({ apiKey, common }): Options => ({ ...common, apiKey, ...defined(overrides) })))

/**
 * The ChatClient layer with its options read from `Config` values: each option is a `Config` (or
 * the whole options one `Config`), as `PgClient.layerConfig` takes them. Needs an `HttpClient`.
 * For the library's `GEMINI_*` variables use {@link layerFromEnv}.
 *
 * **Example** (The key from your own variable)
 *
 * ```ts
 * import { Config, Layer } from "effect"
 * import { Gemini } from "effect-chat-bridge"
 * import { FetchHttpClient } from "effect/http"
 *
 * const Live = Gemini.layerConfig({
 *   apiKey: Config.Redacted("MY_GEMINI_KEY"),
 *   model: Config.succeed(Gemini.DefaultModel)
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
 * Without `GEMINI_API_KEY` (and no `apiKey` override) it fails with a `config` ProviderError
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
      requiredApiKey("gemini", "GEMINI_API_KEY", "https://aistudio.google.com/apikey", overrides.apiKey),
      (apiKey) => Effect.flatMap(configFromEnv({ ...overrides, apiKey }), make)
    )
  )
