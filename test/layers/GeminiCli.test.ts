/**
 * GeminiCli's layers and turns on a stand-in `gemini`: a real child process (a Node script) that
 * answers `--version` with a chosen release and speaks the Agent Client Protocol on stdio as
 * `gemini --acp` does, logging each request it gets. What the client makes of each outcome (a
 * typed reason, a resumed session, a kept-alive process and its replacement) is checked here; the
 * real CLI's behaviour is `test/e2e/GeminiCli*.e2e.test.ts`'s.
 */
import { describe, expect, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as GeminiCli from "../../src/layers/GeminiCli.ts"
import * as NodeSubprocess from "../../src/layers/NodeSubprocess.ts"
import { ChatClient, type ChatError } from "../../src/services/ChatClient.ts"
import * as ClaudeSessionStore from "../../src/services/ClaudeSessionStore.ts"
import * as Tool from "../../src/services/Tool.ts"

const script = `#!${process.execPath}
const fs = require("node:fs")
const mode = process.env.FAKE_MODE ?? "normal"
if (process.argv[2] === "--version") {
  console.log(process.env.FAKE_VERSION ?? "0.61.0")
  process.exit(0)
}
const log = (entry) => fs.appendFileSync(process.env.FAKE_LOG, JSON.stringify({ pid: process.pid, ...entry }) + "\\n")
log({ argv: process.argv.slice(2) })
const out = (m) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...m }) + "\\n")
let prompts = 0
let slow
require("node:readline").createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line)
  if (m.method === undefined) return m.id >= 900 && log({ reply: m.id, result: m.result, error: m.error?.code })
  log({ method: m.method, sessionId: m.params?.sessionId })
  if (m.method === "initialize") return out({ id: m.id, result: { protocolVersion: 1 } })
  if (m.method === "session/new") {
    if (mode === "silent") process.exit(0)
    return out({ id: m.id, result: { sessionId: "g-" + process.pid } })
  }
  if (m.method === "session/load") {
    out({ id: m.id, result: {} })
    return out({ method: "session/update", params: { update: { sessionUpdate: "available_commands_update" } } })
  }
  if (m.method === "session/cancel") {
    if (slow !== undefined) clearTimeout(slow.timer), out({ id: slow.id, result: { stopReason: "cancelled" } })
    return slow = undefined
  }
  if (m.method === "session/prompt") {
    prompts++
    if (mode === "fail-prompt") return out({ id: m.id, error: { code: -32000, message: "Quota exceeded (429)" } })
    const blocks = m.params.prompt.map((b) => b.text)
    const text = blocks.length > 1 ? '{"n":1}' : "echo:" + blocks[0] + " pid:" + process.pid
    // "ask": the CLI asks the client for a permission and for a file before answering.
    if (mode === "ask") {
      out({ id: 900, method: "session/request_permission", params: { options: [{ optionId: "no", kind: "reject_once" }] } })
      out({ id: 901, method: "fs/read_text_file", params: { path: "/etc/hostname" } })
    }
    const answer = () => {
      out({ method: "session/update", params: { update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } } } })
      out({ id: m.id, result: { stopReason: mode === "cancel" ? "cancelled" : "end_turn", _meta: { quota: { token_count: { input_tokens: 5, output_tokens: 3 } } } } })
    }
    // "slow": a prompt starting with "slowly" is answered after FAKE_DELAY ms.
    if (mode === "slow" && blocks[0].startsWith("slowly")) {
      slow = { id: m.id, timer: setTimeout(() => (slow = undefined, answer()), Number(process.env.FAKE_DELAY)) }
    } else answer()
    if (mode === "die-after-first" && prompts === 1) setTimeout(() => process.exit(0), 20)
  }
})
`

interface Entry {
  readonly pid: number
  readonly reply?: number
  readonly result?: unknown
  readonly error?: number
  readonly argv?: ReadonlyArray<string>
  readonly method?: string
  readonly sessionId?: string
}

/** A box holding the stand-in binary and its request log; removed with the test's scope. */
const fakeGemini = Effect.acquireRelease(
  Effect.sync(() => {
    const box = fs.mkdtempSync(path.join(os.tmpdir(), "ecb-gemini-fake-"))
    const binary = path.join(box, "gemini")
    fs.writeFileSync(binary, script, { mode: 0o755 })
    const logFile = path.join(box, "log.jsonl")
    const env = (mode = "normal", version?: string, delayMillis = 0): Record<string, string> => ({
      FAKE_LOG: logFile,
      FAKE_MODE: mode,
      FAKE_DELAY: String(delayMillis),
      ...(version === undefined ? {} : { FAKE_VERSION: version })
    })
    const entries = (): ReadonlyArray<Entry> =>
      fs.existsSync(logFile)
        ? fs.readFileSync(logFile, "utf8").trim().split("\n").map((l) => JSON.parse(l) as Entry)
        : []
    return { box, binary, env, entries }
  }),
  ({ box }) => Effect.sync(() => fs.rmSync(box, { recursive: true, force: true }))
)

/** The process that wrote `answer` (the stand-in signs each answer with its pid). */
const pidOf = (answer: string) => Number(answer.split("pid:")[1])

const isGone = (pid: number) => {
  try {
    process.kill(pid, 0)
    return false
  } catch {
    return true
  }
}

/** Waits (polling, at most 20 s) until `pid` has exited; fails the test if it never does. */
const untilGone = (pid: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < 400 && !isGone(pid); i++) yield* Effect.sleep("50 millis")
    expect(isGone(pid)).toBe(true)
  })

