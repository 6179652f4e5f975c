import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { ChatClient, Content, Scripted, Tool } from "../../src/index.js"

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

  it.effect("the media example: a prompt of parts reaches the model in order; a tool returns an image", () =>
    Effect.gen(function*() {
      const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47])
      const screenshot = Tool.make("screenshot", {
        description: "Takes a screenshot",
        parameters: {},
        handler: () =>
          Effect.succeed(Content.toolContent([Content.text("the screen"), Content.image(png, "image/png")]))
      })
      const seen: Array<unknown> = []
      const model = Scripted.layer({
        respond: ({ history }) =>
          Effect.sync(() => {
            seen.push(history.at(-1))
            return history.at(-1)!.role === "user"
              ? Scripted.toolCalls({ name: "screenshot" })
              : Scripted.text("a button is cut off")
          })
      })
      const answer = yield* Effect.gen(function*() {
        const chat = yield* ChatClient.ChatClient
        yield* chat.setTools([screenshot])
        return yield* chat.chat([
          Content.text("What is wrong in this screenshot, given the spec?"),
          Content.image(png, "image/png"),
          Content.document(png, { title: "spec.pdf" })
        ])
      }).pipe(Effect.provide(model))
      expect(answer).toBe("a button is cut off")
      expect(seen[0]).toMatchObject({ parts: [{ type: "text" }, { type: "image" }, { type: "document" }] })
      expect(seen[1]).toMatchObject({
        role: "tool",
        results: [{ content: "the screen", images: [Content.image(png, "image/png")] }]
      })
    }))
})
