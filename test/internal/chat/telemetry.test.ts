import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Redacted from "effect/Redacted"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Telemetry from "../../../src/internal/chat/telemetry.ts"
import { parseRun } from "../../../src/internal/claude/streamJson.ts"
import * as ClaudeApi from "../../../src/layers/ClaudeApi.ts"
import * as Gemini from "../../../src/layers/Gemini.ts"
import * as NodeMcpBridge from "../../../src/layers/NodeMcpBridge.ts"
import * as OpenAi from "../../../src/layers/OpenAi.ts"
import * as Scripted from "../../../src/layers/Scripted.ts"
import { Usage } from "../../../src/services/ChatClient.ts"
import * as ChatTelemetry from "../../../src/services/ChatTelemetry.ts"
import * as Tool from "../../../src/services/Tool.ts"
import { add, broken, HttpLive, SecretKey } from "../../layers/httpProviderSupport.ts"
import { connectClient } from "../../layers/mcpBridgeSupport.ts"
import * as FakeGemini from "../../support/FakeGemini.ts"
import * as Fake from "../../support/FakeMessagesApi.ts"
import * as FakeOpenAi from "../../support/FakeOpenAi.ts"
import { makeRecorder, type RecordedSpan, type Recorder } from "../../support/recordingTracer.ts"

const A = ChatTelemetry.Attributes

/** Every tool span has `root` among its ancestors; returns the tool spans. */
const toolSpansUnder = (recorder: Recorder, root: RecordedSpan) => {
  const tools = recorder.find("Tool.executeTool")
  for (const span of tools) expect(recorder.ancestors(span)).toContain(root)
  return tools
}

const turnSpans = (recorder: Recorder) => recorder.find((s) => s.attributes.get(A.operationName) === "chat")

const histogramSum = (metric: Metric.Histogram<number>) => Effect.map(Metric.value(metric), (s) => s.sum)
const counterCount = (metric: Metric.Counter<number>) => Effect.map(Metric.value(metric), (s) => s.count)

