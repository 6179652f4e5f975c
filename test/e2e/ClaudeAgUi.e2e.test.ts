/**
 * `effect-chat-bridge/ag-ui` spoken to by `@ag-ui/client`'s `HttpAgent` in plain Node: the real
 * `claude` binary (kept alive) against the fake Messages API, served by `ClaudeAgUi.layer` on a
 * loopback Node HTTP server. A run streams text and a tool call, and a failed turn is RUN_ERROR; an
 * aborted run stops the turn and the next run has its history; a run sent while a tool runs is
 * steered into it; a parked tool call is approved from a server started after the first one
 * stopped, and denied (`approved: false`, or a cancelled interrupt) without running; the same
 * endpoint serves ClaudeAgent.
 */
import { type BaseEvent, HttpAgent } from "@ag-ui/client"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServer from "effect/http/HttpServer"
import * as Layer from "effect/Layer"
import * as NetAddress from "effect/net/NetAddress"
import * as Scope from "effect/Scope"
import { existsSync, readFileSync } from "node:fs"
import { createServer } from "node:http"
import { join } from "node:path"
import * as ClaudeAgUi from "../../src/ai/ClaudeAgUi.ts"
import * as ClaudeAgent from "../../src/layers/ClaudeAgent.ts"
import * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import * as ClaudeSessionStoreSql from "../../src/layers/ClaudeSessionStoreSql.ts"
import { ChatClient } from "../../src/services/ChatClient.ts"
import * as Tool from "../../src/services/Tool.ts"
import { claudeBinary, claudeProcessesIn, type Sandbox, sandbox } from "../support/claudeCli.ts"
import { localServices, requestTimeout } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"
import { allText, until } from "../support/liveHarness.ts"
import { transfer } from "./fixtures/approvalTool.ts"

let ids = 0

/** The model: tools by keyword, a story that hangs mid-answer, an echo otherwise. */
const model = (req: Fake.FakeRequest): Fake.FakeReply => {
  const results = Fake.toolResults({
    ...req,
    body: { ...req.body, messages: (req.body.messages ?? []).filter((m) => m.role === "user").slice(-1) }
  })
  if (results.length > 0) return { text: `after tool: ${results.map((r) => r.content).join(" | ")}` }
  const last = Fake.lastUserText(req)
  if (last.includes("refuse")) {
    return { status: 400, body: { type: "error", error: { type: "invalid_request_error", message: "prompt refused" } } }
  }
  if (last.includes("story")) return { text: "Once upon a time, in a land far away", breakMidway: "hang" }
  const amount = /amount (\d+)/.exec(last)
  if (amount !== null) {
    return {
      toolUses: [{ id: `toolu_agui_${++ids}`, name: "mcp__gtb__transfer", input: { amount: Number(amount[1]) } }]
    }
  }
  for (const name of ["lookup", "wait"]) {
    if (last.includes(name)) return { toolUses: [{ id: `toolu_agui_${++ids}`, name: `mcp__gtb__${name}`, input: {} }] }
  }
  return { text: `You said: ${Fake.lastUserLine(req)}` }
}

const lookup = Tool.make("lookup", {
  description: "Looks a word up",
  parameters: {},
  handler: () => Effect.succeed("found it")
})

/** A tool that blocks until `gate` opens, telling `started` when it runs. */
const waitTool = (started: Deferred.Deferred<void>, gate: Deferred.Deferred<void>) =>
  Tool.make("wait", {
    description: "Waits for the operator",
    parameters: {},
    handler: () =>
      Deferred.succeed(started, undefined).pipe(Effect.andThen(Deferred.await(gate)), Effect.as("released"))
  })

/** Lines the approval tool appended, one per run. */
const runs = (log: string) => existsSync(log) ? readFileSync(log, "utf8").split("\n").filter((l) => l !== "") : []

/**
 * Serves ClaudeAgUi on 127.0.0.1 in a scope of its own (closing it is the server's restart), each
 * thread a kept-alive ClaudeLocal in `box` with `tools`; its URL and the scope.
 */
