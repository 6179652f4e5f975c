/**
 * `AgentSettings` on SQLite through this library's `node:sqlite` client (`SqliteClient`) — the
 * default store. No native module: Node ≥ 22.19 brings SQLite.
 *
 * **Details**
 *
 * Schema: one `agents` row per agent, `id TEXT PRIMARY KEY` and `disabled_tools TEXT NOT NULL
 * DEFAULT '[]'` (a JSON array of tool names). Migrations run with `effect/sql`'s Migrator in
 * their own table (`effect_chat_bridge_migrations`), so the file can be shared with an
 * application's own migrations. A database from before the opt-out model (an `agents` table with
 * an `allowed_tools` column) keeps its rows, which get an empty opt-out set — nothing newly
 * disabled — and the retired `allowed_tools` column is dropped. Files written by the Effect 3
 * line (`@effect/sql-sqlite-node`) open unchanged: same tables, same migrations table.
 *
 * Every write is one `BEGIN IMMEDIATE` transaction: the write lock is taken before the read of a
 * read-modify-write, so neither another fiber (the client serializes its single connection) nor
 * another process (SQLite's lock, waited on for the client's 5 s busy timeout) can slip a write
 * in between.
 *
 * @summary `AgentSettings` on a SQLite file through `node:sqlite`, with migrations: the default store.
 * @group Claude Code tool policy
 * @since 0.1.0
 * @module
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Migrator from "effect/sql/Migrator"
import * as SqlClient from "effect/sql/SqlClient"
import { SqlError } from "effect/sql/SqlError"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { decodeStored, encodeStored, makeService, type Store } from "../internal/agentSettings/store.ts"
import {
  AgentAlreadyExistsError,
  AgentNotFoundError,
  AgentSettings,
  type AgentSettingsService,
  AgentSettingsStorageError,
  type Settings,
  StorageFailed,
  StorageUnavailable
} from "../services/AgentSettings.ts"
import * as SqliteClient from "./SqliteClient.ts"

/**
 * Where the database lives.
 *
 * @category config
 * @since 1.0.0
 */
export interface Options {
  /**
   * A file path, or `:memory:` for a private in-memory database. Defaults to `defaultFilename()`,
   * whose directory is created (mode 0700) if missing; the directory of any other path must exist.
   */
  readonly filename?: string
}

/**
 * The table the migrations are recorded in.
 *
 * @category config
 * @since 1.0.0
 */
export const migrationsTable = "effect_chat_bridge_migrations"

/**
 * `$XDG_DATA_HOME/effect-chat-bridge/agents.sqlite`, or `~/.local/share/…` when `XDG_DATA_HOME`
 * is unset or relative (the XDG spec says to ignore relative values).
 *
 * @category config
 * @since 1.0.0
 */
export const defaultFilename = (
  env: Readonly<Record<string, string | undefined>> = process.env,
  home: string = os.homedir()
): string => {
  const xdg = env["XDG_DATA_HOME"]
  const base = xdg !== undefined && path.isAbsolute(xdg) ? xdg : path.join(home, ".local", "share")
  return path.join(base, "effect-chat-bridge", "agents.sqlite")
}

/**
 * The migrations, in order. Each runs once per database, all pending ones in one transaction.
 *
 * @category models
 * @since 1.0.0
 */
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

/** The driver's own error under a `SqlError` (whose `cause` is its classified reason). */
const underlying = (error: SqlError | Migrator.MigrationError): unknown =>
  error instanceof SqlError
    ? error.reason.cause
    : error.cause instanceof SqlError
    ? underlying(error.cause)
    : error.cause

/** The `SqlError`'s own verdict (busy, locked, connection lost); a migration's is its SQL error's. */
const isRetryable = (error: SqlError | Migrator.MigrationError): boolean =>
  error instanceof SqlError
    ? error.isRetryable
    : error.cause instanceof SqlError && error.cause.isRetryable

/** The reason for a failure whose `message` is known: retryable when the database said so. */
const reasonOf = (error: SqlError | Migrator.MigrationError, message: string) =>
  isRetryable(error) ? new StorageUnavailable({ message }) : new StorageFailed({ message })

const storageError = (operation: string) => (error: SqlError | Migrator.MigrationError) => {
  const cause = underlying(error)
  return new AgentSettingsStorageError({
    operation,
    reason: reasonOf(error, `${error.message}${cause === undefined ? "" : `: ${describe(cause)}`}`),
    cause: error
  })
}

/**
 * Runs the pending migrations.
 *
 * @category utils
 * @since 1.0.0
 */
export const migrate: Effect.Effect<
  ReadonlyArray<readonly [id: number, name: string]>,
  AgentSettingsStorageError,
  SqlClient.SqlClient
> = Migrator.make({})({ loader: migrations, table: migrationsTable }).pipe(
  Effect.mapError(storageError("migrate")),
  Effect.withSpan("AgentSettingsSqlite.migrate")
)

interface Row {
  readonly id: string
  readonly disabled_tools: unknown
}

