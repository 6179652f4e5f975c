/**
 * The provider-neutral chat contract: a conversation with a model that can call your tools.
 * Every provider layer (`Scripted`, the HTTP providers, the `claude` CLI, `Fallback`) provides it.
 *
 * @summary The provider-neutral chat contract (`chat`, `ask`, `chatStream`, `setTools`) every provider implements.
 * @group Chat
 * @since 0.1.0
 * @module
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Stream from "effect/Stream"
import type { ChatEvent } from "./ChatEvent.ts"
import { ClaudeLiveError } from "./ClaudeLive.ts"
import { SessionStoreError } from "./ClaudeSessionStore.ts"
import { type Prompt, UnsupportedContentError } from "./Content.ts"
import { InvalidToolsError, type Tool } from "./Tool.ts"
import { Usage } from "./Usage.ts"

export { Usage }

/** A prompt (or question, or added text) was empty or only whitespace. */
export class EmptyPromptError extends Schema.TaggedError<EmptyPromptError>()("EmptyPromptError", {
  /** Says which operation got the empty text. */
  message: Schema.String
}) {}

/** The model still wanted tools after `maxSteps` model turns. */
export class MaxStepsError extends Schema.TaggedError<MaxStepsError>()("MaxStepsError", {
  /** The limit that was reached. */
  maxSteps: Schema.Number,
  /** A human-readable summary. */
  message: Schema.String
}) {}

/** `ask` got an answer that does not decode with the requested schema. */
export class StructuredOutputError extends Schema.TaggedError<StructuredOutputError>()("StructuredOutputError", {
  /** The decoding error, formatted. */
  message: Schema.String,
  /** The model's answer as text, bounded, for debugging. */
  answer: Schema.String
}) {}

/**
 * How a provider call failed; `Fallback` decides from `kind`, `status` and `retryable`. `auth`:
 * the provider refused the credentials (HTTP 401/403, or the `claude` CLI's invalid key / not
 * logged in) — the message names the variable or command that fixes it, and retrying will not.
 * `stalled`: a Claude Code run printed nothing for its `stallTimeout` while the model was
 * answering (no tool or permission decision pending); its CLI was stopped and the next turn
 * resumes the session, so it is retryable.
 */
export const ProviderErrorKind = Schema.Literals([
  "auth",
  "http",
  "network",
  "timeout",
  "decode",
  "process",
  "config",
  "stalled",
  "unknown"
])
/** The type of {@link ProviderErrorKind}. */
export type ProviderErrorKind = typeof ProviderErrorKind.Type

/** A provider call failed. The message never contains a secret. */
export class ProviderError extends Schema.TaggedError<ProviderError>()("ProviderError", {
  /** Which provider failed, such as `anthropic` or `claude-local`. */
  provider: Schema.String,
  /** How it failed; see {@link ProviderErrorKind}. */
  kind: ProviderErrorKind,
  /** What went wrong and, where it helps, what to do about it. */
  message: Schema.String,
  /** The HTTP status, when there was one. */
  status: Schema.optional(Schema.Number),
  /** Whether the same request may succeed later (timeouts, 408, 429, 5xx). */
  retryable: Schema.Boolean
}) {}

/**
 * An agent runtime (the `claude` CLI) refused some tool calls for lack of permission. The model's
 * answer is kept in `answer`, so nothing is lost; providers may offer to return it instead.
 */
export class PermissionDeniedError extends Schema.TaggedError<PermissionDeniedError>()("PermissionDeniedError", {
  /** The provider whose runtime refused the calls. */
  provider: Schema.String,
  /** The denied tools, in the order they were denied. */
  tools: Schema.Array(Schema.String),
  /** The model's answer despite the denials. */
  answer: Schema.String,
  /** Names the denied tools and how to allow them. */
  message: Schema.String
}) {}

/**
 * A Claude Code run stopped at a bound the caller set (`maxTurns` or `maxBudgetUsd`). What the
 * model had answered so far and what the run used are kept.
 */
export class RunLimitError extends Schema.TaggedError<RunLimitError>()("RunLimitError", {
  /** The provider whose run stopped. */
  provider: Schema.String,
  /** Which bound was reached. */
  limit: Schema.Literals(["maxTurns", "maxBudgetUsd"]),
  /** The partial answer (may be empty). */
  answer: Schema.String,
  /** What the run used, cost included when known. */
  usage: Usage,
  /** Names the bound and how to raise it. */
  message: Schema.String
}) {}

