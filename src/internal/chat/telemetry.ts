/**
 * Spans and metrics shared by every provider: the turn span around one model turn, the
 * attributes of the `chat`/`ask` span, and the run slot that lets tool calls arriving from
 * outside the chat fiber (the MCP bridge, the Agent SDK's tool server) join the run's trace.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Tracer from "effect/Tracer"
import {
  Attributes as A,
  costUsd,
  rateLimitUtilization,
  RecordContent,
  tokenUsage,
  toolErrors,
  turnDuration
} from "../../services/ChatTelemetry.ts"
import type { Usage } from "../../services/Usage.ts"

/** The GenAI `gen_ai.provider.name` for a provider of this library. */
export const vendorOf = (provider: string): string => {
  switch (provider) {
    case "claude-local":
    case "claude-agent":
      return "anthropic"
    case "gemini":
      return "gcp.gemini"
    default:
      return provider
  }
}

/** Who made a turn: the provider and, when configured, the model. */
export interface TurnInfo {
  readonly provider: string
  readonly model?: string | undefined
}

const baseAttributes = (info: TurnInfo, operation: string): Record<string, unknown> => ({
  [A.operationName]: operation,
  [A.providerName]: vendorOf(info.provider),
  [A.system]: vendorOf(info.provider),
  [A.provider]: info.provider,
  ...(info.model === undefined ? {} : { [A.requestModel]: info.model })
})

/** Attributes of the `chat`/`chatStream`/`ask` span. */
export const clientSpanAttributes = (info: TurnInfo): Record<string, unknown> => baseAttributes(info, "invoke_agent")

/** Adds the user message to the current span, when content recording is on. */
export const recordPrompt = (prompt: string): Effect.Effect<void> =>
  Effect.flatMap(Effect.service(RecordContent), (on) =>
    on
      ? Effect.annotateCurrentSpan(
        A.inputMessages,
        JSON.stringify([{ role: "user", parts: [{ type: "text", content: prompt }] }])
      )
      : Effect.void)

/** Adds the answer to the current span, when content recording is on. */
export const recordAnswer = (answer: string): Effect.Effect<void> =>
  Effect.flatMap(Effect.service(RecordContent), (on) =>
    on
      ? Effect.annotateCurrentSpan(
        A.outputMessages,
        JSON.stringify([{ role: "assistant", parts: [{ type: "text", content: answer }] }])
      )
      : Effect.void)

/**
 * What a client's turns share: the span's name and attributes and the metrics already tagged with
 * its provider and model. Built once per {@link TurnInfo} (each client keeps one), because a metric
 * with attributes is a new key whose hash is computed on every `Metric.withAttributes`, on the path
 * of every turn.
 */
interface Prepared {
  readonly spanName: string
  readonly attributes: Record<string, unknown>
  readonly tokens: { readonly input: typeof tokenUsage; readonly output: typeof tokenUsage }
  readonly cost: typeof costUsd
  readonly duration: typeof turnDuration
}

const prepared = new WeakMap<TurnInfo, Prepared>()

const prepare = (info: TurnInfo): Prepared => {
  const known = prepared.get(info)
  if (known !== undefined) return known
  const tokens = (type: string) =>
    Metric.withAttributes(tokenUsage, {
      [A.provider]: info.provider,
      [A.tokenType]: type,
      ...(info.model === undefined ? {} : { [A.requestModel]: info.model })
    })
  const made: Prepared = {
    spanName: info.model === undefined ? "chat" : `chat ${info.model}`,
    attributes: baseAttributes(info, "chat"),
    tokens: { input: tokens("input"), output: tokens("output") },
    cost: Metric.withAttributes(costUsd, { [A.provider]: info.provider }),
    duration: Metric.withAttributes(turnDuration, { [A.provider]: info.provider, [A.operationName]: "chat" })
  }
  prepared.set(info, made)
  return made
}

