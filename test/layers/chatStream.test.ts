import { describe, expect, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Fallback from "../../src/layers/Fallback.ts"
import * as Scripted from "../../src/layers/Scripted.ts"
import { ChatClient } from "../../src/services/ChatClient.ts"
import type { ChatEvent } from "../../src/services/ChatEvent.ts"
import type { TurnRequest } from "../../src/services/ModelTurn.ts"
import * as Tool from "../../src/services/Tool.ts"

const add = Tool.make("add", {
  description: "Adds",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.succeed(a + b)
})
const broken = Tool.make("broken", { description: "Fails", parameters: {}, handler: () => Effect.fail("nope") })

const collect = (stream: Stream.Stream<ChatEvent, unknown>) => Stream.runCollect(stream)
const deltas = (events: ReadonlyArray<ChatEvent>) =>
  events.filter((e) => e._tag === "TextDelta").map((e) => (e._tag === "TextDelta" ? e.text : "")).join("")

describe("chatStream (shared loop, on Scripted)", () => {
  it.effect("deltas concatenate to the final text, which equals what chat returns", () =>
    Effect.gen(function*() {
      const script = [Scripted.text("The quick brown fox jumps.")]
      const streamed = yield* collect(Stream.unwrap(Effect.map(Scripted.make({ script }), (c) => c.chatStream("go"))))
      const chatted = yield* Effect.flatMap(Scripted.make({ script }), (c) => c.chat("go"))
      expect(streamed.filter((e) => e._tag === "TextDelta").length).toBe(5)
      expect(deltas(streamed)).toBe(chatted)
      expect(streamed.at(-1)).toMatchObject({ _tag: "Complete", text: chatted })
    }))

  it.effect("tool calls start and end in order with their results; usage per turn; history as with chat", () =>
    Effect.gen(function*() {
      const requests: Array<TurnRequest> = []
      const turns = [
        Scripted.toolCalls({ name: "add", arguments: "{\"a\":2,\"b\":3}", id: "c1" }, {
          name: "broken",
          arguments: "",
          id: "c2"
        }),
        Scripted.text("5, and broken is broken"),
        Scripted.text("second")
      ]
      const client = yield* Scripted.make({ respond: (r) => Effect.sync(() => turns[requests.push(r) - 1]!) })
      yield* client.setTools([add, broken])
      const events = yield* collect(client.chatStream("add 2 and 3"))
      expect(events.map((e) => e._tag)).toEqual([
        "Usage",
        "ToolCallStart",
        "ToolCallStart",
        "ToolCallEnd",
        "ToolCallEnd",
        "TextDelta",
        "TextDelta",
        "TextDelta",
        "TextDelta",
        "TextDelta",
        "Usage",
        "Complete"
      ])
      expect(events.filter((e) => e._tag === "ToolCallStart")).toMatchObject([
        { id: "c1", name: "add", arguments: { a: 2, b: 3 } },
        { id: "c2", name: "broken", arguments: {} }
      ])
      expect(events.filter((e) => e._tag === "ToolCallEnd")).toMatchObject([
        { id: "c1", result: "5", isError: false },
        { id: "c2", result: "Error: nope", isError: true }
      ])
      yield* client.chat("and then?")
      expect(requests[2]!.history.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "user"])
      const usage = yield* client.usage
      const streamedUsage = events.filter((e) => e._tag === "Usage")
      expect(streamedUsage.length).toBe(2)
      expect(usage.totalTokens).toBeGreaterThan(0)
    }))

  it.effect("an error mid-way is a typed failure after the events already emitted; add text survives", () =>
    Effect.gen(function*() {
      const requests: Array<TurnRequest> = []
      const turns = [
        Scripted.toolCalls({ name: "add", arguments: { a: 1, b: 1 } }),
        Scripted.fail(Scripted.httpError(500)),
        Scripted.text("ok")
      ]
      const client = yield* Scripted.make({ respond: (r) => Effect.sync(() => turns[requests.push(r) - 1]!) })
      yield* client.setTools([add])
      yield* client.add("remember me")
      const seen: Array<string> = []
      const exit = yield* Stream.runForEach(client.chatStream("go"), (e) => Effect.sync(() => seen.push(e._tag))).pipe(
        Effect.exit
      )
      expect(seen).toEqual(["Usage", "ToolCallStart", "ToolCallEnd"])
      expect(Exit.isFailure(exit) && Cause.findErrorOption(exit.cause).pipe(Option.getOrUndefined)).toMatchObject({
        _tag: "ProviderError",
        status: 500
      })
      yield* client.chat("again")
      expect(requests[2]!.history).toEqual([{ role: "user", content: "remember me\n\nagain" }])
    }))

  it.live("interrupting the consumer interrupts the running tool and releases the conversation", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const interrupted = yield* Ref.make(false)
      const slow = Tool.make("slow", {
        description: "Hangs",
        parameters: {},
        handler: () =>
          Deferred.succeed(started, undefined).pipe(
            Effect.andThen(Effect.never),
            Effect.onInterrupt(() => Ref.set(interrupted, true))
          )
      })
      const client = yield* Scripted.make({ script: [Scripted.toolCalls({ name: "slow" }), Scripted.text("after")] })
      yield* client.setTools([slow])
      const fiber = yield* Effect.forkChild(Stream.runDrain(client.chatStream("go")))
      yield* Deferred.await(started)
      yield* Fiber.interrupt(fiber)
      expect(yield* Ref.get(interrupted)).toBe(true)
      // The lock was released: the conversation goes on.
      expect(yield* client.chat("next")).toBe("after")
    }))

  it.effect("empty prompt fails the stream with EmptyPromptError", () =>
    Effect.gen(function*() {
      const client = yield* Scripted.make({ script: [] })
      const exit = yield* Effect.exit(Stream.runDrain(client.chatStream(" ")))
      expect(Exit.isFailure(exit) && Cause.findErrorOption(exit.cause).pipe(Option.getOrUndefined)?._tag).toBe(
        "EmptyPromptError"
      )
    }))
})

