/**
 * `AgentSettings` on SQLite through `@effect/sql-sqlite-node` — the default store.
 *
 * Schema: one `agents` row per agent, `id TEXT PRIMARY KEY` and `disabled_tools TEXT NOT NULL
 * DEFAULT '[]'` (a JSON array of tool names). Migrations run with `@effect/sql`'s Migrator in
 * their own table (`effect_chat_bridge_migrations`), so the file can be shared with an
 * application's own migrations. A database from before the opt-out model (an `agents` table with
 * an `allowed_tools` column) keeps its rows, which get an empty opt-out set — nothing newly
 * disabled — and the retired `allowed_tools` column is dropped.
 *
 * Every write is one `BEGIN IMMEDIATE` transaction: the write lock is taken before the read of a
 * read-modify-write, so neither another fiber (the client serializes its single connection) nor
 * another process (SQLite's lock, waited on for better-sqlite3's 5 s busy timeout) can slip a
 * write in between.
 *
 * @since 0.1.0
 * @module
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import type * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { decodeStored, encodeStored, makeService, type Store } from "../internal/agentSettingsStore.js"
import {
  AgentAlreadyExistsError,
  AgentNotFoundError,
  AgentSettings,
  type AgentSettingsService,
  AgentSettingsStorageError,
  type Settings
} from "../services/AgentSettings.js"

/** Where the database lives. */
export interface Options {
  /**
   * A file path, or `:memory:` for a private in-memory database. Defaults to `defaultFilename()`,
   * whose directory is created (mode 0700) if missing; the directory of any other path must exist.
   */
  readonly filename?: string
  /** Module specifier of `@effect/sql-sqlite-node/SqliteClient`; for tests of the missing-peer error. */
  readonly sqliteClientModule?: string
}

/** The table the migrations are recorded in. */
export const migrationsTable = "effect_chat_bridge_migrations"

/**
 * `$XDG_DATA_HOME/effect-chat-bridge/agents.sqlite`, or `~/.local/share/…` when `XDG_DATA_HOME`
 * is unset or relative (the XDG spec says to ignore relative values).
 */
export const defaultFilename = (
  env: Readonly<Record<string, string | undefined>> = process.env,
  home: string = os.homedir()
): string => {
  const xdg = env["XDG_DATA_HOME"]
  const base = xdg !== undefined && path.isAbsolute(xdg) ? xdg : path.join(home, ".local", "share")
  return path.join(base, "effect-chat-bridge", "agents.sqlite")
}

/** The migrations, in order. Each runs once per database, all pending ones in one transaction. */
export const migrations: Migrator.Loader = Migrator.fromRecord({
  // IF NOT EXISTS: a legacy database already has an `agents` table; migration 2 brings it up to date.
  "1_create_agents": Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql`CREATE TABLE IF NOT EXISTS agents (
      id TEXT PRIMARY KEY NOT NULL,
      disabled_tools TEXT NOT NULL DEFAULT '[]'
    )`
  ),
  "2_disabled_tools_replaces_allowed_tools": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = new Set(
      (yield* sql<{ readonly name: string }>`SELECT name FROM pragma_table_info('agents')`).map((c) => c.name)
    )
    // Existing rows take the default: an empty opt-out set. `allowed_tools` is not translated —
    // under the opt-out model an allow list means nothing, and reading it as opt-outs would
    // disable tools the agent had.
    if (!columns.has("disabled_tools")) {
      yield* sql`ALTER TABLE agents ADD COLUMN disabled_tools TEXT NOT NULL DEFAULT '[]'`
    }
    if (columns.has("allowed_tools")) yield* sql`ALTER TABLE agents DROP COLUMN allowed_tools`
  })
})

const describe = (u: unknown): string => (u instanceof Error ? u.message : String(u))

const storageError = (operation: string) => (error: SqlError | Migrator.MigrationError) =>
  new AgentSettingsStorageError({
    operation,
    message: `${error.message}${error.cause === undefined ? "" : `: ${describe(error.cause)}`}`,
    cause: error
  })

/**
 * `withTransaction` with `BEGIN IMMEDIATE`: a deferred `BEGIN` would take the write lock only at
 * the UPDATE, after the read, and in WAL mode another process's commit in between makes that
 * upgrade fail with SQLITE_BUSY_SNAPSHOT instead of waiting.
 */
