/**
 * The `stallTimeout` watchdog of a Claude Code run (ClaudeLocal and ClaudeAgent): a run whose CLI
 * prints nothing for that long, while no tool runs and no permission decision is pending, is
 * stopped with a retryable `stalled` error rather than left to hang until `requestTimeout`.
 *
 * It costs one clock read per line: `output` only stores a timestamp, and a single sleeping fiber
 * (`watch`) looks at it when the bound could have passed.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { ProviderError } from "../../services/ChatClient.ts"
import { stalled } from "./session.ts"

/** The default `stallTimeout`: 3 minutes. */
export const DefaultStallTimeout: Duration.Duration = Duration.minutes(3)

/** One run's watchdog. */
export interface Watchdog {
  /** The CLI printed something (a line, an SDK message): the silence starts again. */
  readonly output: () => void
  /** A permission decision is pending: the silence does not count until it ends. */
  readonly waitStarted: () => void
  /** A permission decision was made: the silence starts again from now. */
  readonly waitEnded: () => void
  /** Sleeps while the run is alive; fails with the `stalled` error once it went silent for the bound. */
  readonly watch: Effect.Effect<never, ProviderError>
}

/** What a watchdog is made of. */
export interface WatchdogOptions {
  readonly provider: string
  /** The bound (`stallTimeout`); default {@link DefaultStallTimeout}. */
  readonly stallTimeout?: Duration.Input | undefined
  /**
   * Whether a tool is running (a `tool_use` without its `tool_result` yet): read only when the
   * watchdog wakes up, so it may be as cheap as a counter of the run's reader.
   */
  readonly busy?: (() => boolean) | undefined
}

/** A watchdog whose silence starts now (by the fiber's `Clock`, so a `TestClock` drives it). */
export const make = (options: WatchdogOptions): Effect.Effect<Watchdog> =>
  Effect.map(Clock.clockWith(Effect.succeed), (clock) => {
    const bound = Duration.fromInputUnsafe(options.stallTimeout ?? DefaultStallTimeout)
    const boundMillis = Math.max(1, Duration.toMillis(bound))
    const busy = options.busy ?? (() => false)
    let last = clock.currentTimeMillisUnsafe()
    let waits = 0
    const output = () => {
      last = clock.currentTimeMillisUnsafe()
    }
    const check: Effect.Effect<never, ProviderError> = Effect.suspend(() => {
      const now = clock.currentTimeMillisUnsafe()
      if (waits > 0 || busy()) {
        // Paused: the silence counts again from the end (the tool's result line, `waitEnded`).
        last = now
        return Effect.andThen(Effect.sleep(bound), check)
      }
      const left = last + boundMillis - now
      return left <= 0
        ? Effect.fail(stalled(options.provider, bound))
        : Effect.andThen(Effect.sleep(Duration.millis(left)), check)
    })
    return {
      output,
      waitStarted: () => {
        waits++
      },
      waitEnded: () => {
        waits = Math.max(0, waits - 1)
        output()
      },
      watch: Effect.andThen(Effect.sleep(bound), check)
    } satisfies Watchdog
  })

/** `turn`, failed with the `stalled` error (and so interrupted) when `watchdog` fires first. */
export const watched = <A, E, R>(watchdog: Watchdog, turn: Effect.Effect<A, E, R>): Effect.Effect<
  A,
  E | ProviderError,
  R
> => Effect.raceFirst(turn, watchdog.watch)

/**
 * The pending permission decisions of one client, counted where they are made (a permission
 * prompt handler that runs outside the run's fiber) and passed on to the watchdogs of the runs
 * in flight.
 */
export interface PermissionWaits {
  /** Runs `decision` as a pending wait of every attached watchdog. */
  readonly around: <A, E, R>(decision: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** `watchdog` sees this client's waits for as long as the current scope lives. */
  readonly attach: (watchdog: Watchdog) => Effect.Effect<void, never, Scope.Scope>
}

/** A client's {@link PermissionWaits}. */
export const makePermissionWaits = (): PermissionWaits => {
  const attached = new Set<Watchdog>()
  return {
    around: (decision) =>
      Effect.suspend(() => {
        const seen = [...attached]
        for (const w of seen) w.waitStarted()
        return Effect.ensuring(
          decision,
          Effect.sync(() => {
            for (const w of seen) w.waitEnded()
          })
        )
      }),
    attach: (watchdog) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          attached.add(watchdog)
        }),
        () =>
          Effect.sync(() => {
            attached.delete(watchdog)
          })
      )
  }
}