describe("chatStream on Fallback", () => {
  const provider = (name: string, script: ReadonlyArray<Scripted.ScriptedTurn>) => {
    const requests: Array<TurnRequest> = []
    return {
      name,
      requests,
      layer: Scripted.layer({
        name,
        respond: (r) => Effect.sync(() => script[Math.min(requests.push(r) - 1, script.length - 1)]!)
      })
    }
  }
  const streamOn = (layer: Layer.Layer<ChatClient, unknown>, prompt: string) =>
    Effect.flatMap(ChatClient, (c) => collect(c.chatStream(prompt))).pipe(Effect.provide(layer), Effect.exit)

  it.effect("fails over when nothing was shown yet", () =>
    Effect.gen(function*() {
      const a = provider("a", [Scripted.fail(Scripted.httpError(503, "a"))])
      const b = provider("b", [Scripted.text("from b")])
      const exit = yield* streamOn(Fallback.layer([a, b]), "hi")
      expect(Exit.isSuccess(exit) && deltas(exit.value)).toBe("from b")
      expect(Exit.isSuccess(exit) && exit.value.at(-1)).toMatchObject({ _tag: "Complete", text: "from b" })
    }))

  it.effect("does not fail over once a delta was emitted", () =>
    Effect.gen(function*() {
      const a = provider("a", [
        { _tag: "Reply", text: "Let me check. ", toolCalls: [{ name: "add", arguments: { a: 1, b: 1 } }] },
        Scripted.fail(Scripted.httpError(503, "a"))
      ])
      const b = provider("b", [Scripted.text("from b")])
      const exit = yield* Effect.flatMap(ChatClient, (c) =>
        Effect.andThen(c.setTools([add]), collect(c.chatStream("hi")))).pipe(
          Effect.provide(Fallback.layer([a, b])),
          Effect.exit
        )
      expect(Exit.isFailure(exit) && Cause.findErrorOption(exit.cause).pipe(Option.getOrUndefined)).toMatchObject({
        _tag: "ProviderError",
        status: 503
      })
      expect(b.requests.length).toBe(0)
    }))
})