const immediateTransaction = (sql: SqlClient.SqlClient) =>
  SqlClient.makeWithTransaction({
    transactionTag: SqlClient.TransactionConnection,
    spanAttributes: [["db.system.name", "sqlite"]],
    acquireConnection: Effect.flatMap(
      Scope.make(),
      (scope) => Effect.map(Scope.extend(sql.reserve, scope), (conn) => [scope, conn] as const)
    ),
    begin: (conn) => Effect.asVoid(conn.executeUnprepared("BEGIN IMMEDIATE", [], undefined)),
    savepoint: (conn, id) => Effect.asVoid(conn.executeUnprepared(`SAVEPOINT effect_sql_${id}`, [], undefined)),
    commit: (conn) => Effect.asVoid(conn.executeUnprepared("COMMIT", [], undefined)),
    rollback: (conn) => Effect.asVoid(conn.executeUnprepared("ROLLBACK", [], undefined)),
    rollbackSavepoint: (conn, id) =>
      Effect.asVoid(conn.executeUnprepared(`ROLLBACK TO SAVEPOINT effect_sql_${id}`, [], undefined))
  })

/** Runs the pending migrations. */
export const migrate: Effect.Effect<
  ReadonlyArray<readonly [id: number, name: string]>,
  AgentSettingsStorageError,
  SqlClient.SqlClient
> =
  // `SqliteMigrator.run` would also want a CommandExecutor, FileSystem and Path, only to dump the
  // schema with the sqlite3 CLI; the plain Migrator needs just the client.
  Migrator.make({})({ loader: migrations, table: migrationsTable }).pipe(
    Effect.mapError(storageError("migrate")),
    // The Migrator turns a failing migration into a defect; it is a storage failure here.
    Effect.catchAllDefect((defect) =>
      defect instanceof Migrator.MigrationError ? Effect.fail(storageError("migrate")(defect)) : Effect.die(defect)
    ),
    Effect.withSpan("AgentSettingsSqlite.migrate")
  )

interface Row {
  readonly id: string
  readonly disabled_tools: unknown
}

/**
 * Migrates the database of the `SqlClient` in context (which must be SQLite) and builds the
 * service over it.
 */
export const make: Effect.Effect<AgentSettingsService, AgentSettingsStorageError, SqlClient.SqlClient> = Effect.gen(
  function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql.onDialectOrElse({
      sqlite: () => Effect.void,
      orElse: () =>
        Effect.fail(
          new AgentSettingsStorageError({ operation: "open", message: "AgentSettingsSqlite needs a SQLite client" })
        )
    })
    yield* migrate
    const transaction = immediateTransaction(sql)

    const selectOne = (agentId: string) =>
      Effect.map(
        sql<Row>`SELECT id, disabled_tools FROM agents WHERE id = ${agentId}`,
        (rows) => rows[0]
      )

    const write = <A, E>(
      operation: string,
      effect: Effect.Effect<A, E | SqlError>
    ): Effect.Effect<A, Exclude<E, SqlError> | AgentSettingsStorageError> =>
      transaction(effect).pipe(
        Effect.mapError((e) => e instanceof SqlError ? storageError(operation)(e) : e as Exclude<E, SqlError>),
        Effect.withSpan(`AgentSettingsSqlite.${operation}`)
      )

    const requireRow = (agentId: string) =>
      Effect.flatMap(
        selectOne(agentId),
        (row) => row === undefined ? Effect.fail(new AgentNotFoundError({ agentId })) : Effect.succeed(row)
      )

    const store: Store = {
      insert: (agentId, names) =>
        write(
          "create",
          Effect.gen(function*() {
            if ((yield* selectOne(agentId)) !== undefined) return yield* new AgentAlreadyExistsError({ agentId })
            yield* sql`INSERT INTO agents (id, disabled_tools) VALUES (${agentId}, ${encodeStored(names)})`
          })
        ),
      read: (agentId) =>
        requireRow(agentId).pipe(
          Effect.flatMap((row) => decodeStored(agentId, row.disabled_tools)),
          Effect.catchTag("SqlError", (e) => Effect.fail(storageError("get")(e)))
        ),
      readAll: sql<Row>`SELECT id, disabled_tools FROM agents`.pipe(
        Effect.catchTag("SqlError", (e) => Effect.fail(storageError("list")(e))),
        Effect.flatMap((rows) =>
          Effect.forEach(
            // Sorted here, not by SQLite, so the order is JavaScript's, as in the memory layer.
            rows.map((r) => ({ agentId: String(r.id), raw: r.disabled_tools })).sort((a, b) =>
              a.agentId < b.agentId ? -1 : a.agentId > b.agentId ? 1 : 0
            ),
            ({ agentId, raw }) =>
              Effect.map(decodeStored(agentId, raw), (disabledTools): Settings => ({ agentId, disabledTools }))
          )
        )
      ),
      replace: (agentId, names) =>
        write(
          "setDisabledTools",
          Effect.zipRight(
            requireRow(agentId),
            sql`UPDATE agents SET disabled_tools = ${encodeStored(names)} WHERE id = ${agentId}`
          )
        ).pipe(Effect.asVoid),
      modify: (agentId, operation, f) =>
        write(
          operation,
          Effect.gen(function*() {
            const row = yield* requireRow(agentId)
            const current = yield* decodeStored(agentId, row.disabled_tools)
            const next = f(current)
            yield* sql`UPDATE agents SET disabled_tools = ${encodeStored(next)} WHERE id = ${agentId}`
            return next
          })
        ),
      delete: (agentId) =>
        write("remove", Effect.zipRight(requireRow(agentId), sql`DELETE FROM agents WHERE id = ${agentId}`)).pipe(
          Effect.asVoid
        )
    }
    return makeService(store)
  }
)

