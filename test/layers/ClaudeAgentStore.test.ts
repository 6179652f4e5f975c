import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import { readFileSync } from "node:fs"
import { sessionPath } from "../../src/internal/claude/sessionFile.ts"
import * as AgentStore from "../../src/internal/claudeAgent/store.ts"
import * as ClaudeAgent from "../../src/layers/ClaudeAgent.ts"
import {
  ClaudeSessionStore,
  type ClaudeSessionStoreService,
  makeMemory,
  SessionStoreError,
  type StoreOperation,
  StoreUnavailable,
  type TranscriptEntry
} from "../../src/services/ClaudeSessionStore.ts"
import { type Sandbox, sandbox } from "../support/claudeCli.ts"
import { type ClaudeClient, requestTimeout, sessionOf } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

/**
 * What the faulty store does on each call of an operation, as the test sets it: `late` stores,
 * then answers after `storeTimeout` (a reply lost after the commit); `die` throws (a defect);
 * `emptyList` finds the session with no entry in it.
 */
type Fault = "ok" | "fail" | "hang" | "empty" | "late" | "die" | "emptyList"

/** What a store that dies throws. */
const defect = new Error("the driver crashed")

/** A memory store whose appends and loads fail, hang or find nothing on demand. */
const faultyStore = Effect.gen(function*() {
  const inner = yield* makeMemory
  const faults: { append: Fault; load: Fault } = { append: "ok", load: "ok" }
  const broken = (operation: StoreOperation) =>
    Effect.fail(new SessionStoreError({ operation, reason: new StoreUnavailable({ message: "the database is down" }) }))
  const store: ClaudeSessionStoreService = {
    ...inner,
    append: (key, entries) =>
      faults.append === "fail"
        ? broken("append")
        : faults.append === "hang"
        ? Effect.never
        : faults.append === "late"
        ? Effect.andThen(inner.append(key, entries), Effect.sleep("1500 millis"))
        : faults.append === "die"
        ? Effect.die(defect)
        : inner.append(key, entries),
    load: (key) =>
      faults.load === "fail"
        ? broken("load")
        : faults.load === "hang"
        ? Effect.never
        : faults.load === "empty"
        ? Effect.succeed(Option.none())
        : faults.load === "emptyList"
        ? Effect.succeed(Option.some([]))
        : faults.load === "die"
        ? Effect.die(defect)
        : inner.load(key)
  }
  const entries = (sessionId: string) =>
    Effect.map(
      inner.load({ projectKey: "default", sessionId }),
      Option.getOrElse((): ReadonlyArray<TranscriptEntry> => [])
    )
  return { store, faults, entries }
})

/** The bound on each store call in these tests. */
const storeTimeout = "1 second"
/** Generous room for a CLI turn on a busy machine, far below the SDK's own 60 s waits. */
const slackMs = 12_000

const client = (
  box: Sandbox,
  scope: Scope.Scope,
  store: ClaudeSessionStoreService,
  options: ClaudeAgent.Options = {}
): Effect.Effect<ClaudeClient> =>
  sessionOf(
    ClaudeAgent.layer({ cwd: box.cwd, env: box.env, requestTimeout, storeTimeout, ...options }).pipe(
      Layer.provide(Layer.succeed(ClaudeSessionStore, store)),
      Layer.orDie
    )
  ).pipe(Scope.provide(scope))

const answer = (prompt: string) => `Noted: ${prompt.length} characters`
const echo = (req: Fake.FakeRequest) => ({ text: answer(Fake.lastUserLine(req)) })
const occurrences = (haystack: string, text: string) => haystack.split(text).length - 1
const requestOf = (api: Fake.FakeMessagesApi, prompt: string) =>
  [...api.messageRequests()].reverse().find((r) => Fake.lastUserLine(r) === prompt)!

/** The CLI keeps its API request records local: it never mirrors them. */
const mirrored = (entry: TranscriptEntry) => !entry.type.startsWith("api-request")
const localEntries = (box: Sandbox, sessionId: string): Array<TranscriptEntry> =>
  readFileSync(sessionPath(box.env["CLAUDE_CONFIG_DIR"]!, box.cwd, sessionId), "utf8").split("\n")
    .filter((line) => line !== "").map((line) => JSON.parse(line) as TranscriptEntry)

/** No gap: every entry's parent is stored before it. */
const parentsBefore = (entries: ReadonlyArray<TranscriptEntry>) => {
  const seen = new Set<string>()
  const orphans: Array<string> = []
  for (const entry of entries) {
    const parent = entry["parentUuid"]
    if (typeof parent === "string" && !seen.has(parent)) orphans.push(`${entry.type} ${entry.uuid}`)
    if (entry.uuid !== undefined) seen.add(entry.uuid)
  }
  return orphans
}

