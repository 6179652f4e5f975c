/**
 * The HTTP providers' transport: a JSON POST (answered in JSON or as server-sent events) under the
 * retry policy, with every failure turned into a `ProviderError` that names what to check, and
 * vendor responses decoded with their wire schemas.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Headers from "effect/http/Headers"
import type * as HttpClient from "effect/http/HttpClient"
import type * as HttpClientError from "effect/http/HttpClientError"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import {
  AuthenticationError,
  InvalidResponseError,
  NetworkError,
  ProviderError,
  type ProviderErrorReason,
  QuotaExhaustedError,
  reasonFromHttpStatus
} from "../../services/ChatClient.ts"
import * as ParseErrorText from "../core/parseErrorText.ts"
import { hostOf } from "./baseUrl.ts"
import { bounded, causeDetail, errorDetail, isAuthStatus, scrub } from "./errorDetail.ts"
import { backoff, isRetryableStatus, parseRetryAfter } from "./retry.ts"
import * as Sse from "./sse.ts"

/** What every HTTP provider is configured with, beyond its wire specifics. */
export interface HttpSettings {
  /** Provider name in errors and logs ("anthropic", "openai", "gemini"). */
  readonly provider: string
  /** A validated base URL (see `validateBaseUrl`). */
  readonly baseUrl: string
  /** Header names carrying the secret; added to the redacted header names for tracing. */
  readonly secretHeaders: ReadonlyArray<string>
  /** The secret, used only to scrub it from any text that could reach an error or a log. */
  readonly secret: Redacted.Redacted<string> | undefined
  /** Retries after the first attempt; default 2. */
  readonly maxRetries: number
  /** First backoff delay; default 500 ms. */
  readonly retryBaseDelay: Duration.Duration
  /** Prefix of the provider's variables (`OPENAI`): errors name `<prefix>_API_KEY` and `<prefix>_BASE_URL`. */
  readonly envPrefix?: string | undefined
}

/**
 * A failed attempt and whether the retry policy may repeat it. `retry` is the transport's own
 * (narrower than the reason's `isRetryable`: only `RetryableStatuses` and connection failures).
 */
interface AttemptFailure {
  readonly error: ProviderError
  readonly retry: boolean
  readonly retryAfter: Option.Option<Duration.Duration>
}

/** Builds a failure's reason from its (already scrubbed) message. */
type MakeReason = (message: string) => ProviderErrorReason

/** How a successful (2xx) response is read; a failure may still be retried. */
type ReadResponse<A> = (
  response: HttpClientResponse.HttpClientResponse,
  fail: (reason: MakeReason, message: string, retry: boolean) => Effect.Effect<never, AttemptFailure>
) => Effect.Effect<A, AttemptFailure>

/** What `postWith` derives from `HttpSettings` once, not on every request. */
interface Prepared {
  readonly host: string
  readonly annotations: Readonly<Record<string, string>>
  /** The fiber's redacted header names plus `secretHeaders`; `undefined` when there is nothing to add. */
  readonly redactedNames: ((names: ReadonlyArray<string | RegExp>) => ReadonlyArray<string | RegExp>) | undefined
}

// Keyed by the settings object a provider builds once in `make`.
const preparedCache = new WeakMap<HttpSettings, Prepared>()

const prepare = (settings: HttpSettings): Prepared => {
  let prepared = preparedCache.get(settings)
  if (prepared === undefined) {
    const host = hostOf(settings.baseUrl)
    const extra = settings.secretHeaders
    // The fiber's list rarely changes: remember the last one seen and its extension.
    let lastIn: ReadonlyArray<string | RegExp> | undefined
    let lastOut: ReadonlyArray<string | RegExp> = []
    prepared = {
      host,
      annotations: { provider: settings.provider, host },
      redactedNames: extra.length === 0 ? undefined : (names) => {
        if (names !== lastIn) {
          lastIn = names
          lastOut = [...names, ...extra]
        }
        return lastOut
      }
    }
    preparedCache.set(settings, prepared)
  }
  return prepared
}

/**
 * Whether an error answer says the account's quota or credit is used up: OpenAI's
 * `insufficient_quota` (429) and Anthropic's "credit balance is too low" (400).
 */
const isQuotaExhausted = (status: number, body: string): boolean =>
  (status === 429 && body.includes("insufficient_quota")) ||
  (status === 400 && /credit balance is too low/i.test(body))

