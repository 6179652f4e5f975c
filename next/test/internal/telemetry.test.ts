import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Tracer from "effect/Tracer"
import * as ChatTelemetry from "../../src/services/ChatTelemetry.js"
import * as Tool from "../../src/services/Tool.js"

const A = ChatTelemetry.Attributes

const recorder = () => {
  const spans: Array<Tracer.Span> = []
  const tracer = Tracer.make({
    span(options) {
      const span = Tracer.nativeTracer.span(options)
      spans.push(span)
      return span
    }
  })
  return { spans, tracer }
}

const add = Tool.make("add", {
  description: "Adds two numbers",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

describe("toolSpan", () => {
  it.effect("a tool call is a Tool.executeTool span with the GenAI attributes; errors carry error.type", () =>
    Effect.gen(function*() {
      const { spans, tracer } = recorder()
      const set = yield* Tool.validate([add])
      yield* Tool.executeTool(set, new Tool.ToolCall({ id: "c1", name: "add", arguments: { a: 1, b: 2 } })).pipe(
        Effect.withTracer(tracer)
      )
      yield* Tool.executeTool(set, new Tool.ToolCall({ id: "c2", name: "nope", arguments: {} })).pipe(
        Effect.withTracer(tracer)
      )
      const [ok, missing] = spans.filter((s) => s.name === "Tool.executeTool")
      expect(ok!.attributes.get(A.operationName)).toBe("execute_tool")
      expect(ok!.attributes.get(A.toolName)).toBe("add")
      expect(ok!.attributes.get(A.toolCallId)).toBe("c1")
      expect(ok!.attributes.get(A.errorType)).toBeUndefined()
      // Without RecordContent, no arguments or results on the span.
      expect(ok!.attributes.get(A.toolCallArguments)).toBeUndefined()
      expect(missing!.attributes.get(A.errorType)).toBe("ToolNotFound")
    }))

  it.effect("RecordContent puts the arguments (object or JSON text) and the result on the span", () =>
    Effect.gen(function*() {
      const { spans, tracer } = recorder()
      const set = yield* Tool.validate([add])
      for (const args of [{ a: 1, b: 2 }, "{\"a\":2,\"b\":2}", undefined]) {
        yield* Tool.executeTool(set, new Tool.ToolCall({ id: "c", name: "add", arguments: args })).pipe(
          Effect.withTracer(tracer),
          Effect.provideService(ChatTelemetry.RecordContent, true)
        )
      }
      const tools = spans.filter((s) => s.name === "Tool.executeTool")
      expect(tools.map((s) => s.attributes.get(A.toolCallArguments))).toEqual([
        "{\"a\":1,\"b\":2}",
        "{\"a\":2,\"b\":2}",
        "{}"
      ])
      expect(tools[0]!.attributes.get(A.toolCallResult)).toBe("3")
      expect(tools[2]!.attributes.get(A.errorType)).toBe("InvalidArguments")
    }))
})
