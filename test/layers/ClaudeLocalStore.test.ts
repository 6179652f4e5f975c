/**
 * `ClaudeLocal` with a session store that fails on demand, on real processes: a stub `claude`
 * (a node script) that prints stream-json like the real CLI and keeps its session file the way
 * the real one does (`$CLAUDE_CONFIG_DIR/projects/<encoded cwd>/<id>.jsonl`, entries appended per
 * turn, `--resume` refused when the file is missing). Every store fault must become a
 * `SessionStoreError` within `storeTimeout` plus slack, keep the turn's answer, and lose nothing:
 * once the store answers again, the next turn sends what is missing.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as SessionFile from "../../src/internal/claude/sessionFile.ts"
import * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import * as NodeSecretFile from "../../src/layers/NodeSecretFile.ts"
import * as NodeSubprocess from "../../src/layers/NodeSubprocess.ts"
import { ChatClient } from "../../src/services/ChatClient.ts"
import { ClaudeSession } from "../../src/services/ClaudeCodeOptions.ts"
import {
  ClaudeSessionStore,
  type ClaudeSessionStoreService,
  makeMemory,
  SessionStoreError,
  StoreFailed,
  type TranscriptEntry
} from "../../src/services/ClaudeSessionStore.ts"

/**
 * The stub CLI. Each start is logged (one line per start in `$STUB_LOG`). A turn appends a user
 * entry, an assistant entry and a `last-prompt` entry without a uuid (the real CLI writes such
 * entries too), then answers with the prompt and how many user turns the session holds.
 */
const stubSource = `#!/usr/bin/env node
const fs = require("node:fs")
const path = require("node:path")
const crypto = require("node:crypto")
const args = process.argv.slice(2)
fs.appendFileSync(process.env.STUB_LOG, args.join(" ") + "\\n")
const content = JSON.parse(fs.readFileSync(0, "utf8")).message.content
const prompt = typeof content === "string" ? content : content.map((b) => b.text ?? "").join("")
const config = process.env.CLAUDE_CONFIG_DIR
const folder = path.join(config, "projects", fs.realpathSync(process.cwd()).replace(/[^a-zA-Z0-9]/g, "-"))
const r = args.indexOf("--resume")
const id = r >= 0 ? args[r + 1] : crypto.randomUUID()
const file = path.join(folder, id + ".jsonl")
if (r >= 0 && !fs.existsSync(file)) {
  console.log(JSON.stringify({ type: "result", subtype: "error_during_execution", is_error: true, result: "No conversation found with session ID: " + id, session_id: id }))
  process.exit(1)
}
fs.mkdirSync(folder, { recursive: true })
const before = fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\\n").filter((l) => l !== "").map((l) => JSON.parse(l)) : []
const turns = before.filter((e) => e.type === "user").length + 1
const answer = "answer " + turns + " to " + prompt
const entry = (type, message) => ({ type, uuid: crypto.randomUUID(), sessionId: id, timestamp: new Date().toISOString(), message })
const lines = [
  entry("user", { role: "user", content: prompt }),
  entry("assistant", { role: "assistant", content: [{ type: "text", text: answer }] }),
  { type: "last-prompt", sessionId: id, lastPrompt: prompt }
]
fs.appendFileSync(file, lines.map((l) => JSON.stringify(l) + "\\n").join(""), { mode: 0o600 })
console.log(JSON.stringify({ type: "system", subtype: "init", session_id: id, model: "stub", mcp_servers: [] }))
console.log(JSON.stringify({ type: "result", subtype: "success", is_error: false, result: answer, session_id: id, usage: { input_tokens: 10, output_tokens: 5 } }))
`

/** What the faulty store does for each operation, changed by the test as it goes. */
interface Faults {
  /** `late`: the entries land, then the call never answers (a commit whose reply is lost). */
  append: "ok" | "fail" | "hang" | "late" | "die"
  /** `empty`: the session is there but holds no entry; `die`: the store throws (a defect). */
  load: "ok" | "fail" | "hang" | "none" | "empty" | "die"
}

/** What a store that dies throws. */
const defect = new Error("the driver crashed")

