import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { argumentsOf } from "../../../src/internal/chat/loopClient.ts"
import { decodeAnswer, responseFormatFor } from "../../../src/internal/core/structuredAnswer.ts"

describe("loopClient.argumentsOf", () => {
  it("objects pass, missing arguments are {}, JSON text is parsed, bad JSON stays text", () => {
    expect(argumentsOf({ a: 1 })).toEqual({ a: 1 })
    expect(argumentsOf(undefined)).toEqual({})
    expect(argumentsOf(null)).toEqual({})
    expect(argumentsOf("  ")).toEqual({})
    expect(argumentsOf("{\"a\":[1]}")).toEqual({ a: [1] })
    expect(argumentsOf("{not json")).toBe("{not json")
  })
})

describe("loopClient.responseFormatFor", () => {
  it.effect("a non-object schema with definitions is wrapped in { value }, the definitions kept at the root", () =>
    Effect.gen(function*() {
      class Point extends Schema.Class<Point>("Point")({ x: Schema.Number }) {}
      const { format, wrapped } = yield* responseFormatFor(Schema.Array(Point))
      expect(wrapped).toBe(true)
      expect(format.schema).toMatchObject({
        type: "object",
        required: ["value"],
        additionalProperties: false,
        // Effect 4 names a class's definition after its encoded side.
        properties: { value: { type: "array", items: { $ref: "#/$defs/PointEncoded" } } },
        $defs: { PointEncoded: { type: "object", additionalProperties: false, properties: { x: { type: "number" } } } }
      })
    }))

  it.effect("a class at the root is inlined into an object schema, not wrapped", () =>
    Effect.gen(function*() {
      class Answer extends Schema.Class<Answer>("Answer")({ n: Schema.Number }) {}
      const { format, wrapped } = yield* responseFormatFor(Answer)
      expect(wrapped).toBe(false)
      expect(format.schema).toMatchObject({ type: "object", properties: { n: { type: "number" } } })
      expect(format.schema["$ref"]).toBeUndefined()
    }))

  it.effect("a schema JSON Schema cannot express is a StructuredOutputError", () =>
    Effect.gen(function*() {
      // Effect 4 gives BigInt a JSON form (a string); a declaration without a JSON codec has none.
      const Opaque = Schema.declare((u): u is Map<string, number> => u instanceof Map, { expected: "OpaqueMap" })
      const error = yield* Effect.flip(responseFormatFor(Schema.Struct({ n: Opaque })))
      expect(error._tag).toBe("StructuredOutputError")
      expect(error.message).toContain("cannot be expressed as JSON Schema")
      expect(error.message).toContain("OpaqueMap")
      // Types Effect 4 can encode as JSON are accepted, including inside classes and unions.
      class Big extends Schema.Class<Big>("Big")({ n: Schema.BigInt, d: Schema.Date }) {}
      const ok = yield* responseFormatFor(Schema.Union([Big, Schema.Null]))
      expect(ok.wrapped).toBe(true)
    }))
})

describe("loopClient.decodeAnswer", () => {
  it.effect("a wrapped answer without `value` is an error showing a bounded preview of the answer", () =>
    Effect.gen(function*() {
      const long = JSON.stringify({ other: "x".repeat(5_000) })
      const error = yield* Effect.flip(decodeAnswer(Schema.Number, { text: long }, true))
      expect(error.message).toBe("The answer has no `value` field")
      expect(error.answer.length).toBeLessThan(long.length)
      expect(error.answer.endsWith("…")).toBe(true)
      expect((yield* Effect.flip(decodeAnswer(Schema.Number, { structured: null, text: "" }, true))).message).toBe(
        "The answer has no `value` field"
      )
    }))

  it.effect("a wrapped answer is unwrapped; text that is not JSON is an error", () =>
    Effect.gen(function*() {
      expect(yield* decodeAnswer(Schema.Number, { structured: { value: 4 }, text: "" }, true)).toBe(4)
      const error = yield* Effect.flip(decodeAnswer(Schema.Number, { text: "four" }, false))
      expect(error).toMatchObject({ message: "The answer is not JSON", answer: "four" })
    }))
})
