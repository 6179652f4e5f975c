import { assert, describe, it } from "@effect/vitest"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Reactivity from "effect/reactivity/Reactivity"
import * as Schedule from "effect/Schedule"
import * as Migrator from "effect/sql/Migrator"
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import * as Stream from "effect/Stream"
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { vi } from "vitest"
import { importSqlite, importSqliteQuietly } from "../../src/internal/sql/sqliteConnection.ts"
import * as SqliteClient from "../../src/layers/SqliteClient.ts"

/** A fresh directory per test, removed when the test's scope closes. */
const tempDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "sqlite-client-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

const tempFile = Effect.map(tempDir, (dir) => join(dir, "test.db"))

const open = (options: Omit<SqliteClient.SqliteClientConfig, "filename"> = {}) =>
  Effect.flatMap(tempFile, (filename) => SqliteClient.make({ filename, ...options })).pipe(
    Effect.provide(Reactivity.layer)
  )

const reasonTag = (exit: Exit.Exit<unknown, SqlError>): string | undefined => {
  if (Exit.isSuccess(exit)) return undefined
  const error = exit.cause.reasons.find((reason) => reason._tag === "Fail")
  return error?._tag === "Fail" ? error.error.reason._tag : undefined
}

const failed = <A>(effect: Effect.Effect<A, SqlError>) =>
  Effect.flatMap(Effect.flip(effect), (error) => Effect.succeed(error.reason))

const migrations = Migrator.fromRecord({
  "1_create_tools": Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`CREATE TABLE tools (name TEXT PRIMARY KEY, enabled INTEGER NOT NULL)`
  ),
  "2_add_note": Effect.flatMap(SqlClient.SqlClient, (sql) => sql`ALTER TABLE tools ADD COLUMN note TEXT`)
})

const migrate = Migrator.make({})({ loader: migrations, table: "migrations" })

const createTable = (sql: SqlClient.SqlClient) =>
  sql`CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL)`

const names = (sql: SqlClient.SqlClient) =>
  Effect.map(sql<{ readonly name: string }>`SELECT name FROM t ORDER BY id`, (rows) => rows.map((row) => row.name))

/** A separate Node process inserting a row every ~2 ms into table `t` of `filename` until killed. */
const spawnWriter = (filename: string) =>
  spawn(process.execPath, [
    "--no-warnings",
    "-e",
    `const { DatabaseSync } = require("node:sqlite")
const db = new DatabaseSync(process.argv[1])
db.exec("PRAGMA busy_timeout = 10000")
const insert = db.prepare("INSERT INTO t (name) VALUES (?)")
let n = 0
setInterval(() => insert.run("child-" + n++), 2)`,
    filename
  ], { stdio: "ignore" })