/** Puts usage on `span` (when there is one) and into the token and cost metrics, in place. */
const applyUsage = (
  turn: Prepared,
  span: Tracer.Span | undefined,
  usage: Usage,
  context: Context.Context<never>
) => {
  if (usage.known) {
    span?.attribute(A.inputTokens, usage.inputTokens)
    span?.attribute(A.outputTokens, usage.outputTokens)
    turn.tokens.input.updateUnsafe(usage.inputTokens, context)
    turn.tokens.output.updateUnsafe(usage.outputTokens, context)
  }
  if (usage.costUsd !== undefined) {
    span?.attribute(A.costUsd, usage.costUsd)
    turn.cost.updateUnsafe(usage.costUsd, context)
  }
}

/**
 * Puts a turn's usage on the current span (the turn span) and into the token and cost metrics.
 * Unknown usage adds nothing: a zero would read as a real count.
 */
export const recordUsage = (info: TurnInfo, usage: Usage): Effect.Effect<void> => {
  if (!usage.known && usage.costUsd === undefined) return Effect.void
  return Effect.withFiber<void>((fiber) => {
    const parent = Context.getOption(fiber.context, Tracer.ParentSpan)
    const span = Option.isSome(parent) && parent.value._tag === "Span" ? parent.value : undefined
    applyUsage(prepare(info), span, usage, fiber.context)
    return Effect.void
  })
}

/** Puts the finish reason on the current span. */
export const recordFinishReason = (reason: string | undefined): Effect.Effect<void> =>
  reason === undefined || reason === "" ? Effect.void : Effect.annotateCurrentSpan(A.finishReasons, [reason])

const errorTypeOf = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.findErrorOption(cause)
  if (Option.isSome(failure)) {
    const f = failure.value
    if (typeof f === "object" && f !== null && "_tag" in f) {
      // An error with a tagged `reason` (ProviderError, FallbackError, …) is `<tag>:<reason tag>`.
      const reason = "reason" in f && typeof f.reason === "object" && f.reason !== null && "_tag" in f.reason
        ? `:${String(f.reason._tag)}`
        : ""
      return `${String(f._tag)}${reason}`
    }
  }
  return Cause.hasInterruptsOnly(cause) ? "interrupted" : "_OTHER"
}

/**
 * One model turn as a span named `chat <model>` (GenAI style), timed into the turn-duration metric
 * (with `error.type` when it failed). `usageOf` reads the result's usage for the span and metrics;
 * providers that report usage elsewhere (the CLI's result line) pass nothing and call
 * {@link recordUsage} themselves inside the span.
 */
export const turnSpan = <A, E, R>(
  info: TurnInfo,
  effect: Effect.Effect<A, E, R>,
  usageOf?: (a: A) => { readonly usage: Usage; readonly finishReason?: string | undefined }
): Effect.Effect<A, E, R> => {
  const turn = prepare(info)
  // One step at the end records everything (span attributes, usage, duration): this wraps every
  // model turn, and each extra effect step shows in the HTTP providers' per-request overhead.
  const finish = (span: Tracer.Span, exit: Exit.Exit<A, E>) =>
    Effect.withFiber<void>((fiber) => {
      const now = fiber.getRef(Clock.Clock).currentTimeNanosUnsafe()
      if (Exit.isSuccess(exit) && usageOf !== undefined) {
        const { finishReason, usage } = usageOf(exit.value)
        applyUsage(turn, span, usage, fiber.context)
        if (finishReason !== undefined && finishReason !== "") span.attribute(A.finishReasons, [finishReason])
      }
      durationOf(exit).updateUnsafe(Number(now - span.status.startTime) / 1e9, fiber.context)
      return Effect.void
    })
  const durationOf = (exit: Exit.Exit<A, E>) =>
    Exit.isSuccess(exit)
      ? turn.duration
      : Metric.withAttributes(turn.duration, { [A.errorType]: errorTypeOf(exit.cause) })

  return Effect.useSpan(
    turn.spanName,
    { kind: "client", attributes: turn.attributes },
    (span) => Effect.withParentSpan(Effect.onExit(effect, (exit) => finish(span, exit)), span)
  )
}

