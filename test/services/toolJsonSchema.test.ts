// The JSON Schema of every tool of the examples and tests on the Effect 4 line, compared with what
// the Effect 3 line sends (the fixture written by `next/scripts/v3-tool-schemas.ts` at f3dc6f3cecdf). Every difference
// is listed below and intended; anything else fails.
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { fromFields } from "../../src/internal/core/toolJsonSchema.ts"
import * as Tool from "../../src/services/Tool.ts"
import v3 from "./fixtures/toolSchemas.v3.json" with { type: "json" }

// Same names and fields as the catalogue of next/scripts/v3-tool-schemas.ts (at f3dc6f3cecdf).
const toolCatalogue: Record<string, Schema.Struct.Fields> = {
  // examples/claude-agent.ts
  stock_level: { sku: Schema.String },
  reorder: { sku: Schema.String, quantity: Schema.Int.check(Schema.isGreaterThan(0)) },
  // examples/serve-bridge.ts
  add_note: { text: Schema.String },
  list_notes: {},
  add: { a: Schema.Number, b: Schema.Number },
  // examples/support/weatherTools.ts
  get_weather: { city: Schema.String },
  to_fahrenheit: { celsius: Schema.Number },
  // test/services/Tool.test.ts (add as above; the tools without parameters are like list_notes)
  echo: { text: Schema.String },
  sleepy: { ms: Schema.Number },
  greet: { name: Schema.String },
  // Other tests of the Effect 3 line
  info: { id: Schema.Number },
  lookup: { key: Schema.String },
  meet: { run: Schema.String },
  hang_n: { n: Schema.Number },
  add_from_string: { a: Schema.Number, b: Schema.NumberFromString },
  // Shapes no current tool uses, to pin the post-processor's rules.
  shapes: {
    optionalText: Schema.optional(Schema.String),
    nullable: Schema.NullOr(Schema.String),
    mode: Schema.Literals(["fast", "slow"]),
    points: Schema.Array(Schema.Struct({ x: Schema.Number, label: Schema.optional(Schema.String) })),
    tags: Schema.Record(Schema.String, Schema.Number),
    described: Schema.Number.annotate({ description: "A described number" }),
    flag: Schema.Boolean
  }
}

type Json = { readonly [key: string]: unknown }
const v3Schemas = v3 as Record<string, Json>

/** The intended differences v3 → v4, tool by tool: the v3 schema in, the expected v4 schema out. */
const intended: Record<string, (v3: Json) => Json> = {
  // v3 put Int in `$defs` with Effect's own title/description ("int", "an integer", "positive",
  // "a positive number"); v4 inlines `type: "integer"` and adds no generated descriptions.
  reorder: (s) => ({
    type: "object",
    required: s["required"],
    properties: { sku: { type: "string" }, quantity: { type: "integer", exclusiveMinimum: 0 } },
    additionalProperties: false
  }),
  // v3 referenced `$defs/NumberFromString` ("a string to be decoded into a number"); v4 inlines `string`.
  add_from_string: (s) => {
    const { $defs: _defs, ...rest } = s
    return { ...rest, properties: { a: { type: "number" }, b: { type: "string" } } }
  },
  // v3 wrote a record as an object with empty `properties` and `required`; v4 only has the value schema.
  shapes: (s) => ({
    ...s,
    properties: {
      ...(s["properties"] as Json),
      tags: { type: "object", additionalProperties: { type: "number" } }
    }
  })
}

const v4Schemas = Object.fromEntries(
  Object.entries(toolCatalogue).map(([name, parameters]) => [
    name,
    Tool.make(name, { description: name, parameters, handler: () => Effect.void }).inputSchema
  ])
)

describe("tool JSON Schemas, v3 vs v4", () => {
  it("the catalogue is the one the v3 fixture was written from", () => {
    expect(Object.keys(v4Schemas).sort()).toEqual(Object.keys(v3Schemas).sort())
  })

  for (const name of Object.keys(toolCatalogue)) {
    it(`${name}: the v3 schema${intended[name] === undefined ? "" : ", with the intended differences"}`, () => {
      const expected = intended[name]?.(v3Schemas[name]!) ?? v3Schemas[name]
      expect(v4Schemas[name]).toEqual(expected)
      // What every model API takes: an object root, no `$schema`, closed objects, no non-finite numbers.
      const text = JSON.stringify(v4Schemas[name])
      expect(v4Schemas[name]!["type"]).toBe("object")
      expect(text).not.toContain("$schema")
      expect(text).not.toContain("Infinity")
      expect(text).not.toContain("\"additionalProperties\":true")
    })
  }
})