/** A failed effect's error and how long it took. */
const timedFailure = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const started = Date.now()
    const error = yield* Effect.flip(effect)
    return { error, ms: Date.now() - started }
  })

describeWithClaude("ClaudeAgent on a failing ClaudeSessionStore (real SDK and binary)", () => {
  for (const keepAlive of [false, true]) {
    it.live(
      `an append that fails fails the turn, answer kept; the next turn stores what was missing (keepAlive: ${keepAlive})`,
      () =>
        Effect.gen(function*() {
          const api = yield* Fake.make(echo)
          const box = yield* sandbox(api.url)
          const { entries, faults, store } = yield* faultyStore
          const scope = yield* Scope.make()
          const c = yield* client(box, scope, store, { keepAlive })
          expect(yield* c.chat.chat("turn one")).toBe(answer("turn one"))
          const two = `turn two ${Math.random().toString(36).slice(2)}`
          const sessionId = Option.getOrThrow(yield* c.session.sessionId)

          faults.append = "fail"
          const { error, ms } = yield* timedFailure(c.chat.chat(two))
          expect(error).toBeInstanceOf(SessionStoreError)
          expect(error).toMatchObject({ operation: "append", sessionId, answer: answer(two), isRetryable: true })
          expect(ms).toBeLessThan(slackMs)
          console.log(`append fails (keepAlive ${keepAlive}): the turn failed after ${ms} ms`)
          expect(occurrences(JSON.stringify(yield* entries(sessionId)), two)).toBe(0)

          faults.append = "ok"
          expect(yield* c.chat.chat("turn three")).toBe(answer("turn three"))
          // The conversation went on from turn two, and turn two is stored now, once, before turn three.
          const third = JSON.stringify(requestOf(api, "turn three").body.messages)
          expect(occurrences(third, two)).toBe(1)
          yield* Scope.close(scope, Exit.void)
          const stored = yield* entries(sessionId)
          expect(occurrences(JSON.stringify(stored), answer(two))).toBeGreaterThan(0)
          expect(parentsBefore(stored)).toEqual([])
          // A kept-alive CLI wrote every turn to its local file: the store holds the same, in order.
          if (keepAlive) expect(stored).toEqual(localEntries(box, sessionId).filter(mirrored))
        }),
      120_000
    )
  }

  it.live(
    "an append that hangs fails the turn with a retryable SessionStoreError within the bound",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(echo)
        const box = yield* sandbox(api.url)
        const { faults, store } = yield* faultyStore
        const scope = yield* Scope.make()
        const c = yield* client(box, scope, store)
        faults.append = "hang"
        const { error, ms } = yield* timedFailure(c.chat.chat("hello"))
        expect(error).toMatchObject({ _tag: "SessionStoreError", operation: "append", isRetryable: true })
        expect(error).toMatchObject({ answer: answer("hello") })
        expect(error.message).toContain("did not answer append within 1s")
        // The SDK alone would have held the result back 60 s.
        expect(ms).toBeLessThan(slackMs)
        const closing = Date.now()
        yield* Scope.close(scope, Exit.void)
        expect(Date.now() - closing).toBeLessThan(slackMs)
        console.log(`append hangs: the turn failed after ${ms} ms, the client closed in ${Date.now() - closing} ms`)
      }),
    120_000
  )

  it.live(
    "appends that land but answer after storeTimeout are not stored twice: the same entries as with a healthy store",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(echo)
        /** A two-turn conversation on a store whose appends are `fault`; what the store holds after it. */
        const conversation = (fault: Fault) =>
          Effect.gen(function*() {
            const box = yield* sandbox(api.url)
            const { entries, faults, store } = yield* faultyStore
            const scope = yield* Scope.make()
            const c = yield* client(box, scope, store)
            faults.append = fault
            // A turn whose last append is late fails with its answer kept; one whose backlog
            // all landed succeeds: either way the answer is there.
            for (const prompt of ["turn one", "turn two"]) {
              const outcome = yield* Effect.result(c.chat.chat(prompt))
              const said = outcome._tag === "Success" ? outcome.success : (outcome.failure as SessionStoreError).answer
              expect(said).toBe(answer(prompt))
            }
            const sessionId = Option.getOrThrow(yield* c.session.sessionId)
            faults.append = "ok"
            yield* Scope.close(scope, Exit.void)
            return yield* entries(sessionId)
          })
        const healthy = yield* conversation("ok")
        const late = yield* conversation("late")
        const types = (list: ReadonlyArray<TranscriptEntry>) => list.map((e) => e.type).sort()
        const queued = (list: ReadonlyArray<TranscriptEntry>) => list.filter((e) => e.type === "queue-operation").length
        console.log(`late appends: ${queued(late)} queue-operation entries stored (${queued(healthy)} when healthy)`)
        expect(queued(healthy)).toBeGreaterThan(0)
        // The CLI's other metadata entries (atis-latch, last-prompt) vary from run to run; the
        // queue operations (an enqueue and a dequeue per turn, each with its own timestamp) do not.
        expect(queued(late)).toBe(queued(healthy))
        const operations = late.filter((e) => e.type === "queue-operation").map((e) => JSON.stringify(e))
        expect(new Set(operations).size).toBe(operations.length)
        expect(types(late).filter((t) => t === "user" || t === "assistant")).toEqual(
          types(healthy).filter((t) => t === "user" || t === "assistant")
        )
        const uuids = late.flatMap((e) => (e.uuid === undefined ? [] : [e.uuid]))
        expect(new Set(uuids).size).toBe(uuids.length)
        expect(occurrences(JSON.stringify(late), answer("turn two"))).toBeGreaterThan(0)
        expect(parentsBefore(late)).toEqual([])
      }),
    120_000
  )

  for (const fault of ["fail", "hang", "empty", "emptyList", "die"] as const) {
    it.live(
      `a load that ${
        fault === "empty" ? "finds nothing" : fault === "emptyList" ? "finds no entry" : `${fault}s`
      } fails the resume with SessionStoreError`,
      () =>
        Effect.gen(function*() {
          const api = yield* Fake.make(echo)
          const boxA = yield* sandbox(api.url)
          const boxB = yield* sandbox(api.url)
          const { faults, store } = yield* faultyStore
          const scopeA = yield* Scope.make()
          const a = yield* client(boxA, scopeA, store)
          const first = `remember ${Math.random().toString(36).slice(2)}`
          expect(yield* a.chat.chat(first)).toBe(answer(first))
          const sessionId = Option.getOrThrow(yield* a.session.sessionId)
          yield* Scope.close(scopeA, Exit.void)

          // Another HOME: the session is only in the store.
          faults.load = fault
          const scopeB = yield* Scope.make()
          const b = yield* client(boxB, scopeB, store, { resume: sessionId })
          const { error, ms } = yield* timedFailure(b.chat.chat("second"))
          expect(error).toBeInstanceOf(SessionStoreError)
          expect(error).toMatchObject({ operation: "load", sessionId })
          expect(ms).toBeLessThan(slackMs)
          console.log(`load ${fault}: the turn failed after ${ms} ms: ${error.message}`)
          if (fault === "empty" || fault === "emptyList") {
            expect(error).toMatchObject({ isRetryable: false })
            expect(error.message).toContain(`Session ${sessionId} is not in the session store (project key "default")`)
          } else if (fault === "die") {
            expect(error).toMatchObject({ isRetryable: false })
            expect(error.message).toContain("the driver crashed")
            expect(error.message).toContain("Fix the store")
          } else {
            expect(error).toMatchObject({ isRetryable: true })
            expect(error.message).toContain(fault === "fail" ? "the database is down" : "did not answer load within 1s")
          }
          // The model was never asked: the turn stopped at the store.
          expect(api.messageRequests().filter((r) => Fake.lastUserLine(r) === "second")).toEqual([])

          // The store back: the same client resumes.
          faults.load = "ok"
          expect(yield* b.chat.chat("third")).toBe(answer("third"))
          expect(occurrences(JSON.stringify(requestOf(api, "third").body.messages), first)).toBe(1)
          yield* Scope.close(scopeB, Exit.void)
        }),
      120_000
    )
  }
})