describe("telemetry on Scripted", () => {
  it.effect("chat span > turn spans (with tokens) > tool spans (with GenAI attributes); metrics by provider and tool", () =>
    Effect.gen(function*() {
      const recorder = makeRecorder()
      const tokens = (type: string) =>
        Metric.withAttributes(ChatTelemetry.tokenUsage, { [A.provider]: "scripted", [A.tokenType]: type })
      // A metric's key is its attributes, its own and the fiber's (`chat.provider`), in any order.
      const errors = Metric.withAttributes(ChatTelemetry.toolErrors, {
        [A.toolName]: "broken",
        [A.errorType]: "HandlerFailed",
        [A.provider]: "scripted"
      })
      const addDuration = Metric.withAttributes(ChatTelemetry.toolDuration, {
        [A.toolName]: "add",
        [A.provider]: "scripted"
      })
      const inputBefore = yield* histogramSum(tokens("input"))
      const errorsBefore = yield* counterCount(errors)
      const addCallsBefore = yield* Effect.map(Metric.value(addDuration), (s) => s.count)

      yield* Effect.gen(function*() {
        const client = yield* Scripted.make({
          script: [
            {
              _tag: "Reply",
              text: "",
              toolCalls: [{ id: "c1", name: "add", arguments: { a: 2, b: 2 } }, { id: "c2", name: "broken" }],
              usage: Usage.of({ inputTokens: 100, outputTokens: 7 })
            },
            Scripted.text("4, and the network is down", Usage.of({ inputTokens: 120, outputTokens: 9 }))
          ]
        })
        yield* client.setTools([add, broken])
        expect(yield* client.chat("what is 2 + 2?")).toBe("4, and the network is down")
      }).pipe(Effect.withTracer(recorder.tracer))

      const [chat] = recorder.find("ChatClient.chat")
      expect(chat).toBeDefined()
      expect(chat!.attributes.get(A.providerName)).toBe("scripted")
      expect(chat!.attributes.get(A.operationName)).toBe("invoke_agent")

      const turns = turnSpans(recorder)
      expect(turns).toHaveLength(2)
      for (const turn of turns) expect(recorder.ancestors(turn)).toContain(chat)
      expect(turns.map((t) => [t.attributes.get(A.inputTokens), t.attributes.get(A.outputTokens)])).toEqual([
        [100, 7],
        [120, 9]
      ])
      expect(turns[0]!.attributes.get(A.finishReasons)).toEqual(["tool_calls"])

      const tools = toolSpansUnder(recorder, chat!)
      expect(tools.map((t) => [t.attributes.get(A.toolName), t.attributes.get(A.toolCallId)])).toEqual([
        ["add", "c1"],
        ["broken", "c2"]
      ])
      expect(tools[0]!.attributes.get(A.operationName)).toBe("execute_tool")
      expect(tools[1]!.attributes.get(A.errorType)).toBe("HandlerFailed")
      // Without the opt-in, neither the prompt nor tool arguments nor results are on any span.
      expect(recorder.dump()).not.toContain("what is 2 + 2")
      expect(recorder.dump()).not.toContain("no route to host")

      expect((yield* histogramSum(tokens("input"))) - inputBefore).toBe(220)
      expect((yield* counterCount(errors)) - errorsBefore).toBe(1)
      expect((yield* Effect.map(Metric.value(addDuration), (s) => s.count)) - addCallsBefore).toBe(1)
    }))

  it.effect("chatStream and ask have the same shape; RecordContent opts into prompts, answers and tool I/O", () =>
    Effect.gen(function*() {
      const recorder = makeRecorder()
      yield* Effect.gen(function*() {
        const client = yield* Scripted.make({
          script: [
            Scripted.toolCalls({ name: "add", arguments: { a: 1, b: 2 } }),
            Scripted.text("three"),
            Scripted.structured({ n: 3 })
          ]
        })
        yield* client.setTools([add])
        yield* Stream.runDrain(client.chatStream("one plus two?"))
        expect(yield* client.ask("as a number", Schema.Struct({ n: Schema.Number }))).toEqual({ n: 3 })
      }).pipe(Effect.provideService(ChatTelemetry.RecordContent, true), Effect.withTracer(recorder.tracer))

      const [stream] = recorder.find("ChatClient.chatStream")
      const [ask] = recorder.find("ChatClient.ask")
      const [tool] = toolSpansUnder(recorder, stream!)
      expect(tool!.attributes.get(A.toolCallArguments)).toBe("{\"a\":1,\"b\":2}")
      expect(tool!.attributes.get(A.toolCallResult)).toBe("3")
      const turns = turnSpans(recorder)
      expect(turns.filter((t) => recorder.ancestors(t).includes(stream!))).toHaveLength(2)
      expect(turns.filter((t) => recorder.ancestors(t).includes(ask!))).toHaveLength(1)
      expect(recorder.dump()).toContain("one plus two?")
    }))

  it.effect("a failed turn is measured with its error type", () =>
    Effect.gen(function*() {
      const failed = Metric.withAttributes(ChatTelemetry.turnDuration, {
        [A.provider]: "scripted",
        [A.operationName]: "chat",
        [A.errorType]: "ProviderError:InternalProviderError"
      })
      const before = yield* Effect.map(Metric.value(failed), (s) => s.count)
      const client = yield* Scripted.make({ script: [Scripted.fail(Scripted.httpError(503))] })
      yield* Effect.flip(client.chat("hello"))
      expect((yield* Effect.map(Metric.value(failed), (s) => s.count)) - before).toBe(1)
    }))

  it.effect("an unknown tool is an error span of type ToolNotFound", () =>
    Effect.gen(function*() {
      const recorder = makeRecorder()
      const set = yield* Tool.validate([add])
      const result = yield* Tool.executeTool(set, new Tool.ToolCall({ id: "x", name: "nope", arguments: {} })).pipe(
        Effect.withTracer(recorder.tracer)
      )
      expect(result.isError).toBe(true)
      expect(recorder.find("Tool.executeTool")[0]!.attributes.get(A.errorType)).toBe("ToolNotFound")
    }))
})

