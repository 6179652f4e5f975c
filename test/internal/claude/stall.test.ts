/**
 * The stallTimeout watchdog on a TestClock: it fires after the bound of silence, output restarts
 * the silence, an open tool call or a permission wait pauses it, and the silence counts again from
 * their end.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/testing/TestClock"
import * as Stall from "../../../src/internal/claude/stall.ts"
import { ProviderError } from "../../../src/services/ChatClient.ts"

const fired = (fiber: Fiber.Fiber<never, ProviderError>) =>
  Effect.map(Effect.sync(() => fiber.pollUnsafe()), (exit) => exit !== undefined)

const advance = (seconds: number) => TestClock.adjust(`${seconds} seconds`)

describe("claudeStall", () => {
  it.effect("fires after the bound of silence, as a retryable stalled error naming the bound and the option", () =>
    Effect.gen(function*() {
      const dog = yield* Stall.make({ provider: "claude-local", stallTimeout: "10 seconds" })
      const fiber = yield* Effect.forkChild(dog.watch)
      yield* advance(9)
      assert.isFalse(yield* fired(fiber))
      yield* advance(1)
      const exit = yield* Fiber.await(fiber)
      assert.isTrue(Exit.isFailure(exit))
      const error = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
      const failure = error !== undefined && error._tag === "Fail" ? error.error : undefined
      assert.instanceOf(failure, ProviderError)
      assert.strictEqual(failure.reason._tag, "StalledError")
      assert.isTrue(failure.isRetryable)
      assert.include(failure.message, "10s")
      assert.include(failure.message, "stallTimeout")
      assert.include(failure.message, "next turn resumes the session")
    }))

  it.effect("output restarts the silence", () =>
    Effect.gen(function*() {
      const dog = yield* Stall.make({ provider: "claude-local", stallTimeout: "10 seconds" })
      const fiber = yield* Effect.forkChild(dog.watch)
      for (let i = 0; i < 5; i++) {
        yield* advance(8)
        dog.output()
      }
      assert.isFalse(yield* fired(fiber))
      yield* advance(9)
      assert.isFalse(yield* fired(fiber))
      yield* advance(1)
      assert.isTrue(yield* fired(fiber))
    }))

  it.effect("an open tool call pauses it; it fires again the bound after the tool's result", () =>
    Effect.gen(function*() {
      let open = 0
      const dog = yield* Stall.make({ provider: "claude-local", stallTimeout: "10 seconds", busy: () => open > 0 })
      const fiber = yield* Effect.forkChild(dog.watch)
      yield* advance(3)
      open = 1
      dog.output()
      // A tool running for far longer than the bound.
      yield* advance(95)
      assert.isFalse(yield* fired(fiber))
      open = 0
      dog.output()
      yield* advance(9)
      assert.isFalse(yield* fired(fiber))
      yield* advance(1)
      assert.isTrue(yield* fired(fiber))
    }))

  it.effect("a permission wait (made through PermissionWaits) pauses it; the silence counts from its end", () =>
    Effect.gen(function*() {
      const waits = Stall.makePermissionWaits()
      const dog = yield* Stall.make({ provider: "claude-agent", stallTimeout: "10 seconds" })
      yield* waits.attach(dog)
      const fiber = yield* Effect.forkChild(dog.watch)
      const decision = yield* Effect.forkChild(waits.around(Effect.sleep("60 seconds")))
      yield* advance(60)
      yield* Fiber.join(decision)
      assert.isFalse(yield* fired(fiber))
      yield* advance(9)
      assert.isFalse(yield* fired(fiber))
      yield* advance(1)
      assert.isTrue(yield* fired(fiber))
    }).pipe(Effect.scoped))

  it.effect("a detached watchdog no longer sees the waits; watched fails the turn and interrupts it", () =>
    Effect.gen(function*() {
      const waits = Stall.makePermissionWaits()
      const dog = yield* Stall.make({ provider: "claude-local", stallTimeout: "10 seconds" })
      yield* Effect.scoped(waits.attach(dog))
      let interrupted = false
      const turn = Effect.never.pipe(Effect.onInterrupt(() =>
        Effect.sync(() => {
          interrupted = true
        })
      ))
      const fiber = yield* Effect.forkChild(Stall.watched(dog, turn))
      yield* Effect.forkChild(waits.around(Effect.sleep("60 seconds")))
      yield* advance(10)
      const exit = yield* Fiber.await(fiber)
      assert.isTrue(Exit.isFailure(exit))
      assert.isTrue(interrupted)
    }))
})
