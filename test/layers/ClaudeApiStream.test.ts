import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Redacted from "effect/Redacted"
import * as ClaudeApi from "../../src/layers/ClaudeApi.ts"
import * as Fake from "../support/FakeMessagesApi.ts"
import { add, broken, HttpLive, SecretKey, withCapturedLogs } from "./httpProviderSupport.ts"
import { collect, deltas, eventually, interruptAfterFirstDelta, runRecording, tags } from "./streamSupport.ts"

const client = (api: Fake.FakeMessagesApi, options: Partial<ClaudeApi.Options> = {}) =>
  ClaudeApi.make({
    apiKey: Redacted.make(SecretKey),
    model: "claude-test",
    baseUrl: api.url,
    retryBaseDelay: "5 millis",
    ...options
  })

describe("ClaudeApi.chatStream", () => {
  it.live("deltas concatenate to the final text; Complete, usage and history equal chat's", () =>
    Effect.gen(function*() {
      const reply: Fake.FakeReply = {
        text: "Streaming héllo 🌍 world, in pieces.",
        usage: { input_tokens: 21, output_tokens: 8 }
      }
      const api = yield* Fake.make(() => reply)
      const streaming = yield* client(api)
      const events = yield* collect(streaming.chatStream("hi"))
      const chatted = yield* Effect.flatMap(client(api), (c) => Effect.zip(c.chat("hi"), c.usage))

      expect(tags(events)).toEqual(["TextDelta", "TextDelta", "Usage", "Complete"])
      expect(deltas(events)).toBe(chatted[0])
      expect(events.at(-1)).toMatchObject({ _tag: "Complete", text: chatted[0] })
      expect(events[2]).toMatchObject({ _tag: "Usage", usage: { inputTokens: 21, outputTokens: 8, totalTokens: 29 } })
      expect(yield* streaming.usage).toEqual(chatted[1])
      const [streamed, plain] = api.messageRequests()
      expect(streamed!.body.stream).toBe(true)
      expect(streamed!.headers.accept).toBe("text/event-stream")
      expect(plain!.body.stream).toBeUndefined()
      // The streamed answer joined the history exactly as chat's does.
      yield* streaming.chat("next")
      expect(api.messageRequests()[2]!.body.messages).toEqual([
        { role: "user", content: "hi" },
        { role: "assistant", content: [{ type: "text", text: "Streaming héllo 🌍 world, in pieces." }] },
        { role: "user", content: "next" }
      ])
    }).pipe(Effect.provide(HttpLive)))

  it.live("a two-step tool loop streams tool calls in order with their results", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((_, i) =>
        i === 0
          ? {
            text: "Let me add.",
            toolUses: [{ id: "tu_1", name: "add", input: { a: 1, b: 2 } }, { id: "tu_2", name: "broken", input: {} }]
          }
          : i === 1
          ? { toolUses: [{ id: "tu_3", name: "add", input: { a: 3, b: 4 } }] }
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
        { id: "tu_1", name: "add", arguments: { a: 1, b: 2 } },
        { id: "tu_2", name: "broken", arguments: {} },
        { id: "tu_3", name: "add", arguments: { a: 3, b: 4 } }
      ])
      expect(events.filter((e) => e._tag === "ToolCallEnd")).toMatchObject([
        { id: "tu_1", result: "3", isError: false },
        { id: "tu_2", result: "Error: no route to host", isError: true },
        { id: "tu_3", result: "7", isError: false }
      ])
      expect(events.at(-1)).toMatchObject({ _tag: "Complete", text: "3 then 7" })
      const reqs = api.messageRequests()
      expect(reqs.map((r) => r.body.stream)).toEqual([true, true, true])
      // The assembled input went back to the API as an object, with the results.
      expect(reqs[1]!.body.messages![1]).toEqual({
        role: "assistant",
        content: [
          { type: "text", text: "Let me add." },
          { type: "tool_use", id: "tu_1", name: "add", input: { a: 1, b: 2 } },
          { type: "tool_use", id: "tu_2", name: "broken", input: {} }
        ]
      })
      expect(Fake.toolResults(reqs[1]!)).toEqual([
        { tool_use_id: "tu_1", content: "3", is_error: false },
        { tool_use_id: "tu_2", content: "Error: no route to host", is_error: true }
      ])
      expect(Fake.toolResults(reqs[2]!)).toEqual([{ tool_use_id: "tu_3", content: "7", is_error: false }])
    }).pipe(Effect.provide(HttpLive)))

  it.live("empty streamed tool input becomes {}", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((
        _,
        i
      ) => (i === 0 ? { toolUses: [{ id: "tu_e", name: "broken", input: undefined }] } : { text: "done" }))
      const chat = yield* client(api)
      yield* chat.setTools([broken])
      const events = yield* collect(chat.chatStream("go"))
      expect(events.find((e) => e._tag === "ToolCallStart")).toMatchObject({ id: "tu_e", arguments: {} })
      expect(api.messageRequests()[1]!.body.messages![1]).toEqual({
        role: "assistant",
        content: [{ type: "tool_use", id: "tu_e", name: "broken", input: {} }]
      })
    }).pipe(Effect.provide(HttpLive)))

  it.live("a connection lost mid-stream is a typed network error after the deltas already emitted", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(() => ({ text: "first half, second half", breakMidway: "destroy" }))
      const chat = yield* client(api)
      yield* chat.add("kept")
      const { error, seen } = yield* runRecording(chat.chatStream("go"))
      expect(tags(seen)).toEqual(["TextDelta"])
      expect(deltas(seen)).toBe("first half, ")
      expect(error).toMatchObject({ _tag: "ProviderError", provider: "anthropic", reason: { _tag: "NetworkError" } })
      // Not retried after the first byte; the failed turn left the history and the add buffer alone.
      expect(api.messageRequests()).toHaveLength(1)
    }).pipe(Effect.provide(HttpLive)))

  it.live("an error event mid-stream is a typed error after the deltas already emitted", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(() => ({ text: "Partial answer here", breakMidway: "error" }))
      const chat = yield* client(api)
      const { error, seen } = yield* runRecording(chat.chatStream("go"))
      expect(deltas(seen)).toBe("Partial an")
      expect(error).toMatchObject({
        _tag: "ProviderError",
        reason: { _tag: "InternalProviderError" },
        isRetryable: true
      })
      expect(error?.message).toContain("overloaded_error: Overloaded")
      expect(api.messageRequests()).toHaveLength(1)
    }).pipe(Effect.provide(HttpLive)))

  it.live("a stream that ends before message_stop, or sends a malformed event, is a typed error", () =>
    Effect.gen(function*() {
      const start =
        `event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":1,"output_tokens":1}}}\n\n` +
        `event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n` +
        `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}\n\n`
      const truncated = yield* Fake.make(() => ({ rawStream: start }))
      const cut = yield* runRecording((yield* client(truncated)).chatStream("go"))
      expect(deltas(cut.seen)).toBe("Hel")
      expect(cut.error).toMatchObject({
        _tag: "ProviderError",
        reason: { _tag: "NetworkError" },
        message: "anthropic stream ended before the message was complete"
      })

      const malformed = yield* Fake.make(() => ({
        rawStream: `${start}event: content_block_delta\ndata: {not json\n\n`
      }))
      const bad = yield* runRecording((yield* client(malformed)).chatStream("go"))
      expect(deltas(bad.seen)).toBe("Hel")
      expect(bad.error).toMatchObject({
        _tag: "ProviderError",
        reason: { _tag: "InvalidResponseError" },
        isRetryable: false
      })
      expect(bad.error?.message).toContain("not JSON")

      const misshapen = yield* Fake.make(() => ({
        rawStream: `${start}event: content_block_delta\ndata: {"type":"content_block_delta","index":"zero"}\n\n`
      }))
      const odd = yield* runRecording((yield* client(misshapen)).chatStream("go"))
      expect(odd.error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "InvalidResponseError" } })
      expect(odd.error?.message).toContain("unexpected shape")
    }).pipe(Effect.provide(HttpLive)))

  it.live("status errors before the first byte are retried like chat's", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((_, i) =>
        i === 0
          ? { status: 529, headers: { "retry-after": "0" } }
          : i === 1
          ? { status: 503 }
          : { text: "after retries" }
      )
      const chat = yield* client(api)
      const events = yield* collect(chat.chatStream("go"))
      expect(deltas(events)).toBe("after retries")
      expect(api.messageRequests()).toHaveLength(3)

      const failing = yield* Fake.make(() => ({
        status: 400,
        body: { type: "error", error: { type: "invalid_request_error", message: "bad" } }
      }))
      const { error, seen } = yield* runRecording((yield* client(failing)).chatStream("go"))
      expect(seen).toEqual([])
      expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "InvalidRequestError" }, status: 400 })
      expect(failing.messageRequests()).toHaveLength(1)
    }).pipe(Effect.provide(HttpLive)))

  it.live("streamed turns log the host only, never the key", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((
        _,
        i
      ) => (i === 0 ? { status: 503, body: { error: { message: `echo ${SecretKey}` } } } : { text: "fine" }))
      const chat = yield* client(api)
      const { exit, lines } = yield* withCapturedLogs(collect(chat.chatStream("go")))
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(lines.some((l) => l.includes("model stream closed") && l.includes(`host=127.0.0.1:${api.port}`))).toBe(
        true
      )
      expect(lines.some((l) => l.includes("retrying model request"))).toBe(true)
      expect(lines.join("\n")).not.toContain(SecretKey)
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
      // The conversation is usable again, and the interrupted turn left no trace in it.
      expect(yield* chat.chat("again")).toBe("next turn")
      expect(api.messageRequests()[1]!.body.messages).toEqual([{ role: "user", content: "again" }])
    }).pipe(Effect.provide(HttpLive)))
})
