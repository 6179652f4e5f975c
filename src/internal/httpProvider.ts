/**
 * What the HTTP providers (ClaudeApi, OpenAi, Gemini) share: base-URL validation, the retry
 * policy, error mapping to `ProviderError`, secret scrubbing, host-only logging and the common
 * `Config` keys. Providers only add their wire formats on top.
 */
import * as Headers from "@effect/platform/Headers"
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FiberRef from "effect/FiberRef"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Random from "effect/Random"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { ProviderError } from "../services/ChatClient.js"
import type { TurnResponse, TurnStreamEvent } from "../services/ModelTurn.js"
import * as Sse from "./sse.js"

// ---------------------------------------------------------------------------------------------
// Base URL
// ---------------------------------------------------------------------------------------------

/** Longest base URL accepted; real endpoints are far shorter, and a bound keeps logs and errors sane. */
export const MaxBaseUrlLength = 2048

const loopbackHost = (hostname: string): boolean => {
  const h = hostname.toLowerCase()
  if (h === "localhost" || h.endsWith(".localhost") || h === "[::1]") return true
  // The whole 127.0.0.0/8 block is loopback.
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h)
}

/**
 * Validates a provider base URL. Accepted: `https`; `http` to a loopback host (a local
 * OpenAI-compatible server, a test fake); `http` anywhere only with `allowInsecureHttp`. Refused:
 * other schemes, userinfo (credentials belong in headers, and would end up in logs), control
 * characters or whitespace, a query or fragment, a missing host, more than `MaxBaseUrlLength`
 * characters. The reason never echoes the URL, which may hold a secret. Returns the URL without a
 * trailing slash.
 */
