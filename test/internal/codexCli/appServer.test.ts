/**
 * The `codex app-server` JSON-RPC client (`internal/codexCli/appServer.ts`) against a scripted
 * peer: a real child process speaking JSON-RPC lines on stdio as the app-server does, including
 * what a real peer may also send (noise, answers to ids never asked, its own requests for
 * approvals and elicitations), error answers and exits. The turn's notifications
 * (`internal/codexCli/notifications.ts`) are read here too.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Scope from "effect/Scope"
import * as AppServer from "../../../src/internal/codexCli/appServer.ts"
import * as Notifications from "../../../src/internal/codexCli/notifications.ts"
import * as NodeSubprocess from "../../../src/layers/NodeSubprocess.ts"
import type { ChatEvent } from "../../../src/services/ChatEvent.ts"

/**
 * The peer. `initialize` is preceded by noise and seven requests of its own; once the client
 * answered them all, the answers come back in a `test/answers` notification. `thread/start`
 * behaves as `PEER_SCENARIO` says; `thread/resume` echoes the thread; `hang` is never answered.
 */
const peer = String.raw`
const scenario = process.env.PEER_SCENARIO
const out = (m) => process.stdout.write((typeof m === "string" ? m : JSON.stringify(m)) + "\n")
const answers = []
const asks = ["item/commandExecution/requestApproval", "item/fileChange/requestApproval", "execCommandApproval",
  "applyPatchApproval", "item/permissions/requestApproval", "mcpServer/elicitation/request",
  "item/tool/requestUserInput", "item/tool/call"]
if (scenario === "deaf") { process.stdin.on("end", () => {}); setInterval(() => {}, 1000) }
require("node:readline").createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line)
  if (m.method === undefined) {
    answers.push(m)
    if (answers.length === asks.length) out({ jsonrpc: "2.0", method: "test/answers", params: { answers } })
    return
  }
  if (m.method === "initialized") return out({ method: "test/initialized" })
  if (m.method === "initialize") {
    out("not json at all")
    out("[1, 2]")
    out({ jsonrpc: "2.0", id: 999, result: {} })
    asks.forEach((method, i) => out({ jsonrpc: "2.0", id: 50 + i, method, params: { threadId: "t-1" } }))
    return out({ jsonrpc: "2.0", id: m.id, result: { userAgent: "peer", params: m.params } })
  }
  if (m.method === "thread/start") {
    out({ method: "test/threadParams", params: m.params })
    if (scenario === "fails") return out({ id: m.id, error: { code: -32000, message: "bad config" } })
    if (scenario === "bare-error") return out({ id: m.id, error: {} })
    if (scenario === "no-thread") return out({ id: m.id, result: { thread: null } })
    if (scenario === "exits") { process.stderr.write("fatal: broken\n"); process.exit(3) }
    return out({ id: m.id, result: { thread: { id: "t-1" } } })
  }
  if (m.method === "thread/resume") return out({ id: m.id, result: { thread: { id: m.params.threadId } } })
  if (m.method === "quit") process.exit(0)
})
`

const settings: AppServer.ThreadSettings = { cwd: process.cwd(), model: "gpt-x", sandbox: "read-only" }

/** A connection to the peer in the test's scope, with every notification recorded. */
const connectPeer = (scenario: string, command = process.execPath) =>
  Effect.gen(function*() {
    const notes: Array<{ method: string; params: Record<string, unknown> }> = []
    const connection = yield* AppServer.connect(
      NodeSubprocess.make,
      { command, args: ["-e", peer], env: { PEER_SCENARIO: scenario } },
      "100 millis"
    )
    connection.listen((method, params) => Effect.sync(() => notes.push({ method, params })))
    const note = (method: string) => notes.find((n) => n.method === method)
    return { connection, notes, note }
  })

const failureOf = <A, E>(exit: Exit.Exit<A, E>): E => {
  assert(Exit.isFailure(exit))
  const reason = exit.cause.reasons[0]
  assert(reason !== undefined && reason._tag === "Fail")
  return reason.error
}

