/**
 * The HTTP providers' retry policy: which statuses are transient, how a server's `retry-after`
 * is read, and the backoff used when it gives none.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Headers from "effect/http/Headers"
import * as Option from "effect/Option"
import * as Random from "effect/Random"

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