export const validateBaseUrl = (
  raw: string,
  options: { readonly allowInsecureHttp?: boolean | undefined } = {}
): Either.Either<string, string> => {
  if (raw.length === 0) return Either.left("it is empty")
  if (raw.length > MaxBaseUrlLength) return Either.left(`it is longer than ${MaxBaseUrlLength} characters`)
  // deno-lint-ignore no-control-regex
  if (/[\u0000-\u0020\u007f-\u009f]/.test(raw)) return Either.left("it contains whitespace or control characters")
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return Either.left("it is not an absolute URL")
  }
  if (url.username !== "" || url.password !== "" || /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i.test(raw)) {
    return Either.left("it contains userinfo (user:password@); pass credentials as the API key instead")
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    return Either.left(`the scheme ${url.protocol.replace(/:$/, "")} is not http(s)`)
  }
  // The WHATWG parser turns `https:///x` into host `x`; require the authority to be spelled out.
  if (url.hostname === "" || !/^https?:\/\/[^/?#]/i.test(raw)) return Either.left("it has no host")
  if (url.search !== "" || url.hash !== "" || raw.includes("?") || raw.includes("#")) {
    return Either.left("it has a query or fragment")
  }
  if (url.protocol === "http:" && !loopbackHost(url.hostname) && options.allowInsecureHttp !== true) {
    return Either.left("plain http is only allowed to a loopback host unless allowInsecureHttp is set")
  }
  return Either.right(url.href.replace(/\/+$/, ""))
}

/** `validateBaseUrl` as an Effect failing with a `config` ProviderError. */
export const baseUrlOrFail = (
  provider: string,
  raw: string,
  allowInsecureHttp: boolean | undefined
): Effect.Effect<string, ProviderError> =>
  Either.match(validateBaseUrl(raw, { allowInsecureHttp }), {
    onLeft: (reason) =>
      Effect.fail(
        new ProviderError({
          provider,
          kind: "config",
          message: `Invalid ${provider} base URL: ${reason}`,
          retryable: false
        })
      ),
    onRight: Effect.succeed
  })

/** Only the host (and port) of a validated base URL: the one part of it that is ever logged. */
export const hostOf = (baseUrl: string): string => new URL(baseUrl).host

// ---------------------------------------------------------------------------------------------
// Retries
// ---------------------------------------------------------------------------------------------

/** Statuses worth retrying: timeouts, rate limits, server errors and Anthropic's 529 (overloaded). */
export const RetryableStatuses: ReadonlySet<number> = new Set([408, 429, 500, 502, 503, 504, 529])

export const isRetryableStatus = (status: number): boolean => RetryableStatuses.has(status)

/** Above this, a server's `retry-after` is not waited for; backoff applies instead. */
export const MaxRetryAfter = Duration.seconds(60)

/**
 * Reads `retry-after-ms` (OpenAI, Anthropic) or `retry-after` (seconds, possibly fractional, or
 * an HTTP date). Nothing usable, negative or over `MaxRetryAfter` → none.
 */
export const parseRetryAfter = (
  headers: Headers.Headers,
  now: number = Date.now()
): Option.Option<Duration.Duration> => {
  const within = (ms: number) =>
    Number.isFinite(ms) && ms >= 0 && ms <= Duration.toMillis(MaxRetryAfter)
      ? Option.some(Duration.millis(ms))
      : Option.none()
  const ms = headers["retry-after-ms"]
  if (ms !== undefined && ms.trim() !== "" && Number.isFinite(Number(ms))) return within(Number(ms))
  const after = headers["retry-after"]
  if (after === undefined || after.trim() === "") return Option.none()
  if (/^\s*\d+(\.\d+)?\s*$/.test(after)) return within(Number(after) * 1000)
  const date = Date.parse(after)
  return Number.isNaN(date) ? Option.none() : within(Math.max(0, date - now))
}

/** Exponential backoff with jitter: base·2^(attempt-1), capped, minus up to 25% at random. */
export const backoff = (
  attempt: number,
  base: Duration.Duration,
  cap: Duration.Duration = Duration.seconds(8)
): Effect.Effect<Duration.Duration> =>
  Effect.map(Random.next, (r) => {
    const raw = Math.min(Duration.toMillis(cap), Duration.toMillis(base) * 2 ** Math.max(0, attempt - 1))
    return Duration.millis(raw * (1 - 0.25 * r))
  })

// ---------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------

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

/** Statuses meaning the credentials were refused: `ProviderError` kind `auth`. */
export const isAuthStatus = (status: number): boolean => status === 401 || status === 403

/**
 * What the transport said, down its `cause` chain: undici's "fetch failed" hides the useful part
 * (`connect ECONNREFUSED 127.0.0.1:8080`, `getaddrinfo ENOTFOUND host`) one or two levels down.
 */
export const causeDetail = (error: unknown): string | undefined => {
  const parts: Array<string> = []
  let current: unknown = error
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    const { cause, code, errors, message } = current as {
      readonly cause?: unknown
      readonly code?: unknown
      readonly errors?: unknown
      readonly message?: unknown
    }
    if (typeof message === "string" && message !== "" && !parts.includes(message)) parts.push(message)
    else if (typeof code === "string" && !parts.some((p) => p.includes(code))) parts.push(code)
    // Happy-eyeballs connects fail with an AggregateError: one error per address tried.
    current = cause ?? (Array.isArray(errors) ? errors[0] : undefined)
  }
  const useful = parts.filter((p) => p !== "fetch failed" && !/^Transport error/.test(p))
  return useful.length === 0 ? undefined : useful.at(-1)
}

const MaxErrorDetail = 300

/** Replaces the secret (if it ever shows up, e.g. echoed by a server) with `[redacted]`. */
export const scrub = (text: string, secret: Redacted.Redacted<string> | undefined): string => {
  if (secret === undefined) return text
  const value = Redacted.value(secret)
  return value.length === 0 ? text : text.split(value).join("[redacted]")
}

// The error message the vendors put in an error body: `{ error: { message } }` for all three.
const errorDetail = (body: string): string => {
  try {
    const parsed = JSON.parse(body) as unknown
    if (typeof parsed === "object" && parsed !== null && "error" in parsed) {
      const error = parsed.error
      if (typeof error === "object" && error !== null && "message" in error && typeof error.message === "string") {
        return error.message
      }
      if (typeof error === "string") return error
    }
  } catch {
    // not JSON: fall through to the raw text
  }
  return body
}

const bounded = (text: string) => (text.length > MaxErrorDetail ? `${text.slice(0, MaxErrorDetail)}…` : text)

/** A failed attempt, before the retry policy turns it into a `ProviderError`. */
interface AttemptFailure {
  readonly error: ProviderError
  readonly retryAfter: Option.Option<Duration.Duration>
}