describe("the Agent SDK adapter of a ClaudeSessionStore", () => {
  it.live("keys every call by the client's projectKey, not the SDK's cwd-derived one", () =>
    Effect.gen(function*() {
      const { faults, store } = yield* faultyStore
      const adapter = yield* AgentStore.make(store, { projectKey: "tenant-7", storeTimeout })
      const sdk = adapter.sdkStore
      const key = { projectKey: "-tmp-some-cwd", sessionId: "s1" }
      yield* Effect.promise(() => sdk.append(key, [{ type: "user", uuid: "u1" }]))
      yield* Effect.promise(() => sdk.append({ ...key, subpath: "subagents/agent-1" }, [{ type: "user", uuid: "u2" }]))
      yield* adapter.flush("s1")
      // Another cwd (another SDK project key) finds it: the key is ours.
      const loaded = yield* Effect.promise(() => sdk.load({ projectKey: "-elsewhere", sessionId: "s1" }))
      expect(loaded).toEqual([{ type: "user", uuid: "u1" }])
      expect(yield* store.load({ projectKey: "tenant-7", sessionId: "s1" })).toEqual(
        Option.some([{ type: "user", uuid: "u1" }])
      )
      expect((yield* Effect.promise(() => sdk.listSessions!("-elsewhere"))).map((s) => s.sessionId)).toEqual(["s1"])
      expect(yield* Effect.promise(() => sdk.listSubkeys!({ projectKey: "-elsewhere", sessionId: "s1" }))).toEqual([
        "subagents/agent-1"
      ])
      yield* Effect.promise(() => sdk.delete!({ projectKey: "-elsewhere", sessionId: "s1" }))
      expect(yield* store.load({ projectKey: "tenant-7", sessionId: "s1" })).toEqual(Option.none())
      // A load that hangs is refused within storeTimeout, well before the SDK's loadTimeoutMs.
      expect(adapter.loadTimeoutMs).toBeGreaterThan(1_000)
      faults.load = "hang"
      const refused = yield* Effect.promise(() => sdk.load(key).then(() => undefined, (error: unknown) => error))
      expect(refused).toBeInstanceOf(SessionStoreError)
      expect(refused).toMatchObject({ operation: "load", sessionId: "s1", isRetryable: true })
    }).pipe(Effect.scoped))

  it.live("a batch that landed but answered late is not sent again; what did not land is", () =>
    Effect.gen(function*() {
      const { entries, faults, store } = yield* faultyStore
      const adapter = yield* AgentStore.make(store, { projectKey: undefined, storeTimeout })
      const key = { projectKey: "-cwd", sessionId: "s3" }
      const queued = (n: number) => ({ type: "queue-operation", operation: "enqueue", timestamp: `t${n}` })
      faults.append = "late"
      yield* Effect.promise(() => adapter.sdkStore.append(key, [{ type: "user", uuid: "a" }, queued(1)]))
      faults.append = "ok"
      // Held back after the failed send, then sent by flush with what landed dropped.
      yield* Effect.promise(() => adapter.sdkStore.append(key, [queued(2), { type: "assistant", uuid: "b" }]))
      yield* adapter.flush("s3")
      expect(yield* entries("s3")).toEqual([{ type: "user", uuid: "a" }, queued(1), queued(2), {
        type: "assistant",
        uuid: "b"
      }])
      // A store that dies on append: a typed error keeping the defect, the batch kept for the next flush.
      faults.append = "die"
      yield* Effect.promise(() => adapter.sdkStore.append(key, [queued(3)]))
      const error = yield* Effect.flip(adapter.flush("s3"))
      expect(error).toMatchObject({ _tag: "SessionStoreError", operation: "append", sessionId: "s3", cause: defect })
      faults.append = "ok"
      yield* adapter.flush("s3")
      expect((yield* entries("s3")).filter((e) => e.type === "queue-operation").length).toBe(3)
    }).pipe(Effect.scoped))

  it.live("a failed batch is kept, sent before the next one in order, and reported by flush until stored", () =>
    Effect.gen(function*() {
      const { entries, faults, store } = yield* faultyStore
      const adapter = yield* AgentStore.make(store, { projectKey: undefined, storeTimeout })
      const key = { projectKey: "-cwd", sessionId: "s2" }
      faults.append = "fail"
      // The SDK is told the batch landed: it neither retries it nor drops it.
      yield* Effect.promise(() => adapter.sdkStore.append(key, [{ type: "user", uuid: "a" }]))
      yield* Effect.promise(() => adapter.sdkStore.append(key, [{ type: "assistant", uuid: "b" }]))
      const error = yield* Effect.flip(adapter.flush("s2"))
      expect(error).toMatchObject({ _tag: "SessionStoreError", operation: "append", sessionId: "s2" })
      expect(yield* entries("s2")).toEqual([])
      faults.append = "ok"
      yield* Effect.promise(() => adapter.sdkStore.append(key, [{ type: "user", uuid: "c" }]))
      yield* adapter.flush("s2")
      expect((yield* entries("s2")).map((e) => e.uuid)).toEqual(["a", "b", "c"])
    }).pipe(Effect.scoped))
})
