import { describe, expect, it } from "@effect/vitest"
import * as Wire from "../../../src/internal/http/openAiWire.ts"
import { Usage } from "../../../src/services/ChatClient.ts"
import { ToolCall } from "../../../src/services/Tool.ts"

const settings = { model: "gpt-test", maxTokensField: "max_tokens" as const }

describe("openAiWire.messages", () => {
  it("assistant calls: arguments as JSON text, missing arguments as {}, empty text as null content", () => {
    expect(Wire.messages(undefined, [{
      role: "assistant",
      text: "",
      toolCalls: [
        new ToolCall({ id: "c1", name: "a", arguments: "{\"x\":1}" }),
        new ToolCall({ id: "c2", name: "b", arguments: undefined }),
        new ToolCall({ id: "c3", name: "c", arguments: { y: [2] } })
      ]
    }])).toEqual([{
      role: "assistant",
      content: null,
      tool_calls: [
        { id: "c1", type: "function", function: { name: "a", arguments: "{\"x\":1}" } },
        { id: "c2", type: "function", function: { name: "b", arguments: "{}" } },
        { id: "c3", type: "function", function: { name: "c", arguments: "{\"y\":[2]}" } }
      ]
    }])
  })

  it("an assistant message without calls carries its text (even empty) and no tool_calls key", () => {
    expect(Wire.messages("sys", [{ role: "assistant", text: "", toolCalls: [] }])).toEqual([
      { role: "system", content: "sys" },
      { role: "assistant", content: "" }
    ])
  })
})

describe("openAiWire.strictCompatible", () => {
  it("every object must require all its properties and forbid extras, at any depth (arrays included)", () => {
    const strictLeaf = {
      type: "object",
      properties: { a: { type: "string" } },
      required: ["a"],
      additionalProperties: false
    }
    expect(Wire.strictCompatible(strictLeaf)).toBe(true)
    // `required` missing altogether.
    expect(Wire.strictCompatible({ type: "object", properties: { a: {} }, additionalProperties: false })).toBe(false)
    // Extras allowed.
    expect(Wire.strictCompatible({ ...strictLeaf, additionalProperties: true })).toBe(false)
    // A non-strict object nested in an array of anyOf branches.
    expect(Wire.strictCompatible({
      ...strictLeaf,
      properties: { a: { anyOf: [{ type: "null" }, { type: "object", properties: { b: {} }, required: [] }] } }
    })).toBe(false)
    expect(Wire.strictCompatible({ type: "object", properties: {}, additionalProperties: false })).toBe(true)
  })

  it("the response format is non-strict when the schema cannot be strict", () => {
    expect(Wire.responseFormat({ name: "answer", schema: { type: "object", properties: { a: {} } } })).toEqual({
      type: "json_schema",
      json_schema: { name: "answer", schema: { type: "object", properties: { a: {} } }, strict: false }
    })
  })
})

describe("openAiWire.requestBody", () => {
  it("maxTokens goes in the configured field; none means neither field", () => {
    const request = { history: [{ role: "user" as const, content: "hi" }], tools: [] }
    expect(Wire.requestBody({ ...settings, maxTokens: 5 }, request)).toEqual({
      model: "gpt-test",
      messages: [{ role: "user", content: "hi" }],
      max_tokens: 5
    })
    const plain = Wire.requestBody({ model: "m", maxTokensField: "max_completion_tokens" }, request)
    expect(Object.keys(plain).sort()).toEqual(["messages", "model"])
  })
})

describe("openAiWire.usage and turnResponse", () => {
  it("null or missing usage is unknown; a missing total is input + output; missing details are 0", () => {
    expect(Wire.usage(null)).toEqual(Usage.empty)
    expect(Wire.usage(undefined)).toEqual(Usage.empty)
    expect(Wire.usage({ prompt_tokens: 3, completion_tokens: 4, total_tokens: null })).toMatchObject({
      totalTokens: 7,
      cachedTokens: 0,
      reasoningTokens: 0,
      known: true
    })
    expect(Wire.usage({
      prompt_tokens: 3,
      completion_tokens: 4,
      total_tokens: 8,
      prompt_tokens_details: { cached_tokens: 2 },
      completion_tokens_details: { reasoning_tokens: 1 }
    })).toMatchObject({ totalTokens: 8, cachedTokens: 2, reasoningTokens: 1 })
  })

  it("a refusal is the text when there is no content; no content and no refusal is empty text", () => {
    expect(Wire.turnResponse({ choices: [{ message: { content: null, refusal: "I can't" } }] }).text).toBe("I can't")
    expect(Wire.turnResponse({ choices: [{ message: {} }] })).toMatchObject({ text: "", toolCalls: [] })
  })
})