describe("codex app-server JSON-RPC client", () => {
  it.live("opens a thread; the peer's noise is ignored and each of its requests refused", () =>
    Effect.gen(function*() {
      const { connection, note } = yield* connectPeer("new")
      expect(yield* AppServer.openThread(connection, undefined, settings)).toBe("t-1")
      // The thread runs with exec's approval policy and the process's settings.
      expect(note("test/threadParams")?.params).toEqual({
        cwd: process.cwd(),
        sandbox: "read-only",
        approvalPolicy: "never",
        model: "gpt-x"
      })
      expect(note("test/initialized")).toBeDefined()
      for (let i = 0; i < 100 && note("test/answers") === undefined; i++) yield* Effect.sleep("10 millis")
      const answers = note("test/answers")?.params["answers"] as Array<Record<string, unknown>>
      const byId = new Map(answers.map((a) => [a["id"], a["result"] ?? a["error"]]))
      expect(byId.get(50)).toEqual({ decision: "decline" })
      expect(byId.get(51)).toEqual({ decision: "decline" })
      expect(byId.get(52)).toEqual({ decision: { denied: { rejection: "refused: this client has no one to ask" } } })
      expect(byId.get(53)).toEqual(byId.get(52))
      expect(byId.get(54)).toEqual({ permissions: {}, scope: "turn" })
      expect(byId.get(55)).toEqual({ action: "decline", content: null, _meta: null })
      expect(byId.get(56)).toEqual({ answers: {} })
      expect(byId.get(57)).toEqual({ code: -32601, message: "item/tool/call is not offered by this client" })
      expect(connection.alive()).toBe(true)
    }).pipe(Effect.scoped))

  it.live("resumes a thread by id, without a model when none is set", () =>
    Effect.gen(function*() {
      const { connection } = yield* connectPeer("new")
      expect(yield* AppServer.openThread(connection, "t-old", { ...settings, model: undefined })).toBe("t-old")
    }).pipe(Effect.scoped))

  it.live("an error answer fails with the method, code and message; an answer without a thread too", () =>
    Effect.gen(function*() {
      const fails = yield* connectPeer("fails")
      expect(failureOf(yield* Effect.exit(AppServer.openThread(fails.connection, undefined, settings)))).toEqual({
        _tag: "RpcFailure",
        method: "thread/start",
        code: -32000,
        message: "bad config"
      })
      const bare = yield* connectPeer("bare-error")
      expect(failureOf(yield* Effect.exit(AppServer.openThread(bare.connection, undefined, settings)))).toEqual({
        _tag: "RpcFailure",
        method: "thread/start",
        code: undefined,
        message: "error"
      })
      const empty = yield* connectPeer("no-thread")
      expect(failureOf(yield* Effect.exit(AppServer.openThread(empty.connection, undefined, settings)))).toMatchObject({
        method: "thread/start",
        message: "no thread id in the answer"
      })
    }).pipe(Effect.scoped))

  it.live("a peer that exits fails the open request with its exit; later requests fail at once, silently", () =>
    Effect.gen(function*() {
      const { connection } = yield* connectPeer("exits")
      const error = failureOf(yield* Effect.exit(AppServer.openThread(connection, undefined, settings)))
      assert(error._tag === "ServerEnded")
      expect(error.ended.exitCode).toBe(3)
      expect(error.ended.stderr).toContain("fatal: broken")
      // It had answered `initialize`: the process was heard.
      expect(error.silent).toBe(false)
      expect(connection.alive()).toBe(false)
      const later = failureOf(yield* Effect.exit(connection.request("thread/start", {})))
      expect(later).toMatchObject({ _tag: "ServerEnded", silent: true })
    }).pipe(Effect.scoped))

  it.live("a request nothing answers after quiet() is silent; orEnded fails a wait the end cuts short", () =>
    Effect.gen(function*() {
      const { connection } = yield* connectPeer("new")
      yield* AppServer.openThread(connection, undefined, settings)
      const never = yield* Deferred.make<void>()
      connection.quiet()
      const waiting = yield* Effect.forkChild(Effect.exit(connection.orEnded(Deferred.await(never))))
      const quit = failureOf(yield* Effect.exit(connection.request("quit", {})))
      expect(quit).toMatchObject({ _tag: "ServerEnded", silent: true, ended: { exitCode: 0 } })
      const cut = failureOf(yield* Fiber.join(waiting))
      expect(cut).toMatchObject({ _tag: "ServerEnded", ended: { exitCode: 0 } })
    }).pipe(Effect.scoped))

  it.live("a missing program ends the connection with the spawn's error", () =>
    Effect.gen(function*() {
      const { connection } = yield* connectPeer("new", "/no/such/codex")
      const error = failureOf(yield* Effect.exit(AppServer.openThread(connection, undefined, settings)))
      assert(error._tag === "ServerEnded")
      expect(error.ended.exitCode).toBeUndefined()
      expect(error.ended.error?.reason._tag).toBe("NotFound")
    }).pipe(Effect.scoped))

  it.live("closing the scope stops a peer that ignores the end of its stdin", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { connection } = yield* connectPeer("deaf").pipe(Scope.provide(scope))
      yield* AppServer.openThread(connection, undefined, settings)
      yield* Scope.close(scope, Exit.void)
      expect(connection.alive()).toBe(false)
      expect(failureOf(yield* Effect.exit(connection.request("thread/start", {})))).toMatchObject({
        _tag: "ServerEnded",
        ended: { exitCode: undefined }
      })
    }))
})

