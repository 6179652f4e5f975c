import { describe, expect, it } from "@effect/vitest"
import * as Wire from "../../../src/internal/http/geminiWire.ts"
import { Usage } from "../../../src/services/ChatClient.ts"
import { ToolCall } from "../../../src/services/Tool.ts"

const noId = () => {
  throw new Error("no id should be minted")
}

describe("geminiWire.toGeminiSchema", () => {
  it("a $ref outside #/$defs, or to a missing definition, becomes an unconstrained object", () => {
    expect(Wire.toGeminiSchema({ $ref: "https://example.com/other.json" })).toEqual({ type: "OBJECT" })
    expect(Wire.toGeminiSchema({ $ref: "#/$defs/Missing", $defs: { Other: { type: "string" } } })).toEqual({
      type: "OBJECT"
    })
  })

  it("a recursive $ref is inlined a bounded number of times, then cut off as an object", () => {
    const root = {
      $defs: {
        Node: {
          type: "object",
          properties: { value: { type: "string" }, next: { $ref: "#/$defs/Node" } },
          required: ["value"]
        }
      },
      $ref: "#/$defs/Node"
    }
    let node = Wire.toGeminiSchema(root)
    let depth = 0
    while (node.properties?.["next"] !== undefined) {
      expect(node.properties["value"]).toEqual({ type: "STRING" })
      node = node.properties["next"]
      depth++
    }
    // The innermost level is the cut-off: no properties at all.
    expect(node).toEqual({ type: "OBJECT" })
    expect(depth).toBe(8)
  })

  it("a percent-encoded $defs name is decoded; sibling keywords of the $ref win", () => {
    const root = {
      $defs: { "a b": { type: "string", description: "inner" } },
      properties: { x: { $ref: "#/$defs/a%20b", description: "outer" } }
    }
    expect(Wire.toGeminiSchema(root).properties?.["x"]).toEqual({ type: "STRING", description: "outer" })
  })

  it("oneOf is read like anyOf: several non-null branches stay a union, null makes it nullable", () => {
    expect(Wire.toGeminiSchema({ oneOf: [{ type: "string" }, { type: "integer" }, { type: "null" }] })).toEqual({
      nullable: true,
      anyOf: [{ type: "STRING" }, { type: "INTEGER" }]
    })
  })

  it("a union of only null is nullable with no type; non-object branches are ignored", () => {
    expect(Wire.toGeminiSchema({ anyOf: [{ type: "null" }, "junk", 3] })).toEqual({ nullable: true })
  })

  it("the union's own description and title override the merged single branch's", () => {
    expect(
      Wire.toGeminiSchema({
        title: "outer",
        anyOf: [{ type: "number", title: "inner", description: "inner d" }, { type: "null" }]
      })
    ).toEqual({ type: "NUMBER", title: "outer", description: "inner d", nullable: true })
  })

  it("a type array: null makes it nullable, the first other type is used, non-strings ignored", () => {
    expect(Wire.toGeminiSchema({ type: ["null", 7, "integer", "string"] })).toEqual({
      type: "INTEGER",
      nullable: true
    })
    // Only null left: nullable, no type.
    expect(Wire.toGeminiSchema({ type: ["null"] })).toEqual({ nullable: true })
  })

  it("const: a string is a one-value enum, a number a typed value without enum, a boolean BOOLEAN", () => {
    expect(Wire.toGeminiSchema({ const: "yes" })).toEqual({ type: "STRING", enum: ["yes"] })
    expect(Wire.toGeminiSchema({ const: 3 })).toEqual({ type: "NUMBER" })
    expect(Wire.toGeminiSchema({ const: true })).toEqual({ type: "BOOLEAN" })
  })

  it("only string enums are kept; mixed enums are dropped; unknown types are dropped", () => {
    expect(Wire.toGeminiSchema({ type: "integer", enum: [1, 2] })).toEqual({ type: "INTEGER" })
    expect(Wire.toGeminiSchema({ enum: ["a", 1] })).toEqual({})
    expect(Wire.toGeminiSchema({ type: "tuple" })).toEqual({})
  })

  it("keeps only the formats Gemini accepts for the type", () => {
    expect(Wire.toGeminiSchema({ type: "string", format: "date-time" })).toEqual({
      type: "STRING",
      format: "date-time"
    })
    expect(Wire.toGeminiSchema({ type: "string", format: "email" })).toEqual({ type: "STRING" })
    expect(Wire.toGeminiSchema({ type: "integer", format: "int64" })).toEqual({ type: "INTEGER", format: "int64" })
    expect(Wire.toGeminiSchema({ type: "number", format: "int32" })).toEqual({ type: "NUMBER" })
    expect(Wire.toGeminiSchema({ type: "boolean", format: "int32" })).toEqual({ type: "BOOLEAN" })
    // No type: no format either.
    expect(Wire.toGeminiSchema({ format: "float" })).toEqual({})
  })

  it("numeric bounds stay numbers, length bounds become strings, pattern is kept, junk is dropped", () => {
    expect(
      Wire.toGeminiSchema({
        type: "string",
        minLength: 1,
        maxLength: 5,
        pattern: "^a",
        default: "a",
        additionalProperties: false,
        $schema: "x"
      })
    ).toEqual({ type: "STRING", minLength: "1", maxLength: "5", pattern: "^a" })
    expect(Wire.toGeminiSchema({ type: "number", minimum: 0, maximum: 9.5, exclusiveMinimum: 0 })).toEqual({
      type: "NUMBER",
      minimum: 0,
      maximum: 9.5
    })
    expect(Wire.toGeminiSchema({ type: "array", items: { type: "string" }, maxItems: 3, minItems: "2" })).toEqual({
      type: "ARRAY",
      items: { type: "STRING" },
      maxItems: "3"
    })
  })

  it("properties imply OBJECT; non-object property schemas and non-string required names are dropped", () => {
    expect(Wire.toGeminiSchema({ properties: { a: { type: "string" }, b: true }, required: ["a", 3] })).toEqual({
      type: "OBJECT",
      properties: { a: { type: "STRING" } },
      propertyOrdering: ["a"],
      required: ["a"]
    })
  })
})