/** How a successful (2xx) response is read; a failure may still be retried. */
type ReadResponse<A> = (
  response: HttpClientResponse.HttpClientResponse,
  fail: (kind: ProviderError["kind"], message: string, retryable: boolean) => Effect.Effect<never, AttemptFailure>
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
    kind: ProviderError["kind"],
    message: string,
    retryable: boolean,
    extra: { status?: number; retryAfter?: Option.Option<Duration.Duration> } = {}
  ): Effect.Effect<never, AttemptFailure> =>
    Effect.fail({
      error: new ProviderError({
        provider,
        kind,
        message: scrub(message, settings.secret),
        retryable,
        ...(extra.status === undefined ? {} : { status: extra.status })
      }),
      retryAfter: extra.retryAfter ?? Option.none()
    })
  const readFail = (kind: ProviderError["kind"], message: string, retryable: boolean) => fail(kind, message, retryable)

  const request = HttpClientRequest.post(settings.baseUrl + path).pipe(
    HttpClientRequest.setHeaders(headers),
    HttpClientRequest.bodyUnsafeJson(body)
  )

  const baseUrlVariable = settings.envPrefix === undefined ? "the base URL" : `${settings.envPrefix}_BASE_URL`
  const keyVariable = settings.envPrefix === undefined ? "the API key" : `${settings.envPrefix}_API_KEY`
  const executed: Effect.Effect<A, AttemptFailure> = client.execute(request).pipe(
    Effect.catchAll((e) => {
      const detail = causeDetail(e.cause)
      return fail(
        "network",
        `${provider} request to ${host} failed (${e.reason}${detail === undefined ? "" : `: ${detail}`}); ` +
          `check that ${host} is reachable and that ${baseUrlVariable} is right`,
        e._tag === "RequestError" && e.reason === "Transport"
      )
    }),
    Effect.flatMap((response) => {
      if (response.status >= 200 && response.status < 300) return read(response, readFail)
      return response.text.pipe(
        Effect.orElseSucceed(() => ""),
        Effect.flatMap((text) =>
          isAuthStatus(response.status)
            ? fail(
              "auth",
              `${provider} refused the credentials (HTTP ${response.status}: ${bounded(errorDetail(text))}); ` +
                `check ${keyVariable} (or the apiKey option) and its access to this model`,
              false,
              { status: response.status }
            )
            : fail(
              "http",
              `${provider} answered HTTP ${response.status}: ${bounded(errorDetail(text))}`,
              isRetryableStatus(response.status),
              { status: response.status, retryAfter: parseRetryAfter(response.headers) }
            )
        )
      )
    })
  )
  // The platform puts request headers on spans; make sure vendor-specific key headers are
  // redacted there like `authorization` and `x-api-key` already are.
  const attempt = redactedNames === undefined
    ? executed
    : Effect.locallyWith(executed, Headers.currentRedactedNames, redactedNames)

  // Every line logged here carries `provider` and `host`. The per-attempt debug lines are only
  // built when Debug is enabled, which is rarely the case on the hot path.
  const run = (n: number, debug: boolean): Effect.Effect<A, ProviderError> => {
    const logged = debug
      ? Effect.logDebug("model request").pipe(
        Effect.annotateLogs({ ...annotations, attempt: n }),
        Effect.zipRight(attempt),
        Effect.tap(Effect.annotateLogs(Effect.logDebug("model response"), annotations))
      )
      : attempt
    return Effect.catchAll(logged, (failure): Effect.Effect<A, ProviderError> => {
      const { error } = failure
      if (!error.retryable || n > settings.maxRetries) return Effect.fail(error)
      return Option.match(failure.retryAfter, {
        onNone: () => backoff(n, settings.retryBaseDelay),
        onSome: Effect.succeed
      }).pipe(
        Effect.tap((delay) =>
          Effect.logWarning("retrying model request").pipe(
            Effect.annotateLogs({
              ...annotations,
              attempt: n,
              status: error.status ?? error.kind,
              delayMs: Math.round(Duration.toMillis(delay))
            })
          )
        ),
        Effect.flatMap((delay) => Effect.sleep(delay)),
        Effect.zipRight(Effect.suspend(() => run(n + 1, debug)))
      )
    })
  }

  return FiberRef.getWith(
    FiberRef.currentMinimumLogLevel,
    (level) => run(1, LogLevel.lessThanEqual(level, LogLevel.Debug))
  )
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
      Effect.catchAll(() => fail("decode", `${settings.provider} answered with a body that is not JSON`, false))
    ))

