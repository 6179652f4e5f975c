/**
 * The store step on its own: a real config dir in a temporary folder, where the test plays the
 * CLI by appending to the session file, and the memory store.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import * as SessionFile from "../../../src/internal/claude/sessionFile.ts"
import { boundedCall, makeTranscripts, type TranscriptSetup } from "../../../src/internal/claude/transcripts.ts"
import { Usage } from "../../../src/services/ChatClient.ts"
import { ClaudeSnapshot } from "../../../src/services/ClaudeCodeOptions.ts"
import {
  type ClaudeSessionStoreService,
  makeMemory,
  SessionStoreError,
  StoreFailed,
  StoreUnavailable,
  type TranscriptEntry
} from "../../../src/services/ClaudeSessionStore.ts"

const id = "5d3c1a9e-2222-4333-8444-555566667777"

/** A machine: a config dir and a cwd in a temporary folder removed with the scope. */
const machine = Effect.acquireRelease(
  Effect.sync(() => {
    const dir = mkdtempSync(join(tmpdir(), "ecb-transcripts-"))
    mkdirSync(join(dir, "work"))
    return { dir, config: join(dir, "config"), cwd: join(dir, "work") }
  }),
  ({ dir }) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)
type Machine = Effect.Success<typeof machine>

const fileOf = (at: Machine, sessionId = id) => SessionFile.sessionPath(at.config, at.cwd, sessionId)

let counter = 0
/** What a CLI's turn adds: two entries with a uuid and one without (as the real CLI writes). */
const turn = (text: string): Array<TranscriptEntry> => [
  { type: "user", uuid: `u-${++counter}`, message: { content: text } },
  { type: "assistant", uuid: `u-${++counter}`, message: { content: `re: ${text}` } },
  { type: "last-prompt", lastPrompt: text }
]

/** The test plays the CLI: appends a turn to the session file. */
const cliTurn = (at: Machine, text: string, sessionId = id) => {
  const file = fileOf(at, sessionId)
  mkdirSync(dirname(file), { recursive: true })
  appendFileSync(file, turn(text).map((e) => `${JSON.stringify(e)}\n`).join(""))
}

const setupOn = (
  at: Machine,
  store: ClaudeSessionStoreService | undefined,
  more: Partial<TranscriptSetup> = {}
): TranscriptSetup => ({
  store: Option.fromUndefinedOr(store),
  projectKey: undefined,
  storeTimeout: "1 second",
  configDir: () => at.config,
  cwd: at.cwd,
  snapshot: undefined,
  ...more
})

const held = (store: ClaudeSessionStoreService, sessionId = id, projectKey = "default") =>
  Effect.map(store.load({ projectKey, sessionId }), Option.getOrElse((): ReadonlyArray<TranscriptEntry> => []))

/** The prompts of the user entries, in order. */
const texts = (entries: ReadonlyArray<TranscriptEntry>) =>
  entries.filter((e) => e.type === "user").map((e) => (e["message"] as { content: string }).content)

const local = (at: Machine, sessionId = id) => SessionFile.readSessionFile(fileOf(at, sessionId), sessionId)

