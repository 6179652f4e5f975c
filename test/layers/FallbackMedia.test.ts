/** Fallback with images and documents: media parts replayed on the next provider; unsupported media fails over. */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { makeLoopClient } from "../../src/internal/chat/loopClient.ts"
import * as Fallback from "../../src/layers/Fallback.ts"
import * as Scripted from "../../src/layers/Scripted.ts"
import { ChatClient, Usage } from "../../src/services/ChatClient.ts"
import * as Content from "../../src/services/Content.ts"
import type { TurnRequest } from "../../src/services/ModelTurn.ts"
import { pdfBytes, pngBytes } from "../support/media.ts"

const recorded = (name: string, script: ReadonlyArray<Scripted.ScriptedTurn>) => {
  const requests: Array<TurnRequest> = []
  let n = 0
  const layer = Scripted.layer({
    name,
    respond: (request) =>
      Effect.sync(() => {
        requests.push(request)
        return script[Math.min(n++, script.length - 1)]!
      })
  })
  return { name, layer, requests }
}

const image = Content.image(pngBytes, "image/png")
const pdf = Content.document(pdfBytes)

describe("Fallback media", () => {
  it.effect("earlier and buffered media parts are replayed on the next provider, in order", () =>
    Effect.gen(function*() {
      const a = recorded("a", [Scripted.text("A cat"), Scripted.fail(Scripted.httpError(503, "a"))])
      const b = recorded("b", [Scripted.text("Both are cats")])
      const answer = yield* Effect.gen(function*() {
        const chat = yield* ChatClient
        expect(yield* chat.chat([Content.text("What is this?"), image])).toBe("A cat")
        yield* chat.add([Content.text("See also"), pdf])
        return yield* chat.chat("Same animal?")
      }).pipe(Effect.provide(Fallback.layer([a, b])))
      expect(answer).toBe("Both are cats")
      const history = b.requests[0]!.history
      expect(history).toHaveLength(1)
      const user = history[0]!
      expect(user.role).toBe("user")
      if (user.role !== "user") return
      expect(user.parts).toEqual([
        Content.text("Earlier in this conversation (replayed after switching providers):"),
        Content.text("User: What is this?"),
        image,
        Content.text("Assistant: A cat"),
        Content.text("See also"),
        pdf,
        Content.text("Same animal?")
      ])
    }))

  it.effect("a provider that cannot take the media fails over before any request; text-only history stays text", () =>
    Effect.gen(function*() {
      let textOnlyTurns = 0
      const textOnly = yield* makeLoopClient({
        provider: "text-only",
        turn: () => Effect.sync(() => (textOnlyTurns++, { text: "plain", toolCalls: [], usage: Usage.empty }))
      })
      const b = recorded("b", [Scripted.text("an image")])
      const chat = yield* Fallback.make([
        { name: "text-only", client: textOnly },
        { name: "b", client: yield* Effect.provide(ChatClient, b.layer) }
      ])
      expect(yield* chat.chat("hello")).toBe("plain")
      expect(yield* chat.chat([Content.text("and this?"), image])).toBe("an image")
      expect(textOnlyTurns).toBe(1)
      const transcript =
        "Earlier in this conversation (replayed after switching providers):\n\nUser: hello\n\nAssistant: plain"
      expect(b.requests[0]!.history).toEqual([{
        role: "user",
        content: `${transcript}\n\nand this?`,
        parts: [Content.text(transcript), Content.text("and this?"), image]
      }])
    }).pipe(Effect.scoped))
})
