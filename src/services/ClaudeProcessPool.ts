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
 * **Spare CLIs** (`spares`, off by default): the pool keeps CLIs started ahead of demand for
 * conversations that do not exist yet, so that a new conversation's first turn is warm (ClaudeLocal
 * and, since 2.2.0, ClaudeAgent, both with `keepAlive`). A spare is started with everything that
 * cannot change later (binary, model, environment, settings, policy flags, cwd) and without tools
 * or session: it serves only brand-new conversations whose start configuration (its key) is the
 * same, and receives its conversation's own tools (bridge credential or tool server) when claimed.
 * The pool keeps `spares` of them for each of the `spareKeys` configurations new
 * conversations used last; a claimed spare is replaced once its first turn ends (a CLI starting
 * beside that turn would slow it down); a spare unclaimed for
 * `spareIdleTimeout` is stopped (and replaced only when its configuration is used again). Spares
 * take permits like any CLI, only when one is free and no turn waits, and are the first stopped
 * for a waiting turn.
 *
 * Metrics (Effect `Metric`, summed over the pools of the process): `claude_live_processes`
 * (gauge), `claude_waiting_turns` (gauge), `claude_process_evictions` (counter),
 * `claude_spare_processes` (gauge), `claude_spare_claims` and `claude_spare_misses` (counters); spans
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
  /**
   * A spare's permit becomes its conversation's: from now on it is idle for `idleTimeout`, not
   * `spareIdleTimeout`. Nothing for any other permit.
   *
   * @since 2.1.0
   */
  readonly claim: Effect.Effect<void>
}

/**
 * A spare process as the pool sees it: whether it can still serve, and how to stop it.
 *
 * @category models
 * @since 2.1.0
 */
export interface SpareProcess {
  /** False once it has exited or been stopped: it is then never handed out. */
  readonly alive: () => boolean
  /** Stops it (when it is reaped, or its configuration forgotten). */
  readonly close: Effect.Effect<void>
}

/**
 * Starts one spare, whose resources live in `scope` (the pool's): it must take its permit with
 * `acquire(close, { spare: true })`, which never waits.
 *
 * @category models
 * @since 2.1.0
 */
export type SpareStart<A extends SpareProcess> = (scope: Scope.Scope) => Effect.Effect<A, unknown>

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
  /**
   * Spare CLIs (started or starting, not yet claimed).
   *
   * @since 2.1.0
   */
  readonly spares: number
  /**
   * New conversations that got a spare.
   *
   * @since 2.1.0
   */
  readonly claims: number
  /**
   * New conversations that found no spare of their configuration (and started cold).
   *
   * @since 2.1.0
   */
  readonly misses: number
}

/**
 * Options of {@link ClaudeProcessPoolService.acquire}.
 *
 * @category models
 * @since 2.1.0
 */
