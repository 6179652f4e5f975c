/**
 * Not an example of its own: the example application's tools, shared by the runnable examples in
 * `examples/`; plain Effects with Schema-typed parameters.
 */
import { Console, Effect, Schema } from "effect"
import { Tool } from "../../src/index.ts"

export class UnknownCity extends Schema.TaggedError<UnknownCity>()("UnknownCity", { message: Schema.String }) {}

const forecasts: Record<string, { readonly celsius: number; readonly sky: string }> = {
  paris: { celsius: 18, sky: "light rain" },
  lisbon: { celsius: 24, sky: "sunny" }
}

export const getWeather = Tool.make("get_weather", {
  description: "Current weather for a city, in degrees Celsius",
  parameters: { city: Schema.String },
  handler: ({ city }) => {
    const forecast = forecasts[city.toLowerCase()]
    return forecast === undefined
      ? Effect.fail(new UnknownCity({ message: `no weather station in ${city}` }))
      : Effect.succeed({ city, ...forecast })
  }
})

export const toFahrenheit = Tool.make("to_fahrenheit", {
  description: "Converts degrees Celsius to Fahrenheit",
  parameters: { celsius: Schema.Number },
  handler: ({ celsius }) => Effect.succeed(Math.round((celsius * 9) / 5 + 32))
})

/** Prints every call and its outcome, so the examples show each step. */
export const logged = <R>(tool: Tool.Tool<R>): Tool.Tool<R> => ({
  ...tool,
  run: (input) =>
    tool.run(input).pipe(
      Effect.tap((out) => Console.log(`  tool ${tool.name}(${JSON.stringify(input)}) → ${out}`)),
      Effect.tapError((e) => Console.log(`  tool ${tool.name}(${JSON.stringify(input)}) ✗ ${e.message}`))
    )
})

export const weatherTools = [logged(getWeather), logged(toFahrenheit)] as const
