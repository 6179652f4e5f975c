import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { decodeAnswer, responseFormatFor } from "../../../src/internal/core/structuredAnswer.ts"

interface Tree {
  readonly label: string
  readonly children: ReadonlyArray<Tree>
}
const Tree: Schema.Codec<Tree> = Schema.Struct({
  label: Schema.String,
  children: Schema.Array(Schema.suspend((): Schema.Codec<Tree> => Tree))
})

describe("structuredAnswer.responseFormatFor", () => {
  it.effect("a primitive is wrapped under `value`, with no $defs", () =>
    Effect.gen(function*() {
      const { format, wrapped } = yield* responseFormatFor(Schema.String)
      expect(wrapped).toBe(true)
      expect(format).toEqual({
        name: "answer",
        schema: {
          type: "object",
          properties: { value: { type: "string" } },
          required: ["value"],
          additionalProperties: false
        }
      })
    }))

  it.effect("a recursive schema is accepted (each node looked at once)", () =>
    Effect.gen(function*() {
      const { format, wrapped } = yield* responseFormatFor(Tree)
      expect(wrapped).toBe(false)
      expect(format.schema).toMatchObject({ type: "object", required: ["label", "children"] })
    }))

  it.effect("an opaque declaration inside a suspended schema is found and named", () =>
    Effect.gen(function*() {
      const Opaque = Schema.declare((u): u is Set<string> => u instanceof Set, { identifier: "StringSet" })
      const error = yield* Effect.flip(
        responseFormatFor(Schema.Struct({ tags: Schema.suspend(() => Opaque) }))
      )
      expect(error._tag).toBe("StructuredOutputError")
      expect(error.message).toBe(
        "The schema cannot be expressed as JSON Schema: StringSet has no JSON form (give it a `toCodecJson` annotation)"
      )
      expect(error.answer).toBe("")
    }))

  it.effect("an opaque declaration without a name is called \"a declared type\"", () =>
    Effect.gen(function*() {
      const Anonymous = Schema.declare((u): u is WeakMap<object, string> => u instanceof WeakMap)
      const error = yield* Effect.flip(responseFormatFor(Schema.Array(Anonymous)))
      expect(error.message).toContain("a declared type has no JSON form")
    }))
})

describe("structuredAnswer.decodeAnswer", () => {
  it.effect("JSON in a markdown fence is unwrapped before decoding", () =>
    Effect.gen(function*() {
      const Answer = Schema.Struct({ n: Schema.Number })
      expect(yield* decodeAnswer(Answer, { text: "```json\n{\"n\": 3}\n```" }, false)).toEqual({ n: 3 })
      expect(yield* decodeAnswer(Answer, { text: "  ```\n{\"n\": 4}\n  ```  " }, false)).toEqual({ n: 4 })
    }))

  it.effect("an answer that does not match is an error naming the path, with the answer", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        decodeAnswer(Schema.Struct({ n: Schema.Number }), { text: "{\"n\":\"three\"}" }, false)
      )
      expect(error._tag).toBe("StructuredOutputError")
      expect(error.message).toMatch(/^The answer does not match the schema: .*\bn\b/)
      expect(error.answer).toBe("{\"n\":\"three\"}")
    }))

  it.effect("a structured value is used as given, the text only for the preview", () =>
    Effect.gen(function*() {
      expect(yield* decodeAnswer(Tree, { structured: { label: "root", children: [] }, text: "ignored" }, false))
        .toEqual({ label: "root", children: [] })
      const error = yield* Effect.flip(decodeAnswer(Schema.Number, { structured: 5, text: "5" }, true))
      expect(error).toMatchObject({ message: "The answer has no `value` field", answer: "5" })
    }))
})
