/**
 * What each provider can take as media, and the check run before any request, so a prompt the
 * provider would refuse fails with `UnsupportedContentError` instead of a 400 after tools ran.
 */
import * as Effect from "effect/Effect"
import { EmptyPromptError } from "../../services/ChatClient.ts"
import {
  Document,
  DocumentMediaTypes,
  hasMedia,
  ImageMediaTypes,
  type ImagePart,
  InvalidData,
  MediaType,
  type Part,
  partsOf,
  type Prompt,
  textOf,
  TooLarge,
  UnsupportedContentError,
  Url
} from "../../services/Content.ts"
import type { UserMessage } from "../../services/ModelTurn.ts"

const MB = 1024 * 1024

/** A provider's media input, as its documentation states it. */
export interface MediaSupport {
  readonly provider: string
  /** Largest image, decoded bytes; `undefined` when it takes no images. */
  readonly maxImageBytes: number | undefined
  /** Whether it downloads image URLs itself. */
  readonly imageUrls: boolean
  /** Largest document, decoded bytes; `undefined` when it has no document input. */
  readonly maxDocumentBytes: number | undefined
  /** Whether it downloads document URLs itself. */
  readonly documentUrls: boolean
  /** Where the limits come from, quoted in errors. */
  readonly limitsSource: string
}

/** Anthropic Messages API: 5 MB per image, 32 MB per request (PDF); image and document URLs. */
export const anthropic: MediaSupport = {
  provider: "anthropic",
  maxImageBytes: 5 * MB,
  imageUrls: true,
  maxDocumentBytes: 32 * MB,
  documentUrls: true,
  limitsSource: "the Messages API: 5 MB per image, 32 MB per request"
}

/** OpenAI Chat Completions: 20 MB per image, image URLs; PDFs as `file` parts (32 MB), no PDF URLs. */
export const openAi: MediaSupport = {
  provider: "openai",
  maxImageBytes: 20 * MB,
  imageUrls: true,
  maxDocumentBytes: 32 * MB,
  documentUrls: false,
  limitsSource: "Chat Completions: 20 MB per image, 32 MB per file"
}

/** Gemini `inlineData`: 20 MB per request, no URL fetching (`fileData` takes only Files API URIs). */
export const gemini: MediaSupport = {
  provider: "gemini",
  maxImageBytes: 20 * MB,
  imageUrls: false,
  maxDocumentBytes: 20 * MB,
  documentUrls: false,
  limitsSource: "Gemini inline data: 20 MB per request"
}

/**
 * The `claude` CLI and the Agent SDK send base64 blocks on to the Messages API (same limits); they
 * are given no URLs, which they would pass through unchecked.
 */
export const claudeCode = (provider: string): MediaSupport => ({
  ...anthropic,
  provider,
  imageUrls: false,
  documentUrls: false,
  limitsSource: "the Messages API behind Claude Code: 5 MB per image, 32 MB per request"
})

/** A model that takes only text (a custom `ModelTurn` that declared no media). */
export const textOnly = (provider: string): MediaSupport => ({
  provider,
  maxImageBytes: undefined,
  imageUrls: false,
  maxDocumentBytes: undefined,
  documentUrls: false,
  limitsSource: "text only"
})

/** No limits (the Scripted model). */
export const anything = (provider: string): MediaSupport => ({
  provider,
  maxImageBytes: Number.POSITIVE_INFINITY,
  imageUrls: true,
  maxDocumentBytes: Number.POSITIVE_INFINITY,
  documentUrls: true,
  limitsSource: "none"
})

const Base64Pattern = /^[A-Za-z0-9+/]*={0,2}$/

/** Decoded size of base64 text (whitespace ignored). */
export const decodedBytes = (base64: string): number => {
  const clean = base64.replace(/\s+/g, "")
  const padding = clean.endsWith("==") ? 2 : clean.endsWith("=") ? 1 : 0
  return Math.floor((clean.length * 3) / 4) - padding
}

const megabytes = (bytes: number) => `${(bytes / MB).toFixed(1)} MB`

const reasons = { MediaType, TooLarge, Url, Document, InvalidData } as const