/** `AgentSettings` over the SQLite `SqlClient` in context (e.g. an application's own database). */
export const layer: Layer.Layer<AgentSettings, AgentSettingsStorageError, SqlClient.SqlClient> = Layer.effect(
  AgentSettings,
  make
)

/** The optional peer this store runs on. */
export const peer = "@effect/sql-sqlite-node"

/**
 * Loads `@effect/sql-sqlite-node` when a database is opened, not when this module is imported, so
 * that a missing optional peer is a typed error naming the package instead of a module-not-found
 * crash at import time.
 */
const loadSqliteClient = (specifier: string) =>
  Effect.tryPromise({
    try: () => import(specifier) as Promise<typeof SqliteClient>,
    catch: (cause) =>
      new AgentSettingsStorageError({
        operation: "open",
        message: `the SQLite store needs the optional peer ${peer} (and its native better-sqlite3): ` +
          `npm install ${peer}@^0.53 — or use AgentSettingsMemory, or AgentSettingsSqlite.layer over your own SqlClient`,
        cause
      })
  })

/** Opens the database file (creating the default one's directory) as a scoped `SqlClient`. */
const openClient = (options: Options) =>
  Effect.gen(function*() {
    const SqliteClient = yield* loadSqliteClient(options.sqliteClientModule ?? `${peer}/SqliteClient`)
    const filename = options.filename ?? defaultFilename()
    if (options.filename === undefined) {
      yield* Effect.try({
        try: () => fs.mkdirSync(path.dirname(filename), { recursive: true, mode: 0o700 }),
        catch: (cause) =>
          new AgentSettingsStorageError({
            operation: "open",
            message: `cannot create ${path.dirname(filename)}: ${describe(cause)}`,
            cause
          })
      })
    }
    const client = yield* SqliteClient.make({ filename }).pipe(
      // better-sqlite3 throws from its constructor (missing directory) and from the WAL pragma
      // (not a database), which `SqliteClient.make` lets escape as defects.
      Effect.catchAllDefect((cause) =>
        Effect.fail(
          new AgentSettingsStorageError({
            operation: "open",
            message: `cannot open ${filename}: ${describe(cause)}`,
            cause
          })
        )
      )
    )
    return { client, tag: SqliteClient.SqliteClient }
  })

/** A `SqlClient` on the settings database, for sharing the connection with other queries. */
export const layerClient = (
  options: Options = {}
): Layer.Layer<SqlClient.SqlClient | SqliteClient.SqliteClient, AgentSettingsStorageError> =>
  Layer.scopedContext(
    Effect.map(openClient(options), ({ client, tag }) =>
      Context.make(tag, client).pipe(Context.add(SqlClient.SqlClient, client)))
  ).pipe(Layer.provide(Reactivity.layer))

/**
 * `AgentSettings` on a SQLite file ({@link defaultFilename} unless given), migrated when built.
 * Building fails with `AgentSettingsStorageError` (`operation: "open"` or `"migrate"`) when the
 * file cannot be opened or migrated; the connection closes with the layer's scope.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { AgentSettings } from "effect-chat-bridge"
 * import { AgentSettingsSqlite } from "effect-chat-bridge/agent-settings-sqlite"
 *
 * const program = Effect.gen(function*() {
 *   const settings = yield* AgentSettings.AgentSettings
 *   yield* settings.create("reviewer")
 *   return yield* settings.disable("reviewer", ["Bash"])
 * }).pipe(Effect.provide(AgentSettingsSqlite.layerSqlite({ filename: "agents.sqlite" })))
 * ```
 */
export const layerSqlite = (options: Options = {}): Layer.Layer<AgentSettings, AgentSettingsStorageError> =>
  layer.pipe(Layer.provide(layerClient(options)))
