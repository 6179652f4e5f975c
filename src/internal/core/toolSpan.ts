/**
 * The span and metrics of one tool call (`Tool.executeTool`): the only telemetry the `Tool`
 * service runs itself. Apart from the providers' telemetry (`internal/chat/telemetry.ts`) so that
 * `services/Tool.ts` depends on nothing but this folder.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import { Attributes as A, RecordContent, toolDuration, toolErrors } from "../../services/ChatTelemetry.ts"

/** What the tool span reads from a tool result. */
export interface ToolOutcome {
  readonly content: string
  readonly isError: boolean
}

/**
 * One tool call as the `Tool.executeTool` span (GenAI `execute_tool` attributes), timed into the
 * tool-duration metric; an error result counts in the tool-error metric under `errorType(result)`.
 * Arguments and result go on the span only with `RecordContent`.
 */
export const toolSpan = <A extends ToolOutcome, R>(
  call: { readonly id: string; readonly name: string; readonly arguments: unknown },
  effect: Effect.Effect<A, never, R>,
  errorType: (result: A) => string
): Effect.Effect<A, never, R> =>
  Effect.flatMap(Clock.currentTimeNanos, (start) =>
    effect.pipe(
      Effect.tap((result) =>
        Effect.flatMap(Clock.currentTimeNanos, (end) => {
          const duration = Metric.update(
            Metric.withAttributes(toolDuration, { [A.toolName]: call.name }),
            Number(end - start) / 1e9
          )
          if (!result.isError) return duration
          const type = errorType(result)
          return Effect.all([
            duration,
            Effect.annotateCurrentSpan(A.errorType, type),
            Metric.update(Metric.withAttributes(toolErrors, { [A.toolName]: call.name, [A.errorType]: type }), 1)
          ], { discard: true })
        })
      ),
      Effect.tap((result) =>
        Effect.flatMap(Effect.service(RecordContent), (on) =>
          on
            ? Effect.annotateCurrentSpan({
              [A.toolCallArguments]: typeof call.arguments === "string"
                ? call.arguments
                : JSON.stringify(call.arguments ?? {}),
              [A.toolCallResult]: result.content
            })
            : Effect.void)
      ),
      Effect.withSpan("Tool.executeTool", {
        attributes: {
          [A.operationName]: "execute_tool",
          [A.toolName]: call.name,
          [A.toolCallId]: call.id,
          [A.toolType]: "function",
          // The attribute this span carried before the GenAI names; kept for existing queries.
          "tool.name": call.name
        }
      })
    ))
