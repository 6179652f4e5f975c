import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as ParseErrorText from "../../../src/internal/core/parseErrorText.ts"
import * as Tool from "../../../src/services/Tool.ts"

const decodeError = <S extends Schema.Top>(schema: S, input: unknown) =>
  Effect.flip(Schema.decodeUnknownEffect(Schema.toCodecJson(schema), ParseErrorText.parseOptions)(input))

describe("parseErrorText", () => {
  it.effect("every issue: the message, the actual value and the path", () =>
    Effect.gen(function*() {
      const schema = Schema.Struct({
        a: Schema.Number,
        i: Schema.Int.check(Schema.isGreaterThan(0)),
        o: Schema.optional(Schema.Number),
        n: Schema.Struct({ xs: Schema.Array(Schema.String) }),
        m: Schema.String,
        mode: Schema.Literals(["fast", "slow"])
      })
      const error = yield* decodeError(schema, { a: "two", i: -1, o: "y", n: { xs: ["a", 2] }, mode: "medium" })
      expect(ParseErrorText.format(error).split("\n")).toEqual([
        "Expected number, actual \"two\" at [\"a\"]",
        "Expected a value greater than 0, actual -1 at [\"i\"]",
        "Expected number, actual \"y\" at [\"o\"]",
        "Expected string, actual 2 at [\"n\"][\"xs\"][1]",
        "Missing key at [\"m\"]",
        "Expected \"fast\" | \"slow\", actual \"medium\" at [\"mode\"]"
      ])
    }))

  it.effect("an issue at the root has no path; a bare Issue formats like its SchemaError", () =>
    Effect.gen(function*() {
      const error = yield* decodeError(Schema.Struct({ a: Schema.Number }), "not an object")
      expect(ParseErrorText.format(error)).toBe("Expected object, actual \"not an object\"")
      expect(ParseErrorText.format(error.issue)).toBe(ParseErrorText.format(error))
      expect(ParseErrorText.format(new SchemaIssue.MissingKey(undefined))).toBe("Missing key")
    }))

  it.effect("a message annotation is kept as written", () =>
    Effect.gen(function*() {
      const schema = Schema.Struct({ code: Schema.String.check(Schema.isMinLength(3, { message: "code too short" })) })
      expect(ParseErrorText.format(yield* decodeError(schema, { code: "ab" }))).toBe("code too short at [\"code\"]")
    }))

  it.effect("the decode-failure result text of a tool has the message, the path and the actual value", () =>
    Effect.gen(function*() {
      const book = Tool.make("book", {
        description: "Books seats",
        parameters: { seats: Schema.Array(Schema.Struct({ row: Schema.Number, seat: Schema.String })) },
        handler: () => Effect.succeed("booked")
      })
      const set = yield* Tool.validate([book])
      const r = yield* Tool.executeTool(
        set,
        new Tool.ToolCall({ id: "1", name: "book", arguments: { seats: [{ row: 1, seat: "A" }, { row: "two" }] } })
      )
      expect(r.isError).toBe(true)
      expect(r.content).toBe(
        "Invalid arguments for tool book: Expected number, actual \"two\" at [\"seats\"][1][\"row\"]\n" +
          "Missing key at [\"seats\"][1][\"seat\"]"
      )
    }))

  it.effect("a result that does not match the success schema says where and why", () =>
    Effect.gen(function*() {
      const wrong = Tool.make("wrong", {
        description: "Returns a bad result",
        parameters: {},
        success: Schema.Struct({ n: Schema.Number }),
        handler: () => Effect.succeed({ n: "one" } as unknown as { n: number })
      })
      const r = yield* Tool.executeTool(
        yield* Tool.validate([wrong]),
        new Tool.ToolCall({ id: "1", name: "wrong", arguments: {} })
      )
      expect(r.isError).toBe(true)
      expect(r.content).toContain("Tool wrong returned a result that does not match its success schema")
      expect(r.content).toContain("actual \"one\" at [\"n\"]")
    }))
})