export interface AcquireOptions {
  /** A spare's permit: taken only when one is free and no turn waits (never waits itself). */
  readonly spare?: boolean | undefined
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
  readonly acquire: (
    evict: Effect.Effect<void>,
    options?: AcquireOptions
  ) => Effect.Effect<Permit, ProcessPoolTimeoutError, Scope.Scope>
  readonly stats: Effect.Effect<Stats>
  /**
   * Spares kept per configuration (the `spares` option; 0 when off).
   *
   * @since 2.1.0
   */
  readonly spares: number
  /**
   * For a brand-new conversation whose start configuration is `key`: a parked spare of that key,
   * if one is alive (the caller then hands it its conversation's credential, or closes it).
   * Either way the pool now keeps spares of `key`, started with `start` (the latest caller's): at
   * once after a miss, and after a claim once the claimed process's first turn has ended.
   *
   * @since 2.1.0
   */
  readonly claimSpare: <A extends SpareProcess>(key: string, start: SpareStart<A>) => Effect.Effect<Option.Option<A>>
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
  /**
   * Spare CLIs kept for each configuration the pool keeps spares of (see the module's **Spare
   * CLIs**). Default 0: no spares.
   *
   * @since 2.1.0
   */
  readonly spares?: number | undefined
  /**
   * How many configurations the pool keeps spares of: the ones new conversations used last. Default 1.
   *
   * @since 2.1.0
   */
  readonly spareKeys?: number | undefined
  /**
   * A spare unclaimed this long is stopped (and replaced only when its configuration is used
   * again). Default 2 minutes.
   *
   * @since 2.1.0
   */
  readonly spareIdleTimeout?: Duration.Input | undefined
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

/**
 * Spare CLIs parked, started or starting (summed over the pools of the process).
 *
 * @category utils
 * @since 2.1.0
 */
export const spareProcesses = Metric.gauge("claude_spare_processes", {
  description: "Spare claude CLIs of ClaudeProcessPools, not yet claimed by a conversation"
})
/**
 * New conversations whose first turn got a spare CLI.
 *
 * @category utils
 * @since 2.1.0
 */
export const spareClaims = Metric.counter("claude_spare_claims", {
  description: "New conversations that claimed a spare claude CLI"
})
/**
 * New conversations that found no spare CLI of their configuration and started one cold.
 *
 * @category utils
 * @since 2.1.0
 */
export const spareMisses = Metric.counter("claude_spare_misses", {
  description: "New conversations that found no spare claude CLI of their configuration"
})

/** The spares of one configuration, and how to start another. */
interface SpareSet {
  start: SpareStart<SpareProcess>
  parked: Array<SpareProcess>
  /** A `fill` runs for it: one at a time, so spares start one after another. */
  filling: boolean
}

interface Entry {
  readonly evict: Effect.Effect<void>
  /** Parked for a conversation that does not exist yet. */
  spare: boolean
  /** A claimed spare whose first turn has not ended: its replacement starts when it does. */
  replaceAfterTurn: boolean
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
  const sparesPerKey = Math.max(0, Math.floor(options.spares ?? 0))
  const spareKeys = Math.max(1, Math.floor(options.spareKeys ?? 1))
  const spareIdleMillis = Duration.toMillis(options.spareIdleTimeout ?? Duration.minutes(2))
  // Spares live in the pool's scope: they outlive the client whose conversation taught their key.
  const poolScope = yield* Effect.scope
  const semaphore = yield* Semaphore.make(max)
  // Timers and evictions: an eviction closes the holder's scope, so it must not run in a fiber
  // of that scope (closing it would wait for itself).
  const fibers = yield* FiberSet.make<void>()
  const entries = new Set<Entry>()
  let waiting = 0
  let evicted = 0
  let claims = 0
  let misses = 0
  /** The configurations kept spares of, least recently used first (Map order). */
  const spareSets = new Map<string, SpareSet>()

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
      if (entry.busy || entry.evicted) continue
      // A parked spare goes first, however recently it started: no conversation loses its CLI.
      if (entry.spare) {
        if (oldest?.spare !== true || entry.lastUsed < oldest.lastUsed) oldest = entry
        continue
      }
      if (oldest?.spare === true || now - entry.lastUsed < reclaimMillis) continue
      if (oldest === undefined || entry.lastUsed < oldest.lastUsed) oldest = entry
    }
    const unserved = waiting - (max - entries.size) - returning
    return oldest === undefined || unserved <= 0 ? Effect.void : evict(oldest)
  })

  /** From idle: after `reclaimAfter` it gives way to a waiting turn, after `idleTimeout` it is stopped. */
  const watch = Effect.fnUntraced(function*(entry: Entry) {
    if (entry.spare) {
      // A waiting turn reclaims a spare at once (`reclaim`): only its own idle time is watched.
      yield* Effect.sleep(Duration.millis(spareIdleMillis))
      return yield* evict(entry)
    }
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

  /** A spare's permit: only a free one, and only when no turn waits for it. */
  const acquireSpare = (stop: Effect.Effect<void>) =>
    Effect.uninterruptibleMask(() =>
      Effect.gen(function*() {
        const taken = waiting === 0 && (yield* Semaphore.takeIfAvailable(semaphore, 1))
        if (!taken) {
          return yield* new ProcessPoolTimeoutError({
            maxLiveProcesses: max,
            waitedMillis: 0,
            message: "No free permit for a spare claude CLI"
          })
        }
        return yield* register(stop, 1, true)
      })
    )

  /** A live process's entry and permit, holding `taken` permits until the current scope closes. */
  const register = Effect.fnUntraced(function*(stop: Effect.Effect<void>, taken: number, spare: boolean) {
    // Starting counts as busy: stopping a CLI while it writes its MCP config or spawns would
    // remove files it is about to use.
    const entry: Entry = {
      evict: stop,
      spare,
      replaceAfterTurn: false,
      busy: true,
      lastUsed: yield* Clock.currentTimeMillis,
      evicted: false,
      timer: undefined
    }
    entries.add(entry)
    yield* Metric.modify(liveProcesses, 1)
    if (spare) yield* Metric.modify(spareProcesses, 1)
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        entries.delete(entry)
        entry.evicted = true
        if (entry.timer !== undefined) yield* Fiber.interrupt(entry.timer)
        yield* Metric.modify(liveProcesses, -1)
        if (entry.spare) yield* Metric.modify(spareProcesses, -1)
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
              if (!entry.replaceAfterTurn) return rearm(entry)
              entry.replaceAfterTurn = false
              return Effect.andThen(rearm(entry), FiberSet.run(fibers, replenish))
            })
        ),
      touch: Effect.suspend(() => {
        entry.busy = false
        return rearm(entry)
      }),
      evicted: () => entry.evicted,
      claim: Effect.suspend(() => {
        if (!entry.spare) return Effect.void
        entry.spare = false
        entry.replaceAfterTurn = true
        return Effect.andThen(Metric.modify(spareProcesses, -1), rearm(entry))
      })
    }
    return permit
  })

  const acquire = (stop: Effect.Effect<void>, acquireOptions?: AcquireOptions) =>
    acquireOptions?.spare === true ? acquireSpare(stop) : acquireTurn(stop)

  const acquireTurn = (stop: Effect.Effect<void>) =>
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
        // Idle time starts when the permit is taken, not when the turn began waiting for it (a long
        // wait must not make a new CLI reclaimable at once).
        return yield* register(stop, taken, false)
      })
    ).pipe(Effect.withSpan("ClaudeProcessPool.acquire", { attributes: { maxLiveProcesses: max } }))

  /** Starts spares of `key` one at a time until it has its count (or no permit is free). */
  const fillLoop = Effect.fnUntraced(function*(key: string, set: SpareSet) {
    for (;;) {
      set.parked = set.parked.filter((spare) => spare.alive())
      if (spareSets.get(key) !== set || set.parked.length >= sparesPerKey) return
      if (waiting > 0 || entries.size >= max) return
      const started = yield* Effect.result(set.start(poolScope))
      if (started._tag === "Failure") {
        return yield* Effect.logDebug("spare claude CLI not started").pipe(
          Effect.annotateLogs({ error: String(started.failure) })
        )
      }
      // Its configuration was forgotten meanwhile: no one would claim it.
      if (spareSets.get(key) !== set) return yield* started.success.close
      set.parked.push(started.success)
    }
  })

  const fill = (key: string, set: SpareSet) =>
    Effect.suspend(() => {
      if (set.filling) return Effect.void
      set.filling = true
      return fillLoop(key, set).pipe(Effect.ensuring(Effect.sync(() => {
        set.filling = false
      })))
    })

  /** Tops up every configuration kept spares of. */
  const replenish: Effect.Effect<void> = Effect.suspend(() =>
    Effect.forEach([...spareSets], ([key, set]) => fill(key, set), { discard: true })
  )

  /** Remembers `key` as the most recently used; forgets (and stops the spares of) the oldest beyond `spareKeys`. */
  const remember = Effect.fnUntraced(function*(key: string, start: SpareStart<SpareProcess>) {
    const known = spareSets.get(key)
    const set: SpareSet = known ?? { start, parked: [], filling: false }
    set.start = start
    spareSets.delete(key)
    spareSets.set(key, set)
    for (const [oldKey, old] of spareSets) {
      if (spareSets.size <= spareKeys) break
      spareSets.delete(oldKey)
      // In the background: the conversation that made room should not wait for them to exit.
      yield* FiberSet.run(fibers, Effect.forEach(old.parked, (spare) => spare.close, { discard: true }))
    }
    return set
  })

  const claimSpare = <A extends SpareProcess>(key: string, start: SpareStart<A>) =>
    Effect.gen(function*() {
      if (sparesPerKey === 0) return Option.none<A>()
      const set = yield* remember(key, start)
      set.parked = set.parked.filter((spare) => spare.alive())
      // Only a spare started by a `start` of this key is parked under it.
      const taken = set.parked.shift() as A | undefined
      if (taken === undefined) misses++
      else claims++
      yield* Metric.update(taken === undefined ? spareMisses : spareClaims, 1)
      // A taken spare is replaced once its first turn ends (`Permit.claim`): a CLI starting beside
      // that turn would take the CPU the warm turn is meant to save.
      if (taken === undefined) yield* FiberSet.run(fibers, fill(key, set))
      return Option.fromUndefinedOr(taken)
    }).pipe(Effect.uninterruptible)

  const service: ClaudeProcessPoolService = {
    maxLiveProcesses: max,
    acquire,
    spares: sparesPerKey,
    claimSpare,
    stats: Effect.sync(() => ({
      live: entries.size,
      waiting,
      evictions: evicted,
      spares: [...entries].filter((entry) => entry.spare).length,
      claims,
      misses
    }))
  }
  return service
})

