import * as PgClient from "@effect/sql-pg/PgClient"
import { assert, describe, it, layer } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import * as SqlClient from "effect/sql/SqlClient"
import { randomUUID } from "node:crypto"
import * as nodeFs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as ClaudeSessionStoreSql from "../../src/layers/ClaudeSessionStoreSql.ts"
import * as SqliteClient from "../../src/layers/SqliteClient.ts"
import * as ClaudeSessionStore from "../../src/services/ClaudeSessionStore.ts"
import * as Postgres from "../support/postgres.ts"
import { makeRecorder } from "../support/recordingTracer.ts"
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
      assert.deepStrictEqual(runs, [[[1, "create_session_tables"], [2, "create_approval_table"]], []])
      yield* withSqliteStore(filename, Effect.flatMap(store, (s) => s.listSessions("p")))
      const recorded = yield* Effect.provide(
        Effect.flatMap(SqlClient.SqlClient, (sql) =>
          sql<{ migration_id: number; name: string }>`SELECT migration_id, name
            FROM effect_chat_bridge_session_migrations ORDER BY migration_id`),
        SqliteClient.layer({ filename })
      )
      assert.deepStrictEqual(recorded, [
        { migration_id: 1, name: "create_session_tables" },
        { migration_id: 2, name: "create_approval_table" }
      ])
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
      // effect's SqlError classifies any failure to open as a (retryable) ConnectionError.
      assert.strictEqual(error.reason._tag, "StoreUnavailable")
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
        assert.include(error.message, "that its tables (migrated in effect_chat_bridge_session_migrations) are intact")
        assert.isFalse(error.isRetryable)
        assert.strictEqual(error.reason._tag, "StoreFailed")
        assert.isDefined(error.cause)
      }
    }))

  it.effect("an entry row that is not JSON (written by something else) fails load, typed", () =>
    Effect.gen(function*() {
      const filename = path.join(yield* testFolder, "sessions.sqlite")
      const key = { projectKey: freshProject(), sessionId: "session-1" }
      yield* withSqliteStore(filename, Effect.flatMap(store, (s) => s.append(key, [entry("a")])))
      yield* Effect.provide(
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) =>
            sql`INSERT INTO claude_session_entries (project_key, session_id, uuid, entry, created_at)
            VALUES (${key.projectKey}, ${key.sessionId}, 'b', '{"type": "user", truncated', 0)`
        ),
        SqliteClient.layer({ filename })
      )
      const error = failure(yield* Effect.exit(withSqliteStore(filename, Effect.flatMap(store, (s) => s.load(key)))))
      assert.strictEqual(error._tag, "SessionStoreError")
      if (error._tag !== "SessionStoreError") return
      assert.deepStrictEqual([error.operation, error.sessionId, error.reason._tag, error.isRetryable], [
        "load",
        "session-1",
        "CorruptTranscript",
        false
      ])
      assert.include(error.message, "session session-1 holds an entry that is not JSON")
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

  it.effect("each operation is a span with the project key, session id and entry count", () =>
    Effect.gen(function*() {
      const filename = path.join(yield* testFolder, "sessions.sqlite")
      const recorder = makeRecorder()
      const key = { projectKey: freshProject(), sessionId: randomUUID(), subpath: "subagents/a.jsonl" }
      yield* withSqliteStore(
        filename,
        Effect.gen(function*() {
          const s = yield* store
          yield* s.append(key, [entry("a"), entry("b"), entry("a")])
          yield* s.load(key)
          yield* s.listSessions(key.projectKey)
          yield* s.listSubkeys(key)
          yield* s.delete(key)
        })
      ).pipe(Effect.withTracer(recorder.tracer))
      const attributes = (name: string) => {
        const [span] = recorder.find(name)
        if (span === undefined) return assert.fail(`no span ${name}`)
        assert.isTrue(span.ended)
        return Object.fromEntries(span.attributes)
      }
      const keyAttributes = {
        "claude_session_store.project_key": key.projectKey,
        "claude_session_store.session_id": key.sessionId,
        "claude_session_store.subpath": key.subpath
      }
      assert.deepInclude(attributes("ClaudeSessionStore.append"), {
        ...keyAttributes,
        "claude_session_store.entries": 3
      })
      assert.deepInclude(attributes("ClaudeSessionStore.load"), keyAttributes)
      assert.deepInclude(attributes("ClaudeSessionStore.delete"), keyAttributes)
      assert.deepInclude(attributes("ClaudeSessionStore.listSubkeys"), {
        "claude_session_store.session_id": key.sessionId
      })
      assert.deepInclude(attributes("ClaudeSessionStore.listSessions"), {
        "claude_session_store.project_key": key.projectKey
      })
      assert.lengthOf(recorder.find("ClaudeSessionStoreSql.migrate"), 1)
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

/** A `SqlClient` on the server's `database` over TCP (a pool of its own: another "process"). */
const pgClient = (server: Postgres.PostgresServer, database?: string) =>
  PgClient.layer({ url: server.url(database), connectTimeout: "5 seconds" })

/** The store on the server's default database. */
const pgStore = (server: Postgres.PostgresServer, database?: string) =>
  ClaudeSessionStoreSql.layer.pipe(Layer.provide(pgClient(server, database)))

/** A new, empty database on the server. */
const freshDatabase = Effect.gen(function*() {
  const server = yield* Postgres.PostgresServer
  const name = `t_${randomUUID().replaceAll("-", "")}`
  yield* Effect.provide(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE DATABASE ${sql(name)}`),
    pgClient(server)
  )
  return name
})

/** Whether the process `pid` still exists. */
const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const pgTimeout = "180 seconds"

sessionStoreSuite(
  "PostgreSQL",
  Layer.unwrap(Effect.gen(function*() {
    return pgStore(yield* Postgres.PostgresServer)
  })).pipe(
    Layer.provide(Postgres.layer())
  ),
  { timeout: pgTimeout }
)

layer(Postgres.layer(), { timeout: pgTimeout })("ClaudeSessionStoreSql on PostgreSQL", (it) => {
  it.effect("the transcript survives closing the connection; a new connection reads it", () =>
    Effect.gen(function*() {
      const server = yield* Postgres.PostgresServer
      const key = { projectKey: freshProject(), sessionId: randomUUID(), subpath: "subagents/a.jsonl" }
      yield* Effect.provide(Effect.flatMap(store, (s) => s.append(key, [entry("a"), entry("b")])), pgStore(server))
      const back = yield* Effect.provide(
        Effect.gen(function*() {
          const s = yield* store
          yield* s.append(key, [entry("b"), entry("c")])
          return [yield* s.load(key), yield* s.listSubkeys(key)] as const
        }),
        pgStore(server)
      )
      assert.deepStrictEqual(back, [Option.some([entry("a"), entry("b"), entry("c")]), ["subagents/a.jsonl"]])
    }))

  it.effect("two clients appending to one session at once: nothing lost, duplicated or interleaved", () =>
    Effect.gen(function*() {
      const server = yield* Postgres.PostgresServer
      const a = Context.get(yield* Layer.build(pgStore(server)), store)
      const b = Context.get(yield* Layer.build(pgStore(server)), store)
      const key = { projectKey: freshProject(), sessionId: randomUUID() }
      const batch = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => entry(`${prefix}-${i}`))
      const shared = batch("shared", 50)
      yield* Effect.all([
        a.append(key, batch("a1", 100)),
        b.append(key, batch("b1", 100)),
        a.append(key, shared),
        b.append(key, shared),
        a.append(key, batch("a2", 100)),
        b.append(key, batch("b2", 100))
      ], { concurrency: "unbounded" })
      const stored = Option.getOrThrow(yield* b.load(key)).map((e) => e.uuid!)
      assert.strictEqual(stored.length, 450)
      assert.strictEqual(new Set(stored).size, 450, "no uuid twice")
      // Each append's entries form one run, in order: the runs' prefixes never repeat.
      const runs = stored.map((uuid) => uuid.split("-")[0]).filter((p, i, all) => i === 0 || all[i - 1] !== p)
      assert.deepStrictEqual([...runs].sort(), ["a1", "a2", "b1", "b2", "shared"], `runs: ${runs.join()}`)
      for (const prefix of runs) {
        const mine = stored.filter((uuid) => uuid.startsWith(`${prefix}-`))
        assert.deepStrictEqual(mine, mine.map((_, i) => `${prefix}-${i}`))
      }
      assert.deepStrictEqual(yield* a.load(key), yield* b.load(key))
    }))

  it.effect("migrations run once in their own table, even when two clients build at once", () =>
    Effect.gen(function*() {
      const server = yield* Postgres.PostgresServer
      const database = yield* freshDatabase
      const runs = yield* Effect.all([
        Effect.provide(ClaudeSessionStoreSql.migrate, pgClient(server, database)),
        Effect.provide(ClaudeSessionStoreSql.migrate, pgClient(server, database))
      ], { concurrency: 2 })
      assert.deepStrictEqual([...runs].sort((x, y) => y.length - x.length), [
        [[1, "create_session_tables"], [2, "create_approval_table"]],
        []
      ])
      const [again, recorded] = yield* Effect.provide(
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          return [
            yield* ClaudeSessionStoreSql.migrate,
            yield* sql<{ migration_id: number; name: string }>`SELECT migration_id, name
              FROM effect_chat_bridge_session_migrations ORDER BY migration_id`
          ] as const
        }),
        pgClient(server, database)
      )
      assert.deepStrictEqual(again, [])
      assert.deepStrictEqual(recorded, [
        { migration_id: 1, name: "create_session_tables" },
        { migration_id: 2, name: "create_approval_table" }
      ])
      const key = { projectKey: freshProject(), sessionId: randomUUID() }
      yield* Effect.provide(Effect.flatMap(store, (s) => s.append(key, [entry("a")])), pgStore(server, database))
    }))

  it.effect("a wrong password fails to build with what to check, and no password in the message", () =>
    Effect.gen(function*() {
      const server = yield* Postgres.PostgresServer
      const wrong = "hunter2-wrong-password"
      const url = Redacted.make(`postgres://postgres:${wrong}@${server.host}:${server.port}/postgres`)
      const exit = yield* Effect.exit(
        Layer.build(ClaudeSessionStoreSql.layer.pipe(Layer.provide(PgClient.layer({ url }))))
      )
      const error = failure(exit)
      if (error._tag !== "SessionStoreSetupError") return assert.fail(`expected a SessionStoreSetupError: ${error}`)
      assert.include(error.message, "check the user name and password")
      assert.isFalse(error.isRetryable)
      assert.strictEqual(error.reason._tag, "StoreFailed")
      for (const secret of [wrong, Redacted.value(server.password)]) {
        assert.notInclude(error.message, secret)
        assert.notInclude(String(error.cause), secret)
      }
    }))

  it.effect("nothing listening on the port: a retryable error that says to check the server", () =>
    Effect.gen(function*() {
      const server = yield* Postgres.PostgresServer
      const port = yield* Postgres.freePort
      const url = Redacted.make(`postgres://postgres:${Redacted.value(server.password)}@127.0.0.1:${port}/postgres`)
      const error = failure(
        yield* Effect.exit(Layer.build(ClaudeSessionStoreSql.layer.pipe(Layer.provide(PgClient.layer({ url })))))
      )
      if (error._tag !== "SessionStoreSetupError") return assert.fail(`expected a SessionStoreSetupError: ${error}`)
      assert.include(error.message, "check that the database server is running and reachable")
      assert.isTrue(error.isRetryable)
      assert.strictEqual(error.reason._tag, "StoreUnavailable")
      assert.notInclude(error.message, Redacted.value(server.password))
    }))
})

describe("ClaudeSessionStoreSql on a PostgreSQL server that stops", () => {
  it.live(
    "operations fail with a retryable SessionStoreError; the server leaves no process or folder",
    () =>
      Effect.gen(function*() {
        const serverScope = yield* Scope.make()
        const server = yield* Postgres.start().pipe(Scope.provide(serverScope))
        assert.isTrue(alive(server.pid))
        const s = Context.get(yield* Layer.build(pgStore(server)), store)
        const key = { projectKey: freshProject(), sessionId: "session-1" }
        yield* s.append(key, [entry("a")])
        yield* Scope.close(serverScope, Exit.void)
        assert.isFalse(alive(server.pid), "the server process is gone")
        assert.isFalse(nodeFs.existsSync(server.folder), "its data folder is removed")
        const errors = [
          failure(yield* Effect.exit(s.append(key, [entry("b")]))),
          failure(yield* Effect.exit(s.load(key)))
        ]
        for (const error of errors) {
          assert.strictEqual(error._tag, "SessionStoreError")
          assert.strictEqual(error.sessionId, "session-1")
          assert.include(error.message, "check that the database server is running and reachable")
          assert.isTrue(error._tag === "SessionStoreError" && error.isRetryable, error.message)
          assert.strictEqual(error._tag === "SessionStoreError" && error.reason._tag, "StoreUnavailable")
          assert.notInclude(error.message, Redacted.value(server.password))
        }
      }).pipe(Effect.scoped),
    { timeout: 180_000 }
  )
})

describe("test/support/postgres hydrateSymlinks", () => {
  it.effect("creates the listed symlinks that are missing, once", () =>
    Effect.gen(function*() {
      const root = yield* testFolder
      nodeFs.mkdirSync(path.join(root, "native", "lib"), { recursive: true })
      nodeFs.writeFileSync(path.join(root, "native", "lib", "libpq.so.5.18"), "the library")
      nodeFs.writeFileSync(
        path.join(root, "native", "pg-symlinks.json"),
        JSON.stringify([
          { source: "native/lib/libpq.so.5.18", target: "native/lib/libpq.so.5" },
          { source: "native/lib/libpq.so.5.18", target: "native/lib/libpq.so" }
        ])
      )
      assert.strictEqual(Postgres.hydrateSymlinks(root), 2)
      assert.strictEqual(nodeFs.readFileSync(path.join(root, "native", "lib", "libpq.so"), "utf8"), "the library")
      assert.strictEqual(nodeFs.readlinkSync(path.join(root, "native", "lib", "libpq.so.5")), "libpq.so.5.18")
      assert.strictEqual(Postgres.hydrateSymlinks(root), 0, "idempotent")
    }))
})
