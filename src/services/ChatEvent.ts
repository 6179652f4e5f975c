/**
 * What `ChatClient.chatStream` emits while a chat runs: text and reasoning as they arrive, your
 * tools' calls and the agent runtime's own tool calls as they start and end, usage, and the final
 * text (equal to what `chat` returns for the same output). The Claude Code providers also tell
 * what the agent does: tool arguments as they stream, subagent tasks, hooks, MCP server status and
 * plan rate-limit windows.
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
  arguments: Schema.Unknown,
  /**
   * Claude Code: the call of the subagent (`Agent`/`Task` tool) this call runs in; absent on the
   * main agent's calls. Since 2.1.0.
   */
  parentToolCallId: Schema.optional(Schema.String)
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
  isError: Schema.Boolean,
  /**
   * Claude Code: the call of the subagent (`Agent`/`Task` tool) this call runs in; absent on the
   * main agent's calls. Since 2.1.0.
   */
  parentToolCallId: Schema.optional(Schema.String)
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
  input: Schema.Unknown,
  /**
   * Claude Code: the call of the subagent (`Agent`/`Task` tool) this call runs in; absent on the
   * main agent's calls. Since 2.1.0.
   */
  parentToolCallId: Schema.optional(Schema.String)
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
  isError: Schema.Boolean,
  /**
   * Claude Code: the call of the subagent (`Agent`/`Task` tool) this call runs in; absent on the
   * main agent's calls. Since 2.1.0.
   */
  parentToolCallId: Schema.optional(Schema.String)
}) {}

/**
 * A piece of a tool call's arguments as the model writes them (Claude Code streams them with
 * partial messages): JSON text to append to what came before. The call's start event follows with
 * the whole, decoded arguments.
 *
 * @category schemas
 * @since 2.1.0
 */
export class ToolInputDelta extends Schema.TaggedClass<ToolInputDelta>()("ToolInputDelta", {
  /** The call id, as its start and end events will carry it. */
  id: Schema.String,
  /** The tool's name, as its start event will carry it. */
  name: Schema.String,
  /** The new piece of the arguments' JSON text. */
  delta: Schema.String,
  /** The subagent's call this call runs in, when it runs in one. */
  parentToolCallId: Schema.optional(Schema.String)
}) {}

/**
 * Claude Code started a task: a subagent (the `Agent` tool), a background shell or a workflow.
 *
 * @category schemas
 * @since 2.1.0
 */
export class TaskStarted extends Schema.TaggedClass<TaskStarted>()("TaskStarted", {
  /** The task's id; its progress and end events carry the same. */
  taskId: Schema.String,
  /** The tool call that started it (for a subagent, the `parentToolCallId` of its tools' events). */
  toolCallId: Schema.optional(Schema.String),
  /** What the task does, as the model described it. */
  description: Schema.String,
  /** The CLI's kind of task, such as `local_agent` or `local_bash`. */
  taskType: Schema.optional(Schema.String),
  /** For a subagent: its type, such as `general-purpose`. */
  subagentType: Schema.optional(Schema.String)
}) {}

/**
 * A running task's progress: what it has used so far and its last tool.
 *
 * @category schemas
 * @since 2.1.0
 */
export class TaskProgress extends Schema.TaggedClass<TaskProgress>()("TaskProgress", {
  /** The task's id. */
  taskId: Schema.String,
  /** The tool call that started it. */
  toolCallId: Schema.optional(Schema.String),
  /** What the task is doing now. */
  description: Schema.String,
  /** The last tool the task used. */
  lastToolName: Schema.optional(Schema.String),
  /** Tokens used so far. */
  totalTokens: Schema.Number,
  /** Tool calls so far. */
  toolUses: Schema.Number,
  /** Milliseconds since it started. */
  durationMs: Schema.Number
}) {}

/**
 * A task ended.
 *
 * @category schemas
 * @since 2.1.0
 */
export class TaskEnded extends Schema.TaggedClass<TaskEnded>()("TaskEnded", {
  /** The task's id. */
  taskId: Schema.String,
  /** The tool call that started it. */
  toolCallId: Schema.optional(Schema.String),
  /** How it ended, as the CLI names it: `completed`, `failed` or `stopped`. */
  status: Schema.String,
  /** The task's own summary (a subagent's final report). */
  summary: Schema.String
}) {}

/**
 * A Claude Code hook started: a `SessionStart` hook always; on `ClaudeLocal` (claude 2.1.335+) every
 * hook of the `hooks` option. The CLI reports none for the Agent SDK's callback hooks.
 *
 * @category schemas
 * @since 2.1.0
 */
export class HookStarted extends Schema.TaggedClass<HookStarted>()("HookStarted", {
  /** This run of the hook; its {@link HookFinished} has the same. */
  hookId: Schema.String,
  /** The hook's name, such as `PreToolUse:Read`. */
  hookName: Schema.String,
  /** The hook event, such as `PreToolUse`. */
  hookEvent: Schema.String
}) {}

/**
 * A Claude Code hook finished.
 *
 * @category schemas
 * @since 2.1.0
 */
export class HookFinished extends Schema.TaggedClass<HookFinished>()("HookFinished", {
  /** The run of the hook, as its {@link HookStarted} has it. */
  hookId: Schema.String,
  /** The hook's name. */
  hookName: Schema.String,
  /** The hook event. */
  hookEvent: Schema.String,
  /** How it ended, as the CLI names it: `success`, `error` or `cancelled`. */
  outcome: Schema.String,
  /** A command hook's exit code. */
  exitCode: Schema.optional(Schema.Number),
  /** What the hook printed. */
  output: Schema.String
}) {}

/**
 * The status of an MCP server the agent runtime uses, when first reported in a run and whenever it
 * changes (`connected`, `failed`, `needs-auth`, `pending`, …, as the CLI names them).
 *
 * @category schemas
 * @since 2.1.0
 */
export class McpServerStatus extends Schema.TaggedClass<McpServerStatus>()("McpServerStatus", {
  /** The server's name (the bridge's is `gtb` unless configured otherwise). */
  name: Schema.String,
  /** Its status. */
  status: Schema.String
}) {}

/**
 * A plan rate-limit window of a Claude subscription, as the API reported it on a response (the
 * CLI's `rate_limit_event`; only when it is logged in to a subscription, not with an API key).
 * A window with status `rejected` is spent until `resetsAt`: the turn then fails with a
 * `RateLimitError` carrying the same `resetsAt`.
 *
 * @category schemas
 * @since 2.1.0
 */
export class RateLimit extends Schema.TaggedClass<RateLimit>()("RateLimit", {
  /** The window, as the CLI names it: `five_hour`, `seven_day`, `seven_day_opus`, `overage`, …. */
  window: Schema.String,
  /** `allowed`, `allowed_warning` or `rejected` (spent). */
  status: Schema.String,
  /** How much of the window is used, from 0 to 1, when reported. */
  utilization: Schema.optional(Schema.Number),
  /** When the window resets, when reported. */
  resetsAt: Schema.optional(Schema.DateTimeUtc)
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
  Complete,
  ToolInputDelta,
  TaskStarted,
  TaskProgress,
  TaskEnded,
  HookStarted,
  HookFinished,
  McpServerStatus,
  RateLimit
])
/**
 * The type of {@link ChatEvent}: discriminate on `_tag`.
 *
 * @category models
 * @since 1.0.0
 */
export type ChatEvent = typeof ChatEvent.Type
