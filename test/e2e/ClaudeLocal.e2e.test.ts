import { expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { readdirSync } from "node:fs"
import { connect } from "node:net"
import * as ClaudeLocal from "../../src/layers/ClaudeLocal.js"
import * as NodeSecretFile from "../../src/layers/NodeSecretFile.js"
import * as NodeSubprocess from "../../src/layers/NodeSubprocess.js"
import { ChatClient } from "../../src/services/ChatClient.js"
import { SecretFile } from "../../src/services/SecretFile.js"
import * as Tool from "../../src/services/Tool.js"
import { claudeBinary, claudeProcessesIn, describeWithClaude, type Sandbox, sandbox } from "../support/claudeCli.js"
import * as Fake from "../support/FakeMessagesApi.js"

const add = Tool.make("add", {
  description: "Adds two numbers",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.succeed(a + b)
})
const broken = Tool.make("broken", {
  description: "Always fails",
  parameters: {},
  handler: () => Effect.fail(new Error("the database is on fire"))
})

const toolNames = (req: Fake.FakeRequest) => (req.body.tools ?? []).map((t) => t.name)

/**
 * Real secret files in the sandbox, with every config written kept for the test to read (and
 * optionally altered before it is written).
 */
const recordingSecretFile = (box: Sandbox, alter: (contents: string) => string = (c) => c) => {
  const written: Array<string> = []
  const layer = Layer.effect(
    SecretFile,
    Effect.map(SecretFile, (real) => ({
      writeScoped: (contents: string) => {
        written.push(contents)
        return real.writeScoped(alter(contents))
      }
    }))
  ).pipe(Layer.provide(NodeSecretFile.layer({ directory: box.secrets })))
  return { layer, written }
}

/** A ChatClient on the real CLI inside `box`, built in `scope` so a test can close it itself. */
const clientIn = (
  box: Sandbox,
  scope: Scope.Scope,
  options: ClaudeLocal.Options = {},
  secretFile: Layer.Layer<SecretFile> = recordingSecretFile(box).layer
) =>
  Layer.buildWithScope(
    ClaudeLocal.layer({ binary: claudeBinary, cwd: box.cwd, env: box.env, requestTimeout: "60 seconds", ...options })
      .pipe(
        Layer.provide(NodeSubprocess.layer),
        Layer.provide(secretFile)
      ),
    scope
  ).pipe(Effect.map((ctx) => Context.get(ctx, ChatClient)))

const portRefuses = (port: number) =>
  Effect.async<boolean>((resume) => {
    const socket = connect(port, "127.0.0.1")
    socket.on("connect", () => {
      socket.destroy()
      resume(Effect.succeed(false))
    })
    socket.on("error", () => resume(Effect.succeed(true)))
  })

describeWithClaude("ClaudeLocal with the real claude binary", () => {
  it.scopedLive("the model calls an in-process tool through the bridge; no tool-search round trip", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((req) => {
        const results = Fake.toolResults(req)
        if (results.length === 0) return { toolUses: [{ name: "mcp__gtb__add", input: { a: 2, b: 40 } }] }
        return { text: `The sum is ${results[0]!.content}.` }
      })
      const box = yield* sandbox(api.url)
      const chat = yield* clientIn(box, yield* Effect.scope)
      yield* chat.setTools([add])
      const answer = yield* chat.chat("What is 2 + 40? Use the add tool.")
      expect(answer).toBe("The sum is 42.")
      const calls = api.messageRequests()
      expect(calls.length).toBe(2)
      // alwaysLoad: the bridge's tool is in the very first request, with its own schema.
      expect(toolNames(calls[0]!)).toContain("mcp__gtb__add")
      expect(toolNames(calls[0]!)).not.toContain("mcp__gtb__broken")
      const served = calls[0]!.body.tools!.find((t) => t.name === "mcp__gtb__add")!
      expect(served.input_schema).toMatchObject({ type: "object", required: ["a", "b"] })
      expect(Fake.toolResults(calls[1]!)).toEqual([
        expect.objectContaining({ content: "42", is_error: false })
      ])
      // Headless policy: the registry's disabled and interactive tools never reach the model.
      for (const name of toolNames(calls[0]!)) {
        expect(["WebSearch", "WebFetch", "NotebookEdit", "AskUserQuestion", "EnterPlanMode"]).not.toContain(name)
      }
      const usage = yield* chat.usage
      expect(usage.known).toBe(true)
      expect(usage.outputTokens).toBeGreaterThan(0)
      expect(readdirSync(box.secrets)).toEqual([])
    }))

  it.scopedLive("a failing handler reaches the model as is_error", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((req) => {
        const results = Fake.toolResults(req)
        if (results.length === 0) return { toolUses: [{ name: "mcp__gtb__broken", input: {} }] }
        return { text: `Tool said: ${results[0]!.content}` }
      })
      const box = yield* sandbox(api.url)
      const chat = yield* clientIn(box, yield* Effect.scope)
      yield* chat.setTools([add, broken])
      const answer = yield* chat.chat("Try the broken tool")
      const result = Fake.toolResults(api.messageRequests()[1]!)[0]!
      expect(result.is_error).toBe(true)
      expect(result.content).toContain("Error: the database is on fire")
      expect(answer).toContain("the database is on fire")
    }))

  it.scopedLive("a second turn resumes the session; added text is joined into the prompt", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((req) => ({ text: `You said: ${Fake.lastUserText(req).split("\n").at(-1)}` }))
      const box = yield* sandbox(api.url)
      const chat = yield* clientIn(box, yield* Effect.scope)
      yield* chat.add("Remember the word: pineapple.")
      expect(yield* chat.chat("First question")).toBe("You said: First question")
      expect(Fake.lastUserText(api.messageRequests()[0]!)).toContain("Remember the word: pineapple.\n\nFirst question")
      expect(yield* chat.chat("Second question")).toBe("You said: Second question")
      const second = api.messageRequests()[1]!
      const transcript = JSON.stringify(second.body.messages)
      expect(transcript).toContain("pineapple")
      expect(transcript).toContain("You said: First question")
    }))

  it.scopedLive("ask returns a value decoded with the schema, via --json-schema", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((req) =>
        toolNames(req).includes("StructuredOutput")
          ? { toolUses: [{ name: "StructuredOutput", input: { city: "Lisbon", population: 545_000 } }] }
          : { text: "no schema was offered" }
      )
      const box = yield* sandbox(api.url)
      const chat = yield* clientIn(box, yield* Effect.scope)
      const City = Schema.Struct({ city: Schema.String, population: Schema.Number })
      expect(yield* chat.ask("Largest city of Portugal?", City)).toEqual({ city: "Lisbon", population: 545_000 })
      const schemaSent = api.messageRequests()[0]!.body.tools!.find((t) => t.name === "StructuredOutput")!.input_schema
      expect(schemaSent).toMatchObject({ type: "object", required: ["city", "population"] })
      // Not a plain answer any more: chat after ask is not forced into a schema.
      expect(yield* chat.chat("thanks")).toBe("no schema was offered")
    }))

  it.scopedLive("a bridge that rejects the CLI is a typed error, not an answer without tools", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(() => ({ text: "answered without tools" }))
      const box = yield* sandbox(api.url)
      // The config file carries a wrong token: the real bridge answers the CLI with 401.
      const tampering = recordingSecretFile(box, (c) => c.replace(/Bearer [A-Za-z0-9_-]+/, "Bearer wrong"))
      const chat = yield* clientIn(box, yield* Effect.scope, {}, tampering.layer)
      yield* chat.setTools([add])
      const error = yield* Effect.flip(chat.chat("add 1 and 2"))
      expect(error._tag).toBe("ProviderError")
      expect(error.message).toContain("MCP server gtb: failed")
    }))

  it.scopedLive("interrupting a run leaves no process, no open port and no secret file", () =>
    Effect.gen(function*() {
      const reached = yield* Deferred.make<void>()
      const api = yield* Fake.make(() => {
        Effect.runSync(Deferred.succeed(reached, undefined))
        return { text: "too late", delayMs: 30_000 }
      })
      const box = yield* sandbox(api.url)
      const scope = yield* Scope.make()
      const secrets = recordingSecretFile(box)
      const chat = yield* clientIn(box, scope, { killGrace: "500 millis" }, secrets.layer)
      const probe = Tool.make("probe", {
        description: "Reports nothing",
        parameters: {},
        handler: () => Effect.succeed("ok")
      })
      yield* chat.setTools([probe])
      const fiber = yield* Effect.fork(chat.chat("take your time"))
      yield* Deferred.await(reached)
      const pids = claudeProcessesIn(box.cwd)
      expect(pids.length).toBeGreaterThan(0)
      expect(readdirSync(box.secrets).length).toBe(1)
      const exit = yield* Fiber.interrupt(fiber)
      expect(Exit.isInterrupted(exit)).toBe(true)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
      for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow()
      expect(readdirSync(box.secrets)).toEqual([])
      const port = Number(/127\.0\.0\.1:(\d+)/.exec(secrets.written[0]!)![1])
      // The bridge outlives the run (it belongs to the client) and closes with the client's scope.
      expect(yield* portRefuses(port)).toBe(false)
      yield* Scope.close(scope, Exit.void)
      expect(yield* portRefuses(port)).toBe(true)
    }))

  it.scopedLive("chatStream: text deltas, bridge tool calls with results, usage, and the final text", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((req) => {
        const results = Fake.toolResults(req)
        if (results.length === 0) return { toolUses: [{ name: "mcp__gtb__add", input: { a: 20, b: 22 } }] }
        return { text: `The sum is ${results[0]!.content}, as computed.` }
      })
      const box = yield* sandbox(api.url)
      const chat = yield* clientIn(box, yield* Effect.scope)
      yield* chat.setTools([add])
      const events = Chunk.toArray(yield* Stream.runCollect(chat.chatStream("add 20 and 22")))
      const text = events.flatMap((e) => (e._tag === "TextDelta" ? [e.text] : []))
      // The fake streams each text in two deltas.
      expect(text.length).toBeGreaterThanOrEqual(2)
      expect(text.join("")).toBe("The sum is 42, as computed.")
      expect(events.at(-1)).toMatchObject({ _tag: "Complete", text: "The sum is 42, as computed." })
      const tools = events.filter((e) => e._tag === "ToolCallStart" || e._tag === "ToolCallEnd")
      expect(tools).toMatchObject([
        { _tag: "ToolCallStart", name: "add", arguments: { a: 20, b: 22 } },
        { _tag: "ToolCallEnd", name: "add", result: "42", isError: false }
      ])
      expect(tools[0]!.id).toMatch(/^toolu_/)
      expect(tools[1]!.id).toBe(tools[0]!.id)
      expect(events.filter((e) => e._tag === "Usage").length).toBe(1)
      // History moves as with chat: the next turn resumes.
      yield* chat.chat("thanks")
      expect(JSON.stringify(api.messageRequests().at(-1)!.body.messages)).toContain("The sum is 42, as computed.")
    }))

  it.scopedLive("interrupting a chatStream consumer kills the CLI", () =>
    Effect.gen(function*() {
      const reached = yield* Deferred.make<void>()
      const api = yield* Fake.make(() => {
        Effect.runSync(Deferred.succeed(reached, undefined))
        return { text: "too late", delayMs: 30_000 }
      })
      const box = yield* sandbox(api.url)
      const chat = yield* clientIn(box, yield* Effect.scope, { killGrace: "500 millis" })
      const fiber = yield* Effect.fork(Stream.runDrain(chat.chatStream("take your time")))
      yield* Deferred.await(reached)
      const pids = claudeProcessesIn(box.cwd)
      expect(pids.length).toBeGreaterThan(0)
      yield* Fiber.interrupt(fiber)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
    }))
})