const serve = (
  box: Sandbox,
  tools: ReadonlyArray<Tool.Tool>,
  store?: string,
  provider: "ClaudeLocal" | "ClaudeAgent" = "ClaudeLocal"
) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const conversation = ({ resume }: ClaudeAgUi.Thread) => {
      const options = {
        cwd: box.cwd,
        env: box.env,
        requestTimeout: requestTimeout as Duration.Input,
        keepAlive: true,
        resume
      }
      const claude = (provider === "ClaudeAgent"
        ? ClaudeAgent.layer({ ...options, toolPolicy: { disabledTools: ["Bash"] } })
        : ClaudeLocal.layer({ ...options, binary: claudeBinary, toolPolicy: { disabledTools: ["Bash"] } }).pipe(
          Layer.provide(localServices(box))
        )).pipe(Layer.tap((context) => Context.get(context, ChatClient).setTools(tools)))
      return store === undefined
        ? claude
        : claude.pipe(Layer.provide(ClaudeSessionStoreSql.layerSqlite({ filename: store })))
    }
    const server = HttpRouter.serve(ClaudeAgUi.layer({ conversation }), { disableLogger: true, disableListenLog: true })
      .pipe(Layer.provideMerge(NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: 0 })))
    const context = yield* Layer.buildWithScope(server, scope)
    const address = Context.get(context, HttpServer.HttpServer).address
    const port = NetAddress.isInetAddress(address) ? address.port : -1
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
    return { url: `http://127.0.0.1:${port}/agent`, scope }
  })

/** An `HttpAgent` on `threadId`, recording every event it receives. */
const agentOn = (url: string, threadId: string) => {
  const agent = new HttpAgent({ url, threadId })
  const events: Array<BaseEvent> = []
  agent.subscribe({ onEvent: ({ event }) => void events.push(event) })
  return { agent, events }
}

/** Sends `text` as a user message and runs the agent; the run's result and events. */
const send = (client: ReturnType<typeof agentOn>, text: string, params: Parameters<HttpAgent["runAgent"]>[0] = {}) =>
  Effect.promise(() => {
    const from = client.events.length
    if (text !== "") client.agent.addMessage({ id: `user-${++ids}`, role: "user", content: text })
    return client.agent.runAgent(params).then(
      (result) => ({ result, events: client.events.slice(from) }),
      (error: unknown) => ({ result: undefined, error, events: client.events.slice(from) })
    )
  })

const types = (events: ReadonlyArray<BaseEvent>) => events.map((event) => event.type as string)

const textOf = (events: ReadonlyArray<BaseEvent>) =>
  events.flatMap((event) =>
    event.type === "TEXT_MESSAGE_CONTENT" ? [(event as unknown as { delta: string }).delta] : []
  )
    .join("")