describe("SqliteClient", () => {
  it.effect("runs effect/sql migrations once, on a real file", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      const run = Effect.gen(function*() {
        const applied = yield* migrate
        const sql = yield* SqlClient.SqlClient
        const columns = yield* sql<{ readonly name: string }>`SELECT name FROM pragma_table_info('tools')`
        return { applied, columns: columns.map((column) => column.name) }
      }).pipe(Effect.provide(SqliteClient.layer({ filename }), { local: true }))
      const first = yield* run
      assert.deepStrictEqual(first.applied, [[1, "create_tools"], [2, "add_note"]])
      assert.deepStrictEqual(first.columns, ["name", "enabled", "note"])
      // Reopening the file finds both migrations recorded.
      const second = yield* run
      assert.deepStrictEqual(second.applied, [])
    }))

  it.effect("commits a transaction and rolls a failed one back", () =>
    Effect.gen(function*() {
      const sql = yield* open()
      yield* createTable(sql)
      yield* sql.withTransaction(sql`INSERT INTO t ${sql.insert({ name: "kept" })}`)
      const exit = yield* Effect.exit(
        sql.withTransaction(Effect.andThen(sql`INSERT INTO t ${sql.insert({ name: "lost" })}`, Effect.fail("boom")))
      )
      assert.isTrue(Exit.isFailure(exit))
      assert.deepStrictEqual(yield* names(sql), ["kept"])
    }))

  it.effect("nests transactions as savepoints", () =>
    Effect.gen(function*() {
      const sql = yield* open()
      yield* createTable(sql)
      const insert = (name: string) => sql`INSERT INTO t ${sql.insert({ name })}`
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* insert("outer")
        yield* Effect.exit(sql.withTransaction(Effect.andThen(insert("inner-failed"), Effect.fail("inner"))))
        yield* sql.withTransaction(insert("inner-kept"))
      }))
      assert.deepStrictEqual(yield* names(sql), ["outer", "inner-kept"])
    }))

  it.effect("streams rows in chunks and closes the statement", () =>
    Effect.gen(function*() {
      const sql = yield* open({
        transformResultNames: (name) => name.replace(/_(\w)/g, (_, c: string) => c.toUpperCase())
      })
      const rows = yield* sql<{ readonly rowNumber: number }>`
        WITH RECURSIVE n(row_number) AS (SELECT 1 UNION ALL SELECT row_number + 1 FROM n WHERE row_number < 300)
        SELECT row_number FROM n`.stream.pipe(Stream.runCollect)
      assert.strictEqual(rows.length, 300)
      assert.deepStrictEqual(rows[299], { rowNumber: 300 })
      const firstTwo = yield* sql`SELECT 1 AS a UNION ALL SELECT 2`.stream.pipe(Stream.take(1), Stream.runCollect)
      assert.deepStrictEqual(firstTwo, [{ a: 1 }])
      // After a stream stopped early the connection is still usable.
      assert.deepStrictEqual(yield* sql`SELECT 3 AS b`, [{ b: 3 }])
    }))

  it.effect("classifies constraint errors", () =>
    Effect.gen(function*() {
      const sql = yield* open()
      yield* createTable(sql)
      yield* sql`INSERT INTO t ${sql.insert({ name: "a" })}`
      const unique = yield* failed(sql`INSERT INTO t ${sql.insert({ name: "a" })}`)
      assert.strictEqual(unique._tag, "UniqueViolation")
      assert.strictEqual(unique._tag === "UniqueViolation" ? unique.constraint : "", "t.name")
      const notNull = yield* failed(sql`INSERT INTO t (name) VALUES (NULL)`)
      assert.strictEqual(notNull._tag, "ConstraintError")
      const syntax = yield* failed(sql`SELEC 1`)
      assert.strictEqual(syntax._tag, "UnknownError")
    }))

  it.live("two connections contend for BEGIN IMMEDIATE; the loser times out after busyTimeout", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      const connect = SqliteClient.make({ filename, busyTimeout: "150 millis" }).pipe(Effect.provide(Reactivity.layer))
      const first = yield* connect
      const second = yield* connect
      yield* createTable(first)
      const immediate = <A, E, R>(sql: SqlClient.SqlClient, effect: Effect.Effect<A, E, R>) =>
        sql.withTransaction(effect).pipe(Effect.provideService(SqlClient.BeginTransaction, "BEGIN IMMEDIATE"))
      // node:sqlite is synchronous: the loser's busy wait blocks the thread, so the holder cannot
      // commit meanwhile and the wait must end in a LockTimeoutError.
      const contended = yield* immediate(
        first,
        Effect.gen(function*() {
          yield* first`INSERT INTO t ${first.insert({ name: "holder" })}`
          const started = Date.now()
          const exit = yield* Effect.exit(immediate(second, second`INSERT INTO t ${second.insert({ name: "loser" })}`))
          return { exit, waited: Date.now() - started }
        })
      )
      assert.strictEqual(reasonTag(contended.exit), "LockTimeoutError")
      assert.isAtLeast(contended.waited, 100)
      // Once the holder committed, the other connection gets the lock.
      yield* immediate(second, second`INSERT INTO t ${second.insert({ name: "next" })}`)
      assert.deepStrictEqual(yield* names(second), ["holder", "next"])
    }))

  // Another process commits a write every few milliseconds, as cluster runners sharing one file
  // do; each transaction here reads, waits a little, then writes (Effect's cluster storage
  // saves a message that way).
  const readThenWrite = (mode: SqliteClient.SqliteClientConfig["transactionMode"]) =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      const sql = yield* SqliteClient.make({ filename, transactionMode: mode }).pipe(Effect.provide(Reactivity.layer))
      yield* createTable(sql)
      yield* Effect.acquireRelease(
        Effect.sync(() => spawnWriter(filename)),
        (child) => Effect.sync(() => child.kill("SIGKILL"))
      )
      const childRows = sql<{ readonly n: number }>`SELECT count(*) AS n FROM t WHERE name LIKE 'child-%'`
      yield* childRows.pipe(
        Effect.filterOrFail((rows) => (rows[0]?.n ?? 0) > 0),
        Effect.retry({ schedule: Schedule.spaced("20 millis"), times: 500 })
      )
      const exits = yield* Effect.forEach(Array.from({ length: 8 }, (_, i) => i), (i) =>
        Effect.exit(
          sql.withTransaction(
            Effect.gen(function*() {
              yield* sql`SELECT count(*) AS n FROM t`
              yield* Effect.sleep("15 millis")
              yield* sql`INSERT INTO t ${sql.insert({ name: `parent-${i}` })}`
            })
          )
        ))
      const parentRows = yield* sql<{ readonly n: number }>`SELECT count(*) AS n FROM t WHERE name LIKE 'parent-%'`
      return { failures: exits.filter(Exit.isFailure).map(reasonTag), stored: parentRows[0]?.n }
    })

  it.live(
    "a read-then-write transaction waits for another process's writes instead of failing",
    () =>
      Effect.gen(function*() {
        const immediate = yield* readThenWrite(undefined)
        assert.deepStrictEqual(immediate, { failures: [], stored: 8 })
        // The same transactions under SQLite's own `BEGIN` fail at once: what the default avoids.
        const deferred = yield* readThenWrite("deferred")
        assert.isAbove(deferred.failures.length, 0)
        assert.isTrue(deferred.failures.every((tag) => tag === "LockTimeoutError"))
      }),
    30_000
  )

  it.effect("binds booleans as 0/1 and returns plain objects", () =>
    Effect.gen(function*() {
      const sql = yield* open({ prepareCacheSize: 1 })
      yield* sql`CREATE TABLE flags (name TEXT, on_ INTEGER, note TEXT)`
      yield* sql`INSERT INTO flags ${
        sql.insert([{ name: "a", on_: true, note: undefined }, { name: "b", on_: false }])
      }`
      const rows = yield* sql<
        { readonly name: string; readonly on_: number }
      >`SELECT name, on_ FROM flags ORDER BY name`
      assert.deepStrictEqual(rows, [{ name: "a", on_: 1 }, { name: "b", on_: 0 }])
      assert.strictEqual(Object.getPrototypeOf(rows[0]), Object.prototype)
      // Same SQL again, then other SQL: the one-slot cache hits, then evicts.
      yield* sql`SELECT name, on_ FROM flags ORDER BY name`
      assert.deepStrictEqual(yield* sql`SELECT name, on_ FROM flags ORDER BY name`.values, [["a", 1], ["b", 0]])
      assert.deepStrictEqual(yield* sql`SELECT count(*) AS n FROM flags`.valuesUnprepared, [[2]])
      assert.deepStrictEqual(yield* sql`SELECT count(*) AS n FROM flags`.unprepared, [{ n: 2 }])
      const raw = yield* sql`UPDATE flags SET note = ${"x"}`.raw
      assert.strictEqual((raw as { readonly changes: number }).changes, 2)
    }))

  it.effect("works without a statement cache, in memory and on a rollback journal", () =>
    Effect.gen(function*() {
      const memory = yield* SqliteClient.make({ filename: ":memory:", prepareCacheSize: 0 }).pipe(
        Effect.provide(Reactivity.layer)
      )
      assert.deepStrictEqual(yield* memory`SELECT 1 AS one`, [{ one: 1 }])
      assert.deepStrictEqual(yield* memory`PRAGMA journal_mode`, [{ journal_mode: "memory" }])
      const file = yield* open({ disableWAL: true, spanAttributes: { "service.name": "test" } })
      assert.deepStrictEqual(yield* file`PRAGMA journal_mode`, [{ journal_mode: "delete" }])
      assert.strictEqual(file.config.disableWAL, true)
      assert.strictEqual(file.driver, "node-sqlite")
      const wal = yield* open()
      assert.deepStrictEqual(yield* wal`PRAGMA journal_mode`, [{ journal_mode: "wal" }])
    }))

  it.effect("syncs every commit by default; synchronous normal syncs at checkpoints (WAL only)", () =>
    Effect.gen(function*() {
      // SQLite's codes: 2 is FULL, 1 is NORMAL.
      assert.deepStrictEqual(yield* (yield* open())`PRAGMA synchronous`, [{ synchronous: 2 }])
      assert.deepStrictEqual(yield* (yield* open({ synchronous: "normal" }))`PRAGMA synchronous`, [{ synchronous: 1 }])
      const journal = yield* open({ synchronous: "normal", disableWAL: true })
      assert.deepStrictEqual(yield* journal`PRAGMA synchronous`, [{ synchronous: 2 }])
    }))

  it.effect("opens read-only and refuses writes; a missing directory is a connection error", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = join(dir, "ro.db")
      const writer = yield* SqliteClient.make({ filename }).pipe(Effect.provide(Reactivity.layer))
      yield* writer`CREATE TABLE t (x INTEGER)`
      const reader = yield* SqliteClient.make({ filename, readonly: true }).pipe(Effect.provide(Reactivity.layer))
      assert.deepStrictEqual(yield* reader`SELECT count(*) AS n FROM t`, [{ n: 0 }])
      const write = yield* failed(reader`INSERT INTO t VALUES (1)`)
      assert.strictEqual(write._tag, "UnknownError")
      const missing = yield* Effect.exit(
        SqliteClient.make({ filename: join(dir, "no", "such", "dir.db") }).pipe(Effect.provide(Reactivity.layer))
      )
      assert.strictEqual(reasonTag(missing), "ConnectionError")
      // A file that is not a database opens, then fails the journal_mode pragma: closed again.
      const garbage = join(dir, "garbage.db")
      writeFileSync(garbage, "this is not a database, only some text that is long enough".repeat(100))
      const notDb = yield* Effect.exit(SqliteClient.make({ filename: garbage }).pipe(Effect.provide(Reactivity.layer)))
      assert.strictEqual(reasonTag(notDb), "UnknownError")
    }))

  it.effect("layerConfig reads the options from Config", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      const layer = SqliteClient.layerConfig({ filename: Config.String("DB_FILE") }).pipe(
        Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({ DB_FILE: filename })))
      )
      const config = yield* Effect.gen(function*() {
        const client = yield* SqliteClient.SqliteClient
        const sql = yield* SqlClient.SqlClient
        assert.strictEqual(sql, client)
        return client.config
      }).pipe(Effect.provide(layer))
      assert.strictEqual(config.filename, filename)
    }))
})

