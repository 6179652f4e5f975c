/**
 * CodexCli with `keepAlive` on a stand-in `codex`: a real child process (a Node script) that
 * answers `--version` and speaks `codex app-server`'s JSON-RPC on stdio, logging its argv and
 * each request it gets. Process-level behaviour comes from `FAKE_MODE`; a turn's from words in
 * its prompt (`SLOW`, `FAIL401`, ...). What the client makes of each outcome (a typed reason, a
 * kept or replaced process, a resumed thread, usage per turn) is checked here; the real CLI's
 * behaviour is `test/e2e/CodexCliKeepAlive.e2e.test.ts`'s.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as CodexCli from "../../src/layers/CodexCli.ts"
import * as NodeSubprocess from "../../src/layers/NodeSubprocess.ts"
import * as CodexCliCatalog from "../../src/registry/CodexCliCatalog.ts"
import * as Registry from "../../src/registry/Registry.ts"
import type { ChatError } from "../../src/services/ChatClient.ts"
import * as Tool from "../../src/services/Tool.ts"

const script = `#!${process.execPath}
const fs = require("node:fs")
const mode = process.env.FAKE_MODE ?? "normal"
if (process.argv[2] === "--version") {
  console.log("codex-cli 0.171.0")
  process.exit(0)
}
const log = (entry) => fs.appendFileSync(process.env.FAKE_LOG, JSON.stringify({ pid: process.pid, ...entry }) + "\\n")
log({ argv: process.argv.slice(2), token: process.env.CODEX_ECB_BRIDGE_TOKEN ?? null, key: process.env.CODEX_ECB_API_KEY ?? null })
const out = (m) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...m }) + "\\n")
const note = (method, params) => out({ method, params })
let thread
let turns = 0
let pending
const total = { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0 }
const complete = (turnId, status, error) => note("turn/completed", { threadId: thread, turn: { id: turnId, status, error } })
const turn = (m, turnId) => {
  const text = m.params.input.map((i) => i.text).join("")
  const t = (method, params) => note(method, { threadId: thread, turnId, ...params })
  if (text.includes("SLOW") || text.includes("STUBBORN")) return (pending = { turnId, text })
  if (text.includes("EXIT")) { process.stderr.write("panic: lost\\n"); process.exit(5) }
  if (text.includes("QUIETDEATH")) process.exit(6)
  if (text.includes("FAIL401")) {
    t("error", { error: { message: "Reconnecting... 1/5" }, willRetry: true })
    return complete(turnId, "failed", { message: "unexpected status 401 Unauthorized: bad key" })
  }
  if (text.includes("FAIL429")) {
    return complete(turnId, "failed", { message: "too many", codexErrorInfo: { responseTooManyFailedAttempts: { httpStatusCode: 429 } } })
  }
  if (text.includes("STOPPED")) return complete(turnId, "interrupted", null)
  if (text.includes("TOOLS")) {
    const call = { type: "mcpToolCall", id: "c1", server: "gtb", tool: "add", arguments: { a: 2, b: 3 } }
    t("item/started", { item: { ...call, status: "inProgress" } })
    t("item/completed", { item: { ...call, status: "completed", result: { content: [{ type: "text", text: "5" }] } } })
    t("item/completed", { item: { type: "commandExecution", id: "x", command: "ls", status: "declined", exitCode: null } })
    t("item/completed", { item: { type: "agentMessage", id: "m", text: "sum: 5" } })
  } else {
    const answer = m.params.outputSchema ? '{"n":1}' : "echo:" + text + " pid:" + process.pid
    t("item/started", { item: { type: "agentMessage", id: "m" + turnId, text: "" } })
    t("item/agentMessage/delta", { itemId: "m" + turnId, delta: answer.slice(0, 3) })
    t("item/agentMessage/delta", { itemId: "m" + turnId, delta: answer.slice(3) })
    t("item/completed", { item: { type: "agentMessage", id: "m" + turnId, text: answer } })
  }
  if (!text.includes("NOUSAGE")) {
    total.inputTokens += 100; total.cachedInputTokens += 40; total.outputTokens += 9
    t("thread/tokenUsage/updated", { tokenUsage: { total, last: total } })
  }
  complete(turnId, "completed", null)
  if (mode === "die-after-first" && turns === 1) setTimeout(() => process.exit(0), 20)
}
require("node:readline").createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line)
  if (m.method === undefined) return
  log({ method: m.method, params: m.params })
  switch (m.method) {
    case "initialize": return out({ id: m.id, result: { userAgent: "fake" } })
    case "thread/start":
      if (mode === "hang-start") return
      if (mode === "start-fails") return out({ id: m.id, error: { code: -32600, message: "bad config" } })
      if (mode === "exit-at-start") { process.stderr.write("fatal: config broken\\n"); process.exit(3) }
      thread = "th-" + process.pid
      if (mode === "bridge-ready") note("mcpServer/startupStatus/updated", { name: "gtb", status: "ready" })
      return out({ id: m.id, result: { thread: { id: thread } } })
    case "thread/resume":
      if (m.params.threadId === "missing") return out({ id: m.id, error: { code: -32600, message: "no rollout found" } })
      thread = m.params.threadId
      if (mode === "bridge-ready") note("mcpServer/startupStatus/updated", { name: "gtb", status: "ready" })
      return out({ id: m.id, result: { thread: { id: thread } } })
    case "turn/start": {
      turns++
      const turnId = "u" + turns
      const text = m.params.input.map((i) => i.text).join("")
      if (text.includes("REJECT")) return out({ id: m.id, error: { code: -32602, message: "bad input" } })
      // Without the turn in the answer: the client learns its id from turn/started.
      out({ id: m.id, result: text.includes("NOID") ? {} : { turn: { id: turnId, status: "inProgress" } } })
      note("turn/started", { threadId: thread, turn: { id: turnId } })
      return turn(m, turnId)
    }
    case "turn/interrupt":
      if (pending !== undefined && pending.text.includes("STUBBORN")) {
        return out({ id: m.id, error: { code: -32600, message: "cannot interrupt" } })
      }
      out({ id: m.id, result: {} })
      if (pending !== undefined) complete(pending.turnId, "interrupted", null)
      pending = undefined
      return
  }
})
`

interface Entry {
  readonly pid: number
  readonly argv?: ReadonlyArray<string>
  readonly token?: string | null
  readonly key?: string | null
  readonly method?: string
  readonly params?: Record<string, unknown>
}

/** A box holding the stand-in binary and its log; removed with the test's scope. */
const fakeCodex = Effect.acquireRelease(
  Effect.sync(() => {
    const box = fs.mkdtempSync(path.join(os.tmpdir(), "ecb-codex-live-fake-"))
    const binary = path.join(box, "codex")
    fs.writeFileSync(binary, script, { mode: 0o755 })
    const logFile = path.join(box, "log.jsonl")
    const env = (mode = "normal"): Record<string, string> => ({ FAKE_LOG: logFile, FAKE_MODE: mode })
    const entries = (): ReadonlyArray<Entry> =>
      fs.existsSync(logFile)
        ? fs.readFileSync(logFile, "utf8").trim().split("\n").map((l) => JSON.parse(l) as Entry)
        : []
    const calls = (method: string) => entries().filter((e) => e.method === method)
    return { box, binary, env, entries, calls }
  }),
  ({ box }) => Effect.sync(() => fs.rmSync(box, { recursive: true, force: true }))
)

