/**
 * Shared bits of the HTTP provider tests: a real HTTP client, tools, and a log capture at Debug
 * level (to prove the API key never reaches a log line).
 */
import { NodeHttpClient } from "@effect/platform-node"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as References from "effect/References"
import * as Schema from "effect/Schema"
import * as Tool from "../../src/services/Tool.ts"

export const HttpLive = NodeHttpClient.layerUndici

export const SecretKey = "sk-test-SECRET-4f1d2c9a8b7e6d5c"

export const add = Tool.make("add", {
  description: "Adds two numbers",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

export const broken = Tool.make("broken", {
  description: "Always fails",
  parameters: {},
  handler: () => Effect.fail("no route to host")
})

/**
 * An `echo` tool that waits a little and records how many of its calls ran at the same time, to
 * show that the calls of one turn are dispatched together.
 */
export const concurrencyProbe = () => {
  let running = 0
  let peak = 0
  const tool = Tool.make("echo", {
    description: "Echoes after a short wait",
    parameters: { text: Schema.String },
    handler: ({ text }) =>
      Effect.acquireUseRelease(
        Effect.sync(() => {
          running++
          peak = Math.max(peak, running)
        }),
        () => Effect.as(Effect.sleep("50 millis"), text),
        () => Effect.sync(() => running--)
      )
  })
  return { tool, peak: () => peak }
}

// A Struct, not a Class: a Class's JSON Schema is a root `$ref`, which the loop wraps in `{ value }`.
export const Weather = Schema.Struct({ city: Schema.String, celsius: Schema.Number })

/**
 * Runs `effect` with every log line (message, annotations, cause) captured as logfmt text, at
 * Debug level; returns the result (as an Exit) and the lines.
 */
export const withCapturedLogs = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const lines: Array<string> = []
    const capture = Logger.map(Logger.formatLogFmt, (line) => {
      lines.push(line)
    })
    const exit = yield* effect.pipe(
      Effect.exit,
      Effect.provide(Logger.layer([capture])),
      Effect.provideService(References.MinimumLogLevel, "Debug")
    )
    return { exit, lines }
  })
