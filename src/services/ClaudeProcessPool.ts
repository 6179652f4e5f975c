/**
 * A bound on the live `claude` CLI processes of one application, shared by its clients: a server
 * that gives each user a kept-alive Claude Code conversation (ClaudeLocal or ClaudeAgent with
 * `keepAlive`) would otherwise hold one CLI (~200 MiB) per open conversation.
 *
 * **Details**
 *
 * A client takes a permit when it starts a kept-alive CLI and gives it back when the process ends
 * (the permit lives in the process's scope). Beyond `maxLiveProcesses` a turn that needs a new CLI
 * **waits** — interruptibly, and at most `acquireTimeout`, after which it fails with
 * {@link ProcessPoolTimeoutError} — rather than failing at once: a chat server would rather answer
 * a moment later than refuse, and the wait is bounded so that a stuck pool surfaces as a typed
 * error. While turns wait, the CLI idle the longest (for at least `reclaimAfter`) is stopped to make
 * room; without waiters a CLI idle for `idleTimeout` is stopped anyway. A stopped conversation's
 * next turn starts a CLI that resumes its session (history intact), paying one start-up.
 *
 * Without this service in the context the clients are unbounded, as before: nothing to provide.
 *
 * Metrics (Effect `Metric`, summed over the pools of the process): `claude_live_processes`
 * (gauge), `claude_waiting_turns` (gauge), `claude_process_evictions` (counter); spans
 * `ClaudeProcessPool.acquire` and `ClaudeProcessPool.evict`.
 *
 * @summary A bound on the live `claude` CLI processes one application's kept-alive clients hold.
 * @group Chat providers
 * @since 0.1.0
 * @module
 */
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import { ProviderError, TimeoutError } from "./ChatClient.ts"

/**
 * No permit came free within `acquireTimeout`: every allowed CLI was busy with a turn.
 *
 * @category errors
 * @since 1.0.0
 */
export class ProcessPoolTimeoutError extends Schema.TaggedError<ProcessPoolTimeoutError>()(
  "ProcessPoolTimeoutError",
  {
    /** The pool's bound. */
    maxLiveProcesses: Schema.Number,
    /** How long the turn waited, in milliseconds. */
    waitedMillis: Schema.Number,
    message: Schema.String
  }
) {}

/**
 * A live process's hold on the pool, valid while the scope it was acquired in is open.
 *
 * @category models
 * @since 1.0.0
 */
export interface Permit {
  /** Runs a turn: the process is not evicted meanwhile, and its idle time starts when it ends. */
  readonly busy: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /**
   * Marks the process as ready and used now (its idle clock restarts); call it once the process
   * has started and before handing it out. Until then (or its first `busy` turn) a process that is
   * still starting is never reclaimed.
   */
  readonly touch: Effect.Effect<void>
  /** True once the pool has decided to stop this process: do not start a turn on it. */
  readonly evicted: () => boolean
}

/**
 * Current counts of one pool.
 *
 * @category models
 * @since 1.0.0
 */
export interface Stats {
  readonly live: number
  readonly waiting: number
  readonly evictions: number
}

/**
 * The pool's interface.
 *
 * @category models
 * @since 1.0.0
 */
export interface ClaudeProcessPoolService {
  readonly maxLiveProcesses: number
  /**
   * A permit for one live process, released when the current scope closes. `evict` stops the
   * process (closing that scope); the pool runs it, in a fiber of its own, when the process has been
   * idle too long or a waiting turn needs its place.
   */
  readonly acquire: (evict: Effect.Effect<void>) => Effect.Effect<Permit, ProcessPoolTimeoutError, Scope.Scope>
  readonly stats: Effect.Effect<Stats>
}

/**
 * The live-process pool shared by the Claude clients of an application.
 *
 * @category services
 * @since 1.0.0
 */
export class ClaudeProcessPool extends Context.Service<ClaudeProcessPool, ClaudeProcessPoolService>()(
  "effect-chat-bridge/ClaudeProcessPool"
) {}

/**
 * Options of {@link make} and {@link layer}; every field is optional.
 *
 * @category config
 * @since 1.0.0
 */
export interface Options {
  /** At most this many live CLIs at once. Default 4. */
  readonly maxLiveProcesses?: number | undefined
  /** How long a turn waits for a permit before failing with {@link ProcessPoolTimeoutError}. Default 60 seconds. */
  readonly acquireTimeout?: Duration.Input | undefined
  /** A CLI idle this long is stopped even when nobody waits. Default 5 minutes. */
  readonly idleTimeout?: Duration.Input | undefined
  /**
   * A CLI idle at least this long may be stopped for a waiting turn. Default 500 ms: long enough
   * for a conversation's next message to follow its last answer without losing its CLI.
   */
  readonly reclaimAfter?: Duration.Input | undefined
}

/**
 * Live CLIs held by pools (summed over the pools of the process).
 *
 * @category utils
 * @since 1.0.0
 */
export const liveProcesses = Metric.gauge("claude_live_processes", {
  description: "Live claude CLI processes holding a ClaudeProcessPool permit"
})
/**
 * Turns waiting for a permit.
 *
 * @category utils
 * @since 1.0.0
 */
