import { describe, expect, it } from "@effect/vitest"
import * as AiError from "effect/ai/AiError"
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import { chatErrorOf, invalidRequest, MetadataKey, toAiError } from "../../src/internal/effectAi/errors.ts"
import {
  ConfigurationError,
  NotSupportedError,
  ProviderError,
  QuotaExhaustedError,
  RateLimitError,
  UnknownError
} from "../../src/services/ChatClient.ts"

const map = toAiError("streamText")

describe("effectAi errors: ProviderError reasons", () => {
  it("a used-up quota is AiError's QuotaExhaustedError, not retryable", () => {
    const error = new ProviderError({
      provider: "openai",
      reason: new QuotaExhaustedError({ message: "insufficient_quota", status: 429 })
    })
    const ai = map(error)
    expect(ai.reason._tag).toBe("QuotaExhaustedError")
    expect(ai.isRetryable).toBe(false)
    expect(ai.method).toBe("streamText")
    expect(Option.getOrThrow(chatErrorOf(ai))).toEqual(error)
  })

  it("a provider's UnknownError stays UnknownError, with the message as description", () => {
    const ai = map(new ProviderError({ provider: "gemini", reason: new UnknownError({ message: "odd", status: 418 }) }))
    expect(ai.reason).toMatchObject({ _tag: "UnknownError", description: "odd" })
    expect(ai.isRetryable).toBe(false)
  })

  it("a rate limit keeps the provider's retry-after", () => {
    const ai = map(
      new ProviderError({
        provider: "anthropic",
        reason: new RateLimitError({ message: "slow down", status: 429, retryAfter: Duration.seconds(7) })
      })
    )
    expect(ai.reason._tag).toBe("RateLimitError")
    const reason = ai.reason as AiError.RateLimitError
    expect(reason.retryAfter === undefined ? undefined : Duration.toMillis(reason.retryAfter)).toBe(7_000)
    expect(ai.isRetryable).toBe(true)
  })

  it("reasons without an AiError twin are UnknownError when not retryable", () => {
    for (
      const reason of [
        new ConfigurationError({ message: "no key" }),
        new NotSupportedError({ message: "no images", feature: "images" })
      ]
    ) {
      const ai = map(new ProviderError({ provider: "p", reason }))
      expect(ai.reason._tag).toBe("UnknownError")
      expect(ai.isRetryable).toBe(false)
      expect(Option.getOrThrow(chatErrorOf(ai))).toMatchObject({ reason: { _tag: reason._tag } })
    }
  })
})

describe("effectAi errors: chatErrorOf", () => {
  it("metadata under the key that is not a ChatError gives none", () => {
    const ai = AiError.make({
      module: "ChatLanguageModel",
      method: "generateText",
      reason: new AiError.UnknownError({ metadata: { [MetadataKey]: { _tag: "NotAChatError" } } })
    })
    expect(Option.isNone(chatErrorOf(ai))).toBe(true)
  })

  it("invalidRequest carries the parameter and description, and no ChatError", () => {
    const ai = invalidRequest("generateObject", "toolkit", "bad tool")
    expect(ai.reason).toMatchObject({ _tag: "InvalidRequestError", parameter: "toolkit", description: "bad tool" })
    expect(ai.module).toBe("ChatLanguageModel")
    expect(Option.isNone(chatErrorOf(ai))).toBe(true)
  })
})