describe("geminiWire.contents", () => {
  it("an assistant turn with neither text nor calls is sent as a placeholder text (Gemini refuses empty parts)", () => {
    expect(Wire.contents([{ role: "assistant", text: "", toolCalls: [] }], new Map())).toEqual([
      { role: "model", parts: [{ text: "(empty answer)" }] }
    ])
  })

  it("text and calls together; remote ids are sent back, string arguments parsed, signatures attached", () => {
    const out = Wire.contents(
      [{
        role: "assistant",
        text: "let me see",
        toolCalls: [
          new ToolCall({ id: "fc_1", name: "a", arguments: "{\"x\":1}" }),
          new ToolCall({ id: "gemini_local_2", name: "b", arguments: "not json" })
        ]
      }],
      new Map([["gemini_local_2", "sig"]])
    )
    expect(out).toEqual([{
      role: "model",
      parts: [
        { text: "let me see" },
        { functionCall: { name: "a", args: { x: 1 }, id: "fc_1" } },
        { functionCall: { name: "b", args: {} }, thoughtSignature: "sig" }
      ]
    }])
  })
})

describe("geminiWire.requestBody", () => {
  it("no settings, no tools, no format: only the contents", () => {
    expect(Wire.requestBody({}, { history: [{ role: "user", content: "hi" }], tools: [] }, new Map())).toEqual({
      contents: [{ role: "user", parts: [{ text: "hi" }] }]
    })
  })
})

describe("geminiWire.usage", () => {
  it("no metadata is unknown usage", () => {
    expect(Wire.usage(undefined)).toEqual(Usage.empty)
  })

  it("missing counts are 0; thoughts count as output and reasoning; total defaults to input + output", () => {
    const u = Wire.usage({ thoughtsTokenCount: 4, candidatesTokenCount: 6 })
    expect(u).toMatchObject({
      inputTokens: 0,
      outputTokens: 10,
      totalTokens: 10,
      reasoningTokens: 4,
      cachedTokens: 0,
      known: true
    })
    expect(Wire.usage({ promptTokenCount: 5, cachedContentTokenCount: 2, totalTokenCount: 99 })).toMatchObject({
      inputTokens: 5,
      outputTokens: 0,
      totalTokens: 99,
      cachedTokens: 2,
      reasoningTokens: 0
    })
  })
})

