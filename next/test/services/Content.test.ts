import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Buffer } from "node:buffer"
import * as Content from "../../src/services/Content.js"
import * as Tool from "../../src/services/Tool.js"

/** A valid 1×1 red PNG. */
const pngBase64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
const pngBytes = new Uint8Array(Buffer.from(pngBase64, "base64"))

describe("Content", () => {
  it("builds parts from bytes or base64, and the Schema decodes them (and refuses unknown parts)", () => {
    const parts = [
      Content.text("hi"),
      Content.image(pngBytes, "image/png"),
      Content.image(pngBase64, "image/png"),
      Content.imageUrl("https://example.com/a.png"),
      Content.document(pngBytes, { title: "t.pdf" }),
      Content.documentUrl("https://example.com/a.pdf", { title: "a.pdf" })
    ]
    expect(parts[1]).toEqual(parts[2])
    expect(parts[4]).toEqual({
      type: "document",
      source: { type: "base64", mediaType: "application/pdf", data: pngBase64 },
      title: "t.pdf"
    })
    expect(Content.document(pngBase64)).toEqual({
      type: "document",
      source: { type: "base64", mediaType: "application/pdf", data: pngBase64 }
    })
    expect(Content.documentUrl("https://example.com/b.pdf")).toEqual({
      type: "document",
      source: { type: "url", url: "https://example.com/b.pdf" }
    })
    expect(Schema.decodeUnknownSync(Content.Prompt)(parts)).toEqual(parts)
    expect(Schema.decodeUnknownSync(Content.Prompt)("plain")).toBe("plain")
    expect(() => Schema.decodeUnknownSync(Content.Prompt)([{ type: "audio", data: "" }])).toThrow()
    expect(Content.textOf(parts)).toBe("hi")
    expect(Content.textOf("x")).toBe("x")
    expect(Content.hasMedia("x")).toBe(false)
    expect(Content.hasMedia(parts)).toBe(true)
    expect(Content.partsOf("x")).toEqual([Content.text("x")])
    expect(Content.partsOf(parts)).toBe(parts)
  })

  it("UnsupportedContentError carries the provider, the reason and the message", () => {
    const error = new Content.UnsupportedContentError({ provider: "openai", reason: "Document", message: "no PDFs" })
    expect(error).toMatchObject({ _tag: "UnsupportedContentError", provider: "openai", reason: "Document" })
    expect(error.message).toBe("no PDFs")
  })

  it.effect("a tool returns ToolContent (make and dynamic): the text is the result, images ride along", () =>
    Effect.gen(function*() {
      const shot = Content.toolContent([Content.text("a"), Content.image(pngBytes, "image/png"), Content.text("b")])
      const made = Tool.make("shot", {
        description: "d",
        parameters: {},
        success: Schema.Number,
        handler: () => Effect.succeed(shot as unknown as number)
      })
      const dyn = Tool.dynamic("dyn", {
        description: "d",
        inputSchema: { type: "object" },
        handler: () => Effect.succeed(shot)
      })
      const set = yield* Tool.validate([made, dyn])
      for (const name of ["shot", "dyn"]) {
        const r = yield* Tool.executeTool(set, new Tool.ToolCall({ id: "1", name, arguments: {} }))
        expect(r).toMatchObject({ content: "a\n\nb", isError: false, images: [Content.image(pngBytes, "image/png")] })
      }
    }))
})