/** `makeMemory` behind switches; `calls` counts what reached it (not what the faults refused). */
const faultyStore = Effect.gen(function*() {
  const inner = yield* makeMemory
  const faults: Faults = { append: "ok", load: "ok" }
  const calls = { append: 0, load: 0 }
  const refused = (operation: "append" | "load", sessionId: string) =>
    new SessionStoreError({
      operation,
      sessionId,
      reason: new StoreFailed({ message: `the store refused ${operation}` })
    })
  const store: ClaudeSessionStoreService = {
    ...inner,
    append: (key, entries) =>
      Effect.suspend(() => {
        if (faults.append === "fail") return Effect.fail(refused("append", key.sessionId))
        if (faults.append === "hang") return Effect.never
        if (faults.append === "die") return Effect.die(defect)
        calls.append++
        if (faults.append === "late") return Effect.andThen(inner.append(key, entries), Effect.never)
        return inner.append(key, entries)
      }),
    load: (key) =>
      Effect.suspend(() => {
        if (faults.load === "fail") return Effect.fail(refused("load", key.sessionId))
        if (faults.load === "hang") return Effect.never
        if (faults.load === "none") return Effect.succeed(Option.none())
        if (faults.load === "empty") return Effect.succeed(Option.some([]))
        if (faults.load === "die") return Effect.die(defect)
        calls.load++
        return inner.load(key)
      })
  }
  return { store, inner, faults, calls }
})

interface Machine {
  readonly dir: string
  readonly cwd: string
  readonly config: string
  readonly log: string
  /** The arguments of each CLI started on this machine. */
  readonly starts: () => ReadonlyArray<string>
}

/** A machine of its own: a config dir, a cwd, a log of CLI starts; removed with the scope. */
const machine: Effect.Effect<Machine, never, Scope.Scope> = Effect.acquireRelease(
  Effect.sync(() => {
    const dir = mkdtempSync(join(tmpdir(), "ecb-store-"))
    for (const sub of ["config", "work", "secrets"]) mkdirSync(join(dir, sub))
    const log = join(dir, "starts.log")
    return {
      dir,
      cwd: join(dir, "work"),
      config: join(dir, "config"),
      log,
      starts: () => (existsSync(log) ? readFileSync(log, "utf8").split("\n").filter((l) => l !== "") : [])
    }
  }),
  ({ dir }) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

/** The stub, written once per test into its own folder. */
const stubBinary = Effect.acquireRelease(
  Effect.sync(() => {
    const dir = mkdtempSync(join(tmpdir(), "ecb-stubcli-"))
    const path = join(dir, "claude")
    writeFileSync(path, stubSource)
    chmodSync(path, 0o755)
    return { dir, path }
  }),
  ({ dir }) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

const storeTimeout = "1 second"
/** The bound plus generous slack for a loaded machine. */
const withinBound = 1_000 + 4_000

/** A client on `at` with `store` (shared across the test's clients), open until the scope closes. */
const clientOn = (
  at: Machine,
  binary: string,
  store: ClaudeSessionStoreService,
  options: ClaudeLocal.Options = {}
) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(
      ClaudeLocal.layer({
        binary,
        cliVersion: "2.1.332",
        cwd: at.cwd,
        env: { CLAUDE_CONFIG_DIR: at.config, STUB_LOG: at.log },
        storeTimeout,
        requestTimeout: "30 seconds",
        ...options
      }).pipe(
        Layer.provide(Layer.merge(NodeSubprocess.layer, NodeSecretFile.layer({ directory: join(at.dir, "secrets") }))),
        Layer.provide(Layer.succeed(ClaudeSessionStore, store)),
        Layer.fresh
      )
    )
    return { chat: Context.get(context, ChatClient), session: Context.get(context, ClaudeSession) }
  })

const localFile = (at: Machine, sessionId: string) =>
  SessionFile.readSessionFile(SessionFile.sessionPath(at.config, at.cwd, sessionId), sessionId)

const stored = (store: ClaudeSessionStoreService, sessionId: string) =>
  Effect.map(
    store.load({ projectKey: "default", sessionId }),
    Option.getOrElse((): ReadonlyArray<TranscriptEntry> => [])
  )