const refuse = (support: MediaSupport, reason: keyof typeof reasons, message: string) =>
  Effect.fail(new UnsupportedContentError({ provider: support.provider, reason: new reasons[reason]({ message }) }))

const checkPart = (support: MediaSupport, part: Part, where: string): Effect.Effect<void, UnsupportedContentError> => {
  if (part.type === "text") return Effect.void
  const kind = part.type
  if (kind === "image" && support.maxImageBytes === undefined) {
    return refuse(support, "MediaType", `${support.provider} takes no images (${where})`)
  }
  if (kind === "document" && support.maxDocumentBytes === undefined) {
    return refuse(support, "Document", `${support.provider} has no document input (${where}); send the text instead`)
  }
  const source = part.source
  if (source.type === "url") {
    const fetches = kind === "image" ? support.imageUrls : support.documentUrls
    if (!fetches) {
      return refuse(
        support,
        "Url",
        `${support.provider} cannot fetch ${kind} URLs (${where}): download it and pass the bytes with Content.${kind}`
      )
    }
    if (!/^https?:\/\//i.test(source.url)) {
      return refuse(support, "Url", `The ${kind} URL in ${where} is not an http(s) URL`)
    }
    return Effect.void
  }
  const allowed = kind === "image" ? ImageMediaTypes : DocumentMediaTypes
  if (!allowed.includes(source.mediaType)) {
    return refuse(
      support,
      "MediaType",
      `${support.provider} does not take ${kind}s of type ${JSON.stringify(source.mediaType)} (${where}); ` +
        `use one of ${allowed.join(", ")}`
    )
  }
  if (!Base64Pattern.test(source.data.replace(/\s+/g, ""))) {
    return refuse(support, "InvalidData", `The ${kind} in ${where} is not base64; pass raw bytes as a Uint8Array`)
  }
  const size = decodedBytes(source.data)
  const max = (kind === "image" ? support.maxImageBytes : support.maxDocumentBytes) ?? 0
  if (size > max) {
    return refuse(
      support,
      "TooLarge",
      `The ${kind} in ${where} is ${megabytes(size)}, over the limit of ${support.limitsSource}; ` +
        (kind === "image" ? "downscale or recompress it" : "split it")
    )
  }
  return Effect.void
}

/** Checks every part of a prompt against what the provider takes. */
export const checkPrompt = (support: MediaSupport, prompt: Prompt): Effect.Effect<void, UnsupportedContentError> =>
  typeof prompt === "string"
    ? Effect.void
    : Effect.forEach(prompt, (part, i) => checkPart(support, part, `part ${i + 1} of the prompt`), { discard: true })

/**
 * The note that replaces a tool result's images on a provider that takes none in tool results
 * (OpenAI and Gemini): the model learns that images exist and what they are, not their pixels.
 */
export const omittedImagesNote = (images: ReadonlyArray<ImagePart>): string =>
  images.length === 0 ?
    "" :
    `\n\n[The tool also returned ${images.length} image(s) (${
      images.map((i) => i.source.type === "base64" ? i.source.mediaType : i.source.url).join(", ")
    }) that this provider cannot show in a tool result.]`

/**
 * Fails with `EmptyPromptError` for a prompt without content (blank text, no media) and with
 * `UnsupportedContentError` for media the provider cannot send; both before any request.
 */
export const requirePrompt = (
  what: string,
  prompt: Prompt,
  support: MediaSupport
): Effect.Effect<void, EmptyPromptError | UnsupportedContentError> =>
  textOf(prompt).trim() === "" && !hasMedia(prompt)
    ? Effect.fail(new EmptyPromptError({ message: `The ${what} is empty` }))
    : checkPrompt(support, prompt)

/** The user message of a turn: buffered `add` prompts, then the prompt; parts only when there is media. */
export const userMessage = (prompts: ReadonlyArray<Prompt>): UserMessage => {
  const content = prompts.map(textOf).filter((t) => t !== "").join("\n\n")
  return prompts.some(hasMedia) ? { role: "user", content, parts: prompts.flatMap(partsOf) } : { role: "user", content }
}
