/** Shared bits of the HTTP providers' streaming tests. */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import type { ChatError } from "../../src/services/ChatClient.ts"
import type { ChatEvent } from "../../src/services/ChatEvent.ts"

export const collect = (stream: Stream.Stream<ChatEvent, ChatError>) => Stream.runCollect(stream)

export const deltas = (events: ReadonlyArray<ChatEvent>) =>
  events.flatMap((e) => (e._tag === "TextDelta" ? [e.text] : [])).join("")

export const tags = (events: ReadonlyArray<ChatEvent>) => events.map((e) => e._tag)

/** Runs the stream to its end, keeping the events seen before it failed (if it did). */
export const runRecording = (stream: Stream.Stream<ChatEvent, ChatError>) =>
  Effect.gen(function*() {
    const seen: Array<ChatEvent> = []
    const exit = yield* Stream.runForEach(stream, (e) => Effect.sync(() => seen.push(e))).pipe(Effect.exit)
    const error = Exit.isFailure(exit) ? Cause.findErrorOption(exit.cause).pipe(Option.getOrUndefined) : undefined
    return { seen, exit, error }
  })

/** Polls `check` every 10 ms, for at most 5 s (a loose bound), until it holds. */
export const eventually = (check: () => boolean) =>
  Effect.suspend(() => (check() ? Effect.void : Effect.fail("not yet" as const))).pipe(
    Effect.retry(Schedule.spaced("10 millis").pipe(Schedule.upTo({ duration: "5 seconds" })))
  )

/**
 * Consumes the stream until its first text delta, then interrupts the consumer; returns the
 * delta and the consumer's exit.
 */
export const interruptAfterFirstDelta = (stream: Stream.Stream<ChatEvent, ChatError>) =>
  Effect.gen(function*() {
    const seen: Array<ChatEvent> = []
    const fiber = yield* Effect.forkChild(Stream.runForEach(stream, (e) => Effect.sync(() => seen.push(e))))
    yield* eventually(() => seen.some((e) => e._tag === "TextDelta"))
    yield* Fiber.interrupt(fiber)
    const exit = yield* Fiber.await(fiber)
    return { seen, exit }
  })