describeWithClaude("ClaudeAgUi: an AG-UI HttpAgent against a Claude Code conversation (real claude)", () => {
  it.live(
    "a run streams text and a tool call; the next run on the thread continues it; a failed turn is RUN_ERROR",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const box = yield* sandbox(api.url)
        const { url } = yield* serve(box, [lookup])
        const client = agentOn(url, "thread-stream")
        const first = yield* send(client, "Please lookup the word")
        expect(types(first.events)).toEqual(expect.arrayContaining(["RUN_STARTED", "RUN_FINISHED"]))
        // Arguments and text arrive in pieces: one kind per piece, repeats folded.
        const kinds = types(first.events).filter((t) => t.startsWith("TOOL_CALL") || t.startsWith("TEXT_MESSAGE"))
          .filter((t, i, all) => t !== all[i - 1])
        expect(kinds).toEqual([
          "TOOL_CALL_START",
          "TOOL_CALL_ARGS",
          "TOOL_CALL_END",
          "TOOL_CALL_RESULT",
          "TEXT_MESSAGE_START",
          "TEXT_MESSAGE_CONTENT",
          "TEXT_MESSAGE_END"
        ])
        const start = first.events.find((e) => e.type === "TOOL_CALL_START") as unknown as { toolCallName: string }
        expect(start.toolCallName).toBe("lookup")
        const result = first.events.find((e) => e.type === "TOOL_CALL_RESULT") as unknown as { content: string }
        expect(result.content).toBe("found it")
        expect(textOf(first.events)).toBe("after tool: found it")
        // HttpAgent folded the events into its messages: the tool call, its result and the answer.
        expect(client.agent.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"])

        const second = yield* send(client, "Remember pineapple")
        expect(textOf(second.events)).toBe("You said: Remember pineapple")
        // One CLI served both runs, and the model saw the first run in the second's history.
        expect(claudeProcessesIn(box.cwd)).toHaveLength(1)
        expect(allText(api.messageRequests().at(-1))).toContain("after tool: found it")

        // A failed turn: RUN_ERROR with the typed error's message and kind (HttpAgent rejects the run).
        const refused = yield* send(client, "Please refuse this")
        const error = refused.events.find((e) => e.type === "RUN_ERROR") as unknown as { message: string; code: string }
        expect(error.code).toMatch(/^ProviderError\//)
        expect(error.message).toContain("prompt refused")
      }),
    { timeout: 180_000 }
  )

  it.live(
    "aborting a run stops the turn and keeps the conversation: the next run has its history",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const box = yield* sandbox(api.url)
        const { url } = yield* serve(box, [])
        const client = agentOn(url, "thread-abort")
        yield* send(client, "Remember the word pineapple")
        const [pid] = claudeProcessesIn(box.cwd)
        const story = yield* Effect.forkChild(send(client, "Tell me a story"))
        yield* until(() => client.events.some((e) => e.type === "TEXT_MESSAGE_CONTENT" && textOf([e]).includes("Once")))
        client.agent.abortRun()
        const stopped = yield* Fiber.join(story)
        // The client reports its own abort; the server's side of the run was the interrupted turn.
        expect(stopped.events.at(-1)).toMatchObject({ type: "RUN_ERROR", code: "abort" })
        expect(textOf(stopped.events)).toContain("Once upon a time")

        const next = yield* send(client, "What was the word?")
        expect(textOf(next.events)).toBe("You said: What was the word?")
        const history = allText(api.messageRequests().at(-1))
        expect(history).toContain("pineapple")
        expect(history).toContain("Tell me a story")
        expect(history).toContain("Request interrupted by user")
        // The same CLI: the abort interrupted the turn, not the conversation.
        expect(claudeProcessesIn(box.cwd)).toEqual([pid])

        // Stop on the very first message of a thread: its CLI has no session on record yet, and
        // still keeps the stopped turn for the next run.
        const fresh = agentOn(url, "thread-abort-first")
        const first = yield* Effect.forkChild(send(fresh, "Tell me a story about pears"))
        yield* until(() => fresh.events.some((e) => e.type === "TEXT_MESSAGE_CONTENT"))
        fresh.agent.abortRun()
        yield* Fiber.join(first)
        const after = yield* send(fresh, "What was the fruit?")
        expect(textOf(after.events)).toBe("You said: What was the fruit?")
        expect(allText(api.messageRequests().at(-1))).toContain("story about pears")
        expect(claudeProcessesIn(box.cwd)).toHaveLength(2)
      }),
    { timeout: 180_000 }
  )

  it.live(
    "a run sent while a tool runs is steered into the running turn and ends at once",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const box = yield* sandbox(api.url)
        const started = yield* Deferred.make<void>()
        const gate = yield* Deferred.make<void>()
        const { url } = yield* serve(box, [waitTool(started, gate)])
        const first = agentOn(url, "thread-steer")
        const running = yield* Effect.forkChild(send(first, "Please wait for me"))
        yield* Deferred.await(started)
        // Another tab on the same thread: its run is folded into the running turn.
        const second = agentOn(url, "thread-steer")
        const steered = yield* send(second, "Also say banana")
        expect(types(steered.events)).toEqual(["RUN_STARTED", "RUN_FINISHED"])
        expect(steered.result?.result).toEqual({ steered: true })
        yield* Deferred.succeed(gate, undefined)
        const done = yield* Fiber.join(running)
        // The model read the steered text after the tool's result, within the first run: folded into
        // the tool boundary (one answer), or, when the CLI had already sent the result, as the next
        // turn of the same run (its answer follows in the same stream).
        const text = textOf(done.events)
        expect(text).toMatch(/^after tool: released(You said: Also say banana)?$/)
        const after = allText(api.messageRequests().at(-1))
        expect(after).toContain("Also say banana")
        expect(after.indexOf("Also say banana")).toBeGreaterThan(after.indexOf("released"))
      }),
    { timeout: 180_000 }
  )

  it.live(
    "a parked tool call is an AG-UI interrupt; approved after a server restart, the tool runs once",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const box = yield* sandbox(api.url)
        const store = join(box.dir, "store.sqlite")
        const log = join(box.dir, "runs.log")
        const before = yield* serve(box, [transfer(log)], store)
        const client = agentOn(before.url, "thread-approve")
        const parked = yield* send(client, "Send amount 5")
        const finished = parked.events.find((e) => e.type === "RUN_FINISHED") as unknown as {
          readonly outcome?: {
            readonly type: string
            readonly interrupts: ReadonlyArray<{ id: string; reason: string; metadata?: Record<string, unknown> }>
          }
        }
        expect(finished.outcome?.type).toBe("interrupt")
        const [interrupt] = finished.outcome!.interrupts
        expect(interrupt!.reason).toBe(ClaudeAgUi.ApprovalReason)
        expect(interrupt!.metadata?.[ClaudeAgUi.MetadataKey]).toEqual({ tool: "transfer", input: { amount: 5 } })
        expect(runs(log)).toEqual([])

        // The server stops (every CLI with it) and a new one starts on the same store.
        yield* Scope.close(before.scope, Exit.void)
        const after = yield* serve(box, [transfer(log)], store)
        client.agent.url = after.url
        const approved = yield* send(client, "", {
          resume: [{ interruptId: interrupt!.id, status: "resolved", payload: { approved: true } }]
        })
        expect(types(approved.events)).not.toContain("RUN_ERROR")
        expect(textOf(approved.events)).toBe("after tool: sent 5")
        expect(runs(log)).toEqual(["5"])
        // The thread goes on from the approved turn.
        const next = yield* send(client, "Thanks")
        expect(textOf(next.events)).toBe("You said: Thanks")
        expect(allText(api.messageRequests().at(-1))).toContain("sent 5")
      }),
    { timeout: 240_000 }
  )

  it.live(
    "a parked tool call denied through resume (approved: false, or a cancelled interrupt): the model reads the denial, the tool never runs",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const box = yield* sandbox(api.url)
        const log = join(box.dir, "runs.log")
        const { url } = yield* serve(box, [transfer(log)], join(box.dir, "store.sqlite"))
        const client = agentOn(url, "thread-deny")
        /** Sends the message; the interrupt its run finished with. */
        const park = (text: string) =>
          Effect.map(send(client, text), (run) => {
            const finished = run.events.find((e) => e.type === "RUN_FINISHED") as unknown as {
              readonly outcome?: { readonly type: string; readonly interrupts: ReadonlyArray<{ readonly id: string }> }
            }
            expect(finished.outcome?.type).toBe("interrupt")
            return finished.outcome!.interrupts[0]!.id
          })

        // Denied with a reason: the resumed turn's answer is the model's reply to the denial.
        const six = yield* park("Send amount 6")
        const denied = yield* send(client, "", {
          resume: [{
            interruptId: six,
            status: "resolved",
            payload: { approved: false, reason: "over the daily limit" }
          }]
        })
        expect(types(denied.events)).not.toContain("RUN_ERROR")
        expect(textOf(denied.events)).toMatch(/^after tool: .*over the daily limit/)
        expect(runs(log)).toEqual([])

        // A cancelled interrupt denies too, with the default reason the model reads.
        const eight = yield* park("Send amount 8")
        const cancelled = yield* send(client, "", { resume: [{ interruptId: eight, status: "cancelled" }] })
        expect(types(cancelled.events)).not.toContain("RUN_ERROR")
        expect(textOf(cancelled.events)).toMatch(/^after tool: .*The user denied this tool call/)
        expect(runs(log)).toEqual([])

        // A decided call cannot be approved afterwards: RUN_ERROR with the approval error's reason.
        const late = yield* send(client, "", {
          resume: [{ interruptId: six, status: "resolved", payload: { approved: true } }]
        })
        expect(late.events.find((e) => e.type === "RUN_ERROR")).toMatchObject({ code: "ApprovalError/AlreadyDecided" })
        expect(runs(log)).toEqual([])

        // The thread goes on, the denials in its history.
        const next = yield* send(client, "Thanks")
        expect(textOf(next.events)).toBe("You said: Thanks")
        const history = allText(api.messageRequests().at(-1))
        expect(history).toContain("over the daily limit")
        expect(history).toContain("The user denied this tool call")
      }),
    { timeout: 180_000 }
  )

  it.live(
    "the same endpoint on ClaudeAgent: a run streams a tool call and text, the next run continues",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const box = yield* sandbox(api.url)
        const { url } = yield* serve(box, [lookup], undefined, "ClaudeAgent")
        const client = agentOn(url, "thread-agent")
        const first = yield* send(client, "Please lookup the word")
        expect(types(first.events)).toEqual(expect.arrayContaining(["TOOL_CALL_START", "TOOL_CALL_RESULT"]))
        const result = first.events.find((e) => e.type === "TOOL_CALL_RESULT") as unknown as { content: string }
        expect(result.content).toBe("found it")
        expect(textOf(first.events)).toBe("after tool: found it")
        const second = yield* send(client, "Remember pineapple")
        expect(textOf(second.events)).toBe("You said: Remember pineapple")
        expect(allText(api.messageRequests().at(-1))).toContain("after tool: found it")
      }),
    { timeout: 180_000 }
  )
})
