/**
 * What `ChatClient.chatStream` emits while a chat runs: text as it arrives, tool calls as they
 * start and end, usage, and the final text (equal to what `chat` returns for the same output).
 *
 * @since 0.1.0
 * @module
 */
import * as Schema from "effect/Schema"
import { Usage } from "./ChatClient.js"

/** A piece of the model's text. */
export class TextDelta extends Schema.TaggedClass<TextDelta>()("TextDelta", {
  /** The new text, to append to what came before. */
  text: Schema.String
}) {}

/** The model asked for a tool; `arguments` is the complete, decoded argument object. */
export class ToolCallStart extends Schema.TaggedClass<ToolCallStart>()("ToolCallStart", {
  /** The call id; the matching {@link ToolCallEnd} has the same. */
  id: Schema.String,
  /** The tool's name. */
  name: Schema.String,
  /** The decoded arguments. */
  arguments: Schema.Unknown
}) {}

/** A tool call finished; failures are results too, with `isError: true`. */
export class ToolCallEnd extends Schema.TaggedClass<ToolCallEnd>()("ToolCallEnd", {
  /** The id of the {@link ToolCallStart} this ends. */
  id: Schema.String,
  /** The tool's name. */
  name: Schema.String,
  /** The text sent back to the model. */
  result: Schema.String,
  /** True when the call failed. */
  isError: Schema.Boolean
}) {}

/** Usage of one model turn (or CLI run). */
export class UsageEvent extends Schema.TaggedClass<UsageEvent>()("Usage", {
  /** This turn's (or run's) usage, not the running total. */
  usage: Usage
}) {}

/** The chat is over; `text` is the final answer. */
export class Complete extends Schema.TaggedClass<Complete>()("Complete", {
  /** The final answer, as `chat` would return it. */
  text: Schema.String
}) {}

/** Every event of a chat stream. */
export const ChatEvent = Schema.Union(TextDelta, ToolCallStart, ToolCallEnd, UsageEvent, Complete)
/** The type of {@link ChatEvent}: discriminate on `_tag`. */
export type ChatEvent = typeof ChatEvent.Type
