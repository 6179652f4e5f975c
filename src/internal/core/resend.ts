/**
 * Sending a persisted request again when its runner stopped while the caller waited.
 *
 * A caller outside the runner (a client-only member) waits for a persisted request's reply
 * through the runner it sent the request to. When that runner shuts down first, Effect's cluster
 * interrupts its reply handler and hands the interrupt to the caller as the request's answer,
 * although the request itself stays in storage, unanswered, for the conversation's next runner.
 * The request's primary key (turn id, approval id) makes sending it again safe: the duplicate
 * waits for the stored request's answer instead of running it twice.
 *
 * The caller's own interruption never reaches the handler (an interrupted fiber runs no
 * `catchCause` handler), so only an interrupt that came back as the answer is sent again.
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"

/** How often and how soon a cut-short request is sent again. */
export interface ResendOptions {
  /** Sends after the first (default 8: about 11 s in all, longer than a runner's failover). */
  readonly times?: number | undefined
  /** The pause before the first resend, doubled for each next one up to 2 s (default 200 ms). */
  readonly firstDelay?: Duration.Input | undefined
}

const maxDelay = Duration.seconds(2)

/**
 * Runs `send`; while it ends with nothing but an interrupt, pauses and runs it again, up to
 * `times` more; then fails with `gaveUp(sends)`.
 */
export const resendWhenCutShort = <A, E, E2, R>(
  send: Effect.Effect<A, E, R>,
  gaveUp: (sends: number) => E2,
  options?: ResendOptions
): Effect.Effect<A, E | E2, R> => {
  const times = options?.times ?? 8
  const first = Duration.fromInputUnsafe(options?.firstDelay ?? "200 millis")
  const attempt = (resent: number): Effect.Effect<A, E | E2, R> =>
    Effect.catchCause(send, (cause) => {
      if (!Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
      if (resent >= times) return Effect.fail(gaveUp(resent + 1))
      const pause = Duration.min(Duration.times(first, 2 ** resent), maxDelay)
      return Effect.logDebug("a cluster request came back interrupted: its runner stopped; sending it again").pipe(
        Effect.annotateLogs({ resend: resent + 1 }),
        Effect.andThen(Effect.sleep(pause)),
        Effect.andThen(attempt(resent + 1))
      )
    })
  return attempt(0)
}
