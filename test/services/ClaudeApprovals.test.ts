/**
 * The approval store on memory, SQLite and PostgreSQL (one suite), and the decision rules of a
 * client's approvals (first decision wins, the same decision gets the stored answer, expiry) with
 * a counted stand-in for the resumed turn.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { describe, expect, it, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as TestClock from "effect/testing/TestClock"
import { randomUUID } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { callsInMessage, makeApprovals, makeBatches, makeGate } from "../../src/internal/claude/approvals.ts"
import * as ClaudeSessionStoreSql from "../../src/layers/ClaudeSessionStoreSql.ts"
import {
  ClaudeApprovalStore,
  type ClaudeApprovalStoreService,
  layerMemory,
  PendingApproval
} from "../../src/services/ClaudeApprovals.ts"
import * as Postgres from "../support/postgres.ts"

const pending = (projectKey: string, sessionId: string, createdAt: number) =>
  new PendingApproval({
    approvalId: randomUUID(),
    projectKey,
    sessionId,
    toolUseId: `toolu_${randomUUID()}`,
    tool: "transfer",
    input: { amount: 5, note: "ünïcode" },
    state: "pending",
    createdAt,
    expiresAt: createdAt + 1_000
  })

const storeSuite = (name: string, storeLayer: Layer.Layer<ClaudeApprovalStore, unknown>, timeout = 30_000) =>
  layer(storeLayer, { timeout })(`ClaudeApprovalStore on ${name}`, (it) => {
    it.effect("stores, reads back and lists approvals by project and session, oldest first", () =>
      Effect.gen(function*() {
        const store = yield* ClaudeApprovalStore
        const project = randomUUID()
        const [a, b, c] = [pending(project, "s1", 2), pending(project, "s1", 1), pending(project, "s2", 3)]
        for (const approval of [a, b, c, pending(randomUUID(), "s1", 0)]) yield* store.put(approval)
        expect(yield* store.get(project, a.approvalId)).toEqual(Option.some(a))
        expect(yield* store.get(randomUUID(), a.approvalId)).toEqual(Option.none())
        expect((yield* store.list(project)).map((x) => x.approvalId)).toEqual([b, a, c].map((x) => x.approvalId))
        expect((yield* store.list(project, "s1")).map((x) => x.approvalId)).toEqual([b, a].map((x) => x.approvalId))
      }))

    it.effect("of concurrent decisions exactly one moves a pending approval; the answer is kept", () =>
      Effect.gen(function*() {
        const store: ClaudeApprovalStoreService = yield* ClaudeApprovalStore
        const project = randomUUID()
        const a = pending(project, "s", 1)
        yield* store.put(a)
        const won = yield* Effect.all([
          store.decide(project, a.approvalId, { state: "approved", updatedInput: { amount: 6 } }),
          store.decide(project, a.approvalId, { state: "denied", reason: "no" }),
          store.decide(project, a.approvalId, { state: "approved" })
        ], { concurrency: "unbounded" })
        expect(won.filter(Boolean)).toHaveLength(1)
        yield* store.answer(project, a.approvalId, "done")
        const after = Option.getOrThrow(yield* store.get(project, a.approvalId))
        expect(after.state).toBe("answered")
        expect(after.answer).toBe("done")
        expect(after.updatedInput === undefined).toBe(after.reason !== undefined)
        expect(yield* store.decide(project, a.approvalId, { state: "approved" })).toBe(false)
      }))
  })

storeSuite("memory", layerMemory)

const sqliteDir = mkdtempSync(join(tmpdir(), "ecb-approvals-"))
storeSuite(
  "SQLite",
  Layer.effectDiscard(Effect.addFinalizer(() => Effect.sync(() => rmSync(sqliteDir, { recursive: true, force: true }))))
    .pipe(Layer.provideMerge(ClaudeSessionStoreSql.layerSqlite({ filename: join(sqliteDir, "s.sqlite") })))
)

storeSuite(
  "PostgreSQL",
  Layer.unwrap(Effect.gen(function*() {
    const server = yield* Postgres.PostgresServer
    return ClaudeSessionStoreSql.layer.pipe(
      Layer.provide(PgClient.layer({ url: server.url(), connectTimeout: "5 seconds" }))
    )
  })).pipe(Layer.provide(Postgres.layer())),
  180_000
)

/** A client's approvals over a memory store, the resumed turn counted and answering `answer`. */
const approvalsWith = Effect.gen(function*() {
  const store = yield* ClaudeApprovalStore
  const replays: Array<string> = []
  const gate = makeGate(undefined, new Set())
  const { onDeferred, service } = makeApprovals({
    provider: "claude-local",
    gate,
    store,
    projectKey: "p",
    toolPrefix: "mcp__gtb__",
    ttl: "1 hour",
    replay: (sessionId) =>
      Effect.sync(() => replays.push(sessionId)).pipe(Effect.andThen(Effect.sleep("10 millis")), Effect.as("answer"))
  })
  const required = yield* onDeferred("s", { id: "toolu_1", name: "mcp__gtb__transfer", input: { amount: 5 } }).pipe(
    Effect.flip
  )
  const reason = required._tag === "ProviderError" ? required.reason : undefined
  if (reason?._tag !== "ApprovalRequired") return yield* Effect.die(new Error("expected ApprovalRequired"))
  return { service, replays, reason, gate }
}).pipe(Effect.provide(layerMemory))

