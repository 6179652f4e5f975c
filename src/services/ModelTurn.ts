/**
 * One model turn, provider-neutral: what the tool loop sends a model and what it gets back. HTTP
 * providers translate these to their wire formats; `Scripted` lets tests answer them directly.
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import type * as Stream from "effect/Stream"
import type { ProviderError, Usage } from "./ChatClient.js"
import type { JsonSchemaObject, Tool, ToolCall, ToolResult } from "./Tool.js"

/** A user message (buffered `add` text is joined into it). */
export interface UserMessage {
  readonly role: "user"
  readonly content: string
}

/** The model's reply: text, and the tool calls it asked for (none on a final answer). */
export interface AssistantMessage {
  readonly role: "assistant"
  readonly text: string
  readonly toolCalls: ReadonlyArray<ToolCall>
}

/** The results of the previous assistant message's tool calls, in the same order. */
export interface ToolMessage {
  readonly role: "tool"
  readonly results: ReadonlyArray<ToolResult>
}

/** A message of the conversation history. */
export type Message = UserMessage | AssistantMessage | ToolMessage

/**
 * For `ask`: the answer must match `schema`, whose root is always an object (a non-object
 * schema is wrapped in `{ value }` by the loop and unwrapped before decoding).
 */
export interface ResponseFormat {
  readonly name: string
  readonly schema: JsonSchemaObject
}

/** What a model turn is given. */
export interface TurnRequest {
  readonly history: ReadonlyArray<Message>
  readonly tools: ReadonlyArray<Tool>
  readonly responseFormat?: ResponseFormat | undefined
}

/**
 * What a model turn returns. `structured` is a provider's structured answer (for example a forced
 * tool's input); it is never also listed in `toolCalls`.
 */
export interface TurnResponse {
  readonly text: string
  readonly toolCalls: ReadonlyArray<ToolCall>
  readonly usage: Usage
  readonly structured?: unknown
}

/** A model: one request, one response. */
export type ModelTurn = (request: TurnRequest) => Effect.Effect<TurnResponse, ProviderError>

/** A streamed model turn: text deltas as they arrive, then exactly one `Done`. */
export type TurnStreamEvent =
  | { readonly _tag: "TextDelta"; readonly text: string }
  | { readonly _tag: "Done"; readonly response: TurnResponse }

/** A model that can stream its turn. Tool-call arguments arrive complete in `Done`. */
export type ModelTurnStream = (request: TurnRequest) => Stream.Stream<TurnStreamEvent, ProviderError>
