import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Metric from "effect/Metric"
import * as Ref from "effect/Ref"
import * as References from "effect/References"
import * as Schema from "effect/Schema"
import * as Tool from "../../src/services/Tool.ts"

const add = Tool.make("add", {
  description: "Adds two numbers",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.succeed(a + b)
})
const echo = Tool.make("echo", {
  description: "Echoes text verbatim",
  parameters: { text: Schema.String },
  handler: ({ text }) => Effect.succeed(text)
})
const failing = Tool.make("failing", {
  description: "Always fails",
  parameters: {},
  handler: () => Effect.fail(new Error("disk full"))
})
const dying = Tool.make("dying", {
  description: "Dies",
  parameters: {},
  handler: () => Effect.die(new Error("boom"))
})
const throwing = Tool.make("throwing", {
  description: "Throws while building its effect",
  parameters: {},
  handler: (): Effect.Effect<string> => {
    throw new Error("thrown synchronously")
  }
})
const bigint = Tool.make("bigint", {
  description: "Returns something JSON cannot encode",
  parameters: {},
  handler: () => Effect.succeed({ n: 10n })
})
const dated = Tool.make("dated", {
  description: "Encodes its result with a success schema",
  parameters: {},
  success: Schema.Struct({ at: Schema.Date }),
  handler: () => Effect.succeed({ at: new Date("2026-01-02T03:04:05.000Z") })
})

const set = Effect.runSync(Tool.validate([add, echo, failing, dying, throwing, bigint, dated]))
const call = (name: string, args: unknown, id = "c1") => new Tool.ToolCall({ id, name, arguments: args })

describe("Tool.make", () => {
  it("derives an object JSON Schema from the fields", () => {
    expect(add.inputSchema).toEqual({
      type: "object",
      required: ["a", "b"],
      properties: { a: { type: "number" }, b: { type: "number" } },
      additionalProperties: false
    })
  })
})