describe("codex app-server turn notifications", () => {
  const run = (effect: Effect.Effect<void>) => Effect.runSync(effect)

  it("reads deltas, items, usage, errors and the end of one thread's turn", () => {
    const events: Array<ChatEvent> = []
    const reader = Notifications.makeTurnReader("t", "gtb", (e) => Effect.sync(() => events.push(e)))
    const on = (method: string, params: Record<string, unknown>) =>
      run(reader.onNotification(method, { threadId: "t", ...params }))
    run(reader.onNotification("item/agentMessage/delta", { threadId: "other", itemId: "m0", delta: "NOT MINE" }))
    on("item/agentMessage/delta", { itemId: "m1", delta: "hel" })
    on("item/agentMessage/delta", { itemId: "m1", delta: "" })
    on("item/agentMessage/delta", { itemId: "m1" })
    on("item/agentMessage/delta", { itemId: "m1", delta: "lo" })
    on("item/completed", { item: { type: "agentMessage", id: "m1", text: "hello" } })
    on("item/started", { item: { type: "agentMessage", id: "m2", text: "" } })
    on("item/started", { item: "not an item" })
    const call = { type: "mcpToolCall", id: "c1", server: "gtb", tool: "add", arguments: { a: 1 } }
    on("item/started", { item: { ...call, status: "inProgress" } })
    on("item/completed", {
      item: { ...call, status: "completed", result: { content: [{ type: "text", text: "2" }] }, error: null }
    })
    on("item/started", { item: { ...call, id: "c2", server: "other" } })
    on("item/completed", {
      item: { type: "commandExecution", id: "x1", command: "rm -rf /", status: "declined", exitCode: null }
    })
    on("item/completed", {
      item: {
        type: "commandExecution",
        id: "x2",
        command: "ls",
        status: "completed",
        aggregatedOutput: "a",
        exitCode: 0
      }
    })
    on("item/completed", { item: { type: "reasoning", id: "r1" } })
    // A message that came whole, without deltas, is reported whole.
    on("item/completed", { item: { type: "agentMessage", id: "m3", text: "the answer" } })
    on("thread/tokenUsage/updated", {
      tokenUsage: { total: { inputTokens: 9, cachedInputTokens: 4, outputTokens: 2 } }
    })
    on("thread/tokenUsage/updated", { tokenUsage: { total: "broken" } })
    on("error", { error: { message: "retrying" }, willRetry: true })
    on("error", { error: { message: "the stream broke" }, willRetry: false })
    on("turn/plan/updated", {})
    on("turn/completed", { turn: { id: "u1", status: "failed", error: null } })
    const turn = Effect.runSync(Deferred.await(reader.finished))
    const outcome = reader.outcome(turn)
    expect(outcome).toMatchObject({
      turnId: "u1",
      status: "failed",
      text: "the answer",
      failure: { message: "the stream broke", httpStatus: undefined },
      usage: { inputTokens: 9, cachedInputTokens: 4, outputTokens: 2 },
      bridgeCalled: true
    })
    expect(events.filter((e) => e._tag === "TextDelta").map((e) => e.text)).toEqual(["hel", "lo", "the answer"])
    expect(events.filter((e) => e._tag !== "TextDelta").map((e) => [e._tag, "name" in e ? e.name : ""])).toEqual([
      ["ToolCallStart", "add"],
      ["ToolCallEnd", "add"],
      ["AgentToolStart", "mcp__other__add"],
      ["AgentToolEnd", "shell"],
      ["AgentToolEnd", "shell"]
    ])
    const shells = outcome.activity.filter((a) => a._tag === "AgentToolEnd")
    expect(shells.map((s) => [s.isError, s.result])).toEqual([[true, ""], [false, "a"]])
  })

  it("a muted reader reports nothing; a turn without status, id or error has defaults", () => {
    const events: Array<ChatEvent> = []
    const reader = Notifications.makeTurnReader("t", "gtb", (e) => Effect.sync(() => events.push(e)))
    reader.mute()
    run(reader.onNotification("item/agentMessage/delta", { threadId: "t", itemId: "m", delta: "x" }))
    run(reader.onNotification("turn/completed", { threadId: "t", turn: "?" }))
    expect(events).toEqual([])
    expect(reader.outcome({})).toMatchObject({ turnId: "", status: "completed", failure: undefined, usage: undefined })
    expect(reader.outcome({ status: "failed" }).failure).toEqual({ message: "turn failed", httpStatus: undefined })
    expect(reader.outcome({ status: "failed", error: { codexErrorInfo: "unauthorized" } }).failure).toEqual({
      message: "turn failed",
      httpStatus: undefined
    })
    // Without emit the reader still reads.
    const quiet = Notifications.makeTurnReader("t", "gtb", undefined)
    run(quiet.onNotification("item/completed", { threadId: "t", item: { type: "agentMessage", id: "m", text: "hi" } }))
    expect(quiet.outcome({}).text).toBe("hi")
  })

  it("an HTTP status is found in whichever variant of codexErrorInfo carries one", () => {
    expect(Notifications.httpStatusOf({ httpConnectionFailed: { httpStatusCode: 401 } })).toBe(401)
    expect(Notifications.httpStatusOf({ responseTooManyFailedAttempts: { httpStatusCode: 429 } })).toBe(429)
    expect(Notifications.httpStatusOf({ httpConnectionFailed: { httpStatusCode: null } })).toBeUndefined()
    expect(Notifications.httpStatusOf("badRequest")).toBeUndefined()
    expect(Notifications.execItem({ type: "plan", id: "p" })).toEqual({ type: "plan", id: "p" })
  })
})
