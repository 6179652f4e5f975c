/**
 * How a `ChatError` travels through `effect/ai`: as an `AiError` whose reason carries the
 * original in its metadata, so that `ChatLanguageModel.chatErrorOf` gets it back. Re-exported by
 * `ai/ChatLanguageModel.ts`.
 */
import * as AiError from "effect/ai/AiError"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { ChatError, type ProviderErrorReason } from "../../services/ChatClient.ts"

/**
 * The metadata key of this library's data in response parts and in `AiError` reasons.
 *
 * @category models
 * @since 1.0.0
 */
export const MetadataKey = "effect-chat-bridge"

const module = "ChatLanguageModel"

const ChatErrorJson = Schema.toCodecJson(ChatError)
const encodeChatError = Schema.encodeSync(ChatErrorJson)
const decodeChatError = Schema.decodeUnknownOption(ChatErrorJson)

const metadataOf = (error: ChatError): AiError.ProviderMetadata => {
  try {
    return { [MetadataKey]: encodeChatError(error) as AiError.ProviderMetadata[string] }
  } catch {
    return { [MetadataKey]: { _tag: error._tag, message: error.message } }
  }
}

/**
 * Maps a ChatError to the `AiError` `effect/ai` callers handle. The reason is chosen so that its
 * `isRetryable` agrees with the error: empty prompts, rejected tools and unsupported content are
 * `InvalidRequestError`; `StructuredOutputError` is `StructuredOutputError` (with the answer as
 * `responseText`); a `ProviderError`'s reason maps to the `AiError` reason of the same name where
 * there is one (`AuthenticationError`, `RateLimitError` with its `retryAfter`, `QuotaExhaustedError`, `InvalidRequestError`,
 * `InternalProviderError`, `InvalidResponseError`, `UnknownError`); the others become
 * `InternalProviderError` when retryable (timeouts, stalls, network, a transient process failure)
 * or `UnknownError`; a `SessionStoreError` is
 * `InternalProviderError` when retryable, else `UnknownError`; everything else (`MaxStepsError`,
 * `PermissionDeniedError`, `RunLimitError`, `FallbackError`) is `UnknownError`. The ChatError,
 * encoded with its schema, is in `reason.metadata["effect-chat-bridge"]`.
 *
 * @category utils
 * @since 1.0.0
 */
export const toAiError = (method: string) => (error: ChatError): AiError.AiError => {
  const metadata = metadataOf(error)
  const description = error.message
  const reason = ((): AiError.AiErrorReason => {
    switch (error._tag) {
      case "EmptyPromptError":
        return new AiError.InvalidRequestError({ parameter: "prompt", description, metadata })
      case "InvalidToolsError":
        return new AiError.InvalidRequestError({ parameter: "toolkit", description, metadata })
      case "UnsupportedContentError":
        return new AiError.InvalidRequestError({ parameter: "prompt", description, metadata })
      case "StructuredOutputError":
        return new AiError.StructuredOutputError({ description, responseText: error.answer, metadata })
      case "ProviderError":
        return providerReason(error.reason, description, metadata)
      case "SessionStoreError":
        return error.isRetryable
          ? new AiError.InternalProviderError({ description, metadata })
          : new AiError.UnknownError({ description, metadata })
      default:
        return new AiError.UnknownError({ description, metadata })
    }
  })()
  return AiError.make({ module, method, reason })
}

/** The `AiError` reason standing for a `ProviderError`'s reason; see {@link toAiError}. */
const providerReason = (
  reason: ProviderErrorReason,
  description: string,
  metadata: AiError.ProviderMetadata
): AiError.AiErrorReason => {
  switch (reason._tag) {
    case "AuthenticationError":
      return new AiError.AuthenticationError({ kind: "Unknown", description, metadata })
    case "RateLimitError":
      return new AiError.RateLimitError({
        metadata,
        ...(reason.retryAfter === undefined ? {} : { retryAfter: reason.retryAfter })
      })
    case "QuotaExhaustedError":
      return new AiError.QuotaExhaustedError({ metadata })
    case "InvalidRequestError":
      return new AiError.InvalidRequestError({ description, metadata })
    case "InvalidResponseError":
      return new AiError.InvalidResponseError({ description, metadata })
    case "UnknownError":
      return new AiError.UnknownError({ description, metadata })
    default:
      return reason.isRetryable
        ? new AiError.InternalProviderError({ description, metadata })
        : new AiError.UnknownError({ description, metadata })
  }
}

/**
 * The ChatError an `AiError` of this module was made from (see {@link toAiError}), if any.
 *
 * @category utils
 * @since 1.0.0
 */
export const chatErrorOf = (error: AiError.AiError): Option.Option<ChatError> => {
  const metadata: unknown = "metadata" in error.reason ? error.reason.metadata[MetadataKey] : undefined
  return metadata === undefined ? Option.none() : decodeChatError(metadata)
}

export const invalidRequest = (method: string, parameter: string, description: string): AiError.AiError =>
  AiError.make({ module, method, reason: new AiError.InvalidRequestError({ parameter, description }) })