/** A kept-alive client on the stand-in, in the test's scope. */
const client = (binary: string, env: Record<string, string>, options: CodexCli.Options = {}) =>
  CodexCli.make({ binary, env, keepAlive: true, ...options }).pipe(Effect.provide(NodeSubprocess.layer))

const reasonOf = (error: ChatError) => (error._tag === "ProviderError" ? error.reason : undefined)

/** Runs `turn`, and interrupts it once the stand-in got its `turn/start` (the `nth` one). */
const interruptOnceStarted = <A, E>(
  fake: { readonly calls: (method: string) => ReadonlyArray<unknown> },
  turn: Effect.Effect<A, E>,
  nth: number
) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.forkChild(turn)
    while (fake.calls("turn/start").length < nth) yield* Effect.sleep("20 millis")
    yield* Fiber.interrupt(fiber)
    return yield* Fiber.await(fiber)
  })

/** Whether a process of that id is still running. */
const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const pidOf = (answer: string) => answer.split("pid:")[1]

/** Codex's catalog and a built-in of the application's own, which no Codex switch can remove. */
const appRegistry = Registry.unsafeMake([
  ...CodexCliCatalog.descriptors,
  {
    name: "app_builtin",
    category: "search",
    exposure: "user",
    kind: "sdk",
    labelKey: "tools.app_builtin.label",
    descriptionKey: "tools.app_builtin.description"
  }
])