/** Errors a single provider can fail with (what `FallbackError` collects; nested chains are flattened). */
export const ProviderFailure = Schema.Union([
  EmptyPromptError,
  MaxStepsError,
  StructuredOutputError,
  ProviderError,
  PermissionDeniedError,
  RunLimitError,
  InvalidToolsError,
  UnsupportedContentError,
  SessionStoreError,
  ClaudeLiveError
])
/** The type of {@link ProviderFailure}. */
export type ProviderFailure = typeof ProviderFailure.Type

/**
 * A fallback chain gave up: every provider failed (`Exhausted`, with each provider's error in
 * order), a tool had already run so replaying on the next provider could repeat its side effects
 * (`RefusedAfterToolRun`), it was built without providers (`NoProviders`), or none of its
 * providers' layers could be built (`NoneBuilt`: the message names each one and why).
 */
export class FallbackError extends Schema.TaggedError<FallbackError>()("FallbackError", {
  /** Why the chain gave up. */
  reason: Schema.Literals(["Exhausted", "RefusedAfterToolRun", "NoProviders", "NoneBuilt"]),
  /** The providers' errors, in the order they happened. */
  errors: Schema.Array(ProviderFailure),
  /** Lists the providers tried and why each failed (a status or kind, never a provider's message). */
  message: Schema.String
}) {}

/** Every error a ChatClient operation can fail with. */
export type ChatError =
  | EmptyPromptError
  | MaxStepsError
  | StructuredOutputError
  | ProviderError
  | PermissionDeniedError
  | RunLimitError
  | InvalidToolsError
  | UnsupportedContentError
  | SessionStoreError
  | FallbackError
  | ClaudeLiveError

/** The schema of `ChatError`, for callers that serialise errors. */
export const ChatError = Schema.Union([
  EmptyPromptError,
  MaxStepsError,
  StructuredOutputError,
  ProviderError,
  PermissionDeniedError,
  RunLimitError,
  InvalidToolsError,
  UnsupportedContentError,
  SessionStoreError,
  FallbackError,
  ClaudeLiveError
])

/**
 * A conversation with a model. Prompts are a string or a list of `Content` parts (text, images,
 * PDF documents); a provider that cannot send a part fails with `UnsupportedContentError` before
 * any request. Closing the provider layer's scope closes the client and
 * releases whatever it owns (servers, processes).
 */
export interface ChatClientService {
  /** Buffers a user message; it is sent with the next `chat` or `ask` and kept if that call fails. */
  readonly add: (prompt: Prompt) => Effect.Effect<void, ChatError>
  /** Sends a prompt and runs the tool loop until the model answers in text. */
  readonly chat: (prompt: Prompt) => Effect.Effect<string, ChatError>
  /**
   * `chat` as a stream of events: text deltas, tool calls starting and ending, usage, and a final
   * `Complete` whose text equals what `chat` would return. History, the `add` buffer and usage
   * change exactly as with `chat`. Interrupting the consumer cancels the request (or kills the CLI).
   * Every model turn's text is streamed, including text before a tool call; on failure the turn is
   * discarded as `chat` discards it, so a UI should clear what it showed when the stream fails.
   */
  readonly chatStream: (prompt: Prompt) => Stream.Stream<ChatEvent, ChatError>
  /** Asks for an answer shaped by `schema`, decoded with it. The answer joins the history. */
  readonly ask: <A, I>(question: Prompt, schema: Schema.Codec<A, I>) => Effect.Effect<A, ChatError>
  /** Replaces the tool set (never merges). Handlers' requirements come from the caller's context. */
  readonly setTools: <R = never>(tools: ReadonlyArray<Tool<R>>) => Effect.Effect<void, ChatError, R>
  /** Running totals over every call on this client. */
  readonly usage: Effect.Effect<Usage>
}

/**
 * The ChatClient service tag. Provide it with a provider layer (`ClaudeApi`, `OpenAi`, `Gemini`,
 * `ClaudeLocal`, `Fallback`, `Scripted`); every operation fails with a {@link ChatError}.
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { ChatClient, Scripted, Tool } from "effect-chat-bridge"
 *
 * const add = Tool.make("add", {
 *   description: "Adds two numbers",
 *   parameters: { a: Schema.Number, b: Schema.Number },
 *   handler: ({ a, b }) => Effect.succeed(a + b)
 * })
 *
 * const program = Effect.gen(function*() {
 *   const client = yield* ChatClient.ChatClient
 *   yield* client.setTools([add])
 *   return yield* client.chat("What is 1 + 2?")
 * }).pipe(
 *   Effect.provide(Scripted.layer({
 *     script: [Scripted.toolCalls({ name: "add", arguments: { a: 1, b: 2 } }), Scripted.text("3")]
 *   }))
 * )
 * ```
 */
export class ChatClient extends Context.Service<ChatClient, ChatClientService>()("effect-chat-bridge/ChatClient") {}
