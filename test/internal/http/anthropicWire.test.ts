import { describe, expect, it } from "@effect/vitest"
import * as Wire from "../../../src/internal/http/anthropicWire.ts"
import { Usage } from "../../../src/services/ChatClient.ts"
import { ToolCall, ToolResult } from "../../../src/services/Tool.ts"

const settings = { model: "claude-test", maxTokens: 100 }

describe("anthropicWire.messages", () => {
  it("an assistant turn with neither text nor calls becomes a placeholder text block (the API refuses empty text)", () => {
    expect(Wire.messages([{ role: "assistant", text: "", toolCalls: [] }])).toEqual([
      { role: "assistant", content: [{ type: "text", text: "(empty answer)" }] }
    ])
  })

  it("tool calls with JSON-text arguments are sent as objects; bad JSON as {}; results keep is_error", () => {
    expect(Wire.messages([
      {
        role: "assistant",
        text: "",
        toolCalls: [
          new ToolCall({ id: "t1", name: "a", arguments: "{\"x\":1}" }),
          new ToolCall({ id: "t2", name: "b", arguments: "[1,2]" })
        ]
      },
      {
        role: "tool",
        results: [
          new ToolResult({ callId: "t1", name: "a", content: "ok", isError: false }),
          new ToolResult({ callId: "t2", name: "b", content: "bad", isError: true })
        ]
      }
    ])).toEqual([
      {
        role: "assistant",
        content: [
          { type: "tool_use", id: "t1", name: "a", input: { x: 1 } },
          { type: "tool_use", id: "t2", name: "b", input: {} }
        ]
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "t1", content: "ok", is_error: false },
          { type: "tool_result", tool_use_id: "t2", content: "bad", is_error: true }
        ]
      }
    ])
  })
})

describe("anthropicWire.requestBody", () => {
  it("plain: no system, tools or tool_choice keys at all", () => {
    const { answerTool, body } = Wire.requestBody(settings, { history: [{ role: "user", content: "hi" }], tools: [] })
    expect(answerTool).toBeUndefined()
    expect(body).toEqual({ model: "claude-test", max_tokens: 100, messages: [{ role: "user", content: "hi" }] })
  })
})

describe("anthropicWire.usage and turnResponse", () => {
  it("no usage is unknown; cache reads and writes count as input, reads as cached", () => {
    expect(Wire.usage(undefined)).toEqual(Usage.empty)
    expect(Wire.usage({ input_tokens: 1, output_tokens: 2, cache_read_input_tokens: null })).toMatchObject({
      inputTokens: 1,
      cachedTokens: 0
    })
    expect(
      Wire.usage({ input_tokens: 1, output_tokens: 2, cache_read_input_tokens: 10, cache_creation_input_tokens: 100 })
    ).toMatchObject({ inputTokens: 111, outputTokens: 2, totalTokens: 113, cachedTokens: 10 })
  })

  it("an answer-tool call alongside user tool calls is dropped so the user tools run first", () => {
    const turn = Wire.turnResponse({
      content: [
        { type: "tool_use", id: "1", name: "answer", input: { v: 1 } },
        { type: "tool_use", id: "2", name: "add", input: { a: 1 } },
        { type: "thinking" }
      ]
    }, "answer")
    expect(turn.structured).toBeUndefined()
    expect("structured" in turn).toBe(false)
    expect(turn.toolCalls.map((c) => c.name)).toEqual(["add"])
  })

  it("only the first answer-tool call is the structured answer", () => {
    const turn = Wire.turnResponse({
      content: [
        { type: "text", text: "here" },
        { type: "tool_use", id: "1", name: "answer", input: { v: 1 } },
        { type: "tool_use", id: "2", name: "answer", input: { v: 2 } }
      ]
    }, "answer")
    expect(turn).toMatchObject({ text: "here", toolCalls: [], structured: { v: 1 } })
  })
})

