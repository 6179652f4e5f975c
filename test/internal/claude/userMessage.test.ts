import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as CliVersion from "../../../src/internal/claude/cliVersion.ts"
import * as UserMessage from "../../../src/internal/claude/userMessage.ts"
import * as Content from "../../../src/services/Content.ts"
import { pngBytes } from "../../support/media.ts"

const version = (text: string) => Option.getOrThrow(CliVersion.parse(text))

describe("claudeUserMessage", () => {
  it("marks a message verbatim unless trusted; the library's schema text follows the user's", () => {
    expect(UserMessage.make({ prompt: "@a.txt" }, true)).toEqual({
      type: "user",
      message: { role: "user", content: "@a.txt" },
      parent_tool_use_id: null,
      client_composed: true
    })
    expect(UserMessage.make({ prompt: "hi", extraText: "Answer in JSON" }, false)).toEqual({
      type: "user",
      message: { role: "user", content: "hi\n\nAnswer in JSON" },
      parent_tool_use_id: null
    })
    const withImage = UserMessage.make({
      prompt: "look",
      parts: [Content.text("look"), Content.image(pngBytes, "image/png")],
      extraText: "schema"
    }, true)
    expect(withImage.message.content).toEqual([
      { type: "text", text: "look" },
      expect.objectContaining({ type: "image" }),
      { type: "text", text: "schema" }
    ])
    expect(UserMessage.line({ prompt: "a\nb" }, true)).toBe(
      "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"a\\nb\"},\"parent_tool_use_id\":null,\"client_composed\":true}\n"
    )
  })

  it("finds what a CLI without client_composed would interpret, in every text part", () => {
    expect(UserMessage.interpretable({ prompt: "What is 2 + 2?" })).toBeUndefined()
    expect(UserMessage.interpretable({ prompt: "  /cost" })).toContain("slash command")
    expect(UserMessage.interpretable({ prompt: "mail bob@example.com" })).toContain("mention")
    expect(UserMessage.interpretable({ prompt: "hello\n/cost" })).toBeUndefined()
    expect(
      UserMessage.interpretable({ prompt: "x", parts: [Content.image(pngBytes, "image/png"), Content.text("@f")] })
    ).toContain("mention")
    // The library's own schema text is not the user's.
    expect(UserMessage.interpretable({ prompt: "ok", extraText: "@schema" })).toBeUndefined()
  })

  it.effect("refuses interpretable text on a CLI before 2.1.248 only, unless trusted", () =>
    Effect.gen(function*() {
      const input = { prompt: "Summarize @/etc/passwd" }
      const error = yield* Effect.flip(UserMessage.requireVerbatim("claude-local", version("2.1.247"), input, false))
      expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "ConfigurationError" }, isRetryable: false })
      expect(error.message).toContain("claude 2.1.247 would interpret")
      expect(error.message).toContain("2.1.248 or newer")
      expect(error.message).toContain("trustedPrompts: true")
      yield* UserMessage.requireVerbatim("claude-local", version("2.1.248"), input, false)
      yield* UserMessage.requireVerbatim("claude-local", version("2.0.0"), input, true)
      yield* UserMessage.requireVerbatim("claude-local", version("2.0.0"), { prompt: "plain" }, false)
    }))
})