export const waitingTurns = Metric.gauge("claude_waiting_turns", {
  description: "Turns waiting for a ClaudeProcessPool permit"
})
/**
 * CLIs stopped by a pool (idle too long, or for a waiting turn).
 *
 * @category utils
 * @since 1.0.0
 */
export const evictions = Metric.counter("claude_process_evictions", {
  description: "claude CLI processes stopped by a ClaudeProcessPool"
})

interface Entry {
  readonly evict: Effect.Effect<void>
  busy: boolean
  lastUsed: number
  evicted: boolean
  timer: Fiber.Fiber<void> | undefined
}

/**
 * A pool whose timers and evictions run in the current scope.
 *
 * @category constructors
 * @since 1.0.0
 */
export const make = Effect.fn("ClaudeProcessPool.make")(function*(options: Options = {}) {
  const max = Math.max(1, Math.floor(options.maxLiveProcesses ?? 4))
  const acquireTimeout = Duration.fromInputUnsafe(options.acquireTimeout ?? Duration.seconds(60))
  const idleMillis = Duration.toMillis(options.idleTimeout ?? Duration.minutes(5))
  const reclaimMillis = Math.min(idleMillis, Duration.toMillis(options.reclaimAfter ?? Duration.millis(500)))
  const semaphore = yield* Semaphore.make(max)
  // Timers and evictions: an eviction closes the holder's scope, so it must not run in a fiber
  // of that scope (closing it would wait for itself).
  const fibers = yield* FiberSet.make<void>()
  const entries = new Set<Entry>()
  let waiting = 0
  let evicted = 0

  const evict = (entry: Entry) =>
    Effect.suspend(() => {
      if (entry.evicted || entry.busy) return Effect.void
      entry.evicted = true
      evicted++
      return Effect.andThen(
        Metric.update(evictions, 1),
        FiberSet.run(fibers, Effect.withSpan(entry.evict, "ClaudeProcessPool.evict"))
      )
    })

  /**
   * For a waiting turn that no free permit (nor one on its way back) will serve: stops the CLI
   * idle the longest, if one has been idle for `reclaimAfter`.
   */
  const reclaim = Effect.flatMap(Clock.currentTimeMillis, (now) => {
    let oldest: Entry | undefined
    let returning = 0
    for (const entry of entries) {
      if (entry.evicted) returning++
      if (entry.busy || entry.evicted || now - entry.lastUsed < reclaimMillis) continue
      if (oldest === undefined || entry.lastUsed < oldest.lastUsed) oldest = entry
    }
    const unserved = waiting - (max - entries.size) - returning
    return oldest === undefined || unserved <= 0 ? Effect.void : evict(oldest)
  })

  /** From idle: after `reclaimAfter` it gives way to a waiting turn, after `idleTimeout` it is stopped. */
  const watch = Effect.fnUntraced(function*(entry: Entry) {
    yield* Effect.sleep(Duration.millis(reclaimMillis))
    yield* reclaim
    yield* Effect.sleep(Duration.millis(idleMillis - reclaimMillis))
    yield* evict(entry)
  })

  const rearm = Effect.fnUntraced(function*(entry: Entry) {
    entry.lastUsed = yield* Clock.currentTimeMillis
    if (entry.timer !== undefined) yield* Fiber.interrupt(entry.timer)
    entry.timer = entry.busy || entry.evicted
      ? undefined
      : yield* FiberSet.run(fibers, Effect.interruptible(watch(entry)))
  })

  const acquire = (stop: Effect.Effect<void>) =>
    Effect.uninterruptibleMask((restore) =>
      Effect.gen(function*() {
        waiting++
        yield* Metric.modify(waitingTurns, 1)
        const taken = yield* restore(
          Effect.andThen(
            reclaim,
            semaphore.take(1).pipe(
              Effect.timeoutOrElse({
                duration: acquireTimeout,
                orElse: () =>
                  Effect.fail(
                    new ProcessPoolTimeoutError({
                      maxLiveProcesses: max,
                      waitedMillis: Duration.toMillis(acquireTimeout),
                      message: `All ${max} live claude CLIs stayed busy for ${
                        Duration.format(acquireTimeout)
                      }: raise maxLiveProcesses or acquireTimeout of ClaudeProcessPool, or retry later`
                    })
                  )
              })
            )
          )
        ).pipe(
          Effect.ensuring(Effect.suspend(() => {
            waiting--
            return Metric.modify(waitingTurns, -1)
          }))
        )
        // Starting counts as busy: stopping a CLI while it writes its MCP config or spawns would
        // remove files it is about to use. Idle time starts when the permit is taken, not when the
        // turn began waiting for it (a long wait must not make a new CLI reclaimable at once).
        const entry: Entry = {
          evict: stop,
          busy: true,
          lastUsed: yield* Clock.currentTimeMillis,
          evicted: false,
          timer: undefined
        }
        entries.add(entry)
        yield* Metric.modify(liveProcesses, 1)
        yield* Effect.addFinalizer(() =>
          Effect.gen(function*() {
            entries.delete(entry)
            entry.evicted = true
            if (entry.timer !== undefined) yield* Fiber.interrupt(entry.timer)
            yield* Metric.modify(liveProcesses, -1)
            yield* semaphore.release(taken)
          })
        )
        yield* rearm(entry)
        const permit: Permit = {
          busy: (self) =>
            Effect.acquireUseRelease(
              Effect.suspend(() => {
                entry.busy = true
                return rearm(entry)
              }),
              () => self,
              () =>
                Effect.suspend(() => {
                  entry.busy = false
                  return rearm(entry)
                })
            ),
          touch: Effect.suspend(() => {
            entry.busy = false
            return rearm(entry)
          }),
          evicted: () => entry.evicted
        }
        return permit
      })
    ).pipe(Effect.withSpan("ClaudeProcessPool.acquire", { attributes: { maxLiveProcesses: max } }))

  const service: ClaudeProcessPoolService = {
    maxLiveProcesses: max,
    acquire,
    stats: Effect.sync(() => ({ live: entries.size, waiting, evictions: evicted }))
  }
  return service
})

