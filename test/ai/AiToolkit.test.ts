import { describe, expect, it } from "@effect/vitest"
import * as Prompt from "effect/ai/Prompt"
import * as AiTool from "effect/ai/Tool"
import * as Toolkit from "effect/ai/Toolkit"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import * as AiToolkit from "../../src/ai/AiToolkit.ts"
import * as ClaudeApi from "../../src/layers/ClaudeApi.ts"
import * as NodeMcpBridge from "../../src/layers/NodeMcpBridge.ts"
import * as Scripted from "../../src/layers/Scripted.ts"
import { ToolContent } from "../../src/services/Content.ts"
import type { TurnRequest } from "../../src/services/ModelTurn.ts"
import { HttpLive } from "../layers/httpProviderSupport.ts"
import { connectClient } from "../layers/mcpBridgeSupport.ts"
import * as Fake from "../support/FakeMessagesApi.ts"
import { makeHandlers, TestToolkit } from "./aiSupport.ts"

const toolResultsOf = (request: TurnRequest) => {
  const last = request.history.at(-1)!
  return last.role === "tool" ? last.results.map(({ content, isError, name }) => ({ name, content, isError })) : []
}

const WebSearch = AiTool.providerDefined({
  id: "anthropic.web_search_20250305",
  customName: "WebSearch",
  providerName: "web_search",
  args: Schema.Struct({})
})({})