// A value that follows a JSON Schema of the shapes above, with every optional key present.
const sample = (schema: Json, defs: Json): unknown => {
  if (typeof schema["$ref"] === "string") return sample(defs[schema["$ref"].replace("#/$defs/", "")] as Json, defs)
  if (Array.isArray(schema["enum"])) return schema["enum"][0]
  if (Array.isArray(schema["anyOf"])) return sample(schema["anyOf"][0] as Json, defs)
  switch (schema["type"]) {
    case "string":
      return schema["description"] === undefined ? "text" : "7"
    case "integer":
      return 3
    case "number":
      return 1.5
    case "boolean":
      return true
    case "array":
      return [sample(schema["items"] as Json, defs)]
    case "object": {
      const properties = (schema["properties"] ?? {}) as Record<string, Json>
      const entries = Object.entries(properties).map(([k, v]) => [k, sample(v, defs)])
      if (typeof schema["additionalProperties"] === "object") {
        entries.push(["extra", sample(schema["additionalProperties"] as Json, defs)])
      }
      return Object.fromEntries(entries)
    }
  }
  throw new Error(`no sample for ${JSON.stringify(schema)}`)
}

describe("decoding with the codec the schema describes", () => {
  it.effect("arguments that follow the advertised schema of every catalogue tool decode", () =>
    Effect.gen(function*() {
      for (const [name, parameters] of Object.entries(toolCatalogue)) {
        // The catalogue's fields need no services; their generic type does not say so.
        const tool = Tool.make(name, {
          description: name,
          parameters,
          handler: () => Effect.succeed("ok")
        }) as Tool.Tool
        const args = sample(tool.inputSchema, (tool.inputSchema["$defs"] ?? {}) as Json)
        const r = yield* Tool.executeTool(
          yield* Tool.validate([tool]),
          new Tool.ToolCall({ id: "1", name, arguments: args })
        )
        expect({ name, args, r: r.content }).toEqual({ name, args, r: "ok" })
      }
    }))

  it.effect("the codec is lenient where models deviate: null for an optional key, unknown keys, JSON text", () =>
    Effect.gen(function*() {
      const seen: Array<unknown> = []
      const find = Tool.make("find", {
        description: "Finds",
        parameters: { q: Schema.String, limit: Schema.optional(Schema.Number), at: Schema.Date },
        handler: (params) => Effect.sync(() => seen.push(params)).pipe(Effect.as("ok"))
      })
      const set = yield* Tool.validate([find])
      for (
        const args of [
          { q: "x", limit: null, at: "2026-01-02T03:04:05.000Z", extra: 1 },
          "{\"q\":\"y\",\"limit\":2,\"at\":\"2026-01-02T03:04:05.000Z\"}"
        ]
      ) {
        expect((yield* Tool.executeTool(set, new Tool.ToolCall({ id: "1", name: "find", arguments: args }))).content)
          .toBe("ok")
      }
      expect(seen).toEqual([
        { q: "x", limit: undefined, at: new Date("2026-01-02T03:04:05.000Z") },
        { q: "y", limit: 2, at: new Date("2026-01-02T03:04:05.000Z") }
      ])
      expect(find.inputSchema["properties"]).toEqual({
        q: { type: "string" },
        limit: { type: "number" },
        at: { type: "string" }
      })
    }))
})

describe("toolJsonSchema post-processor", () => {
  it("identified schemas go to $defs (tidied too); a title survives; a required NullOr keeps null", () => {
    const Point = Schema.Struct({ x: Schema.Number }).annotate({ identifier: "Point" })
    expect(fromFields({
      at: Point,
      big: Schema.Int.annotate({ title: "Big" }),
      maybe: Schema.NullOr(Schema.Number),
      either: Schema.Union([Schema.String, Schema.Number])
    })).toEqual({
      $defs: {
        Point: { type: "object", properties: { x: { type: "number" } }, required: ["x"], additionalProperties: false }
      },
      type: "object",
      properties: {
        at: { $ref: "#/$defs/Point" },
        big: { type: "integer", title: "Big" },
        maybe: { anyOf: [{ type: "number" }, { type: "null" }] },
        either: { anyOf: [{ type: "string" }, { type: "number" }] }
      },
      required: ["at", "big", "maybe", "either"],
      additionalProperties: false
    })
  })

  it("an optional key that may be null only keeps its null; an empty struct is a closed empty object", () => {
    expect(fromFields({ n: Schema.optional(Schema.Null) })["properties"]).toEqual({ n: { type: "null" } })
    expect(fromFields({})).toEqual({ type: "object", properties: {}, additionalProperties: false })
  })
})
