/**
 * GeminiCli's session mirror on homes laid out as Gemini CLI 0.61 lays them out (a project
 * directory per `cwd`, `chats/session-*.jsonl` logs, stubs a load leaves) and a memory
 * `ClaudeSessionStore`: what a turn stores, what a load restores, which project directory a
 * restore writes to, and the typed failures. The real CLI's side is `GeminiCliSessionStore.e2e`.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Store from "../../../src/internal/geminiCli/sessionStore.ts"
import {
  type ClaudeSessionStoreService,
  makeMemory,
  SessionStoreError,
  StoreFailed
} from "../../../src/services/ClaudeSessionStore.ts"

const sessionId = "5e55a1d0-aaaa-4bbb-8ccc-000000000001"
const header = (lastUpdated: string) =>
  JSON.stringify({ sessionId, projectHash: "h", startTime: lastUpdated, lastUpdated, kind: "main" })
const context = JSON.stringify({
  $set: { messages: [{ id: "c", type: "user", content: [{ text: "<session_context>listing" }] }] }
})
const user = (id: string, text: string) => JSON.stringify({ id, type: "user", content: [{ text }] })
const answer = (id: string) => JSON.stringify({ id, type: "gemini", content: "ok" })
const touched = (at: string) => JSON.stringify({ $set: { lastUpdated: at } })

/** A home (removed with the test's scope) and the memory store. */
const setup = Effect.gen(function*() {
  const box = yield* Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "ecb-gemini-store-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )
  const cwd = path.join(box, "My Project")
  fs.mkdirSync(cwd)
  const store = yield* makeMemory
  const make = (home: string, over: Partial<ClaudeSessionStoreService> = {}): Store.StoreSetup => ({
    store: { ...store, ...over },
    projectKey: "p",
    storeTimeout: undefined,
    home: path.join(box, home),
    cwd,
    unstored: new Set()
  })
  /** Writes a session log under `home`'s project `slug`. */
  const write = (home: string, slug: string, name: string, lines: ReadonlyArray<string>) => {
    const chats = path.join(box, home, ".gemini", "tmp", slug, "chats")
    fs.mkdirSync(chats, { recursive: true })
    fs.writeFileSync(path.join(chats, name), lines.join("\n") + "\n")
    return path.join(chats, name)
  }
  const stored = Effect.map(
    store.load({ projectKey: "p", sessionId, subpath: Store.Subpath }),
    Option.map((entries) => entries.map((e) => [e.uuid, e["line"]]))
  )
  return { box, cwd, store, make, write, stored }
})

const firstTurn = [
  header("2026-01-01T00:00:00Z"),
  context,
  user("u1", "hello"),
  answer("g1"),
  touched("2026-01-01T00:00:01Z")
]