/**
 * POSTs a JSON body and returns the answer's server-sent events. The retry policy of `postJson`
 * applies until the response status arrives; after that nothing is retried (events may already
 * have been shown), and a broken stream fails with a `network` ProviderError after the events
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
      kind: "network",
      message: scrub(`${provider} stream from ${host} broke off (${reason})`, settings.secret),
      retryable: true
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
          Stream.mapError(response.stream, (e) => broken(e.reason)),
          (e) =>
            new ProviderError({
              provider,
              kind: "decode",
              message: `${provider} sent a stream event larger than ${Sse.MaxEventSize} bytes (${e.message})`,
              retryable: false
            })
        )
      )
    )
  ).pipe(Stream.ensuring(Effect.logDebug("model stream closed").pipe(Effect.annotateLogs({ provider, host }))))
}

/**
 * Parses each event's `data` as JSON; `[DONE]` (OpenAI's end marker) and empty data are skipped.
 * Data that is not JSON is a `decode` ProviderError.
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
          kind: "decode",
          message: `${provider} sent a stream event that is not JSON: ${bounded(data)}`,
          retryable: false
        })
    })
  }

/**
 * What reading one stream event gives: text (and reasoning, shown apart) to show now, nothing, or
 * the vendor's error event.
 */
export type StreamStep =
  | { readonly _tag: "Text"; readonly text: string; readonly reasoning?: string | undefined }
  | { readonly _tag: "Nothing" }
  | { readonly _tag: "Error"; readonly message: string; readonly retryable: boolean }

/** Reads one streamed turn: `push` takes each event's JSON (and may throw on a malformed one), `finish` gives the turn. */
export interface TurnStreamReader {
  readonly push: (json: unknown) => StreamStep
  readonly finish: () => Effect.Effect<TurnResponse, ProviderError>
}

/**
 * A streamed model turn from SSE events: each event's JSON goes through `reader`, text is emitted
 * as it comes, and when the stream has ended `Done` carries the turn `reader.finish` assembled.
 * A vendor error event or a malformed event fails the stream (after what was emitted).
 */
export const turnStream = (
  provider: string,
  events: Stream.Stream<Sse.Event, ProviderError>,
  reader: TurnStreamReader
): Stream.Stream<TurnStreamEvent, ProviderError> => {
  const step = (json: unknown): Effect.Effect<ReadonlyArray<TurnStreamEvent>, ProviderError> =>
    Effect.suspend(() => {
      let read: StreamStep
      try {
        read = reader.push(json)
      } catch (e) {
        const detail = ParseResult.isParseError(e) ? ParseResult.TreeFormatter.formatErrorSync(e) : String(e)
        return Effect.fail(
          new ProviderError({
            provider,
            kind: "decode",
            message: `${provider} sent a stream event in an unexpected shape: ${bounded(detail)}`,
            retryable: false
          })
        )
      }
      switch (read._tag) {
        case "Text":
          return Effect.succeed([
            ...(read.reasoning === undefined || read.reasoning === ""
              ? []
              : [{ _tag: "ReasoningDelta" as const, text: read.reasoning }]),
            ...(read.text === "" ? [] : [{ _tag: "TextDelta" as const, text: read.text }])
          ])
        case "Nothing":
          return Effect.succeed([])
        case "Error":
          return Effect.fail(
            new ProviderError({
              provider,
              kind: "http",
              message: `${provider} stream failed: ${bounded(read.message)}`,
              retryable: read.retryable
            })
          )
      }
    })
  return Stream.concat(
    events.pipe(
      Stream.mapEffect(sseJson(provider)),
      Stream.filterMap((json) => json),
      Stream.mapConcatEffect(step)
    ),
    Stream.fromEffect(Effect.suspend(reader.finish)).pipe(
      Stream.map((response): TurnStreamEvent => ({ _tag: "Done", response }))
    )
  )
}

/** The stream ended before the vendor's end-of-message marker: the answer is incomplete. */
export const truncatedStream = (provider: string): ProviderError =>
  new ProviderError({
    provider,
    kind: "network",
    message: `${provider} stream ended before the message was complete`,
    retryable: true
  })

/**
 * Decodes a vendor response with its wire schema; a mismatch is a `decode` ProviderError. The
 * decoder is built once and runs synchronously: wire schemas have no effectful parts.
 */
export const decodeWire = <A, I>(provider: string, schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknownEither(schema)
  return (json: unknown): Effect.Effect<A, ProviderError> =>
    Either.match(decode(json), {
      onLeft: (error) =>
        Effect.fail(
          new ProviderError({
            provider,
            kind: "decode",
            message: `${provider} answered in an unexpected shape: ${
              bounded(ParseResult.TreeFormatter.formatErrorSync(error))
            }`,
            retryable: false
          })
        ),
      onRight: Effect.succeed
    })
}

