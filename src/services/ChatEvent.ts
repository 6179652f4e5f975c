/**
 * What `ChatClient.chatStream` emits while a chat runs: text and reasoning as they arrive, your
 * tools' calls and the agent runtime's own tool calls as they start and end, usage, and the final
 * text (equal to what `chat` returns for the same output).
 *
 * @summary The events `chatStream` emits: text, reasoning, tool calls, usage and the final text.
 * @group Chat
 * @since 0.1.0
 * @module
 */
import * as Schema from "effect/Schema"
import { Usage } from "./Usage.ts"

/**
 * A piece of the model's text.
 *
 * @category schemas
 * @since 1.0.0
 */
export class TextDelta extends Schema.TaggedClass<TextDelta>()("TextDelta", {
  /** The new text, to append to what came before. */
  text: Schema.String
}) {}

/**
 * The model asked for a tool; `arguments` is the complete, decoded argument object.
 *
 * @category schemas
 * @since 1.0.0
 */
export class ToolCallStart extends Schema.TaggedClass<ToolCallStart>()("ToolCallStart", {
  /** The call id; the matching {@link ToolCallEnd} has the same. */
  id: Schema.String,
  /** The tool's name. */
  name: Schema.String,
  /** The decoded arguments. */
  arguments: Schema.Unknown
}) {}

/**
 * A tool call finished; failures are results too, with `isError: true`.
 *
 * @category schemas
 * @since 1.0.0
 */
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

/**
 * A piece of the model's reasoning (Anthropic thinking, Gemini thoughts, OpenAI-compatible reasoning).
 *
 * @category schemas
 * @since 1.0.0
 */
export class ReasoningDelta extends Schema.TaggedClass<ReasoningDelta>()("ReasoningDelta", {
  /** The new reasoning text, to append to what came before; never part of the answer. */
  text: Schema.String
}) {}

/**
 * The agent runtime itself started a tool that is not one of yours: a built-in Claude Code tool
 * (Bash, Read, Edit, WebFetch, …) or a tool of an application MCP server.
 *
 * @category schemas
 * @since 1.0.0
 */
export class AgentToolStart extends Schema.TaggedClass<AgentToolStart>()("AgentToolStart", {
  /** The call id; the matching {@link AgentToolEnd} has the same. */
  id: Schema.String,
  /** The tool's name as the runtime knows it, such as `Bash` or `mcp__server__tool`. */
  name: Schema.String,
  /** The call's input. */
  input: Schema.Unknown
}) {}

/**
 * A tool of the agent runtime finished (or was refused); see {@link AgentToolStart}.
 *
 * @category schemas
 * @since 1.0.0
 */
export class AgentToolEnd extends Schema.TaggedClass<AgentToolEnd>()("AgentToolEnd", {
  /** The id of the {@link AgentToolStart} this ends. */
  id: Schema.String,
  /** The tool's name. */
  name: Schema.String,
  /** The outcome as the model reads it. */
  result: Schema.String,
  /** True when the call failed or was denied. */
  isError: Schema.Boolean
}) {}

/**
 * Usage of one model turn (or CLI run).
 *
 * @category schemas
 * @since 1.0.0
 */
export class UsageEvent extends Schema.TaggedClass<UsageEvent>()("Usage", {
  /** This turn's (or run's) usage, not the running total. */
  usage: Usage
}) {}

/**
 * The chat is over; `text` is the final answer.
 *
 * @category schemas
 * @since 1.0.0
 */
export class Complete extends Schema.TaggedClass<Complete>()("Complete", {
  /** The final answer, as `chat` would return it. */
  text: Schema.String
}) {}

/**
 * Every event of a chat stream.
 *
 * @category schemas
 * @since 1.0.0
 */
export const ChatEvent = Schema.Union([
  TextDelta,
  ReasoningDelta,
  ToolCallStart,
  ToolCallEnd,
  AgentToolStart,
  AgentToolEnd,
  UsageEvent,
  Complete
])
/**
 * The type of {@link ChatEvent}: discriminate on `_tag`.
 *
 * @category models
 * @since 1.0.0
 */
export type ChatEvent = typeof ChatEvent.Type
