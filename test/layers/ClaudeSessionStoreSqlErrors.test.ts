/**
 * ClaudeSessionStoreSql's approval store and its failure paths on SQLite: a parked call's round
 * trip (decided once, answered, listed by session), a duplicate put, rows another writer broke,
 * tables dropped under the stores, and a write lock held by another connection (a retryable
 * `StoreUnavailable` that says the database was busy).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as SqlClient from "effect/sql/SqlClient"
import * as path from "node:path"
import { DatabaseSync } from "node:sqlite"
import * as ClaudeSessionStoreSql from "../../src/layers/ClaudeSessionStoreSql.ts"
import * as SqliteClient from "../../src/layers/SqliteClient.ts"
import { ClaudeApprovalStore, PendingApproval } from "../../src/services/ClaudeApprovals.ts"
import { ClaudeSessionStore } from "../../src/services/ClaudeSessionStore.ts"
import { tempDir } from "../support/clusterStorage.ts"

const failure = <A, E>(exit: Exit.Exit<A, E>): E => {
  assert.isTrue(Exit.isFailure(exit), "expected a failure")
  const reason = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
  if (reason === undefined || reason._tag !== "Fail") throw new Error("expected a typed failure")
  return reason.error
}

const approval = (approvalId: string, sessionId: string, createdAt: number) =>
  new PendingApproval({
    approvalId,
    projectKey: "p",
    sessionId,
    toolUseId: `tu-${approvalId}`,
    tool: "transfer",
    input: { amount: createdAt },
    state: "pending",
    createdAt,
    expiresAt: createdAt + 60_000
  })

const databaseFile = Effect.map(tempDir("ecb-store-errors-"), (dir) => path.join(dir, "store.sqlite"))

/** The stores on `filename`, and the raw SQL client on the same file. */
const stores = (filename: string, busyTimeout?: SqliteClient.SqliteClientConfig["busyTimeout"]) =>
  ClaudeSessionStoreSql.layer.pipe(
    Layer.provideMerge(SqliteClient.layer({ filename, ...(busyTimeout === undefined ? {} : { busyTimeout }) }))
  )