// Effect 4 tags the reasons `TransportError`, `DecodeError`, …; messages keep v3's short names.
const reasonName = (error: HttpClientError.HttpClientError): string => error.reason._tag.replace(/Error$/, "")

/**
 * POSTs a JSON body to `baseUrl + path` and reads a 2xx answer with `read`, retrying transient
 * failures (network errors and `RetryableStatuses`) with backoff, honouring `retry-after`.
 */
const postWith = <A>(
  client: HttpClient.HttpClient,
  settings: HttpSettings,
  path: string,
  headers: Record<string, string>,
  body: unknown,
  read: ReadResponse<A>
): Effect.Effect<A, ProviderError> => {
  const { provider } = settings
  const { annotations, host, redactedNames } = prepare(settings)
  const fail = (
    reason: MakeReason,
    message: string,
    retry: boolean,
    retryAfter: Option.Option<Duration.Duration> = Option.none()
  ): Effect.Effect<never, AttemptFailure> =>
    Effect.fail({
      error: new ProviderError({ provider, reason: reason(scrub(message, settings.secret)) }),
      retry,
      retryAfter
    })
  const readFail = (reason: MakeReason, message: string, retry: boolean) => fail(reason, message, retry)

  const request = HttpClientRequest.post(settings.baseUrl + path).pipe(
    HttpClientRequest.setHeaders(headers),
    HttpClientRequest.bodyJsonUnsafe(body)
  )

  const baseUrlVariable = settings.envPrefix === undefined ? "the base URL" : `${settings.envPrefix}_BASE_URL`
  const keyVariable = settings.envPrefix === undefined ? "the API key" : `${settings.envPrefix}_API_KEY`
  const executed: Effect.Effect<A, AttemptFailure> = client.execute(request).pipe(
    Effect.catch((e) => {
      const detail = causeDetail("cause" in e.reason ? e.reason.cause : undefined)
      // A request that could not be encoded or addressed fails the same way every time.
      const transient = e.reason._tag === "TransportError"
      return fail(
        (message) => new NetworkError({ message, ...(transient ? {} : { transient }) }),
        `${provider} request to ${host} failed (${reasonName(e)}${detail === undefined ? "" : `: ${detail}`}); ` +
          `check that ${host} is reachable and that ${baseUrlVariable} is right`,
        transient
      )
    }),
    Effect.flatMap((response) => {
      if (response.status >= 200 && response.status < 300) return read(response, readFail)
      const { status } = response
      return response.text.pipe(
        Effect.orElseSucceed(() => ""),
        Effect.flatMap((text) => {
          if (isAuthStatus(status)) {
            return fail(
              (message) => new AuthenticationError({ message, status }),
              `${provider} refused the credentials (HTTP ${status}: ${bounded(errorDetail(text))}); ` +
                `check ${keyVariable} (or the apiKey option) and its access to this model`,
              false
            )
          }
          const detail = `${provider} answered HTTP ${status}: ${bounded(errorDetail(text))}`
          // Retrying cannot refill a quota: no retry, whatever the status.
          if (isQuotaExhausted(status, text)) {
            return fail((message) => new QuotaExhaustedError({ message, status }), detail, false)
          }
          const retryAfter = parseRetryAfter(response.headers)
          return fail(
            (message) => reasonFromHttpStatus({ status, message, retryAfter: Option.getOrUndefined(retryAfter) }),
            detail,
            isRetryableStatus(status),
            retryAfter
          )
        })
      )
    })
  )
  // The HTTP client puts request headers on spans; make sure vendor-specific key headers are
  // redacted there like `authorization` and `x-api-key` already are.
  const attempt = redactedNames === undefined
    ? executed
    : Effect.updateService(executed, Headers.CurrentRedactedNames, redactedNames)

  // Every line logged here carries `provider` and `host`. The per-attempt debug lines are only
  // built when Debug is enabled, which is rarely the case on the hot path.
  const run = (n: number, debug: boolean): Effect.Effect<A, ProviderError> => {
    const logged = debug
      ? Effect.logDebug("model request").pipe(
        Effect.annotateLogs({ ...annotations, attempt: n }),
        Effect.andThen(attempt),
        Effect.tap(() => Effect.annotateLogs(Effect.logDebug("model response"), annotations))
      )
      : attempt
    return Effect.catch(logged, (failure): Effect.Effect<A, ProviderError> => {
      const { error } = failure
      if (!failure.retry || n > settings.maxRetries) return Effect.fail(error)
      return Option.match(failure.retryAfter, {
        onNone: () => backoff(n, settings.retryBaseDelay),
        onSome: Effect.succeed
      }).pipe(
        Effect.tap((delay) =>
          Effect.logWarning("retrying model request").pipe(
            Effect.annotateLogs({
              ...annotations,
              attempt: n,
              status: error.status ?? error.reason._tag,
              delayMs: Math.round(Duration.toMillis(delay))
            })
          )
        ),
        Effect.flatMap((delay) => Effect.sleep(delay)),
        Effect.andThen(Effect.suspend(() => run(n + 1, debug)))
      )
    })
  }

  return Effect.flatMap(LogLevel.isEnabled("Debug"), (debug) => run(1, debug))
}

