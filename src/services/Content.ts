/**
 * Prompt content beyond text: images and documents (PDF), in prompts and in tool results.
 *
 * `chat`, `add`, `ask` and `chatStream` take a {@link Prompt}: a plain string (the usual case) or a
 * list of {@link Part}s. Build parts with {@link text}, {@link image}, {@link imageUrl},
 * {@link document} and {@link documentUrl}; a tool returns images with {@link toolContent}. Every
 * provider checks the parts before any request and fails with {@link UnsupportedContentError} when
 * it cannot send them (a media type it does not take, an image over its size limit, a URL it cannot
 * fetch, a document on a provider without document input).
 *
 * @summary Images and PDF documents in prompts and tool results, checked per provider before any request.
 * @group Chat
 * @since 0.1.0
 * @module
 */
import { Base64 } from "effect/encoding"
import * as Schema from "effect/Schema"

/**
 * Media given inline, base64-encoded (standard alphabet, with padding).
 *
 * @category schemas
 * @since 1.0.0
 */
export const Base64Source = Schema.Struct({
  /** The discriminant. */
  type: Schema.Literal("base64"),
  /** The IANA media type, such as `image/png` or `application/pdf`. */
  mediaType: Schema.String,
  /** The bytes, base64-encoded. */
  data: Schema.String
})
/**
 * The type of {@link Base64Source}.
 *
 * @category models
 * @since 1.0.0
 */
export type Base64Source = typeof Base64Source.Type

/**
 * Media the provider fetches itself (only some providers can).
 *
 * @category schemas
 * @since 1.0.0
 */
export const UrlSource = Schema.Struct({
  /** The discriminant. */
  type: Schema.Literal("url"),
  /** An `https:` (or `http:`) URL. */
  url: Schema.String
})
/**
 * The type of {@link UrlSource}.
 *
 * @category models
 * @since 1.0.0
 */
export type UrlSource = typeof UrlSource.Type

/**
 * Where an image's or document's bytes come from.
 *
 * @category schemas
 * @since 1.0.0
 */
export const MediaSource = Schema.Union([Base64Source, UrlSource])
/**
 * The type of {@link MediaSource}.
 *
 * @category models
 * @since 1.0.0
 */
export type MediaSource = typeof MediaSource.Type

/**
 * A piece of text.
 *
 * @category schemas
 * @since 1.0.0
 */
export const TextPart = Schema.Struct({
  /** The discriminant. */
  type: Schema.Literal("text"),
  /** The text. */
  text: Schema.String
})
/**
 * The type of {@link TextPart}.
 *
 * @category models
 * @since 1.0.0
 */
export type TextPart = typeof TextPart.Type

/**
 * An image (PNG, JPEG, GIF or WebP).
 *
 * @category schemas
 * @since 1.0.0
 */
export const ImagePart = Schema.Struct({
  /** The discriminant. */
  type: Schema.Literal("image"),
  /** The image's bytes or URL. */
  source: MediaSource
})
/**
 * The type of {@link ImagePart}.
 *
 * @category models
 * @since 1.0.0
 */
export type ImagePart = typeof ImagePart.Type

/**
 * A document (PDF).
 *
 * @category schemas
 * @since 1.0.0
 */
export const DocumentPart = Schema.Struct({
  /** The discriminant. */
  type: Schema.Literal("document"),
  /** The document's bytes or URL. */
  source: MediaSource,
  /** A file name shown to the model, where the provider takes one (OpenAI requires one; default `document.pdf`). */
  title: Schema.optional(Schema.String)
})
/**
 * The type of {@link DocumentPart}.
 *
 * @category models
 * @since 1.0.0
 */
export type DocumentPart = typeof DocumentPart.Type

/**
 * One part of a prompt.
 *
 * @category schemas
 * @since 1.0.0
 */
export const Part = Schema.Union([TextPart, ImagePart, DocumentPart])
/**
 * The type of {@link Part}.
 *
 * @category models
 * @since 1.0.0
 */
