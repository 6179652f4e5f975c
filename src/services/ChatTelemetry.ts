/**
 * What the chat clients report to Effect's tracer and metrics. Every provider traces a `chat`,
 * `chatStream` or `ask` call as a span holding one span per model turn (an HTTP request, or a run
 * of the `claude` CLI) and one span per call of your tools — also the calls the CLI makes through
 * the MCP bridge or the Agent SDK's in-process server. Built-in Claude Code tools the CLI used
 * appear as events of the turn span. Attribute names follow the OpenTelemetry GenAI semantic
 * conventions; prompts, answers and tool arguments are recorded only with {@link RecordContent}.
 *
 * Export them with `@effect/opentelemetry` (see `examples/telemetry.ts`).
 *
 * @summary The spans, attributes and metrics every chat client reports (OpenTelemetry GenAI conventions).
 * @group Telemetry
 * @since 0.1.0
 * @module
 */
import * as Context from "effect/Context"
import * as Metric from "effect/Metric"

/**
 * Span attribute and metric label names (OpenTelemetry GenAI semantic conventions where one exists).
 *
 * @category models
 * @since 1.0.0
 */
export const Attributes = {
  /** `chat` on a model turn, `execute_tool` on a tool call, `invoke_agent` on `chat`/`ask`. */
  operationName: "gen_ai.operation.name",
  /** The vendor: `anthropic`, `openai`, `gcp.gemini`, or the provider's own name. */
  providerName: "gen_ai.provider.name",
  /** The older name of `gen_ai.provider.name`, still read by many backends. */
  system: "gen_ai.system",
  /** The model asked for, when configured. */
  requestModel: "gen_ai.request.model",
  /** The model that answered, when the provider says (the CLI's init line does). */
  responseModel: "gen_ai.response.model",
  /** Input tokens of the turn (cache reads and writes included). */
  inputTokens: "gen_ai.usage.input_tokens",
  /** Output tokens of the turn. */
  outputTokens: "gen_ai.usage.output_tokens",
  /** Why the model stopped, as the provider reports it. */
  finishReasons: "gen_ai.response.finish_reasons",
  /** A tool's name. */
  toolName: "gen_ai.tool.name",
  /** The id of one tool call. */
  toolCallId: "gen_ai.tool.call.id",
  /** `function` for your tools, `builtin` for Claude Code's own. */
  toolType: "gen_ai.tool.type",
  /** The token kind on the token metric: `input` or `output`. */
  tokenType: "gen_ai.token.type",
  /** The error class of a failed operation or tool call. */
  errorType: "error.type",
  /** Cost of the turn in US dollars, when the provider reports it (the `claude` CLI does). */
  costUsd: "chat.cost_usd",
  /** This library's provider name (`anthropic`, `openai`, `gemini`, `claude-local`, `claude-agent`, `scripted`, …). */
  provider: "chat.provider",
  /** With {@link RecordContent}: the user message, as JSON text. */
  inputMessages: "gen_ai.input.messages",
  /** With {@link RecordContent}: the answer, as JSON text. */
  outputMessages: "gen_ai.output.messages",
  /** With {@link RecordContent}: a tool call's arguments, as JSON text. */
  toolCallArguments: "gen_ai.tool.call.arguments",
  /** With {@link RecordContent}: a tool call's result text. */
  toolCallResult: "gen_ai.tool.call.result",
  /** A Claude plan rate-limit window on {@link rateLimitUtilization}: `five_hour`, `seven_day`, …. Since 2.1.0. */
  rateLimitWindow: "chat.rate_limit.window"
} as const

/**
 * Opt-in: record prompts, answers, tool arguments and tool results on spans. Off by default —
 * they may hold personal data or secrets your tools return. Turn on with
 * `Effect.provideService(ChatTelemetry.RecordContent, true)` or `Layer.succeed(RecordContent, true)`.
 *
 * @category services
 * @since 1.0.0
 */
export const RecordContent: Context.Reference<boolean> = Context.Reference<boolean>(
  "effect-chat-bridge/ChatTelemetry/RecordContent",
  { defaultValue: () => false }
)

// Token counts per turn range from a handful to a few hundred thousand.
const tokenBoundaries = Metric.exponentialBoundaries({ start: 1, factor: 4, count: 12 })
// Seconds: 10 ms to about 10 minutes (the CLI's default run bound).
const secondsBoundaries = Metric.exponentialBoundaries({ start: 0.01, factor: 2, count: 17 })

/**
 * Tokens per model turn, labelled `gen_ai.token.type` (`input`/`output`), `chat.provider` and
 * `gen_ai.request.model` when known (the GenAI `gen_ai.client.token.usage` histogram).
 *
 * @category utils
 * @since 1.0.0
 */
export const tokenUsage = Metric.histogram("gen_ai.client.token.usage", {
  boundaries: tokenBoundaries,
  description: "Tokens used per model turn, by gen_ai.token.type"
})

/**
 * Cost in US dollars, summed over turns; only providers that report a cost add to it.
 *
 * @category utils
 * @since 1.0.0
 */
export const costUsd = Metric.counter("chat.cost_usd", {
  description: "Cost of model turns in US dollars, as reported by the provider",
  incremental: true
})

/**
 * Seconds per model turn (an HTTP request with its retries, or a whole CLI run), labelled `chat.provider`; failed turns carry `error.type`.
 *
 * @category utils
 * @since 1.0.0
 */
export const turnDuration = Metric.histogram("gen_ai.client.operation.duration", {
  boundaries: secondsBoundaries,
  description: "Seconds per model turn"
})

/**
 * Seconds per tool call, labelled `gen_ai.tool.name` and `chat.provider`.
 *
 * @category utils
 * @since 1.0.0
 */
export const toolDuration = Metric.histogram("chat.tool.duration", {
  boundaries: secondsBoundaries,
  description: "Seconds per call of an in-process tool"
})

/**
 * Tool calls that gave an error result, labelled `gen_ai.tool.name`, `chat.provider` and `error.type`.
 *
 * @category utils
 * @since 1.0.0
 */
export const toolErrors = Metric.counter("chat.tool.errors", {
  description: "Tool calls that returned an error result",
  incremental: true
})

/**
 * The used fraction (0 to 1) of each Claude plan rate-limit window as the CLI last reported it,
 * labelled `chat.rate_limit.window` and `chat.provider`. Only a CLI logged in to a subscription
 * reports windows (not one using an API key).
 *
 * @category utils
 * @since 2.1.0
 */
export const rateLimitUtilization = Metric.gauge("chat.rate_limit.utilization", {
  description: "Used fraction of a Claude plan rate-limit window, as last reported"
})