describe("anthropicWire.messageStream", () => {
  it("ignores events that are not objects or have no type, and unknown event types", () => {
    const s = Wire.messageStream()
    for (const e of [null, "ping", 3, [], { no: "type" }, { type: "ping" }, { type: "content_block_stop", index: 0 }]) {
      expect(s.push(e)).toEqual({ _tag: "Nothing" })
    }
    // Nothing stopped the message: no response.
    expect(s.response()).toBeUndefined()
  })

  it("a text block that starts with text shows it; an empty delta shows nothing; deltas for unknown blocks are ignored", () => {
    const s = Wire.messageStream()
    s.push({ type: "message_start", message: {} })
    expect(s.push({ type: "content_block_start", index: 0, content_block: { type: "text", text: "Hel" } })).toEqual({
      _tag: "Text",
      text: "Hel"
    })
    expect(s.push({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "" } })).toEqual({
      _tag: "Nothing"
    })
    expect(s.push({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "lo" } })).toEqual({
      _tag: "Text",
      text: "lo"
    })
    expect(s.push({ type: "content_block_delta", index: 7, delta: { type: "text_delta", text: "ghost" } })).toEqual({
      _tag: "Nothing"
    })
    s.push({ type: "message_stop" })
    // No usage event at all: the assembled response has none, read as unknown usage.
    const response = s.response()!
    expect(response.usage).toBeUndefined()
    expect(Wire.turnResponse(response, undefined)).toMatchObject({ text: "Hello", usage: { known: false } })
  })

  it("a text_delta into a tool_use block is not shown, and input_json_delta into a text block adds nothing", () => {
    const s = Wire.messageStream()
    s.push({
      type: "content_block_start",
      index: 0,
      content_block: { type: "tool_use", id: "t", name: "f", input: {} }
    })
    expect(s.push({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "x" } })).toEqual({
      _tag: "Nothing"
    })
    s.push({ type: "content_block_start", index: 1, content_block: { type: "text", text: "" } })
    s.push({ type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: "{}" } })
    s.push({ type: "message_stop" })
    expect(s.response()!.content).toEqual([
      { type: "tool_use", id: "t", name: "f", input: {} },
      { type: "text", text: "" }
    ])
  })

  it("tool input: pieces joined and parsed; none keeps the start's input; bad JSON stays text; other blocks keep their type", () => {
    const s = Wire.messageStream()
    s.push({
      type: "content_block_start",
      index: 2,
      content_block: { type: "tool_use", id: "b", name: "bad", input: {} }
    })
    s.push({ type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: "{\"a\":" } })
    s.push({
      type: "content_block_start",
      index: 1,
      content_block: { type: "tool_use", id: "k", name: "kept", input: { preset: true } }
    })
    s.push({ type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: "  " } })
    s.push({ type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "hmm" } })
    s.push({
      type: "content_block_start",
      index: 3,
      content_block: { type: "tool_use", id: "n", name: "nullish", input: null }
    })
    s.push({
      type: "content_block_start",
      index: 4,
      content_block: { type: "tool_use", id: "j", name: "joined", input: {} }
    })
    s.push({ type: "content_block_delta", index: 4, delta: { type: "input_json_delta", partial_json: "{\"q\":" } })
    s.push({ type: "content_block_delta", index: 4, delta: { type: "input_json_delta", partial_json: "[1]}" } })
    s.push({ type: "message_stop" })
    expect(s.response()!.content).toEqual([
      { type: "thinking" },
      { type: "tool_use", id: "k", name: "kept", input: { preset: true } },
      { type: "tool_use", id: "b", name: "bad", input: "{\"a\":" },
      { type: "tool_use", id: "n", name: "nullish", input: {} },
      { type: "tool_use", id: "j", name: "joined", input: { q: [1] } }
    ])
  })

  it("usage: nulls do not overwrite, missing counts are 0, the stop reason is kept", () => {
    const s = Wire.messageStream()
    s.push({ type: "message_start", message: { usage: { input_tokens: 5, cache_read_input_tokens: 2 } } })
    s.push({
      type: "message_delta",
      delta: { stop_reason: "end_turn" },
      usage: { input_tokens: null, cache_read_input_tokens: null }
    })
    s.push({ type: "message_delta" })
    s.push({ type: "message_stop" })
    expect(s.response()).toEqual({
      content: [],
      stop_reason: "end_turn",
      usage: { input_tokens: 5, output_tokens: 0, cache_read_input_tokens: 2, cache_creation_input_tokens: undefined }
    })
  })

  it("error events: overloaded is retryable, invalid_request is not; a malformed known event throws", () => {
    const s = Wire.messageStream()
    expect(s.push({ type: "error", error: { type: "overloaded_error", message: "busy" } })).toEqual({
      _tag: "Error",
      message: "overloaded_error: busy",
      retryable: true
    })
    expect(s.push({ type: "error", error: { type: "invalid_request_error", message: "no" } })).toMatchObject({
      retryable: false
    })
    expect(() => s.push({ type: "error", error: "busy" })).toThrow()
    expect(() => s.push({ type: "content_block_delta", delta: { type: "text_delta" } })).toThrow()
  })
})