/** Runs `turn`, failing it with how long it took. */
const timed = <A, E>(turn: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const start = Date.now()
    const outcome = yield* Effect.result(turn)
    return { outcome, ms: Date.now() - start }
  })

/** Expects a failed turn with a SessionStoreError, returning it. */
const storeError = (outcome: { readonly _tag: string }): SessionStoreError => {
  expect(outcome).toMatchObject({ _tag: "Failure", failure: { _tag: "SessionStoreError" } })
  return (outcome as unknown as { readonly failure: SessionStoreError }).failure
}

describe("ClaudeLocal with a faulty session store (stub claude, real processes)", () => {
  for (const fault of ["fail", "hang", "late"] as const) {
    it.live(
      `append ${
        fault === "late" ? "lands but never answers" : `${fault}s`
      }: the turn fails with its answer; the next turn stores what was missing`,
      () =>
        Effect.gen(function*() {
          const at = yield* machine
          const { path } = yield* stubBinary
          const { faults, inner, store } = yield* faultyStore
          const client = yield* clientOn(at, path, store)
          expect(yield* client.chat.chat("one")).toBe("answer 1 to one")
          const id = Option.getOrThrow(yield* client.session.sessionId)
          expect(yield* stored(inner, id)).toEqual(yield* localFile(at, id))

          faults.append = fault
          const { ms, outcome } = yield* timed(client.chat.chat("two"))
          const error = storeError(outcome)
          expect(error).toMatchObject({
            operation: "append",
            sessionId: id,
            answer: "answer 2 to two",
            isRetryable: fault !== "fail"
          })
          if (fault !== "fail") expect(error.message).toContain("storeTimeout")
          expect(ms).toBeLessThan(withinBound)
          expect((yield* stored(inner, id)).length).toBe(fault === "late" ? 6 : 3)

          faults.append = "ok"
          expect(yield* client.chat.chat("three")).toBe("answer 3 to three")
          const local = yield* localFile(at, id)
          expect(local.length).toBe(9)
          expect(yield* stored(inner, id)).toEqual(local)
        }),
      { timeout: 30_000 }
    )
  }

  it.live(
    "the first turn's store step fails: the conversation still continues that session, and nothing is lost",
    () =>
      Effect.gen(function*() {
        const at = yield* machine
        const { path } = yield* stubBinary
        const { faults, inner, store } = yield* faultyStore
        const client = yield* clientOn(at, path, store)
        faults.append = "fail"
        const error = storeError((yield* timed(client.chat.chat("one"))).outcome)
        expect(error.answer).toBe("answer 1 to one")
        const id = Option.getOrThrow(yield* client.session.sessionId)
        faults.append = "ok"
        expect(yield* client.chat.chat("two")).toBe("answer 2 to two")
        expect(Option.getOrThrow(yield* client.session.sessionId)).toBe(id)
        expect(yield* stored(inner, id)).toEqual(yield* localFile(at, id))
        expect(at.starts()).toHaveLength(2)
        expect(at.starts()[1]).toContain(`--resume ${id}`)
      }),
    { timeout: 30_000 }
  )

  it.live(
    "a store that dies on append: SessionStoreError with the answer and the defect; the next turn stores what was missing",
    () =>
      Effect.gen(function*() {
        const at = yield* machine
        const { path } = yield* stubBinary
        const { faults, inner, store } = yield* faultyStore
        const client = yield* clientOn(at, path, store)
        expect(yield* client.chat.chat("one")).toBe("answer 1 to one")
        const id = Option.getOrThrow(yield* client.session.sessionId)
        faults.append = "die"
        const error = storeError((yield* timed(client.chat.chat("two"))).outcome)
        expect(error).toMatchObject({
          operation: "append",
          sessionId: id,
          answer: "answer 2 to two",
          isRetryable: false
        })
        expect(error.cause).toBe(defect)
        expect(error.message).toContain("the driver crashed")
        faults.append = "ok"
        expect(yield* client.chat.chat("three")).toBe("answer 3 to three")
        expect((yield* stored(inner, id)).length).toBe(9)
        expect(yield* stored(inner, id)).toEqual(yield* localFile(at, id))
      }),
    { timeout: 30_000 }
  )

  for (const fault of ["fail", "hang", "die", "empty"] as const) {
    it.live(
      `load ${
        fault === "empty" ? "returns an empty transcript" : `${fault}s`
      } on a resume from another machine: SessionStoreError before any CLI starts`,
      () =>
        Effect.gen(function*() {
          const [a, b] = [yield* machine, yield* machine]
          const { path } = yield* stubBinary
          const { faults, inner, store } = yield* faultyStore
          const first = yield* clientOn(a, path, store)
          yield* first.chat.chat("one")
          const id = Option.getOrThrow(yield* first.session.sessionId)

          faults.load = fault
          const second = yield* clientOn(b, path, store, { resume: id })
          const { ms, outcome } = yield* timed(second.chat.chat("two"))
          const error = storeError(outcome)
          expect(error).toMatchObject({ operation: "load", sessionId: id, isRetryable: fault === "hang" })
          expect(error.message).not.toBe("")
          if (fault === "die") expect(error.cause).toBe(defect)
          if (fault === "empty") expect(error.message).toContain("returned no entries")
          expect(ms).toBeLessThan(withinBound)
          expect(b.starts()).toEqual([])

          // Once the store answers, the same client resumes with the whole history.
          faults.load = "ok"
          expect(yield* second.chat.chat("two")).toBe("answer 2 to two")
          expect(yield* stored(inner, id)).toEqual(yield* localFile(b, id))
        }),
      { timeout: 30_000 }
    )
  }

  it.live(
    "a resume whose session is in neither the config dir nor the store: SessionStoreError, no CLI started",
    () =>
      Effect.gen(function*() {
        const at = yield* machine
        const { path } = yield* stubBinary
        const { faults, store } = yield* faultyStore
        for (const load of ["ok", "none"] as const) {
          faults.load = load
          const client = yield* clientOn(at, path, store, { resume: "6f1c3c58-0000-4000-8000-000000000000" })
          const error = storeError((yield* timed(client.chat.chat("hi"))).outcome)
          expect(error).toMatchObject({ operation: "load", isRetryable: false, reason: { _tag: "SessionNotFound" } })
          expect(error.message).toContain("neither")
          expect(error.answer).toBeUndefined()
        }
        expect(at.starts()).toEqual([])
      }),
    { timeout: 30_000 }
  )

  it.live(
    "a machine whose local file is behind the store (the session went on elsewhere) resumes with the store's history",
    () =>
      Effect.gen(function*() {
        const [a, b] = [yield* machine, yield* machine]
        const { path } = yield* stubBinary
        const { inner, store } = yield* faultyStore
        const first = yield* clientOn(a, path, store)
        yield* first.chat.chat("one")
        const id = Option.getOrThrow(yield* first.session.sessionId)
        const onB = yield* clientOn(b, path, store, { resume: id })
        expect(yield* onB.chat.chat("two")).toBe("answer 2 to two")
        // Back on A, whose file has only turn 1: the stub counts the user turns it finds.
        const again = yield* clientOn(a, path, store, { resume: id })
        expect(yield* again.chat.chat("three")).toBe("answer 3 to three")
        expect(yield* stored(inner, id)).toEqual(yield* localFile(a, id))
        expect((yield* stored(inner, id)).length).toBe(9)
      }),
    { timeout: 30_000 }
  )

  it.live(
    "a new process on the same machine resumes from its local file: the store gets no duplicates",
    () =>
      Effect.gen(function*() {
        const at = yield* machine
        const { path } = yield* stubBinary
        const { calls, inner, store } = yield* faultyStore
        const first = yield* clientOn(at, path, store)
        yield* first.chat.chat("one")
        const id = Option.getOrThrow(yield* first.session.sessionId)
        const loadsBefore = calls.load
        // A restarted application: a new client, the same config dir, the file already there.
        const second = yield* clientOn(at, path, store, { resume: id })
        expect(yield* second.chat.chat("two")).toBe("answer 2 to two")
        // One load: the store step asked what the store held before sending.
        expect(calls.load).toBe(loadsBefore + 1)
        expect(yield* stored(inner, id)).toEqual(yield* localFile(at, id))
      }),
    { timeout: 30_000 }
  )
})