const add = Tool.make("add", {
  description: "Adds two numbers",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

describe("CodexCli keepAlive on a stand-in app-server", () => {
  it.live("turns share one process and thread; settings go in thread/start, the prompt in turn/start", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const codex = yield* client(fake.binary, fake.env(), {
        model: "gpt-test",
        apiKey: Redacted.make("sk-hidden-7e1"),
        systemPrompt: "Be brief."
      })
      const first = yield* codex.chat("Say $demo hi")
      expect(first.startsWith("echo:Say $demo hi")).toBe(true)
      const second = yield* codex.chat("again")
      expect(pidOf(second)).toBe(pidOf(first))
      const thread = Option.getOrThrow(yield* codex.sessionId)
      expect(fake.calls("thread/start")).toHaveLength(1)
      expect(fake.calls("thread/start")[0]!.params).toEqual({
        cwd: expect.stringMatching(/ecb-codex-.*\/work$/),
        sandbox: "read-only",
        approvalPolicy: "never",
        model: "gpt-test"
      })
      expect(fake.calls("turn/start").map((e) => e.params)).toEqual([
        { threadId: thread, input: [{ type: "text", text: "Say $demo hi", text_elements: [] }] },
        { threadId: thread, input: [{ type: "text", text: "again", text_elements: [] }] }
      ])
      const [started] = fake.entries()
      expect(started!.argv!.slice(0, 3)).toEqual(["app-server", "--listen", "stdio://"])
      expect(started!.argv!.find((a) => a.startsWith("model_instructions_file="))).toMatch(/instructions\.md"$/)
      expect(started!.argv!.join("\n")).not.toContain("Say $demo hi")
      expect(started!.argv!.join("\n")).not.toContain("sk-hidden")
      expect(started!.key).toBe("sk-hidden-7e1")
      // Each turn counts its own share of the thread's totals.
      expect(yield* codex.usage).toMatchObject({ inputTokens: 200, cachedTokens: 80, outputTokens: 18 })
    }).pipe(Effect.scoped))

  it.live("chatStream streams the deltas; ask sends the output schema; a turn without usage counts none", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const codex = yield* client(fake.binary, fake.env())
      const events = Array.from(yield* Stream.runCollect(codex.chatStream("stream me")))
      const deltas = events.flatMap((e) => (e._tag === "TextDelta" ? [e.text] : []))
      expect(deltas[0]).toBe("ech")
      expect(deltas.join("")).toContain("echo:stream me")
      expect(yield* codex.ask("Decide", Schema.Struct({ n: Schema.Number }))).toEqual({ n: 1 })
      expect(fake.calls("turn/start")[1]!.params!["outputSchema"]).toMatchObject({ type: "object" })
      const before = yield* codex.usage
      yield* codex.chat("NOUSAGE")
      expect((yield* codex.usage).inputTokens).toBe(before.inputTokens)
    }).pipe(Effect.scoped))

  it.live("a process that died while idle is replaced by the next turn, which resumes the thread", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const codex = yield* client(fake.binary, fake.env("die-after-first"))
      const first = yield* codex.chat("one")
      // The kept process exits after its first answer: the next turn finds it gone.
      while (isAlive(Number(pidOf(first)))) yield* Effect.sleep("20 millis")
      const second = yield* codex.chat("two")
      expect(pidOf(second)).not.toBe(pidOf(first))
      const third = yield* codex.chat("three")
      expect(pidOf(third)).toBe(pidOf(second))
      const thread = Option.getOrThrow(yield* codex.sessionId)
      expect(fake.calls("thread/resume").map((e) => e.params!["threadId"])).toEqual([thread])
    }).pipe(Effect.scoped))

  it.live("a failed turn is its status's reason, and the next turn resumes the thread in a new process", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const codex = yield* client(fake.binary, fake.env())
      const first = yield* codex.chat("one")
      const denied = reasonOf(yield* Effect.flip(codex.chat("FAIL401")))
      expect(denied?._tag).toBe("AuthenticationError")
      expect(denied?.message).toContain("401")
      const after = yield* codex.chat("two")
      expect(pidOf(after)).not.toBe(pidOf(first))
      expect(fake.calls("thread/resume")).toHaveLength(1)
      // The status only in codexErrorInfo still gives the reason.
      const limited = reasonOf(yield* Effect.flip(codex.chat("FAIL429")))
      expect(limited?._tag).toBe("RateLimitError")
      expect(limited?.message).toContain("too many")
      const stopped = reasonOf(yield* Effect.flip(codex.chat("STOPPED")))
      expect(stopped?._tag).toBe("InvalidResponseError")
      expect(stopped?.message).toBe("Codex CLI interrupted the turn")
    }).pipe(Effect.scoped))

  it.live("an interrupted turn is stopped with turn/interrupt and the process kept; one that refuses is replaced", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const codex = yield* client(fake.binary, fake.env())
      // A first turn interrupted: its thread is the conversation's from then on.
      expect(Exit.hasInterrupts(yield* interruptOnceStarted(fake, codex.chat("SLOW NOID"), 1))).toBe(true)
      expect(fake.calls("turn/interrupt").map((e) => e.params!["turnId"])).toEqual(["u1"])
      const next = yield* codex.chat("next")
      expect(fake.calls("thread/start")).toHaveLength(1)
      expect(fake.calls("thread/resume")).toHaveLength(0)
      expect(Exit.hasInterrupts(yield* interruptOnceStarted(fake, codex.chat("STUBBORN"), 3))).toBe(true)
      const after = yield* codex.chat("after")
      expect(pidOf(after)).not.toBe(pidOf(next))
      expect(fake.calls("thread/resume")).toHaveLength(1)
    }).pipe(Effect.scoped))

  it.live("a turn past requestTimeout is a TimeoutError and its process is stopped", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const codex = yield* client(fake.binary, fake.env(), { requestTimeout: "1 second", killGrace: "100 millis" })
      const reason = reasonOf(yield* Effect.flip(codex.chat("SLOW")))
      expect(reason?._tag).toBe("TimeoutError")
      const [started] = fake.entries()
      expect(isAlive(started!.pid)).toBe(false)
    }).pipe(Effect.scoped))

  it.live("your tools: the bridge on argv, its bearer in the environment; a new tool set gets a new process", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const codex = yield* client(fake.binary, fake.env("bridge-ready"))
      yield* codex.setTools([add])
      const events = Array.from(yield* Stream.runCollect(codex.chatStream("TOOLS")))
      expect(events.find((e) => e._tag === "ToolCallStart")).toMatchObject({ name: "add", arguments: { a: 2, b: 3 } })
      expect(events.find((e) => e._tag === "ToolCallEnd")).toMatchObject({ name: "add", result: "5" })
      expect(events.find((e) => e._tag === "AgentToolEnd")).toMatchObject({ name: "shell", isError: true })
      expect(events.flatMap((e) => (e._tag === "TextDelta" ? [e.text] : []))).toEqual(["sum: 5"])
      const [started] = fake.entries()
      expect(started!.argv!.find((a) => a.startsWith("mcp_servers.gtb.url="))).toMatch(/http:\/\/127\.0\.0\.1:/)
      expect(started!.token).toMatch(/.{20,}/)
      expect(started!.argv!.join("\n")).not.toContain(started!.token!)
      // Ready on the bridge: a turn that calls no tool is an answer too.
      const plain = yield* codex.chat("plain")
      const echo = Tool.make("echo", {
        description: "Echoes",
        parameters: { text: Schema.String },
        handler: ({ text }) => Effect.succeed(text)
      })
      yield* codex.setTools([add, echo])
      const later = yield* codex.chat("later")
      expect(pidOf(later)).not.toBe(pidOf(plain))
      expect(fake.calls("thread/resume")).toHaveLength(1)
      const processes = new Set(fake.entries().filter((e) => e.argv !== undefined).map((e) => e.token))
      expect(processes.size).toBe(2)
    }).pipe(Effect.scoped))

  it.live("with tools set, an answer given by a process that never reached the bridge is refused", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const codex = yield* client(fake.binary, fake.env())
      yield* codex.setTools([add])
      const reason = reasonOf(yield* Effect.flip(codex.chat("hi")))
      expect(reason?._tag).toBe("ConfigurationError")
      expect(reason?.message).toContain("could not use the tool server")
    }).pipe(Effect.scoped))

  it.live("a process that fails to open its thread, exits, or cannot resume fails the turn with a typed reason", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const refused = reasonOf(yield* Effect.flip((yield* client(fake.binary, fake.env("start-fails"))).chat("hi")))
      expect(refused?._tag).toBe("InvalidResponseError")
      expect(refused?.message).toBe("Codex CLI failed thread/start: bad config")
      const exited = reasonOf(yield* Effect.flip((yield* client(fake.binary, fake.env("exit-at-start"))).chat("hi")))
      expect(exited?._tag).toBe("ProcessError")
      expect(exited?.message).toContain("exit code 3")
      expect(exited?.message).toContain("fatal: config broken")
      const missing = reasonOf(
        yield* Effect.flip((yield* client(fake.binary, fake.env(), { resume: "missing" })).chat("hi"))
      )
      expect(missing?._tag).toBe("ConfigurationError")
      expect(missing?.message).toContain("could not resume the thread (no rollout found)")
      const gone = reasonOf(yield* Effect.flip((yield* client(path.join(fake.box, "no-codex"), fake.env())).chat("hi")))
      expect(gone?._tag).toBe("ConfigurationError")
      expect(gone?.message).toContain("npm install -g @openai/codex")
    }).pipe(Effect.scoped))

  it.live("a process that dies during a turn fails it; the next turn resumes the thread", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const codex = yield* client(fake.binary, fake.env())
      const first = yield* codex.chat("one")
      const died = reasonOf(yield* Effect.flip(codex.chat("EXIT")))
      expect(died?._tag).toBe("ProcessError")
      expect(died?.message).toContain("ended before answering (exit code 5): panic: lost")
      expect(pidOf(yield* codex.chat("two"))).not.toBe(pidOf(first))
    }).pipe(Effect.scoped))

  it.live("a rejected turn/start, a silent death and a binary gone before a new process are typed failures", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      // Found on PATH; skills left to the CLI.
      const codex = yield* CodexCli.make({
        keepAlive: true,
        loadSkills: true,
        env: { ...fake.env(), PATH: `${fake.box}:${process.env["PATH"] ?? ""}` }
      }).pipe(Effect.provide(NodeSubprocess.layer))
      yield* codex.chat("one")
      expect(fake.entries()[0]!.argv!.join("\n")).not.toContain("skills.config")
      const rejected = reasonOf(yield* Effect.flip(codex.chat("REJECT")))
      expect(rejected?.message).toBe("Codex CLI failed turn/start: bad input")
      const quiet = reasonOf(yield* Effect.flip(codex.chat("QUIETDEATH")))
      expect(quiet?.message).toBe(
        "The kept-alive Codex CLI ended before answering (exit code 6); the next turn starts a new one"
      )
      // A binary removed after its first process: the next process cannot start.
      const copy = path.join(fake.box, "codex-copy")
      fs.copyFileSync(fake.binary, copy)
      const removed = yield* client(copy, fake.env())
      yield* removed.chat("one")
      yield* Effect.flip(removed.chat("FAIL401"))
      fs.rmSync(copy)
      const gone = reasonOf(yield* Effect.flip(removed.chat("two")))
      expect(gone?._tag).toBe("ConfigurationError")
      expect(gone?.message).toContain("npm install -g @openai/codex")
    }).pipe(Effect.scoped))

  it.live("a turn interrupted while its process opens the thread stops that process", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const codex = yield* client(fake.binary, fake.env("hang-start"))
      const fiber = yield* Effect.forkChild(codex.chat("hi"))
      while (fake.calls("thread/start").length === 0) yield* Effect.sleep("20 millis")
      yield* Fiber.interrupt(fiber)
      const [started] = fake.entries()
      expect(isAlive(started!.pid)).toBe(false)
    }).pipe(Effect.scoped))

  it.live("a refused tool policy fails the turn before any process starts", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const codex = yield* client(fake.binary, fake.env(), {
        toolPolicy: { registry: appRegistry, disabledTools: ["app_builtin"], strict: true }
      })
      const reason = reasonOf(yield* Effect.flip(codex.chat("hi")))
      expect(reason?._tag).toBe("ConfigurationError")
      expect(reason?.message).toContain("CodexCli toolPolicy")
      expect(fake.entries()).toEqual([])
    }).pipe(Effect.scoped))
})
