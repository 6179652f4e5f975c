// Writes the JSON Schema the Effect 3 line (the repository root's `src/services/Tool.ts`) derives
// for every tool of the examples and tests, as the fixture `test/services/fixtures/toolSchemas.v3.json`
// that `test/services/toolJsonSchema.test.ts` compares the Effect 4 output with.
//
// Run from the repository root with the root's Node and tsx (Effect 3 lives in the root's
// node_modules; this file imports it by path so that `next/node_modules`' Effect 4 is not picked up):
//
//   npx tsx next/scripts/v3-tool-schemas.ts
//
// The tool catalogue here and `toolCatalogue` in `test/services/toolJsonSchema.test.ts` must list the
// same names with the same fields.
import { writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import * as Effect from "../../node_modules/effect/dist/esm/Effect.js"
import * as Schema from "../../node_modules/effect/dist/esm/Schema.js"
import * as Tool from "../../src/services/Tool.js"

const catalogue: Record<string, Schema.Struct.Fields> = {
  // examples/claude-agent.ts
  stock_level: { sku: Schema.String },
  reorder: { sku: Schema.String, quantity: Schema.Int.pipe(Schema.positive()) },
  // examples/serve-bridge.ts
  add_note: { text: Schema.String },
  list_notes: {},
  add: { a: Schema.Number, b: Schema.Number },
  // examples/support/weatherTools.ts
  get_weather: { city: Schema.String },
  to_fahrenheit: { celsius: Schema.Number },
  // test/services/Tool.test.ts (add as above; failing, dying, throwing, bigint, dated, interrupting,
  // slow and hang take no parameters, like list_notes)
  echo: { text: Schema.String },
  sleepy: { ms: Schema.Number },
  greet: { name: Schema.String },
  // Other tests: test/layers/NodeMcpBridge.test.ts, test/layers/Scripted.test.ts,
  // test/internal/telemetry.test.ts, test/internal/claudeAgentSdk.test.ts, test/ai/aiSupport.ts
  info: { id: Schema.Number },
  lookup: { key: Schema.String },
  meet: { run: Schema.String },
  hang_n: { n: Schema.Number },
  add_from_string: { a: Schema.Number, b: Schema.NumberFromString },
  // Shapes no current tool uses, to pin the post-processor's rules.
  shapes: {
    optionalText: Schema.optional(Schema.String),
    nullable: Schema.NullOr(Schema.String),
    mode: Schema.Literal("fast", "slow"),
    points: Schema.Array(Schema.Struct({ x: Schema.Number, label: Schema.optional(Schema.String) })),
    tags: Schema.Record({ key: Schema.String, value: Schema.Number }),
    described: Schema.Number.annotations({ description: "A described number" }),
    flag: Schema.Boolean
  }
}

const schemas = Object.fromEntries(
  Object.entries(catalogue).map(([name, parameters]) => [
    name,
    Tool.make(name, { description: name, parameters, handler: () => Effect.void }).inputSchema
  ])
)
const out = fileURLToPath(new URL("../test/services/fixtures/toolSchemas.v3.json", import.meta.url))
writeFileSync(out, JSON.stringify(schemas, null, 2) + "\n")
console.log(`wrote ${Object.keys(schemas).length} schemas to ${out}`)