/**
 * A permit that bounds nothing: what a client without a pool gets.
 *
 * @category constructors
 * @since 1.0.0
 */
export const unbounded: Permit = {
  busy: (self) => self,
  touch: Effect.void,
  evicted: () => false,
  claim: Effect.void
}

/**
 * A permit from `pool` when there is one, else {@link unbounded}.
 *
 * @category utils
 * @since 1.0.0
 */
export const acquireFrom = (
  pool: Option.Option<ClaudeProcessPoolService>,
  evict: Effect.Effect<void>,
  options?: AcquireOptions
): Effect.Effect<Permit, ProcessPoolTimeoutError, Scope.Scope> =>
  Option.isSome(pool) ? pool.value.acquire(evict, options) : Effect.succeed(unbounded)

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
 * `CLAUDE_POOL_IDLE_TIMEOUT` and `CLAUDE_POOL_RECLAIM_AFTER` (durations such as `30 seconds`),
 * `CLAUDE_POOL_SPARES` and `CLAUDE_POOL_SPARE_KEYS` (integers; since 2.1.0) and
 * `CLAUDE_POOL_SPARE_IDLE_TIMEOUT` (a duration; since 2.1.0).
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
    reclaimAfter: optional<Duration.Input>(Config.Duration("CLAUDE_POOL_RECLAIM_AFTER")),
    spares: optional(Config.schema(
      Schema.Int.check(Schema.isGreaterThanOrEqualTo(0, { message: "CLAUDE_POOL_SPARES must be at least 0" })),
      "CLAUDE_POOL_SPARES"
    )),
    spareKeys: optional(Config.schema(
      Schema.Int.check(Schema.isGreaterThanOrEqualTo(1, { message: "CLAUDE_POOL_SPARE_KEYS must be at least 1" })),
      "CLAUDE_POOL_SPARE_KEYS"
    )),
    spareIdleTimeout: optional<Duration.Input>(Config.Duration("CLAUDE_POOL_SPARE_IDLE_TIMEOUT"))
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