export type Part = typeof Part.Type

/**
 * A prompt: a string, or a list of parts sent in order as one user message.
 *
 * @category schemas
 * @since 1.0.0
 */
export const Prompt = Schema.Union([Schema.String, Schema.Array(Part)])
/**
 * The type of {@link Prompt}.
 *
 * @category models
 * @since 1.0.0
 */
export type Prompt = string | ReadonlyArray<Part>

/**
 * The image media types every provider takes.
 *
 * @category models
 * @since 1.0.0
 */
export const ImageMediaTypes: ReadonlyArray<string> = ["image/png", "image/jpeg", "image/gif", "image/webp"]

/**
 * The document media types supported (PDF).
 *
 * @category models
 * @since 1.0.0
 */
export const DocumentMediaTypes: ReadonlyArray<string> = ["application/pdf"]

const base64Of = (data: Uint8Array | string): string => typeof data === "string" ? data : Base64.encode(data)

/**
 * A text part.
 *
 * @category constructors
 * @since 1.0.0
 */
export const text = (value: string): TextPart => ({ type: "text", text: value })

/**
 * An inline image: raw bytes, or a base64 string. `mediaType` is one of {@link ImageMediaTypes};
 * anything else is refused by the provider before any request.
 *
 * @category constructors
 * @since 1.0.0
 */
export const image = (data: Uint8Array | string, mediaType: string): ImagePart => ({
  type: "image",
  source: { type: "base64", mediaType, data: base64Of(data) }
})

/**
 * An image the provider downloads itself (Anthropic and OpenAI can; others refuse it before any request).
 *
 * @category constructors
 * @since 1.0.0
 */
export const imageUrl = (url: string): ImagePart => ({ type: "image", source: { type: "url", url } })

/**
 * An inline PDF document: raw bytes or base64.
 *
 * @category constructors
 * @since 1.0.0
 */
export const document = (
  data: Uint8Array | string,
  options: { readonly mediaType?: string; readonly title?: string } = {}
): DocumentPart => ({
  type: "document",
  source: { type: "base64", mediaType: options.mediaType ?? "application/pdf", data: base64Of(data) },
  ...(options.title === undefined ? {} : { title: options.title })
})

/**
 * A PDF the provider downloads itself (only Anthropic can; others refuse it before any request).
 *
 * @category constructors
 * @since 1.0.0
 */
export const documentUrl = (url: string, options: { readonly title?: string } = {}): DocumentPart => ({
  type: "document",
  source: { type: "url", url },
  ...(options.title === undefined ? {} : { title: options.title })
})

/**
 * What a tool returns when its result is more than text: text and images, in order. The text
 * parts are the result's text everywhere; the images reach the model where the provider takes
 * images in tool results (Anthropic, the `claude` CLI and the Agent SDK through MCP image content).
 * On OpenAI and Gemini the model gets the text plus a note naming the images it cannot see.
 *
 * @category schemas
 * @since 1.0.0
 */
export class ToolContent extends Schema.TaggedClass<ToolContent>()("ToolContent", {
  /** The text and images, in order. */
  parts: Schema.Array(Schema.Union([TextPart, ImagePart]))
}) {}

/**
 * Builds a {@link ToolContent} for a tool handler to return.
 *
 * @category constructors
 * @since 1.0.0
 */
export const toolContent = (parts: ReadonlyArray<TextPart | ImagePart>): ToolContent => new ToolContent({ parts })

/**
 * The provider takes no parts of this kind, or not of this media type (it says which it takes). Not retryable: the same content is refused again.
 *
 * @since 2.0.0
 * @category errors
 */