/**
 * Migrates the database of the `SqlClient` in context (which must be SQLite) and builds the
 * service over it.
 *
 * @category constructors
 * @since 1.0.0
 */
export const make: Effect.Effect<AgentSettingsService, AgentSettingsStorageError, SqlClient.SqlClient> = Effect.gen(
  function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql.onDialectOrElse({
      sqlite: () => Effect.void,
      orElse: () =>
        Effect.fail(
          new AgentSettingsStorageError({
            operation: "open",
            reason: new StorageFailed({ message: "AgentSettingsSqlite needs a SQLite client" })
          })
        )
    })
    yield* migrate

    const selectOne = (agentId: string) =>
      Effect.map(
        sql<Row>`SELECT id, disabled_tools FROM agents WHERE id = ${agentId}`,
        (rows) => rows[0]
      )

    // A deferred `BEGIN` would take the write lock only at the UPDATE, after the read, and in WAL
    // mode another process's commit in between makes that upgrade fail with SQLITE_BUSY_SNAPSHOT
    // instead of waiting.
    const write = <A, E>(
      operation: string,
      effect: Effect.Effect<A, E | SqlError>
    ): Effect.Effect<A, Exclude<E, SqlError> | AgentSettingsStorageError> =>
      sql.withTransaction(effect).pipe(
        Effect.provideService(SqlClient.BeginTransaction, "BEGIN IMMEDIATE"),
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
          Effect.flatMap((row) => Effect.fromResult(decodeStored(agentId, row.disabled_tools))),
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
              Effect.map(
                Effect.fromResult(decodeStored(agentId, raw)),
                (disabledTools): Settings => ({ agentId, disabledTools })
              )
          )
        )
      ),
      replace: (agentId, names) =>
        write(
          "setDisabledTools",
          Effect.andThen(
            requireRow(agentId),
            sql`UPDATE agents SET disabled_tools = ${encodeStored(names)} WHERE id = ${agentId}`
          )
        ).pipe(Effect.asVoid),
      modify: (agentId, operation, f) =>
        write(
          operation,
          Effect.gen(function*() {
            const row = yield* requireRow(agentId)
            const current = yield* Effect.fromResult(decodeStored(agentId, row.disabled_tools))
            const next = f(current)
            yield* sql`UPDATE agents SET disabled_tools = ${encodeStored(next)} WHERE id = ${agentId}`
            return next
          })
        ),
      delete: (agentId) =>
        write("remove", Effect.andThen(requireRow(agentId), sql`DELETE FROM agents WHERE id = ${agentId}`)).pipe(
          Effect.asVoid
        )
    }
    return makeService(store)
  }
)

/**
 * `AgentSettings` over the SQLite `SqlClient` in context (e.g. an application's own database).
 *
 * @category layers
 * @since 1.0.0
 */
export const layer: Layer.Layer<AgentSettings, AgentSettingsStorageError, SqlClient.SqlClient> = Layer.effect(
  AgentSettings,
  make
)

/** Opens the database file (creating the default one's directory) as a scoped client. */
const openClient = Effect.fnUntraced(function*(options: Options) {
  const filename = options.filename ?? defaultFilename()
  if (options.filename === undefined) {
    yield* Effect.try({
      try: () => fs.mkdirSync(path.dirname(filename), { recursive: true, mode: 0o700 }),
      catch: (cause) =>
        new AgentSettingsStorageError({
          operation: "open",
          reason: new StorageFailed({ message: `cannot create ${path.dirname(filename)}: ${describe(cause)}` }),
          cause
        })
    })
  }
  return yield* SqliteClient.make({ filename }).pipe(
    Effect.mapError((error) => {
      const cause = underlying(error)
      return new AgentSettingsStorageError({
        operation: "open",
        reason: reasonOf(
          error,
          `cannot open ${filename}: ${error.message}${
            cause === undefined || describe(cause) === error.message ? "" : `: ${describe(cause)}`
          }`
        ),
        cause: error
      })
    })
  )
})

/**
 * A `SqlClient` on the settings database, for sharing the connection with other queries.
 *
 * @category layers
 * @since 1.0.0
 */
export const layerClient = (
  options: Options = {}
): Layer.Layer<SqlClient.SqlClient | SqliteClient.SqliteClient, AgentSettingsStorageError> =>
  SqliteClient.layerFrom(openClient(options))

/**
 * `AgentSettings` on a SQLite file ({@link defaultFilename} unless given), migrated when built.
 * Building fails with `AgentSettingsStorageError` (`operation: "open"` or `"migrate"`) when the
 * file cannot be opened or migrated; the connection closes with the layer's scope.
 *
 * **Example** (Agent settings in a SQLite file)
 *
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
 *
 * @category layers
 * @since 1.0.0
 */
export const layerSqlite = (options: Options = {}): Layer.Layer<AgentSettings, AgentSettingsStorageError> =>
  layer.pipe(Layer.provide(layerClient(options)))