describe("importSqliteQuietly", () => {
  it("drops only SQLite's ExperimentalWarning while node:sqlite loads", async () => {
    const seen: Array<string> = []
    const original = process.emitWarning
    const spy = vi.fn((warning: string | Error) => {
      seen.push(typeof warning === "string" ? warning : warning.message)
    }) as unknown as typeof process.emitWarning
    process.emitWarning = spy
    try {
      const loading = importSqliteQuietly()
      process.emitWarning("SQLite is an experimental feature", "ExperimentalWarning")
      process.emitWarning("SQLite is an experimental feature", { type: "ExperimentalWarning" })
      const error = new Error("SQLite is an experimental feature")
      error.name = "ExperimentalWarning"
      process.emitWarning(error)
      process.emitWarning("SQLite is fine", "DeprecationWarning")
      process.emitWarning("Something else is experimental", "ExperimentalWarning")
      const sqlite = await loading
      assert.isFunction(sqlite.DatabaseSync)
      assert.deepStrictEqual(seen, ["SQLite is fine", "Something else is experimental"])
      // Whatever was installed before the import is back afterwards.
      assert.strictEqual(process.emitWarning, spy)
      assert.strictEqual(await importSqlite(), await importSqlite())
    } finally {
      process.emitWarning = original
    }
  })
})