/**
 * A permit that bounds nothing: what a client without a pool gets.
 *
 * @category constructors
 * @since 1.0.0
 */
export const unbounded: Permit = { busy: (self) => self, touch: Effect.void, evicted: () => false }

/**
 * A permit from `pool` when there is one, else {@link unbounded}.
 *
 * @category utils
 * @since 1.0.0
 */
export const acquireFrom = (
  pool: Option.Option<ClaudeProcessPoolService>,
  evict: Effect.Effect<void>
): Effect.Effect<Permit, ProcessPoolTimeoutError, Scope.Scope> =>
  Option.isSome(pool) ? pool.value.acquire(evict) : Effect.succeed(unbounded)

/**
 * How a client reports a pool timeout: a `TimeoutError` ProviderError (retryable) with the pool's advice.
 *
 * @category utils
 * @since 1.0.0
 */
export const toProviderError = (provider: string) => (error: ProcessPoolTimeoutError): ProviderError =>
  new ProviderError({ provider, reason: new TimeoutError({ message: error.message }) })

/**
 * A {@link ClaudeProcessPool} layer; provide it to the Claude client layers that should share it.
 *
 * @category layers
 * @since 1.0.0
 */
export const layer = (options: Options = {}): Layer.Layer<ClaudeProcessPool> =>
  Layer.effect(ClaudeProcessPool, make(options))

const optional = <A>(config: Config.Config<A>): Config.Config<A | undefined> =>
  Config.map(Config.option(config), Option.getOrUndefined)

/**
 * The options read from the library's environment variables, all optional:
 * `CLAUDE_MAX_LIVE_PROCESSES` (at least 1), `CLAUDE_POOL_ACQUIRE_TIMEOUT`,
 * `CLAUDE_POOL_IDLE_TIMEOUT` and `CLAUDE_POOL_RECLAIM_AFTER` (durations such as `30 seconds`).
 * Options given in `overrides` win over the variables.
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
export const configFromEnv = (overrides: Options = {}): Config.Config<Options> =>
  Config.all({
    maxLiveProcesses: optional(Config.schema(
      Schema.Int.check(
        Schema.isGreaterThanOrEqualTo(1, { message: "CLAUDE_MAX_LIVE_PROCESSES must be at least 1" })
      ),
      "CLAUDE_MAX_LIVE_PROCESSES"
    )),
    acquireTimeout: optional<Duration.Input>(Config.Duration("CLAUDE_POOL_ACQUIRE_TIMEOUT")),
    idleTimeout: optional<Duration.Input>(Config.Duration("CLAUDE_POOL_IDLE_TIMEOUT")),
    reclaimAfter: optional<Duration.Input>(Config.Duration("CLAUDE_POOL_RECLAIM_AFTER"))
  }).pipe(
    Config.map((env): Options => ({
      ...env,
      ...Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined))
    }))
  )

/**
 * {@link layer} with its options read from `Config` values: each option is a `Config` (or the
 * whole options one `Config`), as `PgClient.layerConfig` takes them. For the library's
 * `CLAUDE_*` variables use {@link layerFromEnv}.
 *
 * **Example** (The pool's size from your own variable)
 *
 * ```ts
 * import { Config } from "effect"
 * import { ClaudeProcessPool } from "effect-chat-bridge"
 *
 * const Pool = ClaudeProcessPool.layerConfig({
 *   maxLiveProcesses: Config.Int("AGENT_MAX_PROCESSES").pipe(Config.withDefault(4))
 * })
 * ```
 *
 * @since 2.0.0
 * @category layers
 */
export const layerConfig = (config: Config.Wrap<Options>): Layer.Layer<ClaudeProcessPool, Config.ConfigError> =>
  Layer.unwrap(Effect.map(Config.unwrap(config), layer))

/**
 * {@link layer} configured from the environment ({@link configFromEnv}); options given here win
 * over the environment.
 *
 * @since 2.0.0
 * @category layers
 */
export const layerFromEnv = (overrides: Options = {}): Layer.Layer<ClaudeProcessPool, Config.ConfigError> =>
  layerConfig(configFromEnv(overrides))