describe("executeTool", () => {
  it.effect("runs a found tool and encodes a non-string result as JSON", () =>
    Effect.gen(function*() {
      const r = yield* Tool.executeTool(set, call("add", { a: 2, b: 3 }))
      expect(r).toEqual(new Tool.ToolResult({ callId: "c1", name: "add", content: "5", isError: false }))
    }))

  it.effect("passes a string result verbatim", () =>
    Effect.gen(function*() {
      const r = yield* Tool.executeTool(set, call("echo", { text: "\"quoted\" text" }))
      expect(r.content).toBe("\"quoted\" text")
      expect(r.isError).toBe(false)
    }))

  it.effect("accepts arguments as JSON text, and empty text as {}", () =>
    Effect.gen(function*() {
      expect((yield* Tool.executeTool(set, call("add", "{\"a\":1,\"b\":1}"))).content).toBe("2")
      expect((yield* Tool.executeTool(set, call("failing", ""))).content).toBe("Error: disk full")
    }))

  it.effect("unknown tool → error result", () =>
    Effect.gen(function*() {
      const r = yield* Tool.executeTool(set, call("nope", {}))
      expect(r).toMatchObject({ content: "Tool nope not found", isError: true })
    }))

  it.effect("arguments that do not decode → error result with the parse message", () =>
    Effect.gen(function*() {
      const r = yield* Tool.executeTool(set, call("add", { a: "two", b: 3 }))
      expect(r.isError).toBe(true)
      expect(r.content).toContain("Invalid arguments for tool add")
      // The message, the actual value and the path, as on the Effect 3 line.
      expect(r.content).toBe("Invalid arguments for tool add: Expected number, actual \"two\" at [\"a\"]")
      const bad = yield* Tool.executeTool(set, call("add", "{not json"))
      expect(bad.isError).toBe(true)
      expect(bad.content).toContain("not JSON")
    }))

  it.effect("handler failure → `Error: <message>`", () =>
    Effect.gen(function*() {
      expect(yield* Tool.executeTool(set, call("failing", {}))).toMatchObject({
        content: "Error: disk full",
        isError: true
      })
    }))

  it.effect("handler defect (die or throw) → `tool handler panicked: …`", () =>
    Effect.gen(function*() {
      expect(yield* Tool.executeTool(set, call("dying", {}))).toMatchObject({
        content: "tool handler panicked: boom",
        isError: true
      })
      expect(yield* Tool.executeTool(set, call("throwing", {}))).toMatchObject({
        content: "tool handler panicked: thrown synchronously",
        isError: true
      })
    }))

  it.effect("an unencodable result → error result", () =>
    Effect.gen(function*() {
      const r = yield* Tool.executeTool(set, call("bigint", {}))
      expect(r.isError).toBe(true)
      expect(r.content).toContain("cannot be encoded as JSON")
    }))

  it.effect("a success schema encodes the result", () =>
    Effect.gen(function*() {
      expect((yield* Tool.executeTool(set, call("dated", {}))).content).toBe("{\"at\":\"2026-01-02T03:04:05.000Z\"}")
    }))

  it.effect("Tool.dynamic serves a raw JSON Schema and gets raw input", () =>
    Effect.gen(function*() {
      const schema = { type: "object", properties: { q: { type: "string" } }, required: ["q"] } as const
      const search = Tool.dynamic("search", {
        description: "Searches",
        inputSchema: schema,
        handler: (input) => Effect.succeed({ got: input })
      })
      expect(search.inputSchema).toBe(schema)
      const s = yield* Tool.validate([search])
      expect((yield* Tool.executeTool(s, call("search", { q: "x" }))).content).toBe("{\"got\":{\"q\":\"x\"}}")
    }))

  it.effect("interruption inside a handler is not turned into a result", () =>
    Effect.gen(function*() {
      const interrupting = Tool.make("interrupting", {
        description: "Interrupts itself",
        parameters: {},
        handler: () => Effect.interrupt
      })
      const s = yield* Tool.validate([interrupting])
      const exit = yield* Effect.exit(Tool.executeTool(s, call("interrupting", {})))
      expect(Exit.hasInterrupts(exit)).toBe(true)
    }))

  it.effect("interrupting the caller interrupts the handler", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const finalized = yield* Ref.make(false)
      const slow = Tool.make("slow", {
        description: "Never finishes",
        parameters: {},
        handler: () =>
          Deferred.succeed(started, undefined).pipe(
            Effect.andThen(Effect.never),
            Effect.onInterrupt(() => Ref.set(finalized, true))
          )
      })
      const s = yield* Tool.validate([slow])
      const fiber = yield* Effect.forkChild(Tool.executeTool(s, call("slow", {})))
      yield* Deferred.await(started)
      yield* Fiber.interrupt(fiber)
      const exit = yield* Fiber.await(fiber)
      expect(Exit.hasInterrupts(exit)).toBe(true)
      expect(yield* Ref.get(finalized)).toBe(true)
    }))

  it.effect("an uninterruptible handler (make and dynamic) runs to its end when the caller is interrupted", () =>
    Effect.gen(function*() {
      const ended = yield* Ref.make<ReadonlyArray<string>>([])
      const body = (name: string, started: Deferred.Deferred<void>, gate: Deferred.Deferred<void>) =>
        Deferred.succeed(started, undefined).pipe(
          Effect.andThen(Deferred.await(gate)),
          Effect.as("done"),
          Effect.onExit((exit) =>
            Ref.update(ended, (e) => [...e, `${name}:${Exit.isSuccess(exit) ? "finished" : "stopped"}`])
          )
        )
      for (const make of ["make", "dynamic"] as const) {
        const started = yield* Deferred.make<void>()
        const gate = yield* Deferred.make<void>()
        const steady = make === "make"
          ? Tool.make("steady", {
            description: "d",
            parameters: {},
            uninterruptible: true,
            handler: () => body(make, started, gate)
          })
          : Tool.dynamic("steady", {
            description: "d",
            inputSchema: { type: "object" },
            uninterruptible: true,
            handler: () => body(make, started, gate)
          })
        const s = yield* Tool.validate([steady])
        const fiber = yield* Effect.forkChild(Tool.executeTool(s, call("steady", {})))
        yield* Deferred.await(started)
        // The interruption waits for the handler, which finishes once the gate opens.
        const interrupting = yield* Effect.forkChild(Fiber.interrupt(fiber))
        yield* Effect.yieldNow
        expect(yield* Ref.get(ended)).toEqual(make === "make" ? [] : ["make:finished"])
        yield* Deferred.succeed(gate, undefined)
        yield* Fiber.join(interrupting)
      }
      expect(yield* Ref.get(ended)).toEqual(["make:finished", "dynamic:finished"])
    }))
})