describe("telemetry on an HTTP provider (ClaudeApi against the fake Messages API)", () => {
  it.live("turn spans carry model, tokens and stop reason; no span holds the API key", () =>
    Effect.gen(function*() {
      const recorder = makeRecorder()
      const api = yield* Fake.make((req) => {
        const results = Fake.toolResults(req)
        if (results.length === 0) {
          return {
            toolUses: [{ id: "toolu_1", name: "add", input: { a: 2, b: 40 } }],
            usage: { input_tokens: 31, output_tokens: 5 }
          }
        }
        return { text: `The sum is ${results[0]!.content}.`, usage: { input_tokens: 40, output_tokens: 6 } }
      })
      yield* Effect.gen(function*() {
        const client = yield* ClaudeApi.make({
          apiKey: Redacted.make(SecretKey),
          model: "claude-test",
          baseUrl: api.url
        })
        yield* client.setTools([add])
        expect(yield* client.chat("What is 2 + 40?")).toBe("The sum is 42.")
      }).pipe(Effect.provide(Layer.merge(HttpLive, recorder.layer)))

      const [chat] = recorder.find("ChatClient.chat")
      const turns = turnSpans(recorder)
      expect(turns.map((t) => t.name)).toEqual(["chat claude-test", "chat claude-test"])
      for (const turn of turns) {
        expect(recorder.ancestors(turn)).toContain(chat)
        expect(turn.attributes.get(A.providerName)).toBe("anthropic")
        expect(turn.attributes.get(A.requestModel)).toBe("claude-test")
        expect(turn.kind).toBe("client")
      }
      expect(turns.map((t) => [t.attributes.get(A.inputTokens), t.attributes.get(A.outputTokens)])).toEqual([
        [31, 5],
        [40, 6]
      ])
      expect(turns.map((t) => t.attributes.get(A.finishReasons))).toEqual([["tool_use"], ["end_turn"]])
      const [tool] = toolSpansUnder(recorder, chat!)
      expect(tool!.attributes.get(A.toolCallId)).toBe("toolu_1")
      // The HTTP client's own spans sit under the turn spans too. Effect 4 names them after the
      // method alone (`POST`; v3: `http.client POST`), so they are found by their HTTP attribute.
      const http = recorder.find((s) => s.attributes.has("http.request.method"))
      expect(http.length).toBeGreaterThanOrEqual(2)
      expect(http.map((s) => s.name)).toContain("POST")
      for (const span of http) expect(recorder.ancestors(span).some((a) => turns.includes(a))).toBe(true)
      expect(recorder.dump()).not.toContain(SecretKey)
    }))
})