describe("openAiWire.completionStream", () => {
  it("an error chunk as a plain string or an object is a non-retryable error step; a malformed one throws", () => {
    const s = Wire.completionStream()
    expect(s.push({ error: "overloaded" })).toEqual({ _tag: "Error", message: "overloaded", retryable: false })
    expect(s.push({ error: { message: "bad key", type: "invalid_request_error" } })).toEqual({
      _tag: "Error",
      message: "bad key",
      retryable: false
    })
    expect(() => s.push({ error: { code: 1 } })).toThrow()
    expect(() => s.push({ choices: "nope" })).toThrow()
  })

  it("choices other than the first, null choices and null deltas are ignored", () => {
    const s = Wire.completionStream()
    expect(s.push({ choices: null })).toEqual({ _tag: "Nothing" })
    expect(s.push({ choices: [{ index: 1, delta: { content: "other" }, finish_reason: "stop" }] })).toEqual({
      _tag: "Nothing"
    })
    // The other choice's finish does not finish ours.
    expect(s.response()).toBeUndefined()
    expect(s.push({ choices: [{ delta: null }] })).toEqual({ _tag: "Nothing" })
    expect(s.push({ choices: [{ delta: { content: "mine" } }] })).toEqual({ _tag: "Text", text: "mine" })
    expect(s.push({ choices: [{ index: 0, delta: null, finish_reason: "stop" }] })).toEqual({ _tag: "Nothing" })
    expect(Wire.turnResponse(s.response()!).text).toBe("mine")
  })

  it("a refusal is shown while there is no content, and becomes the text", () => {
    const s = Wire.completionStream()
    expect(s.push({ choices: [{ delta: { refusal: "I " } }] })).toEqual({ _tag: "Text", text: "I " })
    expect(s.push({ choices: [{ delta: { refusal: "won't", content: "" }, finish_reason: "stop" }] })).toEqual({
      _tag: "Text",
      text: "won't"
    })
    const response = s.response()!
    expect(response.choices[0].message).toEqual({ content: null, refusal: "I won't" })
    expect(Wire.turnResponse(response).text).toBe("I won't")
  })

  it("a refusal after content is not shown (content is the answer)", () => {
    const s = Wire.completionStream()
    s.push({ choices: [{ delta: { content: "Sure" } }] })
    expect(s.push({ choices: [{ delta: { refusal: "nope" } }] })).toEqual({ _tag: "Nothing" })
    s.push({ choices: [{ finish_reason: "stop" }] })
    expect(Wire.turnResponse(s.response()!).text).toBe("Sure")
  })

  it("tool calls are assembled by index in order; an empty id does not erase the first; blank arguments are {}", () => {
    const s = Wire.completionStream()
    s.push({
      choices: [{ delta: { tool_calls: [{ index: 1, id: "b", function: { name: "second", arguments: "" } }] } }]
    })
    s.push({ choices: [{ delta: { tool_calls: [{ index: 0, id: "a", function: { name: "fir" } }] } }] })
    s.push({
      choices: [{ delta: { tool_calls: [{ index: 0, id: "", function: { name: "st", arguments: "{\"x\"" } }] } }]
    })
    s.push({ choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: ":1}" } }, { index: 1 }] } }] })
    s.push({ choices: [{ finish_reason: "tool_calls" }], usage: null })
    s.push({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 2 } })
    const turn = Wire.turnResponse(s.response()!)
    expect(turn.toolCalls.map((c) => [c.id, c.name, c.arguments])).toEqual([
      ["a", "first", "{\"x\":1}"],
      ["b", "second", "{}"]
    ])
    expect(turn.usage).toMatchObject({ inputTokens: 1, outputTokens: 2, totalTokens: 3 })
  })
})
