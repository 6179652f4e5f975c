/**
 * ClaudeAgent's `stallTimeout` (its default, 3 minutes, on a TestClock) over the scripted Agent SDK
 * stand-in, whose queries each spawn a real CLI stand-in (a node process, with a grandchild in its
 * process group, ignoring SIGTERM) through the provider's own spawner: a query silent mid-answer
 * fails the turn as a retryable `stalled` error, its process group is gone, and the next turn
 * resumes the last successful turn's session; a query silent while a tool runs is not stopped.
 * Fresh turns and kept-alive ones.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/testing/TestClock"
import * as fs from "node:fs"
import * as os from "node:os"
import { join } from "node:path"
import * as ClaudeAgent from "../../src/layers/ClaudeAgent.ts"
import { ProviderError } from "../../src/services/ChatClient.ts"
import * as Sdk from "../support/fakeAgentSdk.ts"

const init = (sessionId: string) => ({ type: "system", subtype: "init", session_id: sessionId, mcp_servers: [] })
const result = (text: string) => ({
  type: "result",
  subtype: "success",
  is_error: false,
  result: text,
  session_id: "s-1"
})
const delta = (text: string) => ({
  type: "stream_event",
  event: { type: "content_block_delta", index: 0, delta: { type: "text_delta", text } }
})

/** The CLI stand-in: records its pid and its grandchild's, then ignores SIGTERM and stdin's end. */
const cliScript = (pids: string, query: number) =>
  `const { spawn } = require("node:child_process")
const g = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" })
require("node:fs").appendFileSync(${JSON.stringify(pids)}, JSON.stringify([${query}, process.pid, g.pid]) + "\\n")
process.on("SIGTERM", () => {})
setInterval(() => {}, 1000)`

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  try {
    return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, "utf8"))
  } catch {
    return false
  }
}

/** Real time passing (the CLI stand-ins and the SDK's promises do not follow the TestClock). */
const realSleep = (ms: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

const until = (check: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 200 && !check(); i++) yield* realSleep(25)
    expect(check()).toBe(true)
  })

/**
 * The SDK stand-in: every query spawns a CLI stand-in; each user message is answered by its text
 * ("stall": an init line and a text delta, then nothing; "tool": a Bash tool_use, then its result
 * once `toolDone` resolves; anything else: at once).
 */
/** What the SDK stand-in has handed out and seen read: the watchdog's view is settled after it. */
const progress = { stallRead: false, toolRead: false }

const installScript = (pids: string, toolDone: Promise<void>) =>
  Sdk.script(async function*(call) {
    void call.spawn(cliScript(pids, Sdk.calls().indexOf(call)))
    const messages: AsyncIterable<{ message: { content: unknown } }> = typeof call.prompt === "string"
      ? (async function*() {
        yield { message: { content: call.prompt } }
      })()
      : call.prompt as AsyncIterable<{ message: { content: unknown } }>
    for await (const message of messages) {
      const content = message.message.content
      const text = typeof content === "string"
        ? content
        : (content as Array<{ text?: string }>).map((b) => b.text ?? "").join("")
      if (text === "stall") {
        yield init("s-stalled")
        yield delta("Thinking")
        // A generator resumes when its reader asks for the next message: the delta was read.
        progress.stallRead = true
        await call.ended
        return
      }
      yield init("s-1")
      if (text === "tool") {
        yield {
          type: "assistant",
          message: { content: [{ type: "tool_use", id: "toolu_1", name: "Bash", input: { command: "sleep" } }] }
        }
        progress.toolRead = true
        await toolDone
        yield { type: "user", message: { content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "ok" }] } }
        yield result("tool ran")
      } else yield result(`echo ${text}`)
    }
  })

const setUp = Effect.acquireRelease(
  Effect.sync(() => {
    const dir = fs.mkdtempSync(join(os.tmpdir(), "ecb-agent-stall-"))
    const pids = join(dir, "pids.jsonl")
    /** The CLI stand-in of query `n` (as [query, pid, grandchild pid]), once it is up. */
    const spawned = (): ReadonlyArray<readonly [number, number, number]> =>
      fs.existsSync(pids)
        ? fs.readFileSync(pids, "utf8").trim().split("\n").map((l) => JSON.parse(l) as [number, number, number])
        : []
    let release = () => {}
    const toolDone = new Promise<void>((resolve) => {
      release = resolve
    })
    installScript(pids, toolDone)
    progress.stallRead = false
    progress.toolRead = false
    return { dir, spawned, release }
  }),
  ({ dir, spawned }) =>
    Effect.sync(() => {
      for (const pid of spawned().flatMap(([, cli, grandchild]) => [cli, grandchild])) {
        try {
          process.kill(pid, "SIGKILL")
        } catch {
          // Gone, as it should be.
        }
      }
      fs.rmSync(dir, { recursive: true, force: true })
    })
)

