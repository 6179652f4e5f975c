import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Redacted from "effect/Redacted"
import * as Gemini from "../../src/layers/Gemini.ts"
import * as Fake from "../support/FakeGemini.ts"
import { add, broken, HttpLive, SecretKey } from "./httpProviderSupport.ts"
import { collect, deltas, eventually, interruptAfterFirstDelta, runRecording, tags } from "./streamSupport.ts"

const client = (api: Fake.FakeGemini, options: Partial<Gemini.Options> = {}) =>
  Gemini.make({
    apiKey: Redacted.make(SecretKey),
    model: "gemini-test",
    baseUrl: api.url,
    retryBaseDelay: "5 millis",
    ...options
  })

describe("Gemini.chatStream", () => {
  it.live("deltas concatenate to the final text (thoughts as ReasoningDelta); Complete, usage and history equal chat's", () =>
    Effect.gen(function*() {
      const reply: Fake.FakeReply = {
        thought: "Let me think about this.",
        text: "Streaming héllo 🌍 world, in pieces.",
        usage: { promptTokenCount: 12, candidatesTokenCount: 7, thoughtsTokenCount: 3 }
      }
      const api = yield* Fake.make(() => reply)
      const streaming = yield* client(api)
      const events = yield* collect(streaming.chatStream("hi"))
      const chatted = yield* Effect.flatMap(client(api), (c) => Effect.zip(c.chat("hi"), c.usage))

      expect(tags(events)).toEqual(["ReasoningDelta", "TextDelta", "TextDelta", "Usage", "Complete"])
      // The thought arrives as reasoning, apart from the answer's text.
      expect(events[0]).toMatchObject({ _tag: "ReasoningDelta", text: "Let me think about this." })
      expect(deltas(events)).toBe(chatted[0])
      expect(events.at(-1)).toMatchObject({ _tag: "Complete", text: chatted[0] })
      expect(events[3]).toMatchObject({
        _tag: "Usage",
        usage: { inputTokens: 12, outputTokens: 10, reasoningTokens: 3 }
      })
      expect(yield* streaming.usage).toEqual(chatted[1])
      const [streamed, plain] = api.generateRequests()
      expect(streamed!.path).toBe("/v1beta/models/gemini-test:streamGenerateContent?alt=sse")
      expect(streamed!.headers["x-goog-api-key"]).toBe(SecretKey)
      expect(plain!.path).toBe("/v1beta/models/gemini-test:generateContent")
      yield* streaming.chat("next")
      expect(api.generateRequests()[2]!.body.contents).toEqual([
        { role: "user", parts: [{ text: "hi" }] },
        { role: "model", parts: [{ text: "Streaming héllo 🌍 world, in pieces." }] },
        { role: "user", parts: [{ text: "next" }] }
      ])
    }).pipe(Effect.provide(HttpLive)))

  it.live("a two-step tool loop streams tool calls in order with their results; signatures kept", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((_, i) =>
        i === 0
          ? {
            text: "Let me add.",
            functionCalls: [
              { id: "g1", name: "add", args: { a: 1, b: 2 }, thoughtSignature: "sig-1" },
              { name: "broken", args: {} }
            ]
          }
          : i === 1
          ? { functionCalls: [{ id: "g3", name: "add", args: { a: 3, b: 4 } }] }
          : { text: "3 then 7" }
      )
      const chat = yield* client(api)
      yield* chat.setTools([add, broken])
      const events = yield* collect(chat.chatStream("add things"))
      expect(tags(events)).toEqual([
        "TextDelta",
        "TextDelta",
        "Usage",
        "ToolCallStart",
        "ToolCallStart",
        "ToolCallEnd",
        "ToolCallEnd",
        "Usage",
        "ToolCallStart",
        "ToolCallEnd",
        "TextDelta",
        "TextDelta",
        "Usage",
        "Complete"
      ])
      const starts = events.filter((e) => e._tag === "ToolCallStart")
      expect(starts).toMatchObject([
        { id: "g1", name: "add", arguments: { a: 1, b: 2 } },
        { name: "broken", arguments: {} },
        { id: "g3", name: "add", arguments: { a: 3, b: 4 } }
      ])
      expect(events.filter((e) => e._tag === "ToolCallEnd")).toMatchObject([
        { id: "g1", result: "3", isError: false },
        { name: "broken", result: "Error: no route to host", isError: true },
        { id: "g3", result: "7", isError: false }
      ])
      expect(events.at(-1)).toMatchObject({ _tag: "Complete", text: "3 then 7" })
      const reqs = api.generateRequests()
      expect(reqs[1]!.body.contents![1]).toEqual({
        role: "model",
        parts: [
          { text: "Let me add." },
          { functionCall: { name: "add", args: { a: 1, b: 2 }, id: "g1" }, thoughtSignature: "sig-1" },
          { functionCall: { name: "broken", args: {} } }
        ]
      })
      expect(Fake.functionResponses(reqs[1]!)).toEqual([
        { name: "add", response: { output: "3" }, id: "g1" },
        { name: "broken", response: { error: "Error: no route to host" } }
      ])
      expect(Fake.functionResponses(reqs[2]!)).toEqual([{ name: "add", response: { output: "7" }, id: "g3" }])
    }).pipe(Effect.provide(HttpLive)))

  it.live("a function call without args becomes {}", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((
        _,
        i
      ) => (i === 0 ? { functionCalls: [{ id: "ge", name: "broken", args: undefined }] } : { text: "done" }))
      const chat = yield* client(api)
      yield* chat.setTools([broken])
      const events = yield* collect(chat.chatStream("go"))
      expect(events.find((e) => e._tag === "ToolCallStart")).toMatchObject({ id: "ge", arguments: {} })
      expect(api.generateRequests()[1]!.body.contents![1]).toEqual({
        role: "model",
        parts: [{ functionCall: { name: "broken", args: {}, id: "ge" } }]
      })
    }).pipe(Effect.provide(HttpLive)))

  it.live("a blocked prompt is the same typed error as chat's", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(() => ({ blockReason: "SAFETY" }))
      const { error, seen } = yield* runRecording((yield* client(api)).chatStream("go"))
      expect(seen).toEqual([])
      expect(error).toMatchObject({ _tag: "ProviderError", message: "gemini returned no answer (SAFETY)" })
    }).pipe(Effect.provide(HttpLive)))

  it.live("a connection lost mid-stream is a typed network error after the deltas already emitted", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(() => ({ text: "first half, second half", breakMidway: "destroy" }))
      const { error, seen } = yield* runRecording((yield* client(api)).chatStream("go"))
      expect(tags(seen)).toEqual(["TextDelta"])
      expect(deltas(seen)).toBe("first half, ")
      expect(error).toMatchObject({ _tag: "ProviderError", provider: "gemini", reason: { _tag: "NetworkError" } })
      expect(api.generateRequests()).toHaveLength(1)
    }).pipe(Effect.provide(HttpLive)))

  it.live("an error chunk mid-stream is a typed error after the deltas already emitted", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(() => ({ text: "Partial answer here", breakMidway: "error" }))
      const { error, seen } = yield* runRecording((yield* client(api)).chatStream("go"))
      expect(deltas(seen)).toBe("Partial an")
      expect(error).toMatchObject({
        _tag: "ProviderError",
        reason: { _tag: "InternalProviderError" },
        isRetryable: true
      })
      expect(error?.message).toContain("UNAVAILABLE: The model is overloaded.")
    }).pipe(Effect.provide(HttpLive)))

  it.live("status errors before the first byte are retried like chat's", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((_, i) => (i === 0 ? { status: 503 } : { text: "after a retry" }))
      const events = yield* collect((yield* client(api)).chatStream("go"))
      expect(deltas(events)).toBe("after a retry")
      expect(api.generateRequests()).toHaveLength(2)
    }).pipe(Effect.provide(HttpLive)))

  it.live("interrupting the consumer closes the HTTP connection (seen by the server)", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((
        _,
        i
      ) => (i === 0 ? { text: "never finishes", breakMidway: "hang" } : { text: "next turn" }))
      const chat = yield* client(api)
      const { exit, seen } = yield* interruptAfterFirstDelta(chat.chatStream("go"))
      expect(Exit.hasInterrupts(exit)).toBe(true)
      expect(deltas(seen)).toBe("never f")
      yield* eventually(() => api.abandoned.length === 1)
      expect(api.abandoned).toEqual([0])
      expect(yield* chat.chat("again")).toBe("next turn")
    }).pipe(Effect.provide(HttpLive)))
})