export class MediaType
  extends Schema.TaggedError<MediaType>("effect-chat-bridge/UnsupportedContentError/MediaType")("MediaType", {
    /** What was refused and what to do instead. */
    message: Schema.String
  })
{
  /** Never retryable. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The part is over the provider's documented size limit (downscale, recompress or split it). Not retryable: the same content is refused again.
 *
 * @since 2.0.0
 * @category errors
 */
export class TooLarge
  extends Schema.TaggedError<TooLarge>("effect-chat-bridge/UnsupportedContentError/TooLarge")("TooLarge", {
    /** What was refused and what to do instead. */
    message: Schema.String
  })
{
  /** Never retryable. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The provider cannot fetch URLs of this kind, or the URL is not http(s) (pass the bytes instead). Not retryable: the same content is refused again.
 *
 * @since 2.0.0
 * @category errors
 */
export class Url extends Schema.TaggedError<Url>("effect-chat-bridge/UnsupportedContentError/Url")("Url", {
  /** What was refused and what to do instead. */
  message: Schema.String
}) {
  /** Never retryable. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The provider has no document input (send the text instead). Not retryable: the same content is refused again.
 *
 * @since 2.0.0
 * @category errors
 */
export class Document
  extends Schema.TaggedError<Document>("effect-chat-bridge/UnsupportedContentError/Document")("Document", {
    /** What was refused and what to do instead. */
    message: Schema.String
  })
{
  /** Never retryable. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The part's data is not base64 (pass raw bytes as a `Uint8Array`). Not retryable: the same content is refused again.
 *
 * @since 2.0.0
 * @category errors
 */
export class InvalidData
  extends Schema.TaggedError<InvalidData>("effect-chat-bridge/UnsupportedContentError/InvalidData")("InvalidData", {
    /** What was refused and what to do instead. */
    message: Schema.String
  })
{
  /** Never retryable. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * Why a provider refused a prompt's or tool result's content.
 *
 * @since 2.0.0
 * @category schemas
 */
export const UnsupportedContentErrorReason: Schema.Union<[
  typeof MediaType,
  typeof TooLarge,
  typeof Url,
  typeof Document,
  typeof InvalidData
]> = Schema.Union([MediaType, TooLarge, Url, Document, InvalidData])

/**
 * The type of {@link UnsupportedContentErrorReason}.
 *
 * @since 2.0.0
 * @category models
 */
export type UnsupportedContentErrorReason = typeof UnsupportedContentErrorReason.Type

/**
 * The provider cannot send this content; raised before any request, so nothing was sent or lost.
 * `reason`: `MediaType` (not a type it takes), `TooLarge` (over its documented limit), `Url` (it
 * cannot fetch URLs of this kind), `Document` (it has no document input), `InvalidData` (not
 * base64); select one with `Effect.catchReason("UnsupportedContentError", "TooLarge", …)`. No
 * reason is retryable with the same provider (`Fallback` fails over to the next one).
 *
 * @since 2.0.0
 * @category errors
 */
export class UnsupportedContentError extends Schema.TaggedError<UnsupportedContentError>()(
  "UnsupportedContentError",
  {
    /** The provider that refused. */
    provider: Schema.String,
    /** Why it refused; its message says what was refused and what to do instead. */
    reason: UnsupportedContentErrorReason
  }
) {
  /** The reason's message. */
  override get message(): string {
    return this.reason.message
  }

  /** Whether sending it again may succeed: never, for every reason. */
  get isRetryable(): boolean {
    return this.reason.isRetryable
  }
}

/**
 * The text of a prompt: the string, or its text parts joined (for logs, transcripts, estimates).
 *
 * @category utils
 * @since 1.0.0
 */
export const textOf = (prompt: Prompt): string =>
  typeof prompt === "string"
    ? prompt
    : prompt.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("\n\n")

/**
 * True when a prompt carries an image or a document.
 *
 * @category utils
 * @since 1.0.0
 */
export const hasMedia = (prompt: Prompt): boolean => typeof prompt !== "string" && prompt.some((p) => p.type !== "text")

/**
 * The parts of a prompt (a string is one text part).
 *
 * @category utils
 * @since 1.0.0
 */
export const partsOf = (prompt: Prompt): ReadonlyArray<Part> => typeof prompt === "string" ? [text(prompt)] : prompt
