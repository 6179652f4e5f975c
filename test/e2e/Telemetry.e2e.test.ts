import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as ChatTelemetry from "../../src/services/ChatTelemetry.ts"
import * as Tool from "../../src/services/Tool.ts"
import { type Sandbox, sandbox } from "../support/claudeCli.ts"
import { agentClient, localClient, recordingSecretFile } from "../support/claudeClients.ts"
import * as Fake from "../support/FakeMessagesApi.ts"
import { makeRecorder, type Recorder } from "../support/recordingTracer.ts"

const A = ChatTelemetry.Attributes

const add = Tool.make("add", {
  description: "Adds two numbers",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

/** First request: the bridge's `add` and the built-in `Glob`; then the answer. */
const script = (req: Fake.FakeRequest): Fake.FakeReply => {
  const results = Fake.toolResults(req)
  if (results.length === 0) {
    return {
      toolUses: [
        { id: "toolu_add", name: "mcp__gtb__add", input: { a: 2, b: 40 } },
        { id: "toolu_glob", name: "Glob", input: { pattern: "*.txt" } }
      ],
      usage: { input_tokens: 50, output_tokens: 11 }
    }
  }
  const sum = results.find((r) => r.tool_use_id === "toolu_add")?.content
  return { text: `The sum is ${sum}.`, usage: { input_tokens: 70, output_tokens: 8 } }
}

/** The shape every Claude Code provider must give: chat > run (tokens, built-in tool events) > tool. */
const expectTrace = (recorder: Recorder, root: string, provider: string) => {
  const [chat] = recorder.find(root)
  expect(chat).toBeDefined()
  expect(chat!.attributes.get(A.provider)).toBe(provider)
  const turns = recorder.find((s) => s.attributes.get(A.operationName) === "chat")
  expect(turns).toHaveLength(1)
  const turn = turns[0]!
  expect(recorder.ancestors(turn)).toContain(chat)
  // Both model requests of the run, summed by the CLI.
  expect(turn.attributes.get(A.inputTokens)).toBeGreaterThanOrEqual(120)
  expect(turn.attributes.get(A.outputTokens)).toBeGreaterThanOrEqual(19)
  expect(turn.attributes.get(A.providerName)).toBe("anthropic")
  const tools = recorder.find("Tool.executeTool")
  expect(tools).toHaveLength(1)
  expect(tools[0]!.attributes.get(A.toolName)).toBe("add")
  const ancestry = recorder.ancestors(tools[0]!)
  expect(ancestry[0]).toBe(turn)
  expect(ancestry).toContain(chat)
  // The built-in tool the CLI ran is an event of the run; the bridge's tool is not repeated there.
  const uses = turn.events.filter((e) => e.name === "gen_ai.tool.use")
  expect(uses.map((e) => [e.attributes[A.toolName], e.attributes[A.toolType], e.attributes[A.toolCallId]])).toEqual([
    ["Glob", "builtin", "toolu_glob"]
  ])
}

/** Calls add with a fresh tool-use id on every request (the CLI keeps one transcript across turns), then answers. */
const addWithFreshIds = (req: Fake.FakeRequest, index: number): Fake.FakeReply => {
  const results = Fake.toolResults(req)
  if (results.length === 0) {
    return { toolUses: [{ id: `toolu_${index}`, name: "mcp__gtb__add", input: { a: 1, b: index } }] }
  }
  return { text: `The sum is ${results[0]!.content}.` }
}

describe("telemetry with the real claude binary", () => {
  it.live(
    "ClaudeLocal: the bridge's tool span is a child of the run, under chat; no span holds the token or key",
    () =>
      Effect.gen(function*() {
        const recorder = makeRecorder()
        const api = yield* Fake.make(script)
        const box: Sandbox = yield* sandbox(api.url)
        const { layer: secretFile, written } = recordingSecretFile(box)
        yield* Effect.gen(function*() {
          const chat = yield* localClient(box, { allowPermissionDenials: true }, { secretFile })
          yield* chat.setTools([add])
          expect(yield* chat.chat("What is 2 + 40? Use the add tool.")).toBe("The sum is 42.")
        }).pipe(Effect.withTracer(recorder.tracer))

        expectTrace(recorder, "ChatClient.chat", "claude-local")
        const token = /Bearer ([A-Za-z0-9_-]+)/.exec(written[0] ?? "")?.[1]
        expect(token?.length).toBeGreaterThan(30)
        const dump = recorder.dump()
        expect(dump).not.toContain(token!)
        expect(dump).not.toContain(box.env["ANTHROPIC_API_KEY"]!)
      }),
    { timeout: 120_000 }
  )

  it.live("ClaudeLocal streaming: the same shape under chatStream", () =>
    Effect.gen(function*() {
      const recorder = makeRecorder()
      const api = yield* Fake.make(script)
      const box = yield* sandbox(api.url)
      yield* Effect.gen(function*() {
        const chat = yield* localClient(box, { allowPermissionDenials: true })
        yield* chat.setTools([add])
        yield* Stream.runDrain(chat.chatStream("What is 2 + 40? Use the add tool."))
      }).pipe(Effect.withTracer(recorder.tracer))
      expectTrace(recorder, "ChatClient.chatStream", "claude-local")
    }), { timeout: 120_000 })

  it.live(
    "ClaudeLocal prewarm: each turn's tool call is a child of that turn, not of where the CLI started",
    () =>
      Effect.gen(function*() {
        const recorder = makeRecorder()
        const api = yield* Fake.make(addWithFreshIds)
        const box = yield* sandbox(api.url)
        yield* Effect.gen(function*() {
          const chat = yield* localClient(box, { prewarm: true })
          // Restarts the warm CLI (its bridge run opened here, under the setTools span).
          yield* chat.setTools([add])
          yield* chat.chat("What is 1 + 0? Use the add tool.")
          yield* chat.chat("And again?")
        }).pipe(Effect.withTracer(recorder.tracer))
        const turns = recorder.find((s) => s.attributes.get(A.operationName) === "chat")
        const tools = recorder.find("Tool.executeTool")
        expect(turns).toHaveLength(2)
        expect(tools).toHaveLength(2)
        // Which turn each call's parent is (-1: neither, e.g. the setTools span that started the CLI).
        expect(tools.map((t) => turns.indexOf(recorder.ancestors(t)[0]!))).toEqual([0, 1])
      }),
    { timeout: 180_000 }
  )

  it.live(
    "ClaudeAgent: the in-process tool span is a child of the run, under chat; no span holds the key",
    () =>
      Effect.gen(function*() {
        const recorder = makeRecorder()
        const api = yield* Fake.make(script)
        const box = yield* sandbox(api.url)
        yield* Effect.gen(function*() {
          const chat = yield* agentClient(box, { allowPermissionDenials: true })
          yield* chat.setTools([add])
          expect(yield* chat.chat("What is 2 + 40? Use the add tool.")).toBe("The sum is 42.")
        }).pipe(Effect.withTracer(recorder.tracer))
        expectTrace(recorder, "ChatClient.chat", "claude-agent")
        expect(recorder.dump()).not.toContain(box.env["ANTHROPIC_API_KEY"]!)
      }),
    { timeout: 120_000 }
  )

  it.live(
    "ClaudeAgent keepAlive: the second turn's tool call is under the second run, not the first",
    () =>
      Effect.gen(function*() {
        const recorder = makeRecorder()
        const api = yield* Fake.make(addWithFreshIds)
        const box = yield* sandbox(api.url)
        yield* Effect.gen(function*() {
          const chat = yield* agentClient(box, { keepAlive: true })
          yield* chat.setTools([add])
          yield* chat.chat("What is 2 + 40? Use the add tool.")
          yield* chat.chat("And again?")
        }).pipe(Effect.withTracer(recorder.tracer))
        const chats = recorder.find("ChatClient.chat")
        const tools = recorder.find("Tool.executeTool")
        expect(chats).toHaveLength(2)
        expect(tools.length).toBeGreaterThanOrEqual(2)
        const last = tools[tools.length - 1]!
        expect(recorder.ancestors(last)).toContain(chats[1])
        expect(recorder.ancestors(last)).not.toContain(chats[0])
      }),
    { timeout: 180_000 }
  )
})
