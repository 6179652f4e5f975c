import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/testing/TestClock"
import * as Pool from "../../src/services/ClaudeProcessPool.ts"

/**
 * A stand-in for a live process: a scope holding a permit, closed by the pool's `evict`; `started`
 * false leaves it starting (not yet touched), which the pool never reclaims.
 */
const holder = (pool: Pool.ClaudeProcessPoolService, started = true) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    let stops = 0
    const permit = yield* pool.acquire(Effect.suspend(() => {
      stops++
      return Scope.close(scope, Exit.void)
    })).pipe(Scope.provide(scope), Effect.onError(() => Scope.close(scope, Exit.void)))
    if (started) yield* permit.touch
    return { scope, permit, stops: () => stops, close: Scope.close(scope, Exit.void) }
  })

const live = (pool: Pool.ClaudeProcessPoolService) => Effect.map(pool.stats, (s) => s.live)
const waiting = (pool: Pool.ClaudeProcessPoolService) => Effect.map(pool.stats, (s) => s.waiting)
/** Lets forked fibers run up to their next sleep. */
const settle = TestClock.adjust("0 millis")

describe("ClaudeProcessPool", () => {
  it.effect("at most maxLiveProcesses permits; a waiting turn gets the next one released", () =>
    Effect.gen(function*() {
      const pool = yield* Pool.make({ maxLiveProcesses: 2 })
      const a = yield* holder(pool)
      yield* holder(pool)
      const third = yield* Effect.forkChild(holder(pool))
      yield* settle
      assert.deepStrictEqual(yield* pool.stats, { live: 2, waiting: 1, evictions: 0, spares: 0, claims: 0, misses: 0 })
      assert.isTrue(third.pollUnsafe() === undefined)
      yield* a.close
      const c = yield* Fiber.join(third)
      assert.deepStrictEqual(yield* pool.stats, { live: 2, waiting: 0, evictions: 0, spares: 0, claims: 0, misses: 0 })
      yield* c.close
      assert.strictEqual(yield* live(pool), 1)
    }))

  it.effect("a turn that waits acquireTimeout fails with ProcessPoolTimeoutError and holds nothing", () =>
    Effect.gen(function*() {
      const pool = yield* Pool.make({ maxLiveProcesses: 1, acquireTimeout: "10 seconds" })
      const a = yield* holder(pool)
      yield* a.permit.busy(Effect.gen(function*() {
        const waiter = yield* Effect.forkChild(holder(pool))
        yield* TestClock.adjust("10 seconds")
        const exit = yield* Fiber.await(waiter)
        assert.isTrue(Exit.isFailure(exit))
        const failure = Exit.isFailure(exit) ? Cause.findErrorOption(exit.cause) : Option.none()
        if (Option.isSome(failure)) {
          const error = failure.value
          assert.strictEqual(error._tag, "ProcessPoolTimeoutError")
          assert.strictEqual(error.maxLiveProcesses, 1)
          assert.include(error.message, "raise maxLiveProcesses")
        } else assert.fail("expected a typed failure")
      }))
      assert.deepStrictEqual(yield* pool.stats, { live: 1, waiting: 0, evictions: 0, spares: 0, claims: 0, misses: 0 })
      yield* a.close
      // The permit the timed-out turn never held is not given back twice: one more, not two.
      yield* holder(pool)
      const extra = yield* Effect.forkChild(holder(pool))
      yield* settle
      assert.isTrue(extra.pollUnsafe() === undefined)
      yield* Fiber.interrupt(extra)
    }))

  it.effect("interrupting a waiting turn releases nothing it did not hold", () =>
    Effect.gen(function*() {
      const pool = yield* Pool.make({ maxLiveProcesses: 1 })
      const a = yield* holder(pool)
      const waiter = yield* Effect.forkChild(holder(pool))
      yield* settle
      assert.strictEqual(yield* waiting(pool), 1)
      yield* Fiber.interrupt(waiter)
      assert.deepStrictEqual(yield* pool.stats, { live: 1, waiting: 0, evictions: 0, spares: 0, claims: 0, misses: 0 })
      assert.strictEqual(a.stops(), 0)
      // Still exactly one permit: a new waiter waits until a's is released.
      const next = yield* Effect.forkChild(holder(pool))
      yield* settle
      assert.isTrue(next.pollUnsafe() === undefined)
      yield* a.close
      yield* Fiber.join(next)
      assert.strictEqual(yield* live(pool), 1)
    }))

  it.effect("a process idle for idleTimeout is evicted; a busy one is not; metrics count it", () =>
    Effect.gen(function*() {
      const before = (yield* Metric.value(Pool.evictions)).count
      const liveBefore = (yield* Metric.value(Pool.liveProcesses)).value
      const pool = yield* Pool.make({ maxLiveProcesses: 3, idleTimeout: "1 minute" })
      const idle = yield* holder(pool)
      const working = yield* holder(pool)
      assert.strictEqual((yield* Metric.value(Pool.liveProcesses)).value, liveBefore + 2)
      const turn = yield* Effect.forkChild(working.permit.busy(Effect.sleep("5 minutes")))
      yield* TestClock.adjust("30 seconds")
      yield* idle.permit.touch
      yield* TestClock.adjust("59 seconds")
      assert.strictEqual(idle.stops(), 0)
      yield* TestClock.adjust("1 second")
      assert.strictEqual(idle.stops(), 1)
      assert.isTrue(idle.permit.evicted())
      assert.strictEqual(working.stops(), 0)
      assert.deepStrictEqual(yield* pool.stats, { live: 1, waiting: 0, evictions: 1, spares: 0, claims: 0, misses: 0 })
      assert.strictEqual((yield* Metric.value(Pool.evictions)).count, before + 1)
      // The turn ends at 5 minutes; its idle clock starts then.
      yield* TestClock.adjust("210 seconds")
      yield* Fiber.join(turn)
      yield* TestClock.adjust("59 seconds")
      assert.strictEqual(working.stops(), 0)
      yield* TestClock.adjust("1 second")
      assert.strictEqual(working.stops(), 1)
      assert.deepStrictEqual(yield* pool.stats, { live: 0, waiting: 0, evictions: 2, spares: 0, claims: 0, misses: 0 })
      assert.strictEqual((yield* Metric.value(Pool.liveProcesses)).value, liveBefore)
    }))

  it.effect("a waiting turn takes the place of the process idle the longest, once idle for reclaimAfter", () =>
    Effect.gen(function*() {
      const pool = yield* Pool.make({ maxLiveProcesses: 2, reclaimAfter: "1 second" })
      const older = yield* holder(pool)
      yield* TestClock.adjust("100 millis")
      const newer = yield* holder(pool)
      // Both idle less than reclaimAfter: the waiter waits; then the older one gives way.
      const waiter = yield* Effect.forkChild(holder(pool))
      yield* TestClock.adjust("500 millis")
      assert.isTrue(waiter.pollUnsafe() === undefined)
      yield* TestClock.adjust("500 millis")
      const c = yield* Fiber.join(waiter)
      assert.strictEqual(older.stops(), 1)
      assert.strictEqual(newer.stops(), 0)
      // One eviction per waiter: the newer one's own timer finds nobody waiting.
      yield* TestClock.adjust("1 second")
      assert.strictEqual(newer.stops(), 0)
      assert.deepStrictEqual(yield* pool.stats, { live: 2, waiting: 0, evictions: 1, spares: 0, claims: 0, misses: 0 })
      // A busy process is never reclaimed: the waiter waits for the turn to end.
      yield* newer.permit.busy(c.permit.busy(Effect.gen(function*() {
        const late = yield* Effect.forkChild(holder(pool))
        yield* TestClock.adjust("10 seconds")
        assert.isTrue(late.pollUnsafe() === undefined)
        yield* Fiber.interrupt(late)
      })))
      assert.strictEqual(newer.stops() + c.stops(), 0)
    }))

  it.effect("a process still starting is never reclaimed, however long its turn waited for the permit", () =>
    Effect.gen(function*() {
      const pool = yield* Pool.make({ maxLiveProcesses: 1, reclaimAfter: "1 second" })
      const first = yield* holder(pool)
      // A turn waits 5 s for the only permit, then gets it when the first process gives way.
      const starting = yield* Effect.forkChild(holder(pool, false))
      yield* TestClock.adjust("1 second")
      const second = yield* Fiber.join(starting)
      assert.strictEqual(first.stops(), 1)
      // While it starts (writing its config, spawning) a new waiter cannot take its place.
      const waiter = yield* Effect.forkChild(holder(pool))
      yield* TestClock.adjust("5 seconds")
      assert.isTrue(waiter.pollUnsafe() === undefined)
      assert.strictEqual(second.stops(), 0)
      // Started and idle for reclaimAfter: now it gives way.
      yield* second.permit.touch
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(waiter)
      assert.strictEqual(second.stops(), 1)
    }))

  it.effect("without a pool a permit bounds nothing", () =>
    Effect.gen(function*() {
      const permit = yield* Effect.scoped(Pool.acquireFrom(Option.none(), Effect.void))
      assert.strictEqual(permit, Pool.unbounded)
      assert.strictEqual(yield* permit.busy(Effect.succeed(1)), 1)
      yield* permit.touch
      assert.isFalse(permit.evicted())
    }))

  it.effect("layerFromEnv reads the environment; overrides win", () =>
    Effect.gen(function*() {
      const provider = ConfigProvider.fromEnv({
        env: { CLAUDE_MAX_LIVE_PROCESSES: "3", CLAUDE_POOL_IDLE_TIMEOUT: "2 minutes" }
      })
      const max = (overrides: Pool.Options) =>
        Effect.scoped(
          Layer.build(Pool.layerFromEnv(overrides)).pipe(
            Effect.map((ctx) => Context.get(ctx, Pool.ClaudeProcessPool).maxLiveProcesses),
            Effect.provideService(ConfigProvider.ConfigProvider, provider)
          )
        )
      assert.strictEqual(yield* max({}), 3)
      assert.strictEqual(yield* max({ maxLiveProcesses: 7 }), 7)
      const bad = yield* Effect.scoped(Layer.build(Pool.layerFromEnv())).pipe(
        Effect.provideService(
          ConfigProvider.ConfigProvider,
          ConfigProvider.fromEnv({ env: { CLAUDE_MAX_LIVE_PROCESSES: "0" } })
        ),
        Effect.flip
      )
      assert.include(String(bad), "at least 1")
      assert.include(String(bad), "[\"CLAUDE_MAX_LIVE_PROCESSES\"]")
    }))

  it.effect("layerConfig takes the caller's Config values; CLAUDE_* are not read", () =>
    Effect.gen(function*() {
      const provider = ConfigProvider.fromUnknown({ pool: { size: 5 }, CLAUDE_MAX_LIVE_PROCESSES: "3" })
      const max = yield* Effect.scoped(
        Layer.build(Pool.layerConfig({ maxLiveProcesses: Config.Int("size").pipe(Config.nested("pool")) })).pipe(
          Effect.map((ctx) => Context.get(ctx, Pool.ClaudeProcessPool).maxLiveProcesses),
          Effect.provideService(ConfigProvider.ConfigProvider, provider)
        )
      )
      assert.strictEqual(max, 5)
    }))

  describe("spares", () => {
    /** A spare stand-in: a scope holding a spare permit; `started` counts the starts of this key. */
    const spareStarter = (pool: Pool.ClaudeProcessPoolService, tag: string, log: Array<string>) => {
      let n = 0
      return (parent: Scope.Scope) =>
        Effect.gen(function*() {
          const scope = yield* Scope.fork(parent, "sequential")
          const name = `${tag}${++n}`
          let open = true
          const close = Effect.suspend(() => {
            open = false
            return Scope.close(scope, Exit.void)
          })
          const permit = yield* pool.acquire(close, { spare: true }).pipe(
            Scope.provide(scope),
            Effect.onError(() => close)
          )
          yield* permit.touch
          log.push(`start ${name}`)
          return { name, permit, alive: () => open && !permit.evicted(), close }
        })
    }
    const stats = (pool: Pool.ClaudeProcessPoolService) => pool.stats

    it.effect("a miss teaches the key; later claims get spares, replaced after their first turn", () =>
      Effect.gen(function*() {
        const pool = yield* Pool.make({ maxLiveProcesses: 4, spares: 2 })
        const log: Array<string> = []
        const start = spareStarter(pool, "a", log)
        assert.isTrue(Option.isNone(yield* pool.claimSpare("A", start)))
        yield* settle
        assert.deepStrictEqual(log, ["start a1", "start a2"])
        assert.include(yield* stats(pool), { live: 2, spares: 2, claims: 0, misses: 1 })
        const first = yield* pool.claimSpare("A", start)
        assert.strictEqual(Option.getOrThrow(first).name, "a1")
        yield* Option.getOrThrow(first).permit.claim
        yield* settle
        // Not replaced while the claimed spare's first turn runs…
        assert.deepStrictEqual(log, ["start a1", "start a2"])
        yield* Option.getOrThrow(first).permit.busy(settle)
        yield* settle
        // …but once it ends: a2 and a3 parked, a1 is a conversation's now.
        assert.deepStrictEqual(log, ["start a1", "start a2", "start a3"])
        assert.include(yield* stats(pool), { live: 3, spares: 2, claims: 1, misses: 1 })
        // Another key never gets A's spares.
        assert.isTrue(Option.isNone(yield* pool.claimSpare("B", spareStarter(pool, "b", log))))
      }))

    it.effect("spares never wait for a permit, and a waiting turn stops a spare first", () =>
      Effect.gen(function*() {
        const pool = yield* Pool.make({ maxLiveProcesses: 2, spares: 2, reclaimAfter: "1 hour" })
        const log: Array<string> = []
        const conversation = yield* holder(pool)
        yield* pool.claimSpare("A", spareStarter(pool, "a", log))
        yield* settle
        // One permit was free: one spare.
        assert.deepStrictEqual(log, ["start a1"])
        assert.include(yield* stats(pool), { live: 2, spares: 1 })
        // A new turn needs a CLI: the spare goes, the conversation (idle, but not for an hour) stays.
        const turn = yield* Effect.forkChild(holder(pool))
        yield* settle
        const next = yield* Fiber.join(turn)
        assert.strictEqual(conversation.stops(), 0)
        assert.include(yield* stats(pool), { live: 2, spares: 0, evictions: 1 })
        yield* next.close
        yield* conversation.close
      }))

    it.effect("an unclaimed spare is stopped after spareIdleTimeout and not replaced until its key is used", () =>
      Effect.gen(function*() {
        const pool = yield* Pool.make({ maxLiveProcesses: 4, spares: 1, spareIdleTimeout: "30 seconds" })
        const log: Array<string> = []
        const start = spareStarter(pool, "a", log)
        yield* pool.claimSpare("A", start)
        yield* settle
        assert.include(yield* stats(pool), { spares: 1 })
        yield* TestClock.adjust("30 seconds")
        yield* settle
        assert.include(yield* stats(pool), { live: 0, spares: 0, evictions: 1 })
        assert.deepStrictEqual(log, ["start a1"])
        // The next new conversation misses, and the key gets its spare again.
        assert.isTrue(Option.isNone(yield* pool.claimSpare("A", start)))
        yield* settle
        assert.deepStrictEqual(log, ["start a1", "start a2"])
      }))

    it.effect("spareKeys: the configurations used last keep spares; a forgotten one's spares stop", () =>
      Effect.gen(function*() {
        const pool = yield* Pool.make({ maxLiveProcesses: 8, spares: 1, spareKeys: 2 })
        const log: Array<string> = []
        const starts = {
          A: spareStarter(pool, "a", log),
          B: spareStarter(pool, "b", log),
          C: spareStarter(pool, "c", log)
        }
        yield* pool.claimSpare("A", starts.A)
        yield* pool.claimSpare("B", starts.B)
        yield* settle
        assert.include(yield* stats(pool), { spares: 2 })
        yield* pool.claimSpare("C", starts.C)
        yield* settle
        // A is the least recently used of three: its spare is stopped.
        assert.deepStrictEqual(log, ["start a1", "start b1", "start c1"])
        assert.include(yield* stats(pool), { live: 2, spares: 2, misses: 3 })
        assert.isTrue(Option.isSome(yield* pool.claimSpare("B", starts.B)))
      }))

    it.effect("closing the pool's scope stops every spare", () =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const pool = yield* Pool.make({ maxLiveProcesses: 4, spares: 2 }).pipe(Scope.provide(scope))
        const log: Array<string> = []
        yield* pool.claimSpare("A", spareStarter(pool, "a", log))
        yield* settle
        assert.include(yield* stats(pool), { live: 2, spares: 2 })
        yield* Scope.close(scope, Exit.void)
        assert.include(yield* stats(pool), { live: 0, spares: 0 })
      }))

    it.effect("CLAUDE_POOL_SPARES and CLAUDE_POOL_SPARE_KEYS are read from the environment", () =>
      Effect.gen(function*() {
        const read = yield* Effect.gen(function*() {
          return yield* Pool.configFromEnv()
        }).pipe(
          Effect.provideService(
            ConfigProvider.ConfigProvider,
            ConfigProvider.fromEnv({
              env: { CLAUDE_POOL_SPARES: "2", CLAUDE_POOL_SPARE_KEYS: "3", CLAUDE_POOL_SPARE_IDLE_TIMEOUT: "1 minute" }
            })
          )
        )
        assert.strictEqual(read.spares, 2)
        assert.strictEqual(read.spareKeys, 3)
        assert.isDefined(read.spareIdleTimeout)
      }))

    it.effect("without spares nothing is started and nothing counted", () =>
      Effect.gen(function*() {
        const pool = yield* Pool.make({ maxLiveProcesses: 4 })
        const log: Array<string> = []
        assert.isTrue(Option.isNone(yield* pool.claimSpare("A", spareStarter(pool, "a", log))))
        yield* settle
        assert.deepStrictEqual(log, [])
        assert.include(yield* stats(pool), { live: 0, spares: 0, misses: 0 })
      }))
  })
})