const withEnv = (env: Record<string, string>) => ConfigProvider.layer(ConfigProvider.fromEnv({ env }))

const chatHi = Effect.gen(function*() {
  const chat = yield* ChatClient
  return yield* chat.chat("hi")
})

const failureOf = <A>(effect: Effect.Effect<A, ChatError>) =>
  Effect.flip(effect).pipe(
    Effect.map((e) => ({ tag: e._tag, reason: "reason" in e ? e.reason._tag : undefined, message: e.message }))
  )

const echo = Tool.make("echo", {
  description: "Echoes",
  parameters: { text: Schema.String },
  handler: ({ text }) => Effect.succeed(text)
})

describe("GeminiCli on a stand-in gemini", () => {
  it.live("a turn over ACP, then the next one loads the session in a new process", () =>
    Effect.gen(function*() {
      const fake = yield* fakeGemini
      const client = yield* GeminiCli.make({ binary: fake.binary, env: fake.env() })
      const first = yield* client.chat("hello")
      expect(first).toMatch(/^echo:hello pid:\d+$/)
      const sessionId = Option.getOrThrow(yield* client.sessionId)
      expect(sessionId).toMatch(/^g-\d+$/)
      const second = yield* client.chat("again")
      expect(second).toMatch(/^echo:again pid:\d+$/)
      expect(second.split("pid:")[1]).not.toBe(first.split("pid:")[1])
      const entries = fake.entries()
      const argv = entries.find((e) => e.argv !== undefined)!.argv!
      expect(argv).toEqual(expect.arrayContaining(["--acp", "--skip-trust", "--model", GeminiCli.DefaultModel]))
      expect(entries.filter((e) => e.method === "session/load").map((e) => e.sessionId)).toEqual([sessionId])
      const usage = yield* client.usage
      expect([usage.inputTokens, usage.outputTokens]).toEqual([10, 6])
    }).pipe(Effect.provide(NodeSubprocess.layer), Effect.scoped))

  it.live("ask sends the schema as a second text block and decodes the answer", () =>
    Effect.gen(function*() {
      const fake = yield* fakeGemini
      const client = yield* GeminiCli.make({ binary: fake.binary, env: fake.env() })
      expect(yield* client.ask("count", Schema.Struct({ n: Schema.Number }))).toEqual({ n: 1 })
    }).pipe(Effect.provide(NodeSubprocess.layer), Effect.scoped))

  it.live("a CLI older than the minimum fails the turn before any run, naming the upgrade", () =>
    Effect.gen(function*() {
      const fake = yield* fakeGemini
      const client = yield* GeminiCli.make({ binary: fake.binary, env: fake.env("normal", "0.40.2") })
      const failure = yield* failureOf(client.chat("hello"))
      expect(failure.reason).toBe("ConfigurationError")
      expect(failure.message).toContain("0.61.0")
      expect(failure.message).toContain("npm install -g @google/gemini-cli@latest")
      expect(fake.entries()).toEqual([])
    }).pipe(Effect.provide(NodeSubprocess.layer), Effect.scoped))

  it.live("a missing binary is a ConfigurationError", () =>
    Effect.gen(function*() {
      const client = yield* GeminiCli.make({ binary: "/nonexistent/gemini-cli-binary" })
      const failure = yield* failureOf(client.chat("hello"))
      expect(failure.reason).toBe("ConfigurationError")
    }).pipe(Effect.provide(NodeSubprocess.layer), Effect.scoped))

  it.live("a CLI that ends without answering the prompt is an InvalidResponseError", () =>
    Effect.gen(function*() {
      const fake = yield* fakeGemini
      const client = yield* GeminiCli.make({ binary: fake.binary, env: fake.env("silent") })
      const failure = yield* failureOf(client.chat("hello"))
      expect(failure.reason).toBe("InvalidResponseError")
      expect(failure.message).toContain("without answering")
    }).pipe(Effect.provide(NodeSubprocess.layer), Effect.scoped))

  it.live("an error answer to the prompt with an HTTP status is that status's reason", () =>
    Effect.gen(function*() {
      const fake = yield* fakeGemini
      const client = yield* GeminiCli.make({ binary: fake.binary, env: fake.env("fail-prompt") })
      expect((yield* failureOf(client.chat("hello"))).reason).toBe("RateLimitError")
    }).pipe(Effect.provide(NodeSubprocess.layer), Effect.scoped))

  it.live("with tools the bridge starts once; the CLI may reach only it; a bad serverName is a ConfigurationError", () =>
    Effect.gen(function*() {
      const fake = yield* fakeGemini
      const client = yield* GeminiCli.make({ binary: fake.binary, env: fake.env() })
      yield* client.setTools([echo])
      yield* client.setTools([echo])
      yield* client.chat("hello")
      const argv = fake.entries().find((e) => e.argv !== undefined)!.argv!
      expect(argv.slice(argv.indexOf("--allowed-mcp-server-names"), argv.indexOf("--allowed-mcp-server-names") + 2))
        .toEqual(["--allowed-mcp-server-names", "gtb"])
      const bad = yield* GeminiCli.make({ binary: fake.binary, env: fake.env(), serverName: "bad name!" })
      const failure = yield* Effect.flip(bad.setTools([echo]))
      expect(failure._tag === "ProviderError" ? failure.reason._tag : failure._tag).toBe("ConfigurationError")
    }).pipe(Effect.provide(NodeSubprocess.layer), Effect.scoped))

  it.live("keepAlive: turns share one process; one that died while idle is replaced and loads the session", () =>
    Effect.gen(function*() {
      const fake = yield* fakeGemini
      const client = yield* GeminiCli.make({ binary: fake.binary, env: fake.env("die-after-first"), keepAlive: true })
      const first = yield* client.chat("one")
      // The kept process exits after its first answer: the next turn finds it gone.
      yield* Effect.sleep("300 millis")
      const second = yield* client.chat("two")
      expect(second.split("pid:")[1]).not.toBe(first.split("pid:")[1])
      const third = yield* client.chat("three")
      expect(third.split("pid:")[1]).toBe(second.split("pid:")[1])
      const sessionId = Option.getOrThrow(yield* client.sessionId)
      expect(fake.entries().filter((e) => e.method === "session/load").map((e) => e.sessionId)).toEqual([sessionId])
      expect(fake.entries().filter((e) => e.method === "session/new")).toHaveLength(1)
    }).pipe(Effect.provide(NodeSubprocess.layer), Effect.scoped))

  it.live("keepAlive: a CLI that ends before opening its session is a ProcessError naming its exit", () =>
    Effect.gen(function*() {
      const fake = yield* fakeGemini
      const client = yield* GeminiCli.make({ binary: fake.binary, env: fake.env("silent"), keepAlive: true })
      const failure = yield* failureOf(client.chat("one"))
      expect(failure.reason).toBe("ProcessError")
      expect(failure.message).toContain("ended before answering (exit code 0)")
    }).pipe(Effect.provide(NodeSubprocess.layer), Effect.scoped))

  it.live("keepAlive: the kept CLI's permission requests are refused and other requests are not offered", () =>
    Effect.gen(function*() {
      const fake = yield* fakeGemini
      const client = yield* GeminiCli.make({ binary: fake.binary, env: fake.env("ask"), keepAlive: true })
      expect(yield* client.chat("one")).toMatch(/^echo:one/)
      // The CLI answered without waiting for the replies: they may reach it after the answer.
      const replies = () => fake.entries().filter((e) => e.reply !== undefined)
      for (let i = 0; i < 200 && replies().length < 2; i++) yield* Effect.sleep("20 millis")
      expect(replies().map((e) => [e.reply, e.result, e.error])).toEqual([
        [900, { outcome: { outcome: "selected", optionId: "no" } }, undefined],
        [901, undefined, -32601]
      ])
    }).pipe(Effect.provide(NodeSubprocess.layer), Effect.scoped))

  it.live("keepAlive: a prompt the CLI cancelled is an InvalidResponseError", () =>
    Effect.gen(function*() {
      const fake = yield* fakeGemini
      const client = yield* GeminiCli.make({ binary: fake.binary, env: fake.env("cancel"), keepAlive: true })
      const failure = yield* failureOf(client.chat("one"))
      expect(failure.reason).toBe("InvalidResponseError")
      expect(failure.message).toContain("cancelled")
    }).pipe(Effect.provide(NodeSubprocess.layer), Effect.scoped))

  it.live("keepAlive: an idle CLI is stopped after idleTimeout; the next turn loads the session in a new one", () =>
    Effect.gen(function*() {
      const fake = yield* fakeGemini
      const client = yield* GeminiCli.make({
        binary: fake.binary,
        env: fake.env(),
        keepAlive: true,
        idleTimeout: "100 millis"
      })
      const first = pidOf(yield* client.chat("one"))
      yield* untilGone(first)
      const sessionId = Option.getOrThrow(yield* client.sessionId)
      // Stopped while idle: nothing was loaded yet, the stop came before the next turn.
      expect(fake.entries().filter((e) => e.method === "session/load")).toEqual([])
      const second = pidOf(yield* client.chat("two"))
      expect(second).not.toBe(first)
      expect(fake.entries().filter((e) => e.method === "session/load").map((e) => [e.pid, e.sessionId])).toEqual([
        [second, sessionId]
      ])
      expect(fake.entries().filter((e) => e.method === "session/new")).toHaveLength(1)
      // The replacement is idle-stopped too.
      yield* untilGone(second)
    }).pipe(Effect.provide(NodeSubprocess.layer), Effect.scoped))

  it.live("keepAlive: a turn running longer than idleTimeout is not cut, and the process is kept for the next", () =>
    Effect.gen(function*() {
      const fake = yield* fakeGemini
      const client = yield* GeminiCli.make({
        binary: fake.binary,
        env: fake.env("slow", undefined, 1_500),
        keepAlive: true,
        idleTimeout: "700 millis"
      })
      const first = pidOf(yield* client.chat("quickly"))
      // The idle timer of the first turn is stopped by the second, which outlasts it twice over.
      const slow = yield* client.chat("slowly, please")
      expect(slow).toMatch(/^echo:slowly, please pid:\d+$/)
      expect(pidOf(slow)).toBe(first)
      expect(pidOf(yield* client.chat("quickly again"))).toBe(first)
      expect(fake.entries().filter((e) => e.method === "session/load")).toEqual([])
    }).pipe(Effect.provide(NodeSubprocess.layer), Effect.scoped))

  it.live("keepAlive: an interrupted turn is cancelled and keeps the process, whose idle timer runs again", () =>
    Effect.gen(function*() {
      const fake = yield* fakeGemini
      const client = yield* GeminiCli.make({
        binary: fake.binary,
        env: fake.env("slow", undefined, 30_000),
        keepAlive: true,
        idleTimeout: "1 second"
      })
      const first = pidOf(yield* client.chat("quickly"))
      const cut = yield* Effect.exit(client.chat("slowly").pipe(Effect.timeout("500 millis")))
      expect(cut._tag).toBe("Failure")
      expect(fake.entries().filter((e) => e.method === "session/cancel").map((e) => e.pid)).toEqual([first])
      // The CLI answered the cancel: the process was kept (a dropped one is gone when the turn
      // returns), and the idle timer armed after the turn stops it.
      expect(isGone(first)).toBe(false)
      yield* untilGone(first)
      expect(pidOf(yield* client.chat("quickly again"))).not.toBe(first)
    }).pipe(Effect.provide(NodeSubprocess.layer), Effect.scoped))

  it.live("keepAlive: a failed turn stops its process at once, not left for the idle timer", () =>
    Effect.gen(function*() {
      const fake = yield* fakeGemini
      const client = yield* GeminiCli.make({
        binary: fake.binary,
        env: fake.env("fail-prompt"),
        keepAlive: true,
        idleTimeout: "1 hour"
      })
      expect((yield* failureOf(client.chat("one"))).reason).toBe("RateLimitError")
      const [started] = fake.entries().filter((e) => e.argv !== undefined)
      // Not left for the idle timer: the failure stopped it.
      yield* untilGone(started!.pid)
    }).pipe(Effect.provide(NodeSubprocess.layer), Effect.scoped))

  it.live("keepAlive: a negative idleTimeout fails each turn with a ConfigurationError before any process", () =>
    Effect.gen(function*() {
      const fake = yield* fakeGemini
      const client = yield* GeminiCli.make({ binary: fake.binary, env: fake.env(), keepAlive: true, idleTimeout: -1 })
      const failure = yield* failureOf(client.chat("one"))
      expect(failure.reason).toBe("ConfigurationError")
      expect(failure.message).toContain("idleTimeout")
      expect(fake.entries()).toEqual([])
    }).pipe(Effect.provide(NodeSubprocess.layer), Effect.scoped))

  it.live("keepAlive: with idleTimeout Infinity no timer stops the kept CLI; closing the client does", () =>
    Effect.gen(function*() {
      const fake = yield* fakeGemini
      const first = yield* Effect.scoped(Effect.gen(function*() {
        const client = yield* GeminiCli.make({
          binary: fake.binary,
          env: fake.env(),
          keepAlive: true,
          idleTimeout: "Infinity"
        })
        const pid = pidOf(yield* client.chat("one"))
        expect(pidOf(yield* client.chat("two"))).toBe(pid)
        expect(isGone(pid)).toBe(false)
        return pid
      }))
      expect(isGone(first)).toBe(true)
    }).pipe(Effect.provide(NodeSubprocess.layer), Effect.scoped))

  it.live("layerFromEnv reads GEMINI_CLI_KEEP_ALIVE and GEMINI_CLI_IDLE_TIMEOUT", () =>
    Effect.gen(function*() {
      const fake = yield* fakeGemini
      const [first, second] = yield* Effect.gen(function*() {
        const chat = yield* ChatClient
        const first = pidOf(yield* chat.chat("one"))
        yield* untilGone(first)
        return [first, pidOf(yield* chat.chat("two"))] as const
      }).pipe(
        Effect.provide(
          GeminiCli.layerFromEnv({ binary: fake.binary, env: fake.env() }).pipe(
            Layer.provide(withEnv({ GEMINI_CLI_KEEP_ALIVE: "true", GEMINI_CLI_IDLE_TIMEOUT: "100 millis" }))
          )
        )
      )
      expect(second).not.toBe(first)
      expect(fake.entries().filter((e) => e.method === "session/load").map((e) => [e.pid, e.sessionId])).toEqual([
        [second, `g-${first}`]
      ])
    }).pipe(Effect.scoped))

  it.live("sessionStore without a ClaudeSessionStore fails each turn with a ConfigurationError before any run", () =>
    Effect.gen(function*() {
      const fake = yield* fakeGemini
      const client = yield* GeminiCli.make({ binary: fake.binary, env: fake.env(), sessionStore: true })
      const failure = yield* failureOf(client.chat("hello"))
      expect(failure.reason).toBe("ConfigurationError")
      expect(failure.message).toContain("ClaudeSessionStore")
      expect(fake.entries()).toEqual([])
    }).pipe(Effect.provide(NodeSubprocess.layer), Effect.scoped))

  it.live("sessionStore: a turn whose CLI left no session file fails with SessionStoreError, its answer kept", () =>
    Effect.gen(function*() {
      const fake = yield* fakeGemini
      const client = yield* GeminiCli.make({ binary: fake.binary, env: fake.env(), sessionStore: true })
      const error = yield* Effect.flip(client.chat("hello"))
      expect(error._tag).toBe("SessionStoreError")
      if (error._tag !== "SessionStoreError") return
      expect([error.operation, error.reason._tag]).toEqual(["append", "SessionFileFailed"])
      expect(error.answer).toMatch(/^echo:hello pid:\d+$/)
      // The conversation goes on in the session the turn ran in: the next turn loads it (the store
      // never held it, so nothing is restored) and fails the same way.
      const sessionId = Option.getOrThrow(yield* client.sessionId)
      expect(sessionId).toBe(`g-${pidOf(error.answer!)}`)
      const again = yield* Effect.flip(client.chat("again"))
      expect(again._tag === "SessionStoreError" ? again.reason._tag : again._tag).toBe("SessionFileFailed")
      expect(fake.entries().filter((e) => e.method === "session/load").map((e) => e.sessionId)).toEqual([sessionId])
    }).pipe(Effect.provide([NodeSubprocess.layer, ClaudeSessionStore.layerMemory]), Effect.scoped))

  it.live("layerFromEnv builds a working client from the GEMINI_CLI_* variables", () =>
    Effect.gen(function*() {
      const fake = yield* fakeGemini
      const answer = yield* chatHi.pipe(
        Effect.provide(
          GeminiCli.layerFromEnv({ env: fake.env() }).pipe(
            Layer.provide(withEnv({ GEMINI_CLI_BINARY: fake.binary, GEMINI_CLI_MODEL: "gemini-test-model" }))
          )
        )
      )
      expect(answer).toMatch(/^echo:hi/)
      expect(fake.entries().find((e) => e.argv !== undefined)!.argv).toEqual(
        expect.arrayContaining(["--model", "gemini-test-model"])
      )
    }).pipe(Effect.scoped))

  it.effect("a bad GEMINI_CLI_REQUEST_TIMEOUT fails building the layer with a ConfigError", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        chatHi.pipe(
          Effect.provide(GeminiCli.layerFromEnv().pipe(Layer.provide(withEnv({ GEMINI_CLI_REQUEST_TIMEOUT: "soon" }))))
        )
      )
      expect(error._tag).toBe("ConfigError")
    }))
})