describe("dispatch", () => {
  const calls = [
    call("add", { a: 1, b: 1 }, "1"),
    call("dying", {}, "2"),
    call("nope", {}, "3"),
    call("failing", {}, "4"),
    call("echo", { text: "x" }, "5")
  ]
  const expected = [
    { callId: "1", content: "2", isError: false },
    { callId: "2", content: "tool handler panicked: boom", isError: true },
    { callId: "3", content: "Tool nope not found", isError: true },
    { callId: "4", content: "Error: disk full", isError: true },
    { callId: "5", content: "x", isError: false }
  ]

  it.effect("serial: every rule, in order", () =>
    Effect.gen(function*() {
      const results = yield* Tool.dispatch(set, calls, { concurrency: 1 })
      expect(results.map(({ callId, content, isError }) => ({ callId, content, isError }))).toEqual(expected)
    }))

  it.effect("parallel: every rule, in order", () =>
    Effect.gen(function*() {
      const results = yield* Tool.dispatch(set, calls, { concurrency: 5 })
      expect(results.map(({ callId, content, isError }) => ({ callId, content, isError }))).toEqual(expected)
    }))

  it.live("keeps input order even when later calls finish first, and respects the bound", () =>
    Effect.gen(function*() {
      const running = yield* Ref.make(0)
      const peak = yield* Ref.make(0)
      const sleepy = Tool.make("sleepy", {
        description: "Sleeps for `ms`",
        parameters: { ms: Schema.Number },
        handler: ({ ms }) =>
          Effect.acquireUseRelease(
            Ref.updateAndGet(running, (n) => n + 1).pipe(Effect.tap((n) => Ref.update(peak, (p) => Math.max(p, n)))),
            () => Effect.sleep(ms).pipe(Effect.as(`slept ${ms}`)),
            () => Ref.update(running, (n) => n - 1)
          )
      })
      const s = yield* Tool.validate([sleepy])
      const delays = [60, 10, 40, 5, 30, 20, 1, 50]
      const results = yield* Tool.dispatch(s, delays.map((ms, i) => call("sleepy", { ms }, String(i))), {
        concurrency: 3
      })
      expect(results.map((r) => r.content)).toEqual(delays.map((ms) => `slept ${ms}`))
      expect(results.map((r) => r.callId)).toEqual(delays.map((_, i) => String(i)))
      expect(yield* Ref.get(peak)).toBe(3)
    }))

  it.live("interrupting dispatch interrupts every running handler", () =>
    Effect.gen(function*() {
      const interrupted = yield* Ref.make(0)
      const started = yield* Ref.make(0)
      const hang = Tool.make("hang", {
        description: "Hangs",
        parameters: {},
        handler: () =>
          Ref.update(started, (n) => n + 1).pipe(
            Effect.andThen(Effect.never),
            Effect.onInterrupt(() => Ref.update(interrupted, (n) => n + 1))
          )
      })
      const s = yield* Tool.validate([hang])
      const fiber = yield* Effect.forkChild(Tool.dispatch(s, [call("hang", {}, "a"), call("hang", {}, "b")]))
      while ((yield* Ref.get(started)) < 2) yield* Effect.sleep(1)
      yield* Fiber.interrupt(fiber)
      const exit = yield* Fiber.await(fiber)
      expect(Exit.hasInterrupts(exit)).toBe(true)
      expect(yield* Ref.get(interrupted)).toBe(2)
    }))
})

describe("validate and capture", () => {
  it.effect("rejects bad names, duplicates and non-object schemas", () =>
    Effect.gen(function*() {
      const bad = Tool.make("has space", { description: "", parameters: {}, handler: () => Effect.void })
      expect((yield* Effect.flip(Tool.validate([bad]))).message).toContain("must match")
      expect((yield* Effect.flip(Tool.validate([add, add]))).message).toBe("Tool name add is used twice")
      const arr = Tool.dynamic("arr", {
        description: "",
        inputSchema: { type: "array" } as unknown as Tool.JsonSchemaObject,
        handler: () => Effect.void
      })
      expect((yield* Effect.flip(Tool.validate([arr]))).message).toContain("type \"object\"")
    }))

  it.effect("captures handler requirements from the capturing context", () =>
    Effect.gen(function*() {
      class Greeting extends Context.Service<Greeting, string>()("test/Greeting") {}
      const greet = Tool.make("greet", {
        description: "Greets",
        parameters: { name: Schema.String },
        handler: ({ name }) => Effect.map(Greeting, (g) => `${g}, ${name}`)
      })
      const captured = yield* Tool.capture([greet]).pipe(Effect.provideService(Greeting, "Bonjour"))
      // `captured` needs nothing any more: it runs without Greeting in scope.
      const r = yield* Tool.executeTool(captured, call("greet", { name: "Ada" }))
      expect(r.content).toBe("Bonjour, Ada")
    }))

  it.effect("a call sees its own log annotations, metric attributes and parent span, not those of the capture", () =>
    Effect.gen(function*() {
      const seen = yield* Ref.make<ReadonlyArray<unknown>>([])
      const probe = Tool.make("probe", {
        description: "Reports where it runs",
        parameters: {},
        handler: () =>
          Effect.gen(function*() {
            const annotations = yield* Effect.service(References.CurrentLogAnnotations)
            const attributes = yield* Effect.service(Metric.CurrentMetricAttributes)
            const span = yield* Effect.currentSpan
            yield* Ref.set(seen, [annotations["where"], attributes["where"], span.name])
            return "ok"
          })
      })
      const captured = yield* Tool.capture([probe]).pipe(
        Effect.annotateLogs("where", "setTools"),
        Effect.provideService(Metric.CurrentMetricAttributes, { where: "setTools" }),
        Effect.withSpan("setTools")
      )
      yield* Tool.executeTool(captured, call("probe", {})).pipe(
        Effect.annotateLogs("where", "call"),
        Effect.provideService(Metric.CurrentMetricAttributes, { where: "call" }),
        Effect.withSpan("turn")
      )
      // The tool's own span is the current one inside the handler; its parent is the turn.
      expect(yield* Ref.get(seen)).toEqual(["call", "call", "Tool.executeTool"])
    }))
})