describe("telemetry helpers", () => {
  it("names the vendor after the GenAI conventions", () => {
    expect(Telemetry.vendorOf("claude-local")).toBe("anthropic")
    expect(Telemetry.vendorOf("claude-agent")).toBe("anthropic")
    expect(Telemetry.vendorOf("gemini")).toBe("gcp.gemini")
    expect(Telemetry.vendorOf("openai")).toBe("openai")
  })

  it.effect("a run slot parents calls to the run's span only while the run lasts", () =>
    Effect.gen(function*() {
      const recorder = makeRecorder()
      const slot = Telemetry.makeRunSlot()
      const call = slot.apply(Effect.withSpan(Effect.void, "call"))
      yield* Effect.gen(function*() {
        // No span around: nothing to remember, the run just runs.
        yield* slot.within(Effect.void)
        yield* Effect.withSpan(slot.within(Effect.forkDetach(call).pipe(Effect.flatMap(Fiber.await))), "run")
        yield* Effect.forkDetach(Effect.withSpan(call, "outside")).pipe(Effect.flatMap(Fiber.await))
      }).pipe(Effect.withTracer(recorder.tracer))
      const [run] = recorder.find("run")
      const [inside, outside] = recorder.find("call")
      expect(recorder.ancestors(inside!)).toEqual([run])
      expect(recorder.ancestors(outside!).map((s) => s.name)).toEqual(["outside"])
    }))

  it.effect("usage without counts adds nothing; a cost alone is recorded; tool uses need a span", () =>
    Effect.gen(function*() {
      const recorder = makeRecorder()
      const info = { provider: "claude-local", model: "sonnet" }
      yield* Telemetry.recordToolUses([{ id: "t", name: "Bash", isError: false }])
      yield* Effect.gen(function*() {
        yield* Telemetry.recordUsage(info, Usage.empty)
        yield* Telemetry.recordUsage(info, new Usage({ ...Usage.empty, costUsd: 0.25 }))
        yield* Telemetry.recordToolUses([])
        yield* Telemetry.recordToolUses([{ id: "t", name: "Bash", isError: true }])
        yield* Telemetry.recordFinishReason("")
      }).pipe(Effect.withSpan("turn"), Effect.withTracer(recorder.tracer))
      const [turn] = recorder.find("turn")
      expect(Object.fromEntries(turn!.attributes)).toEqual({ [A.costUsd]: 0.25 })
      expect(turn!.events).toEqual([{
        name: "gen_ai.tool.use",
        attributes: { [A.toolName]: "Bash", [A.toolCallId]: "t", [A.toolType]: "builtin", "gen_ai.tool.is_error": true }
      }])
    }))

  it.effect("a turn failing with something untagged, or interrupted, still ends its span and is measured", () =>
    Effect.gen(function*() {
      const recorder = makeRecorder()
      const info = { provider: "odd-provider" }
      const measured = (type: string) =>
        Metric.withAttributes(ChatTelemetry.turnDuration, {
          [A.provider]: "odd-provider",
          [A.operationName]: "chat",
          [A.errorType]: type
        })
      yield* Effect.gen(function*() {
        yield* Effect.flip(Telemetry.turnSpan(info, Effect.fail("plain string")))
        yield* Effect.exit(Telemetry.turnSpan(info, Effect.interrupt))
      }).pipe(Effect.withTracer(recorder.tracer))
      expect(recorder.find("chat").every((s) => s.ended)).toBe(true)
      expect((yield* Metric.value(measured("_OTHER"))).count).toBe(1)
      expect((yield* Metric.value(measured("interrupted"))).count).toBe(1)
    }))

  it("the CLI's tool uses are collected with their error flag", () => {
    const lines = [
      { type: "assistant", message: { content: [{ type: "tool_use", id: "a", name: "Bash" }, { type: "text" }] } },
      { type: "user", message: { content: [{ type: "tool_result", tool_use_id: "a", is_error: true }] } },
      { type: "assistant", message: { content: [{ type: "tool_use", id: "b", name: "Glob" }] } },
      { type: "user", message: { content: "plain" } },
      { type: "result", result: "done" }
    ].map((l) => JSON.stringify(l)).join("\n")
    expect(parseRun(`${lines}\nnot json\n`, "mcp__gtb__").toolUses).toEqual([
      { id: "a", name: "Bash", isError: true },
      { id: "b", name: "Glob", isError: undefined }
    ])
  })
})