describe("ClaudeApprovals decisions", () => {
  it.effect("a deferred call is listed; approving twice, even at once, resumes the turn once", () =>
    Effect.gen(function*() {
      const { reason, replays, service } = yield* approvalsWith
      expect(reason.tool).toBe("transfer")
      expect((yield* service.list()).map((a) => a.approvalId)).toEqual([reason.approvalId])
      expect(yield* service.list("other")).toEqual([])
      const both = yield* Effect.all([
        Effect.exit(service.approve(reason.approvalId)),
        Effect.exit(service.approve(reason.approvalId))
      ], { concurrency: "unbounded" }).pipe(Effect.forkChild)
      yield* TestClock.adjust("1 second")
      const [first, second] = yield* Fiber.join(both)
      expect(replays).toEqual(["s"])
      // One ran the turn; the other was told it was decided (or got the answer, had it come later).
      expect([first._tag, second._tag].sort()).toEqual(["Failure", "Success"])
      const again = yield* service.approve(reason.approvalId).pipe(Effect.forkChild)
      yield* TestClock.adjust("1 second")
      expect(yield* Fiber.join(again)).toBe("answer")
      expect(replays).toEqual(["s"])
      expect(yield* service.list()).toEqual([])
      const denied = yield* Effect.flip(service.deny(reason.approvalId, "no"))
      expect(denied._tag === "ApprovalError" && denied.reason._tag).toBe("AlreadyDecided")
    }))

  it.effect("a denial gives the gate the reason for the replayed call; an expired approval runs nothing", () =>
    Effect.gen(function*() {
      const { gate, reason, replays, service } = yield* approvalsWith
      yield* TestClock.adjust("2 hours")
      const expired = yield* Effect.flip(service.approve(reason.approvalId))
      expect(expired._tag === "ApprovalError" && expired.reason._tag).toBe("ApprovalExpired")
      expect(yield* service.list()).toEqual([])
      expect(replays).toEqual([])
      const unknown = yield* Effect.flip(service.deny("nope", "no"))
      expect(unknown._tag === "ApprovalError" && unknown.reason._tag).toBe("ApprovalNotFound")
      expect(gate.replays.size).toBe(0)
    }))
})

describe("ClaudeApprovals gate", () => {
  it("counts the tool calls of the message holding a call, from the transcript's entries (one per block)", () => {
    const dir = mkdtempSync(join(tmpdir(), "ecb-transcript-"))
    try {
      const file = join(dir, "s.jsonl")
      const block = (message: string, id: string) =>
        JSON.stringify({ type: "assistant", message: { id: message, content: [{ type: "tool_use", id, name: "t" }] } })
      writeFileSync(file, [block("m1", "a"), block("m2", "b"), block("m2", "c"), "{\"type\":\"user\""].join("\n"))
      expect([callsInMessage(file, "a"), callsInMessage(file, "b"), callsInMessage(file, "c")]).toEqual([1, 2, 2])
      expect(callsInMessage(file, "unknown")).toBe(1)
      expect(callsInMessage(join(dir, "missing.jsonl"), "a")).toBe(1)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  /** A partial message's stream event, as the CLI prints it. */
  const event = (message: string, event: object) => ({ type: "stream_event", event, api_message_id: message })
  const toolStart = (message: string, id: string) =>
    event(message, { type: "content_block_start", content_block: { type: "tool_use", id, name: "t" } })

  it.effect("counts a message's tool calls from the stream once the message has ended, waiting for its end", () =>
    Effect.gen(function*() {
      const batches = makeBatches()
      batches.observe(event("m1", { type: "message_start", message: { id: "m1" } }))
      batches.observe(toolStart("m1", "a"))
      // Asked before the message's other call has streamed: it waits for the end.
      const asked = yield* Effect.forkChild(batches.size("a", "30 seconds"))
      yield* Effect.yieldNow
      batches.observe(toolStart("m1", "b"))
      batches.observe(event("m1", { type: "message_delta", delta: { stop_reason: "tool_use" } }))
      expect(yield* Fiber.join(asked)).toBe(2)
      // Later messages count on their own; a message seen only as whole assistant lines, and ended.
      batches.observe({ type: "assistant", message: { id: "m2", content: [{ type: "tool_use", id: "c", name: "t" }] } })
      batches.observe(event("m2", { type: "message_stop" }))
      expect(yield* batches.size("c", "1 second")).toBe(1)
      expect(yield* batches.size("b", "1 second")).toBe(2)
    }))

  it.live("gives nothing for a call whose message the stream never ended within the wait", () =>
    Effect.gen(function*() {
      const batches = makeBatches()
      batches.observe(toolStart("m1", "a"))
      expect(yield* batches.size("a", "50 millis")).toBeUndefined()
      expect(yield* batches.size("unknown", "50 millis")).toBeUndefined()
    }))
})