describe("claudeTranscripts", () => {
  it.live("boundedCall: a call that does not answer in time is a retryable error naming the operation", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(boundedCall("append", id, "50 millis")(Effect.never))
      expect(error).toMatchObject({ _tag: "SessionStoreError", operation: "append", sessionId: id, isRetryable: true })
      expect(error.reason._tag).toBe("StoreUnavailable")
      expect(error.message).toContain("50ms")
      expect(yield* boundedCall("load", undefined, "1 second")(Effect.succeed(7))).toBe(7)
      const own = new SessionStoreError({ operation: "load", reason: new StoreFailed({ message: "down" }) })
      expect(yield* Effect.flip(boundedCall("load", id, "1 second")(Effect.fail(own)))).toBe(own)
    }))

  it.effect("a session id that is a path is refused before it names a file: nothing is written anywhere", () =>
    Effect.gen(function*() {
      const at = yield* machine
      const store = yield* makeMemory
      const evil = "../../../../escaped"
      const snapshot = new ClaudeSnapshot({ sessionId: evil, transcript: turn("x"), usage: Usage.empty })
      const transcripts = makeTranscripts(setupOn(at, store, { snapshot }))
      for (const attempt of [transcripts.beforeRun(evil), transcripts.afterRun(evil), transcripts.load(evil)]) {
        const error = yield* Effect.flip(attempt)
        expect(error).toMatchObject({
          _tag: "SessionStoreError",
          isRetryable: false,
          reason: { _tag: "InvalidSessionId" }
        })
        expect(error.message).toContain("is not a session id")
      }
      for (const bad of ["", "-x", "a/b", "a\\b", "a.jsonl", "x".repeat(129)]) {
        expect((yield* Effect.flip(transcripts.beforeRun(bad)))._tag).toBe("SessionStoreError")
      }
      // Where `projects/<cwd>/../../../../escaped.jsonl` would have landed: the temp folder itself.
      expect(existsSync(join(dirname(at.dir), "escaped.jsonl"))).toBe(false)
      expect(yield* store.listSessions("default")).toEqual([])
      // A CLI's own ids pass the check (and, with nothing to restore, nothing happens).
      yield* makeTranscripts(setupOn(at, undefined)).beforeRun(id)
    }))

  it.effect("file mode: each store step sends only what the CLI added since the last one", () =>
    Effect.gen(function*() {
      const at = yield* machine
      const store = yield* makeMemory
      const transcripts = makeTranscripts(setupOn(at, store, { projectKey: "tenant-1" }))
      cliTurn(at, "one")
      yield* transcripts.afterRun(id)
      expect(yield* held(store, id, "tenant-1")).toEqual(yield* local(at))
      cliTurn(at, "two")
      // A CLI still writing its next line: only complete lines are stored.
      appendFileSync(fileOf(at), `{"type":"user","uuid":"half`)
      yield* transcripts.afterRun(id)
      expect((yield* held(store, id, "tenant-1")).length).toBe(6)
      appendFileSync(fileOf(at), `-done"}\n`)
      yield* transcripts.afterRun(id)
      expect(yield* held(store, id, "tenant-1")).toEqual(yield* local(at))
      expect((yield* held(store, id, "tenant-1")).at(-1)).toEqual({ type: "user", uuid: "half-done" })
      expect(yield* held(store)).toEqual([])
    }))

  it.effect("file mode: a session file rewritten behind the client's back is compared with the store, not resent", () =>
    Effect.gen(function*() {
      const at = yield* machine
      const store = yield* makeMemory
      const transcripts = makeTranscripts(setupOn(at, store))
      cliTurn(at, "one")
      cliTurn(at, "two")
      yield* transcripts.afterRun(id)
      // Rewritten shorter (the first turn only), then a turn: the read from the old offset cannot be trusted.
      const kept = (yield* local(at)).slice(0, 3)
      yield* SessionFile.writeSessionFile(fileOf(at), id, kept)
      cliTurn(at, "three")
      yield* transcripts.afterRun(id)
      const texts = (yield* held(store)).filter((e) => e.type === "user").map((e) =>
        (e["message"] as { content: string }).content
      )
      expect(texts).toEqual(["one", "two", "three"])
      expect((yield* held(store)).length).toBe(9)
    }))

  it.effect("file mode: no session file after a run is a non-retryable error naming the config dir", () =>
    Effect.gen(function*() {
      const at = yield* machine
      const error = yield* Effect.flip(makeTranscripts(setupOn(at, yield* makeMemory)).afterRun(id))
      expect(error).toMatchObject({ operation: "append", sessionId: id, isRetryable: false })
      expect(error.reason._tag).toBe("SessionFileFailed")
      expect(error.message).toContain(at.config)
    }))

  it.effect("without a store nothing is stored, and a missing file is left for the CLI to report", () =>
    Effect.gen(function*() {
      const at = yield* machine
      const transcripts = makeTranscripts(setupOn(at, undefined))
      yield* transcripts.afterRun(id)
      yield* transcripts.beforeRun(id)
      expect(existsSync(fileOf(at))).toBe(false)
    }))

  it.effect("beforeRun on another machine writes the stored session where the CLI reads it; later steps send only the new", () =>
    Effect.gen(function*() {
      const [a, b] = [yield* machine, yield* machine]
      const store = yield* makeMemory
      cliTurn(a, "one")
      yield* makeTranscripts(setupOn(a, store)).afterRun(id)
      const onB = makeTranscripts(setupOn(b, store))
      yield* onB.beforeRun(id)
      expect(yield* local(b)).toEqual(yield* held(store))
      cliTurn(b, "two")
      yield* onB.afterRun(id)
      expect(yield* held(store)).toEqual(yield* local(b))
      expect((yield* held(store)).length).toBe(6)
    }))

  it.effect("beforeRun: a session in neither the config dir nor the store fails before the run", () =>
    Effect.gen(function*() {
      const at = yield* machine
      const error = yield* Effect.flip(makeTranscripts(setupOn(at, yield* makeMemory)).beforeRun(id))
      expect(error).toMatchObject({ operation: "load", sessionId: id, isRetryable: false })
      expect(error.reason._tag).toBe("SessionNotFound")
      expect(error.message).toContain("neither")
      expect(existsSync(fileOf(at))).toBe(false)
    }))

  it.effect("beforeRun: a file under another project folder of the config dir is used, and not stored twice", () =>
    Effect.gen(function*() {
      const at = yield* machine
      const store = yield* makeMemory
      const elsewhere = { ...at, cwd: join(at.dir, "other") }
      mkdirSync(elsewhere.cwd)
      cliTurn(elsewhere, "one")
      yield* makeTranscripts(setupOn(elsewhere, store)).afterRun(id)
      const here = makeTranscripts(setupOn(at, store))
      yield* here.beforeRun(id)
      expect(yield* local(at)).toEqual(yield* local(elsewhere))
      cliTurn(at, "two")
      yield* here.afterRun(id)
      expect(yield* held(store)).toEqual(yield* local(at))
    }))

  it.effect("a snapshot is written before the first run and goes to the store with the first store step", () =>
    Effect.gen(function*() {
      const [a, b] = [yield* machine, yield* machine]
      cliTurn(a, "one")
      const snapshot = new ClaudeSnapshot({
        sessionId: id,
        transcript: yield* makeTranscripts(setupOn(a, undefined)).load(id),
        usage: Usage.empty
      })
      expect(snapshot.transcript.length).toBe(3)
      const store = yield* makeMemory
      const onB = makeTranscripts(setupOn(b, store, { snapshot }))
      yield* onB.beforeRun(id)
      expect(yield* local(b)).toEqual(snapshot.transcript)
      cliTurn(b, "two")
      yield* onB.afterRun(id)
      expect(yield* held(store)).toEqual(yield* local(b))
    }))

  it.effect("a snapshot of a session the store already holds: the first store step adds no duplicates", () =>
    Effect.gen(function*() {
      const [a, b] = [yield* machine, yield* machine]
      const store = yield* makeMemory
      const onA = makeTranscripts(setupOn(a, store))
      cliTurn(a, "one")
      yield* onA.afterRun(id)
      const snapshot = new ClaudeSnapshot({ sessionId: id, transcript: yield* onA.load(id), usage: Usage.empty })
      const onB = makeTranscripts(setupOn(b, store, { snapshot }))
      yield* onB.beforeRun(id)
      cliTurn(b, "two")
      yield* onB.afterRun(id)
      expect(yield* held(store)).toEqual(yield* local(b))
    }))

  it.effect("beforeRun on a machine left behind: the file becomes the store's transcript, its unstored entries dropped", () =>
    Effect.gen(function*() {
      const [a, b] = [yield* machine, yield* machine]
      const store = yield* makeMemory
      cliTurn(a, "one")
      yield* makeTranscripts(setupOn(a, store)).afterRun(id)
      // A run on A whose store step never ran (it failed, or its process died), then the
      // conversation goes on on B.
      cliTurn(a, "only on A")
      const onB = makeTranscripts(setupOn(b, store))
      yield* onB.beforeRun(id)
      cliTurn(b, "two")
      yield* onB.afterRun(id)
      const backOnA = makeTranscripts(setupOn(a, store))
      yield* backOnA.beforeRun(id)
      expect(texts(yield* local(a))).toEqual(["one", "two"])
      expect(yield* local(a)).toEqual(yield* held(store))
      cliTurn(a, "three")
      yield* backOnA.afterRun(id)
      expect(texts(yield* held(store))).toEqual(["one", "two", "three"])
      expect(yield* held(store)).toEqual(yield* local(a))
      // Up to date: a second resume leaves the file as it is.
      const file = yield* local(a)
      yield* makeTranscripts(setupOn(a, store)).beforeRun(id)
      expect(yield* local(a)).toEqual(file)
    }))

  it.effect("a new process on a machine whose file has a never-stored tail: the store's transcript, nothing sent back", () =>
    Effect.gen(function*() {
      const at = yield* machine
      const store = yield* makeMemory
      cliTurn(at, "one")
      yield* makeTranscripts(setupOn(at, store)).afterRun(id)
      cliTurn(at, "killed mid-turn")
      const restarted = makeTranscripts(setupOn(at, store))
      yield* restarted.beforeRun(id)
      expect(yield* local(at)).toEqual(yield* held(store))
      cliTurn(at, "two")
      yield* restarted.afterRun(id)
      expect(texts(yield* held(store))).toEqual(["one", "two"])
    }))

  it.effect("a run that failed (no store step) is cut from the file before the client's next run", () =>
    Effect.gen(function*() {
      const at = yield* machine
      const store = yield* makeMemory
      const transcripts = makeTranscripts(setupOn(at, store))
      cliTurn(at, "one")
      yield* transcripts.afterRun(id)
      yield* transcripts.beforeRun(id)
      cliTurn(at, "two")
      yield* transcripts.afterRun(id)
      const afterTwo = yield* local(at)
      // Two runs in a row fail after the CLI wrote to the file: each is cut before the next.
      for (const failed of ["stalled", "interrupted"]) {
        yield* transcripts.beforeRun(id)
        cliTurn(at, failed)
        expect(texts(yield* local(at))).toContain(failed)
      }
      yield* transcripts.beforeRun(id)
      expect(yield* local(at)).toEqual(afterTwo)
      cliTurn(at, "three")
      yield* transcripts.afterRun(id)
      expect(texts(yield* held(store))).toEqual(["one", "two", "three"])
      expect(yield* held(store)).toEqual(yield* local(at))
    }))

  it.effect("a failed run after a turn whose store step failed: that turn is kept and stored with the next", () =>
    Effect.gen(function*() {
      const at = yield* machine
      const inner = yield* makeMemory
      let down = false
      const store: ClaudeSessionStoreService = {
        ...inner,
        append: (key, entries) =>
          down
            ? Effect.fail(
              new SessionStoreError({ operation: "append", reason: new StoreUnavailable({ message: "down" }) })
            )
            : inner.append(key, entries)
      }
      const transcripts = makeTranscripts(setupOn(at, store))
      cliTurn(at, "one")
      yield* transcripts.afterRun(id)
      yield* transcripts.beforeRun(id)
      cliTurn(at, "two")
      down = true
      expect((yield* Effect.flip(transcripts.afterRun(id))).message).toBe("down")
      down = false
      yield* transcripts.beforeRun(id)
      cliTurn(at, "failed")
      yield* transcripts.beforeRun(id)
      expect(texts(yield* local(at))).toEqual(["one", "two"])
      cliTurn(at, "three")
      yield* transcripts.afterRun(id)
      expect(texts(yield* held(store))).toEqual(["one", "two", "three"])
    }))

  it.effect("a file another writer replaced since the client's last run is taken from the store, not cut", () =>
    Effect.gen(function*() {
      const at = yield* machine
      const store = yield* makeMemory
      const first = makeTranscripts(setupOn(at, store))
      cliTurn(at, "one")
      yield* first.afterRun(id)
      yield* first.beforeRun(id)
      cliTurn(at, "failed")
      // Meanwhile another client on this machine restores the file (a rename: another inode) and runs a turn.
      const second = makeTranscripts(setupOn(at, store))
      yield* second.beforeRun(id)
      cliTurn(at, "two")
      yield* second.afterRun(id)
      yield* first.beforeRun(id)
      expect(texts(yield* local(at))).toEqual(["one", "two"])
      expect(yield* local(at)).toEqual(yield* held(store))
    }))

  for (const broken of ["dies", "returns an empty transcript"] as const) {
    it.effect(`a store that ${broken} on load fails beforeRun with a SessionStoreError saying what to do`, () =>
      Effect.gen(function*() {
        const at = yield* machine
        const inner = yield* makeMemory
        const defect = new Error("driver crashed")
        const store: ClaudeSessionStoreService = {
          ...inner,
          load: () => broken === "dies" ? Effect.die(defect) : Effect.succeed(Option.some([]))
        }
        const error = yield* Effect.flip(makeTranscripts(setupOn(at, store)).beforeRun(id))
        expect(error).toBeInstanceOf(SessionStoreError)
        expect(error).toMatchObject({ operation: "load", sessionId: id, isRetryable: false })
        expect(error.reason._tag).toBe(broken === "dies" ? "StoreFailed" : "EmptyTranscript")
        if (broken === "dies") {
          expect(error.cause).toBe(defect)
          expect(error.message).toContain("driver crashed")
          expect(error.message).toContain("Fix the store")
        } else {
          expect(error.message).toContain("returned no entries")
          expect(error.message).toContain("start a new conversation")
        }
        expect(existsSync(fileOf(at))).toBe(false)
      }))
  }

  it.effect("a store that dies on append fails afterRun with a SessionStoreError keeping the defect", () =>
    Effect.gen(function*() {
      const at = yield* machine
      const inner = yield* makeMemory
      const store: ClaudeSessionStoreService = { ...inner, append: () => Effect.die("boom") }
      cliTurn(at, "one")
      const error = yield* Effect.flip(makeTranscripts(setupOn(at, store)).afterRun(id))
      expect(error).toMatchObject({ _tag: "SessionStoreError", operation: "append", sessionId: id, cause: "boom" })
      expect(error.message).toContain("died on append")
    }))

  it.effect("load: the store first, then the session file, else a not-found error", () =>
    Effect.gen(function*() {
      const at = yield* machine
      const store = yield* makeMemory
      const withStore = makeTranscripts(setupOn(at, store))
      expect((yield* Effect.flip(withStore.load(id))).message).toContain("neither")
      cliTurn(at, "one")
      // Not stored yet: read from the file.
      expect(yield* withStore.load(id)).toEqual(yield* local(at))
      yield* store.append({ projectKey: "default", sessionId: id }, turn("only in the store"))
      expect((yield* withStore.load(id)).map((e) => e.type)).toEqual(["user", "assistant", "last-prompt"])
      expect((yield* withStore.load(id))[0]?.["message"]).toEqual({ content: "only in the store" })
    }))

  it.effect("mirror mode: a snapshot goes to the store once, before the run; afterRun is the runtime's flush", () =>
    Effect.gen(function*() {
      const at = yield* machine
      const store = yield* makeMemory
      const flushed: Array<string> = []
      const snapshot = new ClaudeSnapshot({ sessionId: id, transcript: turn("one"), usage: Usage.empty })
      const transcripts = makeTranscripts(setupOn(at, store, {
        snapshot,
        mirror: { flush: (sessionId) => Effect.sync(() => void flushed.push(sessionId)) }
      }))
      yield* transcripts.beforeRun(id)
      yield* transcripts.beforeRun(id)
      expect(yield* held(store)).toEqual(snapshot.transcript)
      yield* transcripts.afterRun(id)
      expect(flushed).toEqual([id])
      expect(existsSync(fileOf(at))).toBe(false)
    }))
})