describe("telemetry on OpenAI and Gemini (against their fakes)", () => {
  const check = (recorder: Recorder, vendor: string, finish: ReadonlyArray<unknown>) => {
    const [chat] = recorder.find("ChatClient.chat")
    const turns = turnSpans(recorder)
    expect(turns).toHaveLength(2)
    for (const turn of turns) {
      expect(recorder.ancestors(turn)).toContain(chat)
      expect(turn.attributes.get(A.providerName)).toBe(vendor)
    }
    expect(turns.map((t) => [t.attributes.get(A.inputTokens), t.attributes.get(A.outputTokens)])).toEqual([
      [21, 4],
      [30, 5]
    ])
    expect(turns.map((t) => t.attributes.get(A.finishReasons))).toEqual(finish)
    expect(toolSpansUnder(recorder, chat!)).toHaveLength(1)
    expect(recorder.dump()).not.toContain(SecretKey)
  }

  it.live("OpenAI", () =>
    Effect.gen(function*() {
      const recorder = makeRecorder()
      const api = yield* FakeOpenAi.make((_req, index) =>
        index === 0
          ? {
            toolCalls: [{ id: "call_1", name: "add", arguments: { a: 1, b: 2 } }],
            usage: { prompt_tokens: 21, completion_tokens: 4 }
          }
          : { text: "3", usage: { prompt_tokens: 30, completion_tokens: 5 } }
      )
      yield* Effect.gen(function*() {
        const client = yield* OpenAi.make({ apiKey: Redacted.make(SecretKey), model: "gpt-test", baseUrl: api.url })
        yield* client.setTools([add])
        expect(yield* client.chat("1 + 2?")).toBe("3")
      }).pipe(Effect.provide(Layer.merge(HttpLive, recorder.layer)))
      check(recorder, "openai", [["tool_calls"], ["stop"]])
    }))

  it.live("Gemini", () =>
    Effect.gen(function*() {
      const recorder = makeRecorder()
      const api = yield* FakeGemini.make((_req, index) =>
        index === 0
          ? {
            functionCalls: [{ name: "add", args: { a: 1, b: 2 } }],
            usage: { promptTokenCount: 21, candidatesTokenCount: 4 }
          }
          : { text: "3", usage: { promptTokenCount: 30, candidatesTokenCount: 5 } }
      )
      yield* Effect.gen(function*() {
        const client = yield* Gemini.make({ apiKey: Redacted.make(SecretKey), model: "gemini-test", baseUrl: api.url })
        yield* client.setTools([add])
        expect(yield* client.chat("1 + 2?")).toBe("3")
      }).pipe(Effect.provide(Layer.merge(HttpLive, recorder.layer)))
      check(recorder, "gcp.gemini", [["STOP"], ["STOP"]])
    }))
})

describe("telemetry on the MCP bridge (the MCP SDK's own client)", () => {
  const bearer = (token: Redacted.Redacted<string>) => `Bearer ${Redacted.value(token)}`
  type McpClient = Effect.Success<ReturnType<typeof connectClient>>
  const callAdd = (client: McpClient) =>
    Effect.promise(() => client.callTool({ name: "add", arguments: { a: 1, b: 2 } }))

  it.live("a run's calls are children of the span it was opened in, or of withRunSpan's; the bridge's own token's stay under the bridge", () =>
    Effect.gen(function*() {
      const recorder = makeRecorder()
      yield* Effect.gen(function*() {
        const bridge = yield* NodeMcpBridge.make({ tools: [add] })
        const run = yield* Effect.withSpan(bridge.openRun, "opened")
        const runClient = yield* connectClient(bridge.url, bearer(run.token))
        const ownClient = yield* connectClient(bridge.url, bearer(bridge.token))
        yield* callAdd(runClient)
        yield* Effect.withSpan(run.withRunSpan(callAdd(runClient)), "turn")
        yield* callAdd(runClient)
        // Another credential's calls are not the run's, whatever span the run is in.
        yield* Effect.withSpan(run.withRunSpan(callAdd(ownClient)), "busy")
        expect(recorder.dump()).not.toContain(Redacted.value(bridge.token))
        expect(recorder.dump()).not.toContain(Redacted.value(run.token))
      }).pipe(Effect.withTracer(recorder.tracer))
      const parents = recorder.find("Tool.executeTool").map((span) => recorder.ancestors(span)[0]?.name)
      expect(parents).toEqual(["opened", "turn", "opened", "McpBridge.make"])
    }))

  it.live("two runs sharing a bridge: concurrent calls are each parented to their own run's span", () =>
    Effect.gen(function*() {
      const recorder = makeRecorder()
      // Both calls are in flight at once: each waits until the other has started.
      const arrived = yield* Ref.make(0)
      const bothIn = yield* Deferred.make<void>()
      const meet = Tool.make("meet", {
        description: "Returns once two calls are in flight",
        parameters: { run: Schema.String },
        handler: ({ run }) =>
          Ref.updateAndGet(arrived, (n) => n + 1).pipe(
            Effect.flatMap((n) => (n === 2 ? Deferred.succeed(bothIn, undefined) : Effect.void)),
            Effect.andThen(Deferred.await(bothIn)),
            Effect.as(run)
          )
      })
      const duration = (run: string) => Metric.withAttributes(ChatTelemetry.toolDuration, { [A.toolName]: "meet", run })
      const before = yield* Effect.all([Metric.value(duration("a")), Metric.value(duration("b"))])
      yield* Effect.gen(function*() {
        const bridge = yield* NodeMcpBridge.make({ tools: [meet] })
        const runA = yield* bridge.openRun
        const runB = yield* bridge.openRun
        const clientA = yield* connectClient(bridge.url, bearer(runA.token))
        const clientB = yield* connectClient(bridge.url, bearer(runB.token))
        // Both runs are inside withRunSpan before either call is made.
        const inA = yield* Deferred.make<void>()
        const inB = yield* Deferred.make<void>()
        const turn = (
          run: typeof runA,
          client: McpClient,
          name: string,
          mine: Deferred.Deferred<void>,
          other: Deferred.Deferred<void>
        ) =>
          run.withRunSpan(
            Deferred.succeed(mine, undefined).pipe(
              Effect.andThen(Deferred.await(other)),
              Effect.andThen(Effect.promise(() => client.callTool({ name: "meet", arguments: { run: name } })))
            )
          ).pipe(
            Effect.withSpan(`run ${name}`),
            Effect.updateService(Metric.CurrentMetricAttributes, (attributes) => ({ ...attributes, run: name }))
          )
        const [a, b] = yield* Effect.all([
          turn(runA, clientA, "a", inA, inB),
          turn(runB, clientB, "b", inB, inA)
        ], { concurrency: 2 })
        expect([a.content, b.content]).toEqual([[{ type: "text", text: "a" }], [{ type: "text", text: "b" }]])
      }).pipe(Effect.provideService(ChatTelemetry.RecordContent, true), Effect.withTracer(recorder.tracer))
      // Which run made a call is in its arguments (recorded with RecordContent); its parent must agree.
      const parentByCaller = recorder.find("Tool.executeTool").map((span) => [
        JSON.parse(String(span.attributes.get(A.toolCallArguments))).run,
        recorder.ancestors(span)[0]?.name
      ])
      expect(parentByCaller.sort()).toEqual([["a", "run a"], ["b", "run b"]])
      // Each run's call carries that run's metric labels.
      const after = yield* Effect.all([Metric.value(duration("a")), Metric.value(duration("b"))])
      expect([after[0].count - before[0].count, after[1].count - before[1].count]).toEqual([1, 1])
    }))
})