describe("geminiWire.turnResponse", () => {
  it("no candidates and no block reason: NoCandidate with a generic reason", () => {
    expect(Wire.turnResponse({}, noId)).toEqual({ _tag: "NoCandidate", reason: "no candidates" })
    expect(Wire.turnResponse({ candidates: [], promptFeedback: { blockReason: "SAFETY" } }, noId)).toEqual({
      _tag: "NoCandidate",
      reason: "SAFETY"
    })
  })

  it("a candidate without content is an empty turn, not a failure", () => {
    const out = Wire.turnResponse({ candidates: [{ finishReason: "MAX_TOKENS" }] }, noId)
    expect(out).toMatchObject({ _tag: "Turn", turn: { text: "", toolCalls: [] }, signatures: [] })
  })

  it("mints an id only for calls without one; a call without args gets {}", () => {
    let n = 0
    const out = Wire.turnResponse({
      candidates: [{
        content: {
          parts: [
            { functionCall: { name: "a" } },
            { functionCall: { id: "fc_9", name: "b", args: { q: 1 } }, thoughtSignature: "s9" },
            { text: "hidden", thought: true },
            { text: "shown" }
          ]
        }
      }]
    }, () => `gemini_local_${++n}`)
    if (out._tag !== "Turn") throw new Error("expected a turn")
    expect(out.turn.text).toBe("shown")
    expect(out.turn.toolCalls.map((c) => [c.id, c.name, c.arguments])).toEqual([
      ["gemini_local_1", "a", {}],
      ["fc_9", "b", { q: 1 }]
    ])
    expect(out.signatures).toEqual([["fc_9", "s9"]])
    expect(n).toBe(1)
  })
})

describe("geminiWire.contentStream", () => {
  it("an error chunk without a status is not retryable and shows the bare message", () => {
    const s = Wire.contentStream()
    expect(s.push({ error: { message: "bad request", code: 400 } })).toEqual({
      _tag: "Error",
      message: "bad request",
      retryable: false
    })
    expect(s.push({ error: { message: "slow down", status: "RESOURCE_EXHAUSTED" } })).toEqual({
      _tag: "Error",
      message: "RESOURCE_EXHAUSTED: slow down",
      retryable: true
    })
    expect(s.push({ error: { message: "no", status: "INVALID_ARGUMENT" } })).toMatchObject({ retryable: false })
  })

  it("an error chunk of the wrong shape throws (a ParseError the provider maps)", () => {
    expect(() => Wire.contentStream().push({ error: "just text" })).toThrow()
  })

  it("a blocked prompt: no candidates, response() carries only the block reason and turnResponse reports it", () => {
    const s = Wire.contentStream()
    expect(s.push({ promptFeedback: { blockReason: "PROHIBITED_CONTENT" } })).toEqual({ _tag: "Nothing" })
    const response = s.response()
    expect(response).toEqual({ promptFeedback: { blockReason: "PROHIBITED_CONTENT" } })
    expect(Wire.turnResponse(response!, noId)).toEqual({ _tag: "NoCandidate", reason: "PROHIBITED_CONTENT" })
  })

  it("a candidate then a block without finish reason: the parts are kept, no finishReason invented", () => {
    const s = Wire.contentStream()
    expect(s.push({ candidates: [{ content: { parts: [{ text: "partial" }] } }] })).toEqual({
      _tag: "Text",
      text: "partial"
    })
    expect(s.response()).toBeUndefined()
    s.push({ candidates: [{}], promptFeedback: { blockReason: "SAFETY" } })
    expect(s.response()).toEqual({
      candidates: [{ content: { parts: [{ text: "partial" }] } }],
      promptFeedback: { blockReason: "SAFETY" }
    })
  })

  it("thoughts and function calls are assembled; thoughts are shown only as reasoning; the last usage wins", () => {
    const s = Wire.contentStream()
    expect(
      s.push({
        candidates: [{ content: { parts: [{ text: "thinking", thought: true }, { functionCall: { name: "f" } }] } }],
        usageMetadata: { promptTokenCount: 1 }
      })
    ).toEqual({ _tag: "Text", text: "", reasoning: "thinking" })
    s.push({ candidates: [{ finishReason: "STOP" }], usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 2 } })
    const out = Wire.turnResponse(s.response()!, () => "gemini_local_1")
    expect(out).toMatchObject({ _tag: "Turn", turn: { text: "", usage: { inputTokens: 3, outputTokens: 2 } } })
    if (out._tag === "Turn") expect(out.turn.toolCalls.map((c) => c.name)).toEqual(["f"])
  })
})
