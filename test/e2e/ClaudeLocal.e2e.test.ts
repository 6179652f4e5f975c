import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { readdirSync } from "node:fs"
import { connect } from "node:net"
import type * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import * as NodeMcpBridge from "../../src/layers/NodeMcpBridge.ts"
import * as Tool from "../../src/services/Tool.ts"
import { claudeProcessesIn, claudeVersions, type Sandbox, sandbox } from "../support/claudeCli.ts"
import { localClient, type LocalWiring, recordingSecretFile } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

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

/** The conversation's requests: claude 2.0.x also sends a one-token probe that counts the MCP tools' tokens. */
const modelTurns = (api: Fake.FakeMessagesApi) => api.messageRequests().filter((r) => r.body["max_tokens"] !== 1)

const portRefuses = (port: number) =>
  Effect.callback<boolean>((resume) => {
    const socket = connect(port, "127.0.0.1")
    socket.on("connect", () => {
      socket.destroy()
      resume(Effect.succeed(false))
    })
    socket.on("error", () => resume(Effect.succeed(true)))
  })

describeWithClaude("ClaudeLocal with the real claude binary", () => {
  describe.each(claudeVersions)("claude $version", ({ binary, oldest }) => {
    const clientIn = (box: Sandbox, options: ClaudeLocal.Options = {}, wiring?: LocalWiring) =>
      localClient(box, { binary, ...options }, wiring)

    // The version gates agree with the binary: 2.0.0 lacks both flags, 2.1.332 runs with them.
    it.live("maxBudgetUsd and effort: a config error before any model call on 2.0.0, accepted on 2.1.332", () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(() => ({ text: "fine" }))
        const box = yield* sandbox(api.url)
        for (const option of [{ maxBudgetUsd: 1 }, { effort: "low" as const }]) {
          const chat = yield* clientIn(box, option)
          if (oldest) {
            const error = yield* Effect.flip(chat.chat("hi"))
            expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "ConfigurationError" } })
            expect(error.message).toContain("needs claude 2.")
          } else {
            expect(yield* chat.chat("hi")).toBe("fine")
          }
        }
        expect(api.messageRequests().length).toBe(oldest ? 0 : 2)
      }))

    it.live("the model calls an in-process tool through the bridge; no tool-search round trip", () =>
      Effect.gen(function*() {
        const api = yield* Fake.make((req) => {
          const results = Fake.toolResults(req)
          if (results.length === 0) return { toolUses: [{ name: "mcp__gtb__add", input: { a: 2, b: 40 } }] }
          return { text: `The sum is ${results[0]!.content}.` }
        })
        const box = yield* sandbox(api.url)
        const chat = yield* clientIn(box)
        yield* chat.setTools([add])
        const answer = yield* chat.chat("What is 2 + 40? Use the add tool.")
        expect(answer).toBe("The sum is 42.")
        const calls = modelTurns(api)
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

    it.live("the server-form allow-list with one bridge tool opted out: that tool never runs", () =>
      Effect.gen(function*() {
        const api = yield* Fake.make((req) =>
          Fake.toolResults(req).length === 0
            ? { toolUses: [{ name: "mcp__gtb__broken", input: {} }] }
            : { text: "fine" }
        )
        const box = yield* sandbox(api.url)
        const chat = yield* clientIn(box, { toolPolicy: { disabledTools: ["mcp__gtb__broken"] } })
        yield* chat.setTools([add, broken])
        const outcome = yield* Effect.result(chat.chat("hello"))
        const [first, second] = modelTurns(api)
        expect(toolNames(first!)).toContain("mcp__gtb__add")
        // Either way the handler never runs.
        expect(Fake.toolResults(second!)).toEqual([
          expect.objectContaining({ is_error: true, content: expect.not.stringContaining("database") })
        ])
        if (oldest) {
          // 2.0.x keeps a disallowed MCP tool in the model's list and denies the call.
          expect(toolNames(first!)).toContain("mcp__gtb__broken")
          expect(outcome).toMatchObject({
            _tag: "Failure",
            failure: { _tag: "PermissionDeniedError", tools: ["mcp__gtb__broken"] }
          })
        } else {
          expect(toolNames(first!)).not.toContain("mcp__gtb__broken")
          expect(outcome).toMatchObject({ _tag: "Success", success: "fine" })
        }
      }))

    it.live("a failing handler reaches the model as is_error", () =>
      Effect.gen(function*() {
        const api = yield* Fake.make((req) => {
          const results = Fake.toolResults(req)
          if (results.length === 0) return { toolUses: [{ name: "mcp__gtb__broken", input: {} }] }
          return { text: `Tool said: ${results[0]!.content}` }
        })
        const box = yield* sandbox(api.url)
        const chat = yield* clientIn(box)
        yield* chat.setTools([add, broken])
        const answer = yield* chat.chat("Try the broken tool")
        const result = Fake.toolResults(modelTurns(api)[1]!)[0]!
        expect(result.is_error).toBe(true)
        expect(result.content).toContain("Error: the database is on fire")
        expect(answer).toContain("the database is on fire")
      }))

    it.live("a second turn resumes the session; added text is joined into the prompt", () =>
      Effect.gen(function*() {
        const api = yield* Fake.make((req) => ({ text: `You said: ${Fake.lastUserText(req).split("\n").at(-1)}` }))
        const box = yield* sandbox(api.url)
        const chat = yield* clientIn(box)
        yield* chat.add("Remember the word: pineapple.")
        expect(yield* chat.chat("First question")).toBe("You said: First question")
        expect(Fake.lastUserText(modelTurns(api)[0]!)).toContain("Remember the word: pineapple.\n\nFirst question")
        expect(yield* chat.chat("Second question")).toBe("You said: Second question")
        const second = modelTurns(api)[1]!
        const transcript = JSON.stringify(second.body.messages)
        expect(transcript).toContain("pineapple")
        expect(transcript).toContain("You said: First question")
      }))

    it.live(
      `ask returns a value decoded with the schema, ${oldest ? "the schema in the prompt" : "via --json-schema"}`,
      () =>
        Effect.gen(function*() {
          const answer = { city: "Lisbon", population: 545_000 }
          const api = yield* Fake.make((req) =>
            toolNames(req).includes("StructuredOutput")
              ? { toolUses: [{ name: "StructuredOutput", input: answer }] }
              : Fake.lastUserText(req).includes("JSON Schema")
              ? { text: JSON.stringify(answer) }
              : { text: "no schema was offered" }
          )
          const box = yield* sandbox(api.url)
          const chat = yield* clientIn(box)
          const City = Schema.Struct({ city: Schema.String, population: Schema.Number })
          expect(yield* chat.ask("Largest city of Portugal?", City)).toEqual(answer)
          const first = modelTurns(api)[0]!
          if (oldest) {
            // 2.0.0 has no --json-schema: no StructuredOutput tool, the schema travels in the prompt.
            expect(toolNames(first)).not.toContain("StructuredOutput")
            const prompt = Fake.lastUserText(first)
            expect(prompt).toContain("Largest city of Portugal?")
            expect(JSON.parse(prompt.slice(prompt.indexOf("{")))).toMatchObject({
              type: "object",
              required: ["city", "population"]
            })
          } else {
            const schemaSent = first.body.tools!.find((t) => t.name === "StructuredOutput")!.input_schema
            expect(schemaSent).toMatchObject({ type: "object", required: ["city", "population"] })
          }
          // Not a plain answer any more: chat after ask is not forced into a schema.
          expect(yield* chat.chat("thanks")).toBe("no schema was offered")
        })
    )

    it.live("a bridge that rejects the CLI is a typed error, not an answer without tools", () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(() => ({ text: "answered without tools" }))
        const box = yield* sandbox(api.url)
        // The config file carries a wrong token: the real bridge answers the CLI with 401.
        const tampering = recordingSecretFile(box, (c) => c.replace(/Bearer [A-Za-z0-9_-]+/, "Bearer wrong"))
        const chat = yield* clientIn(box, {}, { secretFile: tampering.layer })
        yield* chat.setTools([add])
        const error = yield* Effect.flip(chat.chat("add 1 and 2"))
        expect(error._tag).toBe("ProviderError")
        expect(error.message).toContain("MCP server gtb: failed")
      }))

    it.live("interrupting a run leaves no process, no open port and no secret file", () =>
      Effect.gen(function*() {
        const reached = yield* Deferred.make<void>()
        const api = yield* Fake.make(() => {
          Effect.runSync(Deferred.succeed(reached, undefined))
          return { text: "too late", delayMs: 30_000 }
        })
        const box = yield* sandbox(api.url)
        const scope = yield* Scope.make()
        const secrets = recordingSecretFile(box)
        const chat = yield* clientIn(box, { killGrace: "500 millis" }, { secretFile: secrets.layer }).pipe(
          Scope.provide(scope)
        )
        const probe = Tool.make("probe", {
          description: "Reports nothing",
          parameters: {},
          handler: () => Effect.succeed("ok")
        })
        yield* chat.setTools([probe])
        const fiber = yield* Effect.forkChild(chat.chat("take your time"))
        yield* Deferred.await(reached)
        const pids = claudeProcessesIn(box.cwd)
        expect(pids.length).toBeGreaterThan(0)
        expect(readdirSync(box.secrets).length).toBe(1)
        yield* Fiber.interrupt(fiber)
        expect(Exit.hasInterrupts(yield* Fiber.await(fiber))).toBe(true)
        expect(claudeProcessesIn(box.cwd)).toEqual([])
        for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow()
        expect(readdirSync(box.secrets)).toEqual([])
        const port = Number(/127\.0\.0\.1:(\d+)/.exec(secrets.written[0]!)![1])
        // The bridge outlives the run (it belongs to the client) and closes with the client's scope.
        expect(yield* portRefuses(port)).toBe(false)
        yield* Scope.close(scope, Exit.void)
        expect(yield* portRefuses(port)).toBe(true)
      }))

    it.live("chatStream: text deltas, bridge tool calls with results, usage, and the final text", () =>
      Effect.gen(function*() {
        const api = yield* Fake.make((req) => {
          const results = Fake.toolResults(req)
          if (results.length === 0) return { toolUses: [{ name: "mcp__gtb__add", input: { a: 20, b: 22 } }] }
          return { text: `The sum is ${results[0]!.content}, as computed.` }
        })
        const box = yield* sandbox(api.url)
        const chat = yield* clientIn(box)
        yield* chat.setTools([add])
        const events = yield* Stream.runCollect(chat.chatStream("add 20 and 22"))
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
        expect(JSON.stringify(modelTurns(api).at(-1)!.body.messages)).toContain("The sum is 42, as computed.")
      }))

    it.live("interrupting a chatStream consumer kills the CLI", () =>
      Effect.gen(function*() {
        const reached = yield* Deferred.make<void>()
        const api = yield* Fake.make(() => {
          Effect.runSync(Deferred.succeed(reached, undefined))
          return { text: "too late", delayMs: 30_000 }
        })
        const box = yield* sandbox(api.url)
        const chat = yield* clientIn(box, { killGrace: "500 millis" })
        const fiber = yield* Effect.forkChild(Stream.runDrain(chat.chatStream("take your time")))
        yield* Deferred.await(reached)
        const pids = claudeProcessesIn(box.cwd)
        expect(pids.length).toBeGreaterThan(0)
        yield* Fiber.interrupt(fiber)
        expect(claudeProcessesIn(box.cwd)).toEqual([])
      }))
  })
})