/**
 * POSTs a JSON body to `baseUrl + path` and returns the parsed JSON answer, retrying transient
 * failures (network errors and `RetryableStatuses`) with backoff, honouring `retry-after`.
 */
export const postJson = (
  client: HttpClient.HttpClient,
  settings: HttpSettings,
  path: string,
  headers: Record<string, string>,
  body: unknown
): Effect.Effect<unknown, ProviderError> =>
  postWith(client, settings, path, headers, body, (response, fail) =>
    response.json.pipe(
      Effect.catch(() =>
        fail(
          (message) => new InvalidResponseError({ message }),
          `${settings.provider} answered with a body that is not JSON`,
          false
        )
      )
    ))

/**
 * POSTs a JSON body and returns the answer's server-sent events. The retry policy of `postJson`
 * applies until the response status arrives; after that nothing is retried (events may already
 * have been shown), and a broken stream fails with a `NetworkError` ProviderError after the events
 * read so far. Ending the stream early (the consumer stops, or is interrupted) aborts the request.
 */
export const postSse = (
  client: HttpClient.HttpClient,
  settings: HttpSettings,
  path: string,
  headers: Record<string, string>,
  body: unknown
): Stream.Stream<Sse.Event, ProviderError> => {
  const { provider } = settings
  const { host } = prepare(settings)
  const broken = (reason: string) =>
    new ProviderError({
      provider,
      reason: new NetworkError({
        message: scrub(`${provider} stream from ${host} broke off (${reason})`, settings.secret)
      })
    })
  return Stream.unwrap(
    postWith(
      client,
      settings,
      path,
      { ...headers, accept: "text/event-stream" },
      body,
      (response) => Effect.succeed(response)
    ).pipe(
      Effect.map((response) =>
        Sse.decode(
          Stream.mapError(response.stream, (e) => broken(reasonName(e))),
          (e) =>
            new ProviderError({
              provider,
              reason: new InvalidResponseError({
                message: `${provider} sent a stream event larger than ${Sse.MaxEventSize} bytes (${e.message})`
              })
            })
        )
      )
    )
  ).pipe(Stream.ensuring(Effect.logDebug("model stream closed").pipe(Effect.annotateLogs({ provider, host }))))
}

/**
 * Parses each event's `data` as JSON; `[DONE]` (OpenAI's end marker) and empty data are skipped.
 * Data that is not JSON is an `InvalidResponseError` ProviderError.
 */
export const sseJson =
  (provider: string) => (event: Sse.Event): Effect.Effect<Option.Option<unknown>, ProviderError> => {
    const data = event.data.trim()
    if (data === "" || data === "[DONE]") return Effect.succeed(Option.none())
    return Effect.try({
      try: () => Option.some(JSON.parse(data) as unknown),
      catch: () =>
        new ProviderError({
          provider,
          reason: new InvalidResponseError({
            message: `${provider} sent a stream event that is not JSON: ${bounded(data)}`
          })
        })
    })
  }

/**
 * Decodes a vendor response with its wire schema; a mismatch is an `InvalidResponseError` ProviderError naming
 * each issue (message, actual value, path). The decoder is built once and runs synchronously:
 * wire schemas have no effectful parts.
 */
export const decodeWire = <S extends Schema.ConstraintDecoder<unknown>>(provider: string, schema: S) => {
  const decode = Schema.decodeUnknownResult(schema, ParseErrorText.parseOptions)
  return (json: unknown): Effect.Effect<S["Type"], ProviderError> =>
    Result.match(decode(json), {
      onFailure: (error) =>
        Effect.fail(
          new ProviderError({
            provider,
            reason: new InvalidResponseError({
              message: `${provider} answered in an unexpected shape: ${bounded(ParseErrorText.format(error))}`
            })
          })
        ),
      onSuccess: Effect.succeed
    })
}
