import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Redacted from "effect/Redacted"
import * as OpenAi from "../../src/layers/OpenAi.ts"
import * as Fake from "../support/FakeOpenAi.ts"
import { add, broken, HttpLive, SecretKey } from "./httpProviderSupport.ts"
import { collect, deltas, eventually, interruptAfterFirstDelta, runRecording, tags } from "./streamSupport.ts"

const client = (api: Fake.FakeOpenAi, options: Partial<OpenAi.Options> = {}) =>
  OpenAi.make({
    apiKey: Redacted.make(SecretKey),
    model: "gpt-test",
    baseUrl: api.url,
    retryBaseDelay: "5 millis",
    ...options
  })

describe("OpenAi.chatStream", () => {
  it.live("deltas concatenate to the final text; Complete, usage and history equal chat's", () =>
    Effect.gen(function*() {
      const reply: Fake.FakeReply = {
        text: "Streaming héllo 🌍 world, in pieces.",
        usage: { prompt_tokens: 30, completion_tokens: 9, prompt_tokens_details: { cached_tokens: 4 } }
      }
      const api = yield* Fake.make(() => reply)
      const streaming = yield* client(api)
      const events = yield* collect(streaming.chatStream("hi"))
      const chatted = yield* Effect.flatMap(client(api), (c) => Effect.zip(c.chat("hi"), c.usage))

      expect(tags(events)).toEqual(["TextDelta", "TextDelta", "Usage", "Complete"])
      expect(deltas(events)).toBe(chatted[0])
      expect(events.at(-1)).toMatchObject({ _tag: "Complete", text: chatted[0] })
      expect(events[2]).toMatchObject({ _tag: "Usage", usage: { inputTokens: 30, outputTokens: 9, cachedTokens: 4 } })
      expect(yield* streaming.usage).toEqual(chatted[1])
      const [streamed, plain] = api.completionRequests()
      expect(streamed!.body.stream).toBe(true)
      expect(streamed!.body.stream_options).toEqual({ include_usage: true })
      expect(plain!.body.stream).toBeUndefined()
      yield* streaming.chat("next")
      expect(api.completionRequests()[2]!.body.messages).toEqual([
        { role: "user", content: "hi" },
        { role: "assistant", content: "Streaming héllo 🌍 world, in pieces." },
        { role: "user", content: "next" }
      ])
    }).pipe(Effect.provide(HttpLive)))

  it.live("a two-step tool loop streams tool calls (assembled by index) in order with their results", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((_, i) =>
        i === 0
          ? {
            text: "Let me add.",
            toolCalls: [{ id: "c1", name: "add", arguments: { a: 1, b: 2 } }, {
              id: "c2",
              name: "broken",
              arguments: {}
            }]
          }
          : i === 1
          ? { toolCalls: [{ id: "c3", name: "add", arguments: { a: 3, b: 4 } }] }
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
      expect(events.filter((e) => e._tag === "ToolCallStart")).toMatchObject([
        { id: "c1", name: "add", arguments: { a: 1, b: 2 } },
        { id: "c2", name: "broken", arguments: {} },
        { id: "c3", name: "add", arguments: { a: 3, b: 4 } }
      ])
      expect(events.filter((e) => e._tag === "ToolCallEnd")).toMatchObject([
        { id: "c1", result: "3", isError: false },
        { id: "c2", result: "Error: no route to host", isError: true },
        { id: "c3", result: "7", isError: false }
      ])
      expect(events.at(-1)).toMatchObject({ _tag: "Complete", text: "3 then 7" })
      const reqs = api.completionRequests()
      expect(reqs[1]!.body.messages![1]).toEqual({
        role: "assistant",
        content: "Let me add.",
        tool_calls: [
          { id: "c1", type: "function", function: { name: "add", arguments: "{\"a\":1,\"b\":2}" } },
          { id: "c2", type: "function", function: { name: "broken", arguments: "{}" } }
        ]
      })
      expect(Fake.toolMessages(reqs[1]!)).toEqual([
        { tool_call_id: "c1", content: "3" },
        { tool_call_id: "c2", content: JSON.stringify({ error: "Error: no route to host" }) }
      ])
      expect(Fake.toolMessages(reqs[2]!)).toEqual([{ tool_call_id: "c3", content: "7" }])
    }).pipe(Effect.provide(HttpLive)))

  it.live("empty streamed arguments become {}", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((
        _,
        i
      ) => (i === 0 ? { toolCalls: [{ id: "ce", name: "broken", arguments: "" }] } : { text: "done" }))
      const chat = yield* client(api)
      yield* chat.setTools([broken])
      const events = yield* collect(chat.chatStream("go"))
      expect(events.find((e) => e._tag === "ToolCallStart")).toMatchObject({ id: "ce", arguments: {} })
      expect(api.completionRequests()[1]!.body.messages![1]).toMatchObject({
        tool_calls: [{ id: "ce", function: { name: "broken", arguments: "{}" } }]
      })
    }).pipe(Effect.provide(HttpLive)))

  it.live("a connection lost mid-stream is a typed network error after the deltas already emitted", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(() => ({ text: "first half, second half", breakMidway: "destroy" }))
      const { error, seen } = yield* runRecording((yield* client(api)).chatStream("go"))
      expect(tags(seen)).toEqual(["TextDelta"])
      expect(deltas(seen)).toBe("first half, ")
      expect(error).toMatchObject({ _tag: "ProviderError", provider: "openai", reason: { _tag: "NetworkError" } })
      expect(api.completionRequests()).toHaveLength(1)
    }).pipe(Effect.provide(HttpLive)))

  it.live("an error chunk mid-stream is a typed error after the deltas already emitted", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(() => ({ text: "Partial answer here", breakMidway: "error" }))
      const { error, seen } = yield* runRecording((yield* client(api)).chatStream("go"))
      expect(deltas(seen)).toBe("Partial an")
      expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "UnknownError" } })
      expect(error?.message).toContain("The server had an error")
    }).pipe(Effect.provide(HttpLive)))

  it.live("status errors before the first byte are retried like chat's", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((
        _,
        i
      ) => (i === 0 ? { status: 429, headers: { "retry-after-ms": "1" } } : { text: "after a retry" }))
      const events = yield* collect((yield* client(api)).chatStream("go"))
      expect(deltas(events)).toBe("after a retry")
      expect(api.completionRequests()).toHaveLength(2)
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
