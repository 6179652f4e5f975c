/**
 * Storage failures of the SQLite store beyond AgentSettingsSqlite.test.ts: each is an
 * `AgentSettingsStorageError` naming the operation, never a defect.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as SqlClient from "effect/sql/SqlClient"
import * as nodeFs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as AgentSettingsSqlite from "../../src/layers/AgentSettingsSqlite.ts"
import * as SqliteClient from "../../src/layers/SqliteClient.ts"
import * as AgentSettings from "../../src/services/AgentSettings.ts"

const testFolder = Effect.acquireRelease(
  Effect.sync(() => nodeFs.mkdtempSync(path.join(os.tmpdir(), "agent-settings-errors-"))),
  (dir) => Effect.sync(() => nodeFs.rmSync(dir, { recursive: true, force: true }))
)

const storageError = <A, E>(exit: Exit.Exit<A, E>): AgentSettings.AgentSettingsStorageError => {
  const reason = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
  if (reason?._tag !== "Fail") return assert.fail(`expected a typed failure, got ${String(exit)}`)
  assert.instanceOf(reason.error, AgentSettings.AgentSettingsStorageError)
  return reason.error as AgentSettings.AgentSettingsStorageError
}

const withRawSql = <A, E>(filename: string, effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.provide(effect, SqliteClient.layer({ filename }))

describe("AgentSettingsSqlite storage errors", () => {
  it.effect("a client of another dialect is refused at open", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const other = new Proxy(sql, {
          get: (target, key) =>
            key === "onDialectOrElse"
              ? (cases: { readonly orElse: () => unknown }) => cases.orElse()
              : Reflect.get(target, key)
        })
        return yield* AgentSettingsSqlite.make.pipe(Effect.provideService(SqlClient.SqlClient, other))
      }).pipe(Effect.provide(SqliteClient.layer({ filename: ":memory:" })), Effect.exit)
      const error = storageError(exit)
      assert.strictEqual(error.operation, "open")
      assert.strictEqual(error.reason._tag, "StorageFailed")
      assert.isFalse(error.isRetryable)
      assert.include(error.message, "needs a SQLite client")
    }))

  it.effect("a migration that fails, or a broken migrations table, is operation migrate", () =>
    Effect.gen(function*() {
      const folder = yield* testFolder
      const view = path.join(folder, "view.sqlite")
      yield* withRawSql(view, Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE VIEW agents AS SELECT 1 AS id`))
      const failed = storageError(
        yield* Effect.exit(Layer.build(AgentSettingsSqlite.layerSqlite({ filename: view })))
      )
      assert.strictEqual(failed.operation, "migrate")
      assert.strictEqual(failed.reason._tag, "StorageFailed")
      assert.include(failed.message, "2_disabled_tools_replaces_allowed_tools")

      const table = path.join(folder, "table.sqlite")
      yield* withRawSql(
        table,
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE TABLE effect_chat_bridge_migrations (x TEXT)`)
      )
      const broken = storageError(
        yield* Effect.exit(Layer.build(AgentSettingsSqlite.layerSqlite({ filename: table })))
      )
      assert.strictEqual(broken.operation, "migrate")
    }))

  it.effect("a query that fails after open names its operation", () =>
    Effect.gen(function*() {
      const file = path.join(yield* testFolder, "agents.sqlite")
      const errors = yield* Effect.gen(function*() {
        const settings = yield* AgentSettings.AgentSettings
        yield* settings.create("a")
        const sql = yield* SqlClient.SqlClient
        yield* sql`DROP TABLE agents`
        const ops: ReadonlyArray<Effect.Effect<unknown, unknown>> = [
          settings.get("a"),
          settings.list,
          settings.disable("a", ["Bash"]),
          settings.remove("a")
        ]
        return yield* Effect.forEach(
          ops,
          (op) => Effect.map(Effect.exit(op), storageError)
        )
      }).pipe(
        Effect.provide(
          AgentSettingsSqlite.layer.pipe(Layer.provideMerge(AgentSettingsSqlite.layerClient({ filename: file })))
        )
      )
      assert.deepStrictEqual(errors.map((e) => e.operation), ["get", "list", "disable", "remove"])
      for (const e of errors) {
        assert.include(e.message, "no such table")
        assert.strictEqual(e.reason._tag, "StorageFailed")
      }
    }))

  it.effect("the default file's directory that cannot be created is operation open", () =>
    Effect.gen(function*() {
      const notADir = path.join(yield* testFolder, "file")
      nodeFs.writeFileSync(notADir, "")
      const previous = process.env["XDG_DATA_HOME"]
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          process.env["XDG_DATA_HOME"] = notADir
        }),
        () =>
          Effect.sync(() => {
            if (previous === undefined) delete process.env["XDG_DATA_HOME"]
            else process.env["XDG_DATA_HOME"] = previous
          })
      )
      const error = storageError(yield* Effect.exit(Layer.build(AgentSettingsSqlite.layerSqlite())))
      assert.strictEqual(error.operation, "open")
      assert.include(error.message, "cannot create")
    }))
})
