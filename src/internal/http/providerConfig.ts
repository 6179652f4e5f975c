/**
 * The options every HTTP provider takes, their `Config` keys (`<PREFIX>_BASE_URL`, `_MODEL`, …),
 * and how they split into the shared loop's settings and the retry policy's.
 */
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import { ConfigurationError, ProviderError } from "../../services/ChatClient.ts"

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
  readonly requestTimeout?: Duration.Input | undefined
  /** Retries of transient failures after the first attempt; default 2. */
  readonly maxRetries?: number | undefined
  /** First backoff delay (doubling, with jitter) when the server gives no `retry-after`; default 500 ms. */
  readonly retryBaseDelay?: Duration.Input | undefined
}

/** The shared loop's settings, from the common options. */
export const loopSettings = (options: CommonOptions) => ({
  model: options.model,
  maxSteps: options.maxSteps,
  toolConcurrency: options.toolConcurrency,
  requestTimeout: options.requestTimeout
})

/** The retry policy's settings, with their defaults. */
export const retrySettings = (options: CommonOptions) => ({
  maxRetries: Math.max(0, options.maxRetries ?? 2),
  retryBaseDelay: Duration.fromInputUnsafe(options.retryBaseDelay ?? Duration.millis(500))
})

/**
 * Reads the common options from `<PREFIX>_BASE_URL`, `_MODEL`, `_MAX_TOKENS`, `_REQUEST_TIMEOUT`,
 * `_MAX_STEPS`, `_TOOL_CONCURRENCY`, `_MAX_RETRIES` and `_ALLOW_INSECURE_HTTP`; all optional.
 */
export const commonConfig = (prefix: string, defaultModel: string): Config.Config<CommonOptions> =>
  Config.all({
    baseUrl: Config.option(Config.String(`${prefix}_BASE_URL`)),
    model: Config.String(`${prefix}_MODEL`).pipe(Config.withDefault(defaultModel)),
    maxTokens: Config.option(Config.Int(`${prefix}_MAX_TOKENS`)),
    requestTimeout: Config.option(Config.Duration(`${prefix}_REQUEST_TIMEOUT`)),
    maxSteps: Config.option(Config.Int(`${prefix}_MAX_STEPS`)),
    toolConcurrency: Config.option(Config.Int(`${prefix}_TOOL_CONCURRENCY`)),
    maxRetries: Config.option(Config.Int(`${prefix}_MAX_RETRIES`)),
    allowInsecureHttp: Config.Boolean(`${prefix}_ALLOW_INSECURE_HTTP`).pipe(Config.withDefault(false))
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

/**
 * The API key a `layerFromEnv` needs: the override, else the variable; missing, a `config`
 * ProviderError naming the variable, where to get a key and what runs without one.
 */
export const requiredApiKey = (
  provider: string,
  variable: string,
  keysPage: string,
  override: Redacted.Redacted<string> | undefined
): Effect.Effect<Redacted.Redacted<string>, ProviderError | Config.ConfigError> =>
  override !== undefined ? Effect.succeed(override) : Effect.flatMap(
    Config.option(Config.Redacted(variable)),
    Option.match({
      onSome: Effect.succeed,
      onNone: () =>
        Effect.fail(
          new ProviderError({
            provider,
            reason: new ConfigurationError({
              message: `${variable} is not set: get a key at ${keysPage} and set ${variable} (or pass apiKey). ` +
                "Without a key, ClaudeLocal.layerFromEnv() runs on a logged-in claude CLI, and Scripted.layer " +
                "answers offline (for tests)"
            })
          })
        )
    })
  )
