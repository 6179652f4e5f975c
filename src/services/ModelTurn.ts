/**
 * One model turn, provider-neutral: what the tool loop sends a model and what it gets back. HTTP
 * providers translate these to their wire formats; `Scripted` lets tests answer them directly.
 *
 * @summary One provider-neutral model turn: what the tool loop sends a model and gets back.
 * @group Chat
 * @since 0.1.0
 * @module
 */
import type * as Effect from "effect/Effect"
import type * as Stream from "effect/Stream"
import type { ProviderError, Usage } from "./ChatClient.ts"
import type { Part } from "./Content.ts"
import type { JsonSchemaObject, Tool, ToolCall, ToolResult } from "./Tool.ts"

/**
 * A user message (buffered `add` text is joined into it).
 *
 * @category models
 * @since 1.0.0
 */
export interface UserMessage {
  /** The discriminant. */
  readonly role: "user"
  /** The prompt text (with media, its text parts joined). */
  readonly content: string
  /** Set when the prompt carries images or documents: every part, in order (`content` is then just its text). */
  readonly parts?: ReadonlyArray<Part> | undefined
}

/**
 * The model's reply: text, and the tool calls it asked for (none on a final answer).
 *
 * @category models
 * @since 1.0.0
 */
export interface AssistantMessage {
  /** The discriminant. */
  readonly role: "assistant"
  /** The reply's text (may be empty when it only calls tools). */
  readonly text: string
  /** The tool calls it asked for, in order. */
  readonly toolCalls: ReadonlyArray<ToolCall>
}

/**
 * The results of the previous assistant message's tool calls, in the same order.
 *
 * @category models
 * @since 1.0.0
 */
export interface ToolMessage {
  /** The discriminant. */
  readonly role: "tool"
  /** One result per call, in the calls' order. */
  readonly results: ReadonlyArray<ToolResult>
}

/**
 * A message of the conversation history.
 *
 * @category models
 * @since 1.0.0
 */
export type Message = UserMessage | AssistantMessage | ToolMessage

/**
 * For `ask`: the answer must match `schema`, whose root is always an object (a non-object
 * schema is wrapped in `{ value }` by the loop and unwrapped before decoding).
 *
 * @category models
 * @since 1.0.0
 */
export interface ResponseFormat {
  /** A name for the format, for providers that require one. */
  readonly name: string
  /** The JSON Schema of the answer. */
  readonly schema: JsonSchemaObject
}

/**
 * What a model turn is given.
 *
 * @category models
 * @since 1.0.0
 */
export interface TurnRequest {
  /** The whole conversation so far, oldest first; the last message is the one to answer. */
  readonly history: ReadonlyArray<Message>
  /** The tools the model may call. */
  readonly tools: ReadonlyArray<Tool>
  /** Set for `ask`: the shape the answer must have. */
  readonly responseFormat?: ResponseFormat | undefined
}

/**
 * What a model turn returns. `structured` is a provider's structured answer (for example a forced
 * tool's input); it is never also listed in `toolCalls`.
 *
 * @category models
 * @since 1.0.0
 */
export interface TurnResponse {
  /** The reply's text. */
  readonly text: string
  /** The tool calls asked for; none on a final answer. */
  readonly toolCalls: ReadonlyArray<ToolCall>
  /** This turn's usage. */
  readonly usage: Usage
  /** The structured answer, when the provider returned one for a `responseFormat`. */
  readonly structured?: unknown
  /** Why the model stopped, in the provider's words (`end_turn`, `tool_calls`, `STOP`, …), for traces. */
  readonly finishReason?: string | undefined
}

/**
 * A model: one request, one response.
 *
 * @category models
 * @since 1.0.0
 */
export type ModelTurn = (request: TurnRequest) => Effect.Effect<TurnResponse, ProviderError>

/**
 * A streamed model turn: text and reasoning deltas as they arrive, then exactly one `Done`.
 *
 * @category models
 * @since 1.0.0
 */
export type TurnStreamEvent =
  | { readonly _tag: "TextDelta"; readonly text: string }
  | { readonly _tag: "ReasoningDelta"; readonly text: string }
  | { readonly _tag: "Done"; readonly response: TurnResponse }

/**
 * A model that can stream its turn. Tool-call arguments arrive complete in `Done`.
 *
 * @category models
 * @since 1.0.0
 */
export type ModelTurnStream = (request: TurnRequest) => Stream.Stream<TurnStreamEvent, ProviderError>
