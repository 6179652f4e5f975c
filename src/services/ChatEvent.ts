/**
 * What `ChatClient.chatStream` emits while a chat runs: text as it arrives, tool calls as they
 * start and end, usage, and the final text (equal to what `chat` returns for the same output).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { Usage } from "./ChatClient.js"

/** A piece of the model's text. */
export class TextDelta extends Schema.TaggedClass<TextDelta>()("TextDelta", {
  text: Schema.String
}) {}

/** The model asked for a tool; `arguments` is the complete, decoded argument object. */
export class ToolCallStart extends Schema.TaggedClass<ToolCallStart>()("ToolCallStart", {
  id: Schema.String,
  name: Schema.String,
  arguments: Schema.Unknown
}) {}

/** A tool call finished; failures are results too, with `isError: true`. */
export class ToolCallEnd extends Schema.TaggedClass<ToolCallEnd>()("ToolCallEnd", {
  id: Schema.String,
  name: Schema.String,
  result: Schema.String,
  isError: Schema.Boolean
}) {}

/** Usage of one model turn (or CLI run). */
export class UsageEvent extends Schema.TaggedClass<UsageEvent>()("Usage", {
  usage: Usage
}) {}

/** The chat is over; `text` is the final answer. */
export class Complete extends Schema.TaggedClass<Complete>()("Complete", {
  text: Schema.String
}) {}

/** Every event of a chat stream. */
export const ChatEvent = Schema.Union(TextDelta, ToolCallStart, ToolCallEnd, UsageEvent, Complete)
export type ChatEvent = typeof ChatEvent.Type