describeWithClaude("ClaudeLocal: each run owns its bridge sessions and tool calls (real claude binary)", () => {
  /** A client on a bridge the test watches. */
  const clientOnBridge = (box: Sandbox, options: ClaudeLocal.Options = {}) =>
    Effect.gen(function*() {
      const bridge = yield* NodeMcpBridge.make()
      const chat = yield* localClient(box, { bridge, ...options })
      return { bridge, chat }
    })

  /** A tool whose handler waits forever, reporting its start and its finalizer. */
  const slowTool = Effect.gen(function*() {
    const started = yield* Deferred.make<void>()
    const finalized = yield* Deferred.make<number>()
    const slow = Tool.make("slow", {
      description: "Takes very long",
      parameters: {},
      handler: () =>
        Deferred.succeed(started, undefined).pipe(
          Effect.andThen(Effect.never),
          Effect.ensuring(Effect.suspend(() => Deferred.succeed(finalized, Date.now())))
        )
    })
    return { slow, started, finalized }
  })

  it.live("after N turns the bridge holds no session of a finished run", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((req) => {
        const results = Fake.toolResults(req)
        if (results.length === 0) return { toolUses: [{ name: "mcp__gtb__add", input: { a: 1, b: 2 } }] }
        return { text: `got ${results[0]!.content}` }
      })
      const box = yield* sandbox(api.url)
      const { bridge, chat } = yield* clientOnBridge(box)
      yield* chat.setTools([add])
      for (let turn = 0; turn < 3; turn++) {
        expect(yield* chat.chat(`turn ${turn}`)).toBe("got 3")
        expect(yield* bridge.sessionCount).toBe(0)
      }
      // A failed run too: the model asks for a tool, then the API breaks.
      const failing = yield* Fake.make((req) =>
        Fake.toolResults(req).length === 0
          ? { toolUses: [{ name: "mcp__gtb__add", input: { a: 1, b: 2 } }] }
          : { status: 400, body: { type: "error", error: { type: "invalid_request_error", message: "no" } } }
      )
      const box2 = yield* sandbox(failing.url)
      const other = yield* clientOnBridge(box2)
      yield* other.chat.setTools([add])
      yield* Effect.flip(other.chat.chat("fail please"))
      expect(yield* other.bridge.sessionCount).toBe(0)
    }))

  it.live("interrupting a turn during a slow tool call interrupts the handler within the kill grace", () =>
    Effect.gen(function*() {
      const { finalized, slow, started } = yield* slowTool
      const api = yield* Fake.make(() => ({ toolUses: [{ name: "mcp__gtb__slow", input: {} }] }))
      const box = yield* sandbox(api.url)
      const { bridge, chat } = yield* clientOnBridge(box, { killGrace: "500 millis" })
      yield* chat.setTools([slow])
      const fiber = yield* Effect.forkChild(chat.chat("call the slow tool"))
      yield* Deferred.await(started)
      const before = Date.now()
      yield* Fiber.interrupt(fiber)
      // The interrupt returns once the run's scope is closed: the handler's finalizer already ran.
      expect(yield* Deferred.isDone(finalized)).toBe(true)
      const after = yield* Deferred.await(finalized)
      expect(after - before).toBeLessThan(500 + 2_000)
      expect(yield* bridge.sessionCount).toBe(0)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
    }))

  it.live("a requestTimeout during a slow tool call interrupts the handler too", () =>
    Effect.gen(function*() {
      const { finalized, slow, started } = yield* slowTool
      const api = yield* Fake.make(() => ({ toolUses: [{ name: "mcp__gtb__slow", input: {} }] }))
      const box = yield* sandbox(api.url)
      const { bridge, chat } = yield* clientOnBridge(box, { killGrace: "500 millis", requestTimeout: "8 seconds" })
      yield* chat.setTools([slow])
      const fiber = yield* Effect.forkChild(Effect.flip(chat.chat("call the slow tool")))
      yield* Deferred.await(started)
      const error = yield* Fiber.join(fiber)
      expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "TimeoutError" } })
      expect(yield* Deferred.isDone(finalized)).toBe(true)
      expect(yield* bridge.sessionCount).toBe(0)
    }))
})
