import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { ChatClient, Scripted, Tool } from "../../src/index.js"

// The README's usage example, verbatim in substance: if this breaks, the README is wrong.
describe("README usage", () => {
  it.effect("the add example answers 5 after calling the tool", () =>
    Effect.gen(function*() {
      const add = Tool.make("add", {
        description: "Adds two numbers",
        parameters: { a: Schema.Number, b: Schema.Number },
        handler: ({ a, b }) => Effect.succeed(a + b)
      })
      const program = Effect.gen(function*() {
        const chat = yield* ChatClient.ChatClient
        yield* chat.setTools([add])
        return yield* chat.chat("What is 2 + 3?")
      })
      const model = Scripted.layer({
        script: [Scripted.toolCalls({ name: "add", arguments: { a: 2, b: 3 } }), Scripted.text("5")]
      })
      expect(yield* program.pipe(Effect.provide(model))).toBe("5")
    }))
})
