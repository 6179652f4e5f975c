import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as SqlClient from "effect/sql/SqlClient"
import { randomUUID } from "node:crypto"
import * as nodeFs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as ClaudeSessionStoreSql from "../../src/layers/ClaudeSessionStoreSql.ts"
import * as SqliteClient from "../../src/layers/SqliteClient.ts"
import * as ClaudeSessionStore from "../../src/services/ClaudeSessionStore.ts"
import { entry, freshProject, sessionStoreSuite } from "../support/sessionStoreSuite.ts"

/** A fresh folder, removed when its scope closes. */
const testFolder = Effect.acquireRelease(
  Effect.sync(() => nodeFs.mkdtempSync(path.join(os.tmpdir(), "session-store-sql-"))),
  (dir) => Effect.sync(() => nodeFs.rmSync(dir, { recursive: true, force: true }))
)

const store = ClaudeSessionStore.ClaudeSessionStore

const failure = <A, E>(exit: Exit.Exit<A, E>): E => {
  assert.isTrue(Exit.isFailure(exit), "expected a failure")
  const reason = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
  if (reason?._tag !== "Fail") return assert.fail(`expected a typed failure, got ${String(exit)}`)
  return reason.error
}

/** Runs `effect` on a store over `filename`, opened for it and closed afterwards. */
const withSqliteStore = <A, E>(filename: string, effect: Effect.Effect<A, E, ClaudeSessionStore.ClaudeSessionStore>) =>
  Effect.provide(effect, ClaudeSessionStoreSql.layerSqlite({ filename }))

sessionStoreSuite(
  "SQLite file",
  Layer.unwrap(
    Effect.map(testFolder, (dir) => ClaudeSessionStoreSql.layerSqlite({ filename: path.join(dir, "sessions.sqlite") }))
  )
)