const client = (keepAlive: boolean) =>
  ClaudeAgent.make({ sdkSpecifier: Sdk.specifier, killGrace: "100 millis", keepAlive })

type Client = Effect.Success<ReturnType<typeof client>>

/**
 * A watched turn: on a kept-alive query any turn (it streams partial messages); on a fresh one a
 * streamed turn (ClaudeAgent asks for partial messages only then), read to its Complete text.
 */
const watchedTurn = (chat: Client, keepAlive: boolean, prompt: string) =>
  keepAlive ? chat.chat(prompt) : Stream.runCollect(chat.chatStream(prompt)).pipe(
    Effect.map((events) => {
      const last = [...events].at(-1)
      return last?._tag === "Complete" ? last.text : undefined
    })
  )

const stalledThenResumed = (keepAlive: boolean) =>
  Effect.gen(function*() {
    const { spawned } = yield* setUp
    const chat = yield* client(keepAlive)
    expect(yield* chat.chat("one")).toBe("echo one")
    const fiber = yield* Effect.forkChild(watchedTurn(chat, keepAlive, "stall"))
    // The stalled query's CLI is up and its lines are read.
    const stalledQuery = keepAlive ? 0 : 1
    yield* until(() => spawned().some(([query]) => query === stalledQuery) && progress.stallRead)
    yield* realSleep(100)
    yield* TestClock.adjust("179 seconds")
    yield* realSleep(100)
    expect(fiber.pollUnsafe()).toBeUndefined()
    yield* TestClock.adjust("1 second")
    const error = yield* Effect.flip(Fiber.join(fiber))
    expect(error).toBeInstanceOf(ProviderError)
    const failure = error as ProviderError
    expect(failure).toMatchObject({ reason: { _tag: "StalledError" }, isRetryable: true })
    expect(failure.message).toContain("3m")
    expect(failure.message).toContain("stallTimeout")
    const [, cli, grandchild] = spawned().find(([query]) => query === stalledQuery)!
    expect(alive(cli)).toBe(false)
    expect(alive(grandchild)).toBe(false)
    expect(Sdk.closed()).toBe(keepAlive ? 1 : 2)
    expect(yield* chat.chat("two")).toBe("echo two")
    const calls = Sdk.calls()
    expect(calls).toHaveLength(keepAlive ? 2 : 3)
    expect(calls.at(-1)!.options["resume"]).toBe("s-1")
  }).pipe(Effect.scoped)

const silentTool = (keepAlive: boolean) =>
  Effect.gen(function*() {
    const { release, spawned } = yield* setUp
    const chat = yield* client(keepAlive)
    const fiber = yield* Effect.forkChild(watchedTurn(chat, keepAlive, "tool"))
    yield* until(() => spawned().some(([query]) => query === 0) && progress.toolRead)
    yield* realSleep(100)
    // The tool runs for ten minutes less a second of silence (requestTimeout is 10 minutes).
    for (let i = 0; i < 9; i++) yield* TestClock.adjust("1 minute")
    yield* realSleep(100)
    expect(fiber.pollUnsafe()).toBeUndefined()
    release()
    expect(yield* Fiber.join(fiber)).toBe("tool ran")
  }).pipe(Effect.scoped)

describe("ClaudeAgent stallTimeout (scripted SDK, real CLI stand-ins)", () => {
  it.effect(
    "fresh turn: a query silent mid-answer is stopped as stalled; the next turn resumes",
    () => stalledThenResumed(false),
    30_000
  )

  it.effect(
    "keepAlive: a query silent mid-turn is stopped as stalled; the next turn starts one resuming",
    () => stalledThenResumed(true),
    30_000
  )

  it.effect("fresh turn: silence while a tool runs is not a stall", () => silentTool(false), 30_000)

  it.effect(
    "a fresh chat (not streamed) is watched too: its query streams partial messages, so silence is a stall",
    () =>
      Effect.gen(function*() {
        const { release } = yield* setUp
        const chat = yield* client(false)
        const fiber = yield* Effect.forkChild(chat.chat("stall"))
        yield* until(() => Sdk.calls().length === 1)
        expect(Sdk.calls()[0]!.options["includePartialMessages"]).toBe(true)
        yield* realSleep(100)
        yield* TestClock.adjust("179 seconds")
        yield* realSleep(100)
        expect(fiber.pollUnsafe()).toBeUndefined()
        yield* TestClock.adjust("1 second")
        const error = yield* Effect.flip(Fiber.join(fiber))
        expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "StalledError" }, isRetryable: true })
        release()
      }).pipe(Effect.scoped),
    30_000
  )

  it.effect("keepAlive: silence while a tool runs is not a stall", () => silentTool(true), 30_000)
})