// ---------------------------------------------------------------------------------------------
// Options and Config
// ---------------------------------------------------------------------------------------------

/** Options every HTTP provider takes. */
export interface CommonOptions {
  /** The model name. */
  readonly model: string
  /** The API base URL; see `validateBaseUrl` for what is accepted. */
  readonly baseUrl?: string | undefined
  /** Allows plain `http` to a non-loopback host. Off by default: the API key would travel in clear. */
  readonly allowInsecureHttp?: boolean | undefined
  /** A system prompt sent with every request. */
  readonly system?: string | undefined
  /** Output token bound per model turn. */
  readonly maxTokens?: number | undefined
  /** Model turns per `chat`/`ask`; default 20. */
  readonly maxSteps?: number | undefined
  /** How many tool calls of one turn run at once; default 5. */
  readonly toolConcurrency?: number | undefined
  /** Bound on each model turn, retries included. */
  readonly requestTimeout?: Duration.DurationInput | undefined
  /** Retries of transient failures after the first attempt; default 2. */
  readonly maxRetries?: number | undefined
  /** First backoff delay (doubling, with jitter) when the server gives no `retry-after`; default 500 ms. */
  readonly retryBaseDelay?: Duration.DurationInput | undefined
}

/** The shared loop's settings, from the common options. */
export const loopSettings = (options: CommonOptions) => ({
  maxSteps: options.maxSteps,
  toolConcurrency: options.toolConcurrency,
  requestTimeout: options.requestTimeout
})

export const retrySettings = (options: CommonOptions) => ({
  maxRetries: Math.max(0, options.maxRetries ?? 2),
  retryBaseDelay: Duration.decode(options.retryBaseDelay ?? Duration.millis(500))
})

/**
 * Reads the common options from `<PREFIX>_BASE_URL`, `_MODEL`, `_MAX_TOKENS`, `_REQUEST_TIMEOUT`,
 * `_MAX_STEPS`, `_TOOL_CONCURRENCY`, `_MAX_RETRIES` and `_ALLOW_INSECURE_HTTP`; all optional.
 */
export const commonConfig = (prefix: string, defaultModel: string) =>
  Config.all({
    baseUrl: Config.option(Config.string(`${prefix}_BASE_URL`)),
    model: Config.string(`${prefix}_MODEL`).pipe(Config.withDefault(defaultModel)),
    maxTokens: Config.option(Config.integer(`${prefix}_MAX_TOKENS`)),
    requestTimeout: Config.option(Config.duration(`${prefix}_REQUEST_TIMEOUT`)),
    maxSteps: Config.option(Config.integer(`${prefix}_MAX_STEPS`)),
    toolConcurrency: Config.option(Config.integer(`${prefix}_TOOL_CONCURRENCY`)),
    maxRetries: Config.option(Config.integer(`${prefix}_MAX_RETRIES`)),
    allowInsecureHttp: Config.boolean(`${prefix}_ALLOW_INSECURE_HTTP`).pipe(Config.withDefault(false))
  }).pipe(
    Config.map((c): CommonOptions => ({
      model: c.model,
      allowInsecureHttp: c.allowInsecureHttp,
      baseUrl: Option.getOrUndefined(c.baseUrl),
      maxTokens: Option.getOrUndefined(c.maxTokens),
      requestTimeout: Option.getOrUndefined(c.requestTimeout),
      maxSteps: Option.getOrUndefined(c.maxSteps),
      toolConcurrency: Option.getOrUndefined(c.toolConcurrency),
      maxRetries: Option.getOrUndefined(c.maxRetries)
    }))
  )

/** Options minus `undefined` values, so explicit overrides never blank out configured ones. */
export const defined = <T extends object>(options: T): Partial<T> =>
  Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as Partial<T>

/** Tool-call arguments as an object: the loop may hold them as JSON text. */
export const argumentsObject = (args: unknown): Record<string, unknown> => {
  let value = args
  if (typeof value === "string") {
    try {
      value = JSON.parse(value) as unknown
    } catch {
      return {}
    }
  }
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {}
}

/** A name not in `taken`: `base`, else `base_2`, `base_3`, … */
export const uniqueName = (base: string, taken: ReadonlyArray<string>): string => {
  if (!taken.includes(base)) return base
  for (let n = 2;; n++) if (!taken.includes(`${base}_${n}`)) return `${base}_${n}`
}