describe("error messages and dynamic tools", () => {
  const failWith = (error: unknown) =>
    Tool.dynamic("fails", {
      description: "Fails with the given error",
      inputSchema: { type: "object" },
      handler: () => Effect.fail(error)
    })
  const returning = (value: unknown) =>
    Tool.dynamic("returns", {
      description: "Returns the given value",
      inputSchema: { type: "object" },
      handler: () => Effect.succeed(value)
    })
  const runOne = (tool: Tool.Tool, args: unknown = {}) =>
    Effect.flatMap(Tool.validate([tool]), (s) => Tool.executeTool(s, call(tool.name, args)))

  it.effect("a failure is described: a string as is, an object's message, JSON otherwise, String as a last resort", () =>
    Effect.gen(function*() {
      expect((yield* runOne(failWith("quota exceeded"))).content).toBe("Error: quota exceeded")
      expect((yield* runOne(failWith({ code: 7, message: "not allowed" }))).content).toBe("Error: not allowed")
      expect((yield* runOne(failWith({ code: 7, message: 42 }))).content).toBe("Error: {\"code\":7,\"message\":42}")
      expect((yield* runOne(failWith(null))).content).toBe("Error: null")
      // JSON.stringify gives undefined for undefined, and throws for a BigInt: String() is used.
      expect((yield* runOne(failWith(undefined))).content).toBe("Error: undefined")
      expect((yield* runOne(failWith(10n))).content).toBe("Error: 10")
      const r = yield* runOne(failWith(new Error("plain error")))
      expect(r).toMatchObject({ content: "Error: plain error", isError: true })
    }))

  it.effect("a defect that is a plain object with a message shows that message", () =>
    Effect.gen(function*() {
      const dies = Tool.dynamic("dies", {
        description: "Dies",
        inputSchema: { type: "object" },
        handler: () => Effect.die({ message: "invariant broken" })
      })
      expect(yield* runOne(dies)).toMatchObject({ content: "tool handler panicked: invariant broken", isError: true })
    }))

  it.effect("a dynamic tool's non-string result is JSON (undefined as null); an unencodable one is an error result", () =>
    Effect.gen(function*() {
      expect((yield* runOne(returning({ a: [1, "x"] }))).content).toBe("{\"a\":[1,\"x\"]}")
      expect((yield* runOne(returning(undefined))).content).toBe("null")
      const cyclic: Record<string, unknown> = {}
      cyclic["self"] = cyclic
      const r = yield* runOne(returning(cyclic))
      expect(r.isError).toBe(true)
      expect(r.content).toContain("Tool returns returned a result that cannot be encoded as JSON")
    }))

  it.effect("a dynamic tool gets {} for missing or null arguments, and parsed JSON text otherwise", () =>
    Effect.gen(function*() {
      const seen: Array<unknown> = []
      const recorder = Tool.dynamic("rec", {
        description: "Records its input",
        inputSchema: { type: "object" },
        handler: (input) => Effect.sync(() => seen.push(input)).pipe(Effect.as("ok"))
      })
      yield* runOne(recorder, null)
      yield* runOne(recorder, undefined)
      yield* runOne(recorder, "  ")
      yield* runOne(recorder, "{\"q\":1}")
      expect(seen).toEqual([{}, {}, {}, { q: 1 }])
      const bad = yield* runOne(recorder, "{oops")
      expect(bad).toMatchObject({ isError: true })
      expect(bad.content).toContain("Invalid arguments for tool rec: not JSON")
      expect(seen).toHaveLength(4)
    }))
})
