import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as AnthropicWire from "../../../src/internal/http/anthropicWire.ts"
import * as GeminiWire from "../../../src/internal/http/geminiWire.ts"
import * as OpenAiWire from "../../../src/internal/http/openAiWire.ts"
import { turnStream } from "../../../src/internal/http/turnStream.ts"

describe("reasoning in streamed HTTP turns", () => {
  it("Anthropic thinking_delta is reasoning, never text; the answer stays the text blocks", () => {
    const s = AnthropicWire.messageStream()
    s.push({ type: "message_start", message: {} })
    s.push({ type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "" } })
    expect(s.push({ type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "Hmm, 2+2" } }))
      .toEqual({ _tag: "Text", text: "", reasoning: "Hmm, 2+2" })
    expect(s.push({ type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "sig" } }))
      .toEqual({ _tag: "Nothing" })
    s.push({ type: "content_block_start", index: 1, content_block: { type: "text", text: "" } })
    expect(s.push({ type: "content_block_delta", index: 1, delta: { type: "text_delta", text: "4" } }))
      .toEqual({ _tag: "Text", text: "4" })
    s.push({ type: "message_stop" })
    expect(AnthropicWire.turnResponse(s.response()!, undefined).text).toBe("4")
  })

  it("OpenAI-compatible reasoning_content / reasoning fields are reasoning; content is text", () => {
    const s = OpenAiWire.completionStream()
    expect(s.push({ choices: [{ index: 0, delta: { reasoning_content: "thinking…" } }] }))
      .toEqual({ _tag: "Text", text: "", reasoning: "thinking…" })
    expect(s.push({ choices: [{ index: 0, delta: { reasoning: "more" } }] }))
      .toEqual({ _tag: "Text", text: "", reasoning: "more" })
    expect(s.push({ choices: [{ index: 0, delta: { content: "Answer" } }] })).toEqual({ _tag: "Text", text: "Answer" })
  })

  it("Gemini thought parts are reasoning; other text parts are text", () => {
    const s = GeminiWire.contentStream()
    expect(s.push({ candidates: [{ content: { parts: [{ text: "pondering", thought: true }, { text: "Hi" }] } }] }))
      .toEqual({ _tag: "Text", text: "Hi", reasoning: "pondering" })
    expect(s.push({ candidates: [{ content: { parts: [{ text: "only thought", thought: true }] } }] }))
      .toEqual({ _tag: "Text", text: "", reasoning: "only thought" })
  })

  it.effect("turnStream emits ReasoningDelta before TextDelta, and no empty TextDelta", () =>
    Effect.gen(function*() {
      const reader = OpenAiWire.completionStream()
      const events = Stream.fromIterable([
        { choices: [{ index: 0, delta: { reasoning_content: "why" } }] },
        { choices: [{ index: 0, delta: { content: "so", reasoning_content: "because" } }] },
        { choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }
      ].map((json) => ({ _tag: "Event" as const, event: "message", data: JSON.stringify(json), id: undefined })))
      const out = yield* Stream.runCollect(
        turnStream("openai", events, {
          push: reader.push,
          finish: () => Effect.succeed({ text: "so", toolCalls: [], usage: undefined } as never)
        })
      )
      expect(out.map((e) => e._tag === "Done" ? "Done" : `${e._tag}:${e.text}`)).toEqual([
        "ReasoningDelta:why",
        "ReasoningDelta:because",
        "TextDelta:so",
        "Done"
      ])
    }))
})