/** A built-in tool the CLI ran, seen in its output. */
export interface BuiltinToolUse {
  readonly id: string
  readonly name: string
  readonly isError: boolean | undefined
}

/** Adds one `gen_ai.tool.use` event per tool the CLI ran (not the bridge's) to the current span. */
export const recordToolUses = (uses: ReadonlyArray<BuiltinToolUse>): Effect.Effect<void> =>
  uses.length === 0 ? Effect.void : Effect.flatMap(Effect.option(Effect.currentSpan), (span) =>
    Option.match(span, {
      onNone: () => Effect.void,
      onSome: (s) =>
        Effect.map(Clock.currentTimeNanos, (now) => {
          for (const use of uses) {
            s.event("gen_ai.tool.use", now, {
              [A.toolName]: use.name,
              [A.toolCallId]: use.id,
              [A.toolType]: "builtin",
              ...(use.isError === undefined ? {} : { "gen_ai.tool.is_error": use.isError })
            })
          }
        })
    }))

/**
 * Counts bridge tool calls whose result the CLI replaced by its transport error in the tool-error
 * metric (`error.type` `BridgeTransportError`), logs them, and marks the current span: the handler
 * may never have seen them, so its own span and count do not show them.
 */
export const recordLostToolResults = (
  lost: ReadonlyArray<{ readonly id: string; readonly name: string; readonly error: string }>
): Effect.Effect<void> =>
  Effect.all([
    Effect.forEach(lost, (l) =>
      Metric.update(
        Metric.withAttributes(toolErrors, { [A.toolName]: l.name, [A.errorType]: "BridgeTransportError" }),
        1
      ), { discard: true }),
    Effect.annotateCurrentSpan(A.errorType, "BridgeTransportError"),
    Effect.logWarning("claude CLI lost bridge tool calls to its connection").pipe(
      Effect.annotateLogs({
        tools: lost.map((l) => l.name).join(","),
        toolCallIds: lost.map((l) => l.id).join(","),
        error: lost[0]!.error
      })
    )
  ], { discard: true })

/** What a tool call arriving from outside the chat fiber needs to join the run's trace. */
interface RunContext {
  readonly span: Tracer.AnySpan
  readonly attributes: Readonly<Record<string, string>>
}

/**
 * Where a server that runs tool calls outside the chat fiber (the MCP bridge, the Agent SDK's tool
 * server) finds the run those calls belong to. The run marks itself with `within`; the server
 * wraps each call with `apply`, parenting its span to the run's span and giving it the run's
 * metric attributes. `within` calls on one slot must not overlap (the last one wins): use one slot
 * per run whose turns are serialised — one per client of the Agent SDK, one per bridge run.
 */
export interface RunSlot {
  readonly within: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  readonly apply: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

export const makeRunSlot = (): RunSlot => {
  let current: RunContext | undefined
  return {
    within: (effect) =>
      Effect.flatMap(
        Effect.all([Effect.option(Effect.currentSpan), Effect.service(Metric.CurrentMetricAttributes)]),
        ([span, attributes]) =>
          Option.isNone(span) ? effect : Effect.suspend(() => {
            const before = current
            current = { span: span.value, attributes }
            return Effect.ensuring(
              effect,
              Effect.sync(() => {
                current = before
              })
            )
          })
      ),
    apply: (effect) =>
      Effect.suspend(() => {
        const run = current
        return run === undefined
          ? effect
          : effect.pipe(
            Effect.withParentSpan(run.span),
            Effect.provideService(Metric.CurrentMetricAttributes, run.attributes)
          )
      })
  }
}

/** Sets the utilisation gauge of each reported plan window (the last report of a window wins). */
export const recordRateLimits = (
  windows: ReadonlyArray<{ readonly window: string; readonly utilization?: number | undefined }>
): Effect.Effect<void> =>
  Effect.forEach(windows, (w) =>
    w.utilization === undefined
      ? Effect.void
      : Metric.update(Metric.withAttributes(rateLimitUtilization, { [A.rateLimitWindow]: w.window }), w.utilization), {
    discard: true
  })
