/** An effect/ai toolkit for the interop tests, with handlers that count their calls. */
import * as AiTool from "effect/ai/Tool"
import * as Toolkit from "effect/ai/Toolkit"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/** `b` arrives as a string and is decoded by the toolkit's own schema. */
export const Add = AiTool.make("add", {
  description: "Adds two numbers",
  parameters: Schema.Struct({ a: Schema.Number, b: Schema.NumberFromString }),
  success: Schema.Number
})

/**
 * The success schema encodes: a Date goes out as its ISO string (`DateFromString` is Effect 3's
 * `Schema.Date`; Effect 4's `Schema.Date` is the Date itself on both sides).
 */
export const Today = AiTool.make("today", {
  description: "Returns a fixed date",
  success: Schema.Struct({ date: Schema.DateFromString })
})

/** `failureMode: "return"`: the failure is a result, encoded with the failure schema. */
export const Lookup = AiTool.make("lookup", {
  description: "Looks a city up",
  parameters: Schema.Struct({ city: Schema.String }),
  success: Schema.Struct({ population: Schema.Number }),
  failure: Schema.Struct({ reason: Schema.String }),
  failureMode: "return"
})

/** The default `failureMode: "error"`. */
export const Broken = AiTool.make("broken", {
  description: "Always fails",
  failure: Schema.String
})

export const TestToolkit = Toolkit.make(Add, Today, Lookup, Broken)

/** Handler calls by tool name. */
export const makeHandlers = () => {
  const calls = { add: 0, today: 0, lookup: 0, broken: 0 }
  const layer = TestToolkit.toLayer({
    add: ({ a, b }) => Effect.sync(() => (calls.add += 1, a + b)),
    today: () => Effect.sync(() => (calls.today += 1, { date: new Date("2026-01-02T03:04:05.000Z") })),
    lookup: ({ city }) =>
      Effect.suspend(() => {
        calls.lookup += 1
        return city === "Lisbon"
          ? Effect.succeed({ population: 545_000 })
          : Effect.fail({ reason: `unknown city ${city}` })
      }),
    broken: () => Effect.suspend(() => (calls.broken += 1, Effect.fail("the database is on fire")))
  })
  return { calls, layer }
}