describe("ClaudeSessionStoreSql on SQLite", () => {
  it.effect("the transcript survives closing and reopening the file", () =>
    Effect.gen(function*() {
      const filename = path.join(yield* testFolder, "sessions.sqlite")
      const key = { projectKey: freshProject(), sessionId: randomUUID() }
      yield* withSqliteStore(filename, Effect.flatMap(store, (s) => s.append(key, [entry("a"), entry("b")])))
      const back = yield* withSqliteStore(
        filename,
        Effect.gen(function*() {
          const s = yield* store
          yield* s.append(key, [entry("b"), entry("c")])
          return yield* s.load(key)
        })
      )
      assert.deepStrictEqual(back, Option.some([entry("a"), entry("b"), entry("c")]))
    }))

  it.effect("two stores on one file (two processes) see each other's appends, uuids included", () =>
    Effect.gen(function*() {
      const filename = path.join(yield* testFolder, "sessions.sqlite")
      const key = { projectKey: freshProject(), sessionId: randomUUID() }
      const [first, second] = yield* Effect.all([
        Layer.build(ClaudeSessionStoreSql.layerSqlite({ filename })),
        Layer.build(ClaudeSessionStoreSql.layerSqlite({ filename }))
      ])
      const [a, b] = [Context.get(first, store), Context.get(second, store)]
      yield* a.append(key, [entry("a")])
      yield* b.append(key, [entry("a"), entry("b")])
      yield* Effect.all([a.append(key, [entry("c"), entry("d")]), b.append(key, [entry("d"), entry("c")])], {
        concurrency: 2
      })
      const fromA = yield* a.load(key)
      assert.deepStrictEqual(fromA, yield* b.load(key))
      const order = Option.getOrThrow(fromA).map((e) => e.uuid).join()
      assert.isTrue(order === "a,b,c,d" || order === "a,b,d,c", `each uuid once, got ${order}`)
      assert.deepStrictEqual((yield* b.listSessions(key.projectKey)).map((x) => x.sessionId), [key.sessionId])
    }))

  it.effect("migrations run once, in their own table; building again migrates nothing", () =>
    Effect.gen(function*() {
      const filename = path.join(yield* testFolder, "sessions.sqlite")
      const runs = yield* Effect.provide(
        Effect.all([ClaudeSessionStoreSql.migrate, ClaudeSessionStoreSql.migrate]),
        SqliteClient.layer({ filename })
      )
      assert.deepStrictEqual(runs, [[[1, "create_session_tables"]], []])
      yield* withSqliteStore(filename, Effect.flatMap(store, (s) => s.listSessions("p")))
      const recorded = yield* Effect.provide(
        Effect.flatMap(SqlClient.SqlClient, (sql) =>
          sql<{ migration_id: number; name: string }>`SELECT migration_id, name
            FROM effect_chat_bridge_session_migrations ORDER BY migration_id`),
        SqliteClient.layer({ filename })
      )
      assert.deepStrictEqual(recorded, [{ migration_id: 1, name: "create_session_tables" }])
    }))

  it.effect("a file in a directory that does not exist fails to build with what to check", () =>
    Effect.gen(function*() {
      const filename = path.join(yield* testFolder, "missing", "sessions.sqlite")
      const error = failure(
        yield* Effect.exit(withSqliteStore(
          filename,
          Effect.gen(function*() {
            yield* store
          })
        ))
      )
      assert.strictEqual(error._tag, "SessionStoreSetupError")
      assert.strictEqual(error.stage, "open")
      assert.include(error.message, filename)
      assert.include(error.message, "check that its directory exists and is writable")
    }))

  it.effect("a database broken under the store fails the operation with a SessionStoreError", () =>
    Effect.gen(function*() {
      const filename = path.join(yield* testFolder, "sessions.sqlite")
      const key = { projectKey: freshProject(), sessionId: "session-1" }
      const errors = yield* withSqliteStore(
        filename,
        Effect.gen(function*() {
          const s = yield* store
          yield* s.append(key, [entry("a")])
          // Someone drops the table under us: every operation on it fails, typed.
          yield* Effect.provide(
            Effect.flatMap(SqlClient.SqlClient, (sql) => sql`DROP TABLE claude_session_entries`),
            SqliteClient.layer({ filename })
          )
          return [
            failure(yield* Effect.exit(s.append(key, [entry("b")]))),
            failure(yield* Effect.exit(s.load(key))),
            failure(yield* Effect.exit(s.delete(key)))
          ]
        })
      )
      assert.deepStrictEqual(errors.map((e) => [e._tag, e.operation, e.sessionId]), [
        ["SessionStoreError", "append", "session-1"],
        ["SessionStoreError", "load", "session-1"],
        ["SessionStoreError", "delete", "session-1"]
      ])
      for (const error of errors) {
        assert.include(error.message, "no such table: claude_session_entries")
        assert.include(error.message, "check that the database is reachable")
        assert.isFalse(error.retryable)
        assert.isDefined(error.cause)
      }
    }))

  it.effect("a failed append stores nothing: its transaction is rolled back", () =>
    Effect.gen(function*() {
      const filename = path.join(yield* testFolder, "sessions.sqlite")
      const key = { projectKey: freshProject(), sessionId: randomUUID() }
      yield* withSqliteStore(
        filename,
        Effect.gen(function*() {
          const s = yield* store
          yield* s.append(key, [entry("a")])
          // A trigger that rejects one entry makes the second INSERT of the append fail.
          yield* Effect.provide(
            Effect.flatMap(SqlClient.SqlClient, (sql) =>
              sql`CREATE TRIGGER reject_poison BEFORE INSERT ON claude_session_entries
                WHEN NEW.uuid = 'poison' BEGIN SELECT RAISE(ABORT, 'poison entry'); END`),
            SqliteClient.layer({ filename })
          )
          const batch = [
            ...Array.from({ length: ClaudeSessionStoreSql.insertBatchSize }, (_, i) =>
              entry(`ok-${i}`)),
            entry("poison")
          ]
          const error = failure(yield* Effect.exit(s.append(key, batch)))
          assert.include(error.message, "poison entry")
          assert.deepStrictEqual(
            Option.getOrThrow(yield* s.load(key)).map((e) =>
              e.uuid
            ),
            ["a"]
          )
          const other = { ...key, sessionId: randomUUID() }
          assert.isTrue(
            Option.isNone(
              yield* Effect.exit(s.append(other, [entry("poison")])).pipe(
                Effect.andThen(s.load(other))
              )
            ),
            "not even the session row of a new session"
          )
          assert.deepStrictEqual((yield* s.listSessions(key.projectKey)).map((x) => x.sessionId), [key.sessionId])
        })
      )
    }))

  it.effect("a large first turn is one append in batches: 1,200 entries of ~4 KB", () =>
    Effect.gen(function*() {
      const filename = path.join(yield* testFolder, "sessions.sqlite")
      const key = { projectKey: freshProject(), sessionId: randomUUID() }
      const batch = Array.from({ length: 1_200 }, (_, i) => entry(`e-${i}`, "y".repeat(4_000)))
      const back = yield* withSqliteStore(
        filename,
        Effect.gen(function*() {
          const s = yield* store
          yield* s.append(key, batch)
          yield* s.append(key, batch)
          return yield* s.load(key)
        })
      )
      assert.deepStrictEqual(back, Option.some(batch))
    }))
})