describe("ClaudeSessionStoreSql's approval store and failures (SQLite)", () => {
  it.live("a parked call: put, get, decided once, answered, listed per session in order", () =>
    Effect.gen(function*() {
      const filename = yield* databaseFile
      yield* Effect.gen(function*() {
        const approvals = yield* ClaudeSessionStoreSql.makeApprovalStore
        yield* approvals.put(approval("a-2", "s1", 2_000))
        yield* approvals.put(approval("a-1", "s1", 1_000))
        yield* approvals.put(approval("b-1", "s2", 1_500))
        assert.isTrue(Option.isNone(yield* approvals.get("p", "missing")))
        assert.isTrue(Option.isNone(yield* approvals.get("other-project", "a-1")))
        const got = Option.getOrThrow(yield* approvals.get("p", "a-1"))
        assert.deepStrictEqual(got, approval("a-1", "s1", 1_000))

        assert.isTrue(yield* approvals.decide("p", "a-1", { state: "approved", updatedInput: { amount: 7 } }))
        // Decided already: a second decision (another process's) loses.
        assert.isFalse(yield* approvals.decide("p", "a-1", { state: "denied", reason: "too late" }))
        assert.isFalse(yield* approvals.decide("p", "missing", { state: "denied" }))
        assert.isTrue(yield* approvals.decide("p", "a-2", { state: "denied", reason: "not today" }))
        yield* approvals.answer("p", "a-1", "sent 7")

        const approved = Option.getOrThrow(yield* approvals.get("p", "a-1"))
        assert.strictEqual(approved.state, "answered")
        assert.deepStrictEqual(approved.updatedInput, { amount: 7 })
        assert.strictEqual(approved.answer, "sent 7")
        assert.isUndefined(approved.reason)
        const denied = Option.getOrThrow(yield* approvals.get("p", "a-2"))
        assert.strictEqual(denied.state, "denied")
        assert.strictEqual(denied.reason, "not today")
        assert.isUndefined(denied.updatedInput)

        assert.deepStrictEqual((yield* approvals.list("p", "s1")).map((a) => a.approvalId), ["a-1", "a-2"])
        assert.deepStrictEqual((yield* approvals.list("p")).map((a) => a.approvalId), ["a-1", "b-1", "a-2"])
        assert.deepStrictEqual(yield* approvals.list("other-project"), [])
      }).pipe(Effect.provide(SqliteClient.layer({ filename })))
    }))

  it.live("a duplicate put and rows another writer broke are StoreFailed, naming the approval", () =>
    Effect.gen(function*() {
      const filename = yield* databaseFile
      yield* Effect.gen(function*() {
        const approvals = yield* ClaudeApprovalStore
        const sql = yield* SqlClient.SqlClient
        yield* approvals.put(approval("a-1", "s1", 1_000))
        const duplicate = failure(yield* Effect.exit(approvals.put(approval("a-1", "s1", 1_000))))
        assert.strictEqual(duplicate._tag, "ApprovalError")
        assert.strictEqual(duplicate.approvalId, "a-1")
        assert.strictEqual(duplicate.reason._tag, "StoreFailed")
        assert.isFalse(duplicate.isRetryable)
        assert.include(duplicate.message, "the approval store's put of a-1 failed")

        // Something else writes a row whose input is not JSON, and one whose state is unknown.
        yield* sql`UPDATE claude_approvals SET input = '{not json' WHERE approval_id = 'a-1'`
        const badJson = failure(yield* Effect.exit(approvals.get("p", "a-1")))
        assert.strictEqual(badJson.reason._tag, "StoreFailed")
        assert.include(badJson.message, "the approval store's get failed")
        assert.include(badJson.message, "are intact")
        yield* sql`UPDATE claude_approvals SET input = '{}', state = 'lost' WHERE approval_id = 'a-1'`
        const badState = failure(yield* Effect.exit(approvals.list("p", "s1")))
        assert.strictEqual(badState.reason._tag, "StoreFailed")
        assert.include(badState.message, "the approval store's list failed")
      }).pipe(Effect.provide(stores(filename)))
    }))

  it.live("tables dropped under the stores: every operation fails typed, with what to check", () =>
    Effect.gen(function*() {
      const filename = yield* databaseFile
      yield* Effect.gen(function*() {
        const sessions = yield* ClaudeSessionStore
        const approvals = yield* ClaudeApprovalStore
        const sql = yield* SqlClient.SqlClient
        yield* sessions.append({ projectKey: "p", sessionId: "s1", subpath: "agent-1" }, [{ type: "x", uuid: "u1" }])
        assert.deepStrictEqual(yield* sessions.listSubkeys({ projectKey: "p", sessionId: "s1" }), ["agent-1"])
        yield* sql`DROP TABLE claude_sessions`
        yield* sql`DROP TABLE claude_approvals`
        const listed = failure(yield* Effect.exit(sessions.listSessions("p")))
        assert.strictEqual(listed.operation, "listSessions")
        assert.isUndefined(listed.sessionId)
        assert.strictEqual(listed.reason._tag, "StoreFailed")
        assert.include(listed.message, "the session store's listSessions failed")
        assert.include(listed.message, "no such table: claude_sessions")
        const subkeys = failure(yield* Effect.exit(sessions.listSubkeys({ projectKey: "p", sessionId: "s1" })))
        assert.strictEqual(subkeys.operation, "listSubkeys")
        assert.strictEqual(subkeys.sessionId, "s1")
        const errors = [
          failure(yield* Effect.exit(approvals.put(approval("a-1", "s1", 1)))),
          failure(yield* Effect.exit(approvals.get("p", "a-1"))),
          failure(yield* Effect.exit(approvals.decide("p", "a-1", { state: "approved" }))),
          failure(yield* Effect.exit(approvals.answer("p", "a-1", "done"))),
          failure(yield* Effect.exit(approvals.list("p")))
        ]
        assert.deepStrictEqual(errors.map((e) => e.approvalId), ["a-1", "a-1", "a-1", "a-1", undefined])
        for (const error of errors) {
          assert.strictEqual(error.reason._tag, "StoreFailed")
          assert.include(error.message, "no such table: claude_approvals")
          assert.include(error.message, "effect_chat_bridge_session_migrations")
        }
      }).pipe(Effect.provide(stores(filename)))
    }))

  it.live("another connection holding the write lock: a retryable StoreUnavailable saying the database was busy", () =>
    Effect.gen(function*() {
      const filename = yield* databaseFile
      yield* Effect.gen(function*() {
        const sessions = yield* ClaudeSessionStore
        const approvals = yield* ClaudeApprovalStore
        const key = { projectKey: "p", sessionId: "s-locked" }
        yield* sessions.append(key, [{ type: "x", uuid: "u1" }])
        const other = yield* Effect.acquireRelease(
          Effect.sync(() => {
            const db = new DatabaseSync(filename)
            db.exec("BEGIN IMMEDIATE")
            return db
          }),
          (db) => Effect.sync(() => db.close())
        )
        const append = failure(yield* Effect.exit(sessions.append(key, [{ type: "x", uuid: "u2" }])))
        assert.strictEqual(append.reason._tag, "StoreUnavailable")
        assert.isTrue(append.isRetryable)
        assert.include(append.message, "the database was busy or slow")
        const put = failure(yield* Effect.exit(approvals.put(approval("a-1", "s-locked", 1))))
        assert.strictEqual(put.reason._tag, "StoreUnavailable")
        assert.include(put.message, "the database was busy or slow")
        // Once the other connection lets go, the same append goes through.
        other.exec("ROLLBACK")
        yield* sessions.append(key, [{ type: "x", uuid: "u2" }])
        const stored = Option.getOrThrow(yield* sessions.load(key))
        assert.deepStrictEqual(stored.map((e) => e.uuid), ["u1", "u2"])
      }).pipe(Effect.scoped, Effect.provide(stores(filename, "50 millis")))
    }))
})