describe("toolSpan", () => {
  it.effect("a tool call is a Tool.executeTool span with the GenAI attributes; errors carry error.type", () =>
    Effect.gen(function*() {
      const recorder = makeRecorder()
      const set = yield* Tool.validate([add])
      yield* Tool.executeTool(set, new Tool.ToolCall({ id: "c1", name: "add", arguments: { a: 1, b: 2 } })).pipe(
        Effect.withTracer(recorder.tracer)
      )
      yield* Tool.executeTool(set, new Tool.ToolCall({ id: "c2", name: "nope", arguments: {} })).pipe(
        Effect.withTracer(recorder.tracer)
      )
      const [ok, missing] = recorder.find("Tool.executeTool")
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
      const recorder = makeRecorder()
      const set = yield* Tool.validate([add])
      for (const args of [{ a: 1, b: 2 }, "{\"a\":2,\"b\":2}", undefined]) {
        yield* Tool.executeTool(set, new Tool.ToolCall({ id: "c", name: "add", arguments: args })).pipe(
          Effect.withTracer(recorder.tracer),
          Effect.provideService(ChatTelemetry.RecordContent, true)
        )
      }
      const tools = recorder.find("Tool.executeTool")
      expect(tools.map((s) => s.attributes.get(A.toolCallArguments))).toEqual([
        "{\"a\":1,\"b\":2}",
        "{\"a\":2,\"b\":2}",
        "{}"
      ])
      expect(tools[0]!.attributes.get(A.toolCallResult)).toBe("3")
      expect(tools[2]!.attributes.get(A.errorType)).toBe("InvalidArguments")
    }))
})
