import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import * as Scripted from "../../src/layers/Scripted.ts"
import { ChatClient, Usage } from "../../src/services/ChatClient.ts"
import type { TurnRequest } from "../../src/services/ModelTurn.ts"
import * as Tool from "../../src/services/Tool.ts"

const add = Tool.make("add", {
  description: "Adds",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.succeed(a + b)
})
const broken = Tool.make("broken", {
  description: "Fails",
  parameters: {},
  handler: () => Effect.fail("no route to host")
})

/** A scripted client that also records every request it was sent. */
const recording = (script: ReadonlyArray<Scripted.ScriptedTurn>, options: { maxSteps?: number } = {}) =>
  Effect.gen(function*() {
    const requests = yield* Ref.make<ReadonlyArray<TurnRequest>>([])
    const cursor = yield* Ref.make(0)
    const client = yield* Scripted.make({
      ...options,
      respond: (request) =>
        Effect.gen(function*() {
          yield* Ref.update(requests, (rs) => [...rs, request])
          const n = yield* Ref.getAndUpdate(cursor, (i) => i + 1)
          return script[Math.min(n, script.length - 1)]!
        })
    })
    return { client, requests: Ref.get(requests) }
  })

describe("the tool loop (on Scripted)", () => {
  it.effect("feeds tool results back, with isError on failures, and answers", () =>
    Effect.gen(function*() {
      const { client, requests } = yield* recording([
        Scripted.toolCalls({ name: "add", arguments: { a: 2, b: 2 } }, { name: "broken" }),
        Scripted.text("2 + 2 = 4; the network is down")
      ])
      yield* client.setTools([add, broken])
      const answer = yield* client.chat("what is 2 + 2, and is the network up?")
      expect(answer).toBe("2 + 2 = 4; the network is down")
      const second = (yield* requests)[1]!
      const toolMessage = second.history.at(-1)!
      expect(toolMessage.role).toBe("tool")
      if (toolMessage.role !== "tool") return
      expect(toolMessage.results.map(({ content, isError }) => ({ content, isError }))).toEqual([
        { content: "4", isError: false },
        { content: "Error: no route to host", isError: true }
      ])
      expect(second.tools.map((t) => t.name)).toEqual(["add", "broken"])
    }))

  it.effect("sums usage over every step and every call", () =>
    Effect.gen(function*() {
      const client = yield* Scripted.make({
        script: [
          {
            ...Scripted.toolCalls({ name: "add", arguments: { a: 1, b: 1 } }),
            usage: Usage.of({ inputTokens: 10, outputTokens: 2 })
          } as Scripted.ScriptedTurn,
          Scripted.text("2", Usage.of({ inputTokens: 20, outputTokens: 3, costUsd: 0.01 })),
          Scripted.text("again", Usage.of({ inputTokens: 30, outputTokens: 4, cachedTokens: 7 }))
        ]
      })
      yield* client.setTools([add])
      yield* client.chat("1 + 1?")
      yield* client.chat("again")
      const usage = yield* client.usage
      expect(usage).toMatchObject({
        inputTokens: 60,
        outputTokens: 9,
        totalTokens: 69,
        cachedTokens: 7,
        costUsd: 0.01,
        known: true
      })
    }))

  it.effect("stops at maxSteps with a typed error", () =>
    Effect.gen(function*() {
      const { client, requests } = yield* recording([Scripted.toolCalls({ name: "add", arguments: { a: 1, b: 1 } })], {
        maxSteps: 3
      })
      yield* client.setTools([add])
      const error = yield* Effect.flip(client.chat("loop forever"))
      expect(error._tag).toBe("MaxStepsError")
      expect(error).toMatchObject({ maxSteps: 3 })
      expect((yield* requests).length).toBe(3)
    }))

  it.effect("the default maxSteps is 20", () =>
    Effect.gen(function*() {
      const { client, requests } = yield* recording([Scripted.toolCalls({ name: "add", arguments: { a: 1, b: 1 } })])
      yield* client.setTools([add])
      expect((yield* Effect.flip(client.chat("loop"))).message).toContain("after 20 steps")
      expect((yield* requests).length).toBe(20)
    }))

  it.effect("setTools replaces, never merges", () =>
    Effect.gen(function*() {
      const { client, requests } = yield* recording([Scripted.text("ok")])
      yield* client.setTools([add, broken])
      yield* client.setTools([broken])
      yield* client.chat("hi")
      expect((yield* requests)[0]!.tools.map((t) => t.name)).toEqual(["broken"])
      yield* client.setTools([])
      yield* client.chat("hi again")
      expect((yield* requests)[1]!.tools).toEqual([])
    }))

  it.effect("setTools rejects an invalid tool set and keeps the previous one", () =>
    Effect.gen(function*() {
      const { client, requests } = yield* recording([Scripted.text("ok")])
      yield* client.setTools([add])
      const error = yield* Effect.flip(client.setTools([add, add]))
      expect(error._tag).toBe("InvalidToolsError")
      yield* client.chat("hi")
      expect((yield* requests)[0]!.tools.map((t) => t.name)).toEqual(["add"])
    }))

  it.effect("handler requirements are provided from the setTools call site", () =>
    Effect.gen(function*() {
      class Db extends Context.Service<Db, { readonly lookup: (k: string) => string }>()("test/Db") {}
      const lookup = Tool.make("lookup", {
        description: "Looks up a key",
        parameters: { key: Schema.String },
        handler: ({ key }) => Effect.map(Effect.service(Db), (db) => db.lookup(key))
      })
      const { client, requests } = yield* recording([
        Scripted.toolCalls({ name: "lookup", arguments: { key: "capital" } }),
        Scripted.text("done")
      ])
      yield* client.setTools([lookup]).pipe(Effect.provideService(Db, { lookup: (k) => `value of ${k}` }))
      // chat itself needs no Db: the handler got it when the tools were set.
      yield* client.chat("look it up")
      const toolMessage = (yield* requests)[1]!.history.at(-1)!
      expect(toolMessage.role === "tool" && toolMessage.results[0]!.content).toBe("value of capital")
    }))

  describe("ask", () => {
    const Person = Schema.Struct({ name: Schema.String, age: Schema.Number })

    it.effect("decodes a structured answer with the given schema and sends the schema", () =>
      Effect.gen(function*() {
        const { client, requests } = yield* recording([Scripted.structured({ name: "Ada", age: 36 })])
        const person = yield* client.ask("who?", Person)
        expect(person).toEqual({ name: "Ada", age: 36 })
        expect((yield* requests)[0]!.responseFormat?.schema).toMatchObject({
          type: "object",
          required: ["name", "age"]
        })
      }))

    it.effect("decodes a JSON text answer (fenced or not) and non-object schemas", () =>
      Effect.gen(function*() {
        const client = yield* Scripted.make({
          script: [Scripted.text("```json\n{\"name\":\"Bo\",\"age\":5}\n```"), Scripted.text("{\"value\": [1, 2]}")]
        })
        expect(yield* client.ask("who?", Person)).toEqual({ name: "Bo", age: 5 })
        expect(yield* client.ask("numbers?", Schema.Array(Schema.Number))).toEqual([1, 2])
      }))

    it.effect("fails typed when the answer does not decode, and leaves history untouched", () =>
      Effect.gen(function*() {
        const { client, requests } = yield* recording([
          Scripted.structured({ name: "Ada", age: "old" }),
          Scripted.text("not json"),
          Scripted.text("fine")
        ])
        const e1 = yield* Effect.flip(client.ask("who?", Person))
        expect(e1._tag).toBe("StructuredOutputError")
        expect(e1.message).toContain("age")
        const e2 = yield* Effect.flip(client.ask("who?", Person))
        expect(e2).toMatchObject({ _tag: "StructuredOutputError", answer: "not json" })
        yield* client.chat("hello")
        expect((yield* requests)[2]!.history).toEqual([{ role: "user", content: "hello" }])
      }))

    it.effect("joins the history: the next turn sees the question and the answer", () =>
      Effect.gen(function*() {
        const { client, requests } = yield* recording([
          Scripted.structured({ name: "Ada", age: 36 }),
          Scripted.text("ok")
        ])
        yield* client.ask("who?", Person)
        yield* client.chat("and then?")
        expect((yield* requests)[1]!.history).toEqual([
          { role: "user", content: "who?" },
          { role: "assistant", text: "{\"name\":\"Ada\",\"age\":36}", toolCalls: [] },
          { role: "user", content: "and then?" }
        ])
        expect((yield* requests)[1]!.responseFormat).toBeUndefined()
      }))
  })

  it.effect("added text is sent with the next prompt and survives a failed call", () =>
    Effect.gen(function*() {
      const { client, requests } = yield* recording([
        Scripted.fail(Scripted.httpError(503)),
        Scripted.text("got both")
      ])
      yield* client.add("context one")
      const error = yield* Effect.flip(client.chat("first try"))
      expect(error).toMatchObject({ _tag: "ProviderError", status: 503, isRetryable: true })
      yield* client.chat("second try")
      const [first, second] = yield* requests
      expect(first!.history).toEqual([{ role: "user", content: "context one\n\nfirst try" }])
      expect(second!.history).toEqual([{ role: "user", content: "context one\n\nsecond try" }])
    }))

  it.effect("empty prompts are rejected with a typed error, before any model call", () =>
    Effect.gen(function*() {
      const { client, requests } = yield* recording([Scripted.text("never")])
      expect((yield* Effect.flip(client.chat("  \n")))._tag).toBe("EmptyPromptError")
      expect((yield* Effect.flip(client.add("")))._tag).toBe("EmptyPromptError")
      expect((yield* Effect.flip(client.ask("", Schema.String)))._tag).toBe("EmptyPromptError")
      expect(yield* requests).toEqual([])
    }))

  it.effect("a script that runs out is a typed provider error", () =>
    Effect.gen(function*() {
      const client = yield* Scripted.make({ script: [Scripted.text("one")] })
      yield* client.chat("a")
      const error = yield* Effect.flip(client.chat("b"))
      expect(error).toMatchObject({ _tag: "ProviderError", provider: "scripted" })
      expect(error.message).toContain("no turn 2")
    }))

  it.live("a request timeout applies to each model turn", () =>
    Effect.gen(function*() {
      const client = yield* Scripted.make({
        requestTimeout: "50 millis",
        respond: () => Effect.never
      })
      const error = yield* Effect.flip(client.chat("hello?"))
      expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "TimeoutError" }, isRetryable: true })
    }))

  it.effect("is available as a ChatClient layer", () =>
    Effect.gen(function*() {
      const chat = yield* ChatClient
      expect(yield* chat.chat("hi")).toBe("hello")
    }).pipe(Effect.provide(Scripted.layer({ script: [Scripted.text("hello")] }))))
})

describe("ask with a Schema.Class", () => {
  class Person extends Schema.Class<Person>("Person")({ name: Schema.String, age: Schema.Number }) {}

  it.effect("puts the class's object schema at the root (not wrapped in `value`)", () =>
    Effect.gen(function*() {
      const requests: Array<TurnRequest> = []
      const client = yield* Scripted.make({
        respond: (request) => Effect.sync(() => (requests.push(request), Scripted.structured({ name: "Ada", age: 36 })))
      })
      const person = yield* client.ask("who?", Person)
      expect(person).toBeInstanceOf(Person)
      expect(person.name).toBe("Ada")
      expect(requests[0]!.responseFormat!.schema).toMatchObject({
        type: "object",
        required: ["name", "age"],
        properties: { name: { type: "string" }, age: { type: "number" } }
      })
    }))
})