describe("AiToolkit.toTools", () => {
  it.effect("on Scripted: the toolkit's schemas decode params and encode results; failureMode maps", () => {
    const { calls, layer } = makeHandlers()
    return Effect.gen(function*() {
      const requests = yield* Ref.make<ReadonlyArray<TurnRequest>>([])
      const script = [
        Scripted.toolCalls(
          { name: "add", arguments: { a: 2, b: "40" } },
          { name: "today" },
          { name: "lookup", arguments: { city: "Lisbon" } },
          { name: "lookup", arguments: { city: "Atlantis" } },
          { name: "broken" },
          { name: "add", arguments: { a: 2, b: 40 } }
        ),
        Scripted.text("done")
      ]
      const client = yield* Scripted.make({
        respond: (request) =>
          Ref.modify(requests, (rs) => [script[Math.min(rs.length, script.length - 1)]!, [...rs, request]])
      })
      const tools = yield* AiToolkit.fromToolkit(TestToolkit)
      expect(tools.map((t) => t.name)).toEqual(["add", "today", "lookup", "broken"])
      // The JSON Schema the model sees is the encoded side of the toolkit's parameters.
      expect(tools[0]!.inputSchema).toMatchObject({
        type: "object",
        required: ["a", "b"],
        properties: { a: { type: "number" }, b: { type: "string" } }
      })
      expect(tools[1]!.inputSchema).toMatchObject({ type: "object", properties: {} })
      yield* client.setTools(tools)
      expect(yield* client.chat("go")).toBe("done")
      const results = toolResultsOf((yield* Ref.get(requests))[1]!)
      expect(results[0]).toEqual({ name: "add", content: "42", isError: false })
      expect(results[1]).toEqual({ name: "today", content: "{\"date\":\"2026-01-02T03:04:05.000Z\"}", isError: false })
      expect(results[2]).toEqual({ name: "lookup", content: "{\"population\":545000}", isError: false })
      expect(results[3]).toEqual({
        name: "lookup",
        content: "Error: {\"reason\":\"unknown city Atlantis\"}",
        isError: true
      })
      expect(results[4]).toEqual({ name: "broken", content: "Error: the database is on fire", isError: true })
      // A number where the schema wants a numeric string: rejected before the handler runs, in this
      // library's parse-error text (message, actual value, path).
      expect(results[5]).toEqual({
        name: "add",
        content: "Invalid arguments for tool add: Expected string, actual 40 at [\"b\"]",
        isError: true
      })
      expect(calls).toEqual({ add: 1, today: 1, lookup: 2, broken: 1 })
    }).pipe(Effect.provide(layer))
  })

  it.effect("rejects provider-defined tools and names providers cannot accept, naming them all", () =>
    Effect.gen(function*() {
      const Spaced = AiTool.make("has space")
      const Dotted = AiTool.make("a.b")
      const toolkit = Toolkit.make(WebSearch, Spaced, Dotted)
      const error = yield* Effect.flip(
        AiToolkit.toTools(
          yield* toolkit.pipe(Effect.provide(toolkit.toLayer({
            "has space": () => Effect.void,
            "a.b": () => Effect.void
          })))
        )
      )
      expect(error._tag).toBe("InvalidToolsError")
      expect(error.message).toContain("provider-defined tools cannot run in-process (WebSearch)")
      expect(error.message).toContain("\"has space\", \"a.b\"")
      expect(error.message).toContain("rename them")
    }))

  it.live("on an HTTP provider (ClaudeApi against the fake Messages API)", () => {
    const { calls, layer } = makeHandlers()
    return Effect.gen(function*() {
      const api = yield* Fake.make((req) =>
        Fake.toolResults(req).length === 0
          ? {
            toolUses: [{ id: "tu_1", name: "add", input: { a: 1, b: "2" } }, { id: "tu_2", name: "broken", input: {} }]
          }
          : { text: "3, and the database is on fire" }
      )
      const chat = yield* ClaudeApi.make({ apiKey: Redacted.make("sk-test"), model: "m", baseUrl: api.url })
      yield* chat.setTools(yield* AiToolkit.fromToolkit(TestToolkit))
      expect(yield* chat.chat("add 1 and 2")).toBe("3, and the database is on fire")
      const [first, second] = api.messageRequests()
      const sent = first!.body.tools!.find((t) => t.name === "add")!
      expect(sent["description"]).toBe("Adds two numbers")
      expect(sent.input_schema).toMatchObject({ type: "object", properties: { b: { type: "string" } } })
      expect(Fake.toolResults(second!)).toEqual([
        { tool_use_id: "tu_1", content: "3", is_error: false },
        { tool_use_id: "tu_2", content: "Error: the database is on fire", is_error: true }
      ])
      expect(calls.add).toBe(1)
      expect(calls.broken).toBe(1)
    }).pipe(Effect.provide(layer), Effect.provide(HttpLive))
  })

  it.live("on the MCP bridge, through the MCP SDK's own client", () => {
    const { calls, layer } = makeHandlers()
    return Effect.gen(function*() {
      const tools = yield* AiToolkit.fromToolkit(TestToolkit)
      const bridge = yield* NodeMcpBridge.make({ tools })
      const client = yield* connectClient(bridge.url, `Bearer ${Redacted.value(bridge.token)}`)
      const listed = yield* Effect.promise(() => client.listTools())
      expect(listed.tools.map((t) => t.name)).toEqual(["add", "today", "lookup", "broken"])
      expect(listed.tools[0]!.inputSchema).toMatchObject({ type: "object", required: ["a", "b"] })
      const added = yield* Effect.promise(() => client.callTool({ name: "add", arguments: { a: 40, b: "2" } }))
      expect(added).toMatchObject({ content: [{ type: "text", text: "42" }] })
      expect(added.isError).not.toBe(true)
      const missing = yield* Effect.promise(() => client.callTool({ name: "lookup", arguments: { city: "Atlantis" } }))
      expect(missing).toMatchObject({
        isError: true,
        content: [{ type: "text", text: "Error: {\"reason\":\"unknown city Atlantis\"}" }]
      })
      expect(calls).toMatchObject({ add: 1, lookup: 1 })
    }).pipe(Effect.provide(layer))
  })

  it.effect("a toolkit whose schema needs a service gets it from where the tools are set", () =>
    Effect.gen(function*() {
      const Echo = AiTool.make("echo", { parameters: Schema.Struct({ text: Schema.String }), success: Schema.String })
      const toolkit = Toolkit.make(Echo)
      const tools = yield* AiToolkit.fromToolkit(toolkit).pipe(
        Effect.provide(toolkit.toLayer({ echo: ({ text }) => Effect.succeed(text.toUpperCase()) }))
      )
      expect(yield* tools[0]!.run("{\"text\":\"hi\"}")).toBe("\"HI\"")
      const bad = yield* Effect.flip(tools[0]!.run("{not json"))
      expect(bad.reason._tag).toBe("InvalidArguments")
      expect(yield* Effect.flip(tools[0]!.run(""))).toMatchObject({ reason: { _tag: "InvalidArguments" } })
    }))

  it.effect("handler outcomes: defects of the result and failures of every shape become clear error texts", () =>
    Effect.gen(function*() {
      const Wrong = AiTool.make("wrong", { success: Schema.Number })
      const Big = AiTool.make("big", { success: Schema.Unknown })
      const Nothing = AiTool.make("nothing")
      const Fails = AiTool.make("fails", {
        parameters: Schema.Struct({ kind: Schema.String }),
        failure: Schema.Unknown
      })
      const toolkit = Toolkit.make(Wrong, Big, Nothing, Fails)
      const tools = yield* AiToolkit.fromToolkit(toolkit).pipe(Effect.provide(toolkit.toLayer({
        wrong: () => Effect.succeed("not a number" as unknown as number),
        big: () => Effect.succeed(1n),
        nothing: () => Effect.void,
        fails: ({ kind }) =>
          Effect.fail(
            kind === "error"
              ? new Error("plain error")
              : kind === "object"
              ? { code: 7 }
              : kind === "bigint"
              ? 2n
              : kind
          )
      })))
      const [wrong, big, nothing, fails] = tools
      expect(yield* Effect.flip(wrong!.run({}))).toMatchObject({
        reason: { _tag: "UnencodableResult" },
        message: expect.stringContaining("Tool wrong returned a result that does not match its success schema")
      })
      // effect 4.1.0 lets the toolkit pass a bigint and JSON.stringify refuses it; from 4.1.5 the
      // toolkit's own JSON encoding refuses it first. Both name the tool and say why.
      expect(yield* Effect.flip(big!.run({}))).toMatchObject({
        reason: { _tag: "UnencodableResult" },
        message: expect.stringMatching(
          /^Tool big returned a result that (?:cannot be encoded as JSON|does not match its success schema: Expected JSON value)/
        )
      })
      expect(yield* nothing!.run(undefined)).toBe("null")
      const failure = (kind: string) => Effect.map(Effect.flip(fails!.run({ kind })), (f) => [f.reason._tag, f.message])
      expect(yield* failure("error")).toEqual(["HandlerFailed", "plain error"])
      expect(yield* failure("object")).toEqual(["HandlerFailed", "{\"code\":7}"])
      expect(yield* failure("bigint")).toEqual(["HandlerFailed", "2"])
      expect(yield* failure("text")).toEqual(["HandlerFailed", "text"])
    }))

  it.effect("Tool.dynamic is passed through: its JSON Schema as given, the arguments as they came", () =>
    Effect.gen(function*() {
      const jsonSchema = {
        type: "object",
        properties: { query: { type: "string", description: "what to look for" } },
        required: ["query"]
      } as const
      const Search = AiTool.dynamic("search", { description: "Searches", parameters: jsonSchema })
      const Typed = AiTool.dynamic("typed", {
        parameters: Schema.Struct({ n: Schema.NumberFromString }),
        success: Schema.Number
      })
      const Anything = AiTool.dynamic("anything")
      const seen: Array<unknown> = []
      const toolkit = Toolkit.make(Search, Typed, Anything)
      const [search, typed, anything] = yield* AiToolkit.fromToolkit(toolkit).pipe(Effect.provide(toolkit.toLayer({
        search: (params) => Effect.sync(() => (seen.push(params), { hits: 1 })),
        typed: ({ n }) => Effect.succeed(n * 2),
        anything: (params) => Effect.succeed(params)
      })))
      expect(search!.inputSchema).toEqual(jsonSchema)
      expect(search!.description).toBe("Searches")
      // No validation: the handler is given what the model sent.
      expect(yield* search!.run({ query: 42, extra: true })).toBe("{\"hits\":1}")
      expect(seen).toEqual([{ query: 42, extra: true }])
      expect(typed!.inputSchema).toMatchObject({ type: "object", properties: { n: { type: "string" } } })
      expect(yield* typed!.run({ n: "21" })).toBe("42")
      expect(yield* Effect.flip(typed!.run({ n: 21 }))).toMatchObject({
        reason: { _tag: "InvalidArguments" },
        message: "Invalid arguments for tool typed: Expected string, actual 21 at [\"n\"]"
      })
      expect(anything!.inputSchema).toEqual({ type: "object" })
      expect(yield* anything!.run("{\"x\":[1]}")).toBe("{\"x\":[1]}")
    }))

  it.effect("needsApproval cannot be honoured: such toolkits are refused, naming the tools", () =>
    Effect.gen(function*() {
      const Delete = AiTool.make("delete_all", { needsApproval: true })
      const Pay = AiTool.make("pay", {
        parameters: Schema.Struct({ amount: Schema.Number }),
        needsApproval: ({ amount }) => amount > 100
      })
      const Read = AiTool.make("read", { needsApproval: false })
      const toolkit = Toolkit.make(Delete, Pay, Read)
      const error = yield* Effect.flip(
        AiToolkit.fromToolkit(toolkit).pipe(Effect.provide(toolkit.toLayer({
          delete_all: () => Effect.void,
          pay: () => Effect.void,
          read: () => Effect.void
        })))
      )
      expect(error._tag).toBe("InvalidToolsError")
      expect(error.message).toContain("needsApproval cannot be honoured (delete_all, pay)")
      expect(error.message).not.toContain("read")
      const readOnly = Toolkit.make(Read)
      const tools = yield* AiToolkit.fromToolkit(readOnly).pipe(
        Effect.provide(readOnly.toLayer({ read: () => Effect.void }))
      )
      expect(tools.map((t) => t.name)).toEqual(["read"])
    }))

  it.effect("toModelOutput: text and images reach the model as tool content", () =>
    Effect.gen(function*() {
      const Chart = AiTool.make("chart", {
        success: Schema.Struct({ title: Schema.String }),
        toModelOutput: ({ title }) => [
          Prompt.textPart({ text: title }),
          Prompt.filePart({ mediaType: "image/png", data: new Uint8Array([1, 2, 3]) }),
          Prompt.filePart({ mediaType: "text/csv", fileName: "data.csv", data: "YSxi" })
        ]
      })
      const toolkit = Toolkit.make(Chart)
      const [chart] = yield* AiToolkit.fromToolkit(toolkit).pipe(
        Effect.provide(toolkit.toLayer({ chart: () => Effect.succeed({ title: "Sales" }) }))
      )
      const result = yield* chart!.run({})
      expect(result).toBeInstanceOf(ToolContent)
      expect(result instanceof ToolContent && result.parts).toEqual([
        { type: "text", text: "Sales" },
        { type: "image", source: { type: "base64", mediaType: "image/png", data: "AQID" } },
        { type: "text", text: "[text/csv data.csv omitted]" }
      ])
    }))

  it.effect("parameters that are not a struct are sent as effect/ai renders them; a non-object root is refused", () =>
    Effect.gen(function*() {
      const Scores = AiTool.make("scores", {
        parameters: Schema.Record(Schema.String, Schema.Number),
        success: Schema.Number
      })
      const scores = Toolkit.make(Scores)
      const [tool] = yield* AiToolkit.fromToolkit(scores).pipe(
        Effect.provide(
          scores.toLayer({ scores: (all) => Effect.succeed(Object.values(all).reduce((a, b) => a + b, 0)) })
        )
      )
      expect(tool!.inputSchema).toMatchObject({ type: "object" })
      expect(tool!.inputSchema).not.toHaveProperty("$schema")
      expect(yield* tool!.run({ a: 1, b: 2 })).toBe("3")
      const Either = AiTool.make("either", {
        parameters: Schema.Union([Schema.Struct({ a: Schema.String }), Schema.Struct({ b: Schema.Number })])
      })
      const either = Toolkit.make(Either)
      const error = yield* Effect.flip(
        AiToolkit.fromToolkit(either).pipe(Effect.provide(either.toLayer({ either: () => Effect.void })))
      )
      expect(error.message).toBe("Tool either: inputSchema must have type \"object\" at its root")
    }))

  it.effect("failureMode return: a result the toolkit could not produce is not sent as the tool's failure", () =>
    Effect.gen(function*() {
      const Parse = AiTool.make("parse", {
        success: Schema.Number,
        failure: Schema.Unknown,
        failureMode: "return"
      })
      const toolkit = Toolkit.make(Parse)
      const [parse] = yield* AiToolkit.fromToolkit(toolkit).pipe(Effect.provide(toolkit.toLayer({
        // A handler that fails with a SchemaError: effect/ai reports it as an invalid result.
        parse: () => Schema.decodeUnknownEffect(Schema.Number)("x")
      })))
      expect(yield* Effect.flip(parse!.run({}))).toMatchObject({
        reason: { _tag: "UnencodableResult" },
        message: expect.stringContaining("Tool parse returned a result that does not match its success schema")
      })
    }))
})
