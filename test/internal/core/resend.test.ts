import { expect, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import { resendWhenCutShort } from "../../../src/internal/core/resend.ts"
import { ProcessError, ProviderError } from "../../../src/services/ChatClient.ts"
import { requestCutShort } from "../../../src/services/ClaudeConversation.ts"

/** A request whose first `cut` sends come back as a bare interrupt (a stopped runner's answer). */
const request = (cut: number, answer: Effect.Effect<string, ProviderError> = Effect.succeed("answer")) => {
  let sends = 0
  const send = Effect.suspend(() => (++sends <= cut ? Effect.interrupt : answer))
  return { send, sends: () => sends }
}

const gaveUp = (sends: number) => requestCutShort("conv-a", "turn t1", sends)
const fast = { firstDelay: "1 millis" } as const

it.live("a request cut short by its stopping runner is sent again until it is answered", () =>
  Effect.gen(function*() {
    const r = request(3)
    expect(yield* resendWhenCutShort(r.send, gaveUp, fast)).toBe("answer")
    expect(r.sends()).toBe(4)
  }))

it.live("after `times` resends it fails with a retryable error that says to send it again with the same id", () =>
  Effect.gen(function*() {
    const r = request(100)
    const error = yield* Effect.flip(resendWhenCutShort(r.send, gaveUp, { ...fast, times: 2 }))
    expect(r.sends()).toBe(3)
    expect(error).toBeInstanceOf(ProviderError)
    expect(error.reason).toBeInstanceOf(ProcessError)
    expect(error.reason.isRetryable).toBe(true)
    expect(error.message).toContain("conversation conv-a stopped while turn t1 waited for its answer")
    expect(error.message).toContain("the 3 sends of it got no answer")
    expect(error.message).toContain("send it again with the same id")
  }))

it.live("a failure or a defect of the request is not sent again", () =>
  Effect.gen(function*() {
    const failed = new ProviderError({ provider: "x", reason: new ProcessError({ message: "the model failed" }) })
    const r = request(0, Effect.fail(failed))
    expect(yield* Effect.flip(resendWhenCutShort(r.send, gaveUp, fast))).toBe(failed)
    expect(r.sends()).toBe(1)
    const d = request(0, Effect.die("boom"))
    const exit = yield* Effect.exit(resendWhenCutShort(d.send, gaveUp, fast))
    expect(Exit.isFailure(exit) && Cause.hasDies(exit.cause)).toBe(true)
    expect(d.sends()).toBe(1)
  }))

it.live("the caller's own interruption ends the wait: nothing is sent again", () =>
  Effect.gen(function*() {
    let sends = 0
    const started = yield* Deferred.make<void>()
    const send = Effect.suspend(() => {
      sends++
      return Deferred.succeed(started, undefined).pipe(Effect.andThen(Effect.never))
    })
    const fiber = yield* Effect.forkChild(resendWhenCutShort(send, gaveUp, fast))
    yield* Deferred.await(started)
    yield* Fiber.interrupt(fiber)
    const exit = yield* Fiber.await(fiber)
    expect(Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)).toBe(true)
    expect(sends).toBe(1)
  }))