describe("geminiCli sessionStore", () => {
  it.effect("a turn stores the log's lines; the next stores only the new ones, whatever stubs lie beside", () =>
    Effect.gen(function*() {
      const { make, stored, write } = yield* setup
      const a = make("a")
      const file = write("a", "proj", `session-2026-01-01T00-00-${sessionId.slice(0, 8)}.jsonl`, firstTurn)
      // A stub a load left: the session's context only, written later.
      write("a", "proj", `session-2026-01-01T00-05-${sessionId.slice(0, 8)}.jsonl`, [
        header("2026-01-01T00:05:00Z"),
        context
      ])
      yield* Store.storeTurn(a, sessionId)
      expect(Option.getOrThrow(yield* stored)).toEqual(firstTurn.map((line, i) => [String(i), line]))
      fs.appendFileSync(file, [user("u2", "again"), answer("g2")].join("\n") + "\n")
      yield* Store.storeTurn(a, sessionId)
      yield* Store.storeTurn(a, sessionId)
      expect(Option.getOrThrow(yield* stored).slice(5)).toEqual([["5", user("u2", "again")], ["6", answer("g2")]])
    }).pipe(Effect.scoped))

  it.effect("a log that does not continue the stored lines, or no log, fails with a typed SessionStoreError", () =>
    Effect.gen(function*() {
      const { make, write } = yield* setup
      const a = make("a")
      const missing = yield* Effect.flip(Store.storeTurn(a, sessionId))
      expect([missing.operation, missing.reason._tag]).toEqual(["append", "SessionFileFailed"])
      write("a", "proj", "session-x.jsonl", firstTurn)
      yield* Store.storeTurn(a, sessionId)
      write("a", "proj", "session-x.jsonl", [firstTurn[0]!, context, user("u9", "elsewhere"), answer("g9")])
      const diverged = yield* Effect.flip(Store.storeTurn(a, sessionId))
      expect(diverged.reason._tag).toBe("StoreFailed")
      expect(diverged.message).toContain("does not continue")
    }).pipe(Effect.scoped))

  it.effect("store failures and foreign entries under the key are typed; a dying store keeps its defect", () =>
    Effect.gen(function*() {
      const { make, store, write } = yield* setup
      write("a", "proj", "session-x.jsonl", firstTurn)
      const refused = new SessionStoreError({
        operation: "append",
        reason: new StoreFailed({ message: "disk full" })
      })
      const failing = make("a", { append: () => Effect.fail(refused) })
      const error = yield* Effect.flip(Store.storeTurn(failing, sessionId))
      expect([error.reason._tag, error.sessionId]).toEqual(["StoreFailed", sessionId])
      const dying = yield* Effect.flip(Store.storeTurn(make("a", { load: () => Effect.die("boom") }), sessionId))
      expect([dying.operation, dying.reason._tag, dying.cause]).toEqual(["load", "StoreFailed", "boom"])
      yield* store.append({ projectKey: "p", sessionId, subpath: Store.Subpath }, [{ type: "user", uuid: "x" }])
      const corrupt = yield* Effect.flip(Store.restore(make("b"), sessionId))
      expect(corrupt.reason._tag).toBe("CorruptTranscript")
    }).pipe(Effect.scoped))

  it.effect("a home without the session gets the stored log in a project directory it claims for cwd", () =>
    Effect.gen(function*() {
      const { cwd, make, write } = yield* setup
      const a = make("a")
      write("a", "proj", "session-x.jsonl", firstTurn)
      yield* Store.storeTurn(a, sessionId)
      // Home b already has another project named like cwd's ("my-project"): a new slug is claimed.
      write("b", "my-project", "session-y.jsonl", [])
      const b = make("b")
      yield* Store.restore(b, sessionId)
      const dir = path.join(b.home, ".gemini", "tmp", "my-project-1")
      expect(fs.readFileSync(path.join(dir, ".project_root"), "utf8")).toBe(path.resolve(cwd))
      const [restored] = fs.readdirSync(path.join(dir, "chats"))
      expect(restored).toMatch(/^session-.*\.jsonl$/)
      expect(fs.readFileSync(path.join(dir, "chats", restored!), "utf8")).toBe(firstTurn.join("\n") + "\n")
      expect(Store.projectDir(b.home, cwd)).toBe(dir)
    }).pipe(Effect.scoped))

  it.effect("a local log with records the store never accepted is replaced by the store's; an equal one is kept", () =>
    Effect.gen(function*() {
      const { cwd, make, write } = yield* setup
      const a = make("a")
      // The CLI's registry names this home's project directory for cwd.
      fs.mkdirSync(path.join(a.home, ".gemini"), { recursive: true })
      fs.writeFileSync(
        path.join(a.home, ".gemini", "projects.json"),
        JSON.stringify({ projects: { [path.resolve(cwd)]: "registered" } })
      )
      const file = write("a", "registered", "session-x.jsonl", firstTurn)
      yield* Store.storeTurn(a, sessionId)
      yield* Store.restore(a, sessionId)
      expect(fs.existsSync(file)).toBe(true)
      fs.appendFileSync(file, user("stray", "a failed attempt") + "\n")
      yield* Store.restore(a, sessionId)
      expect(fs.existsSync(file)).toBe(false)
      const chats = path.join(a.home, ".gemini", "tmp", "registered", "chats")
      const files = fs.readdirSync(chats)
      expect(files).toHaveLength(1)
      expect(fs.readFileSync(path.join(chats, files[0]!), "utf8")).toBe(firstTurn.join("\n") + "\n")
    }).pipe(Effect.scoped))

  it.effect("a turn whose store step failed stays in the local log for the next turn to store", () =>
    Effect.gen(function*() {
      const { make, stored, write } = yield* setup
      const a = make("a")
      const file = write("a", "proj", "session-x.jsonl", firstTurn)
      yield* Store.storeTurn(a, sessionId)
      fs.appendFileSync(file, [user("u2", "unstored"), answer("g2")].join("\n") + "\n")
      const down = { ...a, store: { ...a.store, append: () => Effect.die("store down") } }
      yield* Effect.flip(Store.storeTurn(down, sessionId))
      yield* Store.restore(a, sessionId)
      expect(fs.readFileSync(file, "utf8")).toContain("unstored")
      yield* Store.storeTurn(a, sessionId)
      expect(Option.getOrThrow(yield* stored)).toHaveLength(7)
      // Once stored, extra local records (a failed attempt) are cut again.
      fs.appendFileSync(file, user("stray", "failed attempt") + "\n")
      yield* Store.restore(a, sessionId)
      expect(fs.existsSync(file)).toBe(false)
    }).pipe(Effect.scoped))

  it.effect("a session the store never held is left as it is; a marker names the project directory", () =>
    Effect.gen(function*() {
      const { cwd, make, write } = yield* setup
      const a = make("a")
      const file = write("a", "marked", "session-x.jsonl", firstTurn)
      yield* Store.restore(a, sessionId)
      expect(fs.readFileSync(file, "utf8")).toBe(firstTurn.join("\n") + "\n")
      fs.writeFileSync(path.join(a.home, ".gemini", "tmp", "marked", ".project_root"), path.resolve(cwd) + "\n")
      expect(Store.projectDir(a.home, cwd)).toBe(path.join(a.home, ".gemini", "tmp", "marked"))
    }).pipe(Effect.scoped))

  it.effect("a session file that cannot be written fails the restore with SessionFileFailed", () =>
    Effect.gen(function*() {
      const { make, write } = yield* setup
      write("a", "proj", "session-x.jsonl", firstTurn)
      yield* Store.storeTurn(make("a"), sessionId)
      const b = make("b")
      // The CLI's directory is a file: nothing can be created under it.
      fs.mkdirSync(b.home, { recursive: true })
      fs.writeFileSync(path.join(b.home, ".gemini"), "")
      const error = yield* Effect.flip(Store.restore(b, sessionId))
      expect([error.operation, error.reason._tag]).toEqual(["load", "SessionFileFailed"])
    }).pipe(Effect.scoped))
})
