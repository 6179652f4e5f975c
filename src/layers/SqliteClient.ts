/**
 * A SQLite `SqlClient` on Node's built-in `node:sqlite`: no better-sqlite3, no native build at
 * install. Shaped like `@effect/sql-pg`'s `PgClient`: a service tag, a scoped `make`, `layer` and
 * `layerConfig`; every failure is an `effect/sql` `SqlError` whose reason is classified
 * (`UniqueViolation`, `ConstraintError`, `LockTimeoutError`, …).
 *
 * One connection per client, shared through a semaphore, as SQLite serialises writers anyway.
 * Two clients on one file contend through SQLite's own locks, waited on up to `busyTimeout`.
 * Transactions start with `BEGIN IMMEDIATE` by default (see `transactionMode`).
 *
 * @summary A SQLite `SqlClient` on Node's built-in `node:sqlite`, shaped like `@effect/sql-pg`'s `PgClient`.
 * @group Sessions & storage
 * @since 1.0.0
 * @module
 */
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Reactivity from "effect/reactivity/Reactivity"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import * as Statement from "effect/sql/Statement"
import type { DatabaseSync } from "node:sqlite"
import { importSqlite, makeConnection, type NodeSqlite, sqlError } from "../internal/sql/sqliteConnection.ts"
import * as FileMode from "../internal/sql/sqliteFileMode.ts"

const TypeId = "~effect-chat-bridge/SqliteClient" as const

/**
 * A `SqlClient` for one SQLite database file, with the options it was opened with.
 *
 * @category models
 * @since 1.0.0
 */
export interface SqliteClient extends SqlClient.SqlClient {
  readonly [TypeId]: typeof TypeId
  readonly config: SqliteClientConfig
}

/**
 * The SQLite client service; `layer` provides it together with the generic `SqlClient`.
 *
 * @category services
 * @since 1.0.0
 */
export const SqliteClient: Context.Service<SqliteClient, SqliteClient> = Context.Service<SqliteClient>(
  "effect-chat-bridge/SqliteClient"
)

/**
 * How to open the database. Only `filename` is required. A file that does not exist yet is created
 * with mode 0600 (its `-wal`, `-shm` and `-journal` files follow); an existing one that others can
 * read, or one in a directory others can write to, is opened with a warning in the log.
 *
 * @category config
 * @since 1.0.0
 */
export interface SqliteClientConfig {
  /** Path of the database file, or `":memory:"`. */
  readonly filename: string
  readonly readonly?: boolean | undefined
  /** How long a statement waits for another connection's lock before `LockTimeoutError` (default 5 s). */
  readonly busyTimeout?: Duration.Input | undefined
  /** Keep SQLite's rollback journal instead of switching the file to WAL. */
  readonly disableWAL?: boolean | undefined
  /**
   * `PRAGMA synchronous` in WAL mode: `full` (default) syncs the disk at every commit; `normal`
   * syncs at checkpoints only — never a corrupt file, but an OS crash or power loss can undo the
   * last commits. Ignored without WAL.
   */
  readonly synchronous?: "full" | "normal" | undefined
  /** Prepared statements kept per connection (default 200; 0 disables the cache). */
  readonly prepareCacheSize?: number | undefined
  readonly spanAttributes?: Record<string, unknown> | undefined
  /** Maps result column names (for example `snake_case` to `camelCase`). */
  readonly transformResultNames?: ((str: string) => string) | undefined
  /** Maps names in queries (the reverse of `transformResultNames`). */
  readonly transformQueryNames?: ((str: string) => string) | undefined
  /**
   * How `withTransaction` starts a transaction: `immediate` (default) takes the write lock at
   * `BEGIN`, waiting up to `busyTimeout` for it.
   *
   * **Details**
   *
   * With `deferred` (SQLite's own default) a transaction that reads and then writes fails at once
   * with `LockTimeoutError` whenever another process wrote in between: SQLite cannot move its
   * read snapshot forward, so it does not wait. Effect's cluster storage inserts a message after
   * reading it that way, and several runners on one file write every few hundred milliseconds.
   * `SqlClient.BeginTransaction` still overrides this for one transaction.
   *
   * @since 2.2.0
   */
  readonly transactionMode?: "deferred" | "immediate" | "exclusive" | undefined
}

const defaultBusyTimeout = Duration.seconds(5)
const defaultPrepareCacheSize = 200

/** Loaded on first `make`, not on import: importing the library must not load `node:sqlite`. */
const loadSqlite: Effect.Effect<NodeSqlite, SqlError> = Effect.tryPromise({
  try: importSqlite,
  catch: (cause) => sqlError(cause, "node:sqlite is not available (Node >= 22.19 is required)", "open")
})

const busyTimeoutMillis = (options: SqliteClientConfig): number =>
  Duration.toMillis(options.busyTimeout ?? defaultBusyTimeout)

const openDatabase = (sqlite: NodeSqlite, options: SqliteClientConfig): DatabaseSync => {
  const db = new sqlite.DatabaseSync(options.filename, { readOnly: options.readonly === true })
  try {
    db.exec(`PRAGMA busy_timeout = ${Math.max(0, Math.round(busyTimeoutMillis(options)))}`)
    const wal = options.disableWAL !== true && options.readonly !== true && options.filename !== ":memory:"
    if (wal) db.exec("PRAGMA journal_mode = WAL")
    if (wal && options.synchronous === "normal") db.exec("PRAGMA synchronous = NORMAL")
    FileMode.narrowCompanions(options.filename)
    return db
  } catch (cause) {
    db.close()
    throw cause
  }
}

// The file is created 0600 first: SQLite would create it (and its -wal/-shm) 0644 under the
// default umask, and the database holds every prompt and answer.
const acquireDatabase = (sqlite: NodeSqlite, options: SqliteClientConfig) =>
  Effect.acquireRelease(
    Effect.try({
      try: () => ({
        warnings: FileMode.createPrivate(options.filename, options.readonly === true),
        db: openDatabase(sqlite, options)
      }),
      catch: (cause) => sqlError(cause, `Failed to open database ${options.filename}`, "open")
    }),
    ({ db }) => Effect.sync(() => db.close())
  ).pipe(Effect.tap(({ warnings }) => FileMode.logWarnings(options.filename, warnings)), Effect.map(({ db }) => db))

const spanAttributes = (options: SqliteClientConfig): ReadonlyArray<readonly [string, unknown]> => [
  ...Object.entries(options.spanAttributes ?? {}),
  ["db.system.name", "sqlite"]
]

/**
 * Opens the database for the lifetime of the current scope.
 *
 * @category constructors
 * @since 1.0.0
 */
export const make: (
  options: SqliteClientConfig
) => Effect.Effect<SqliteClient, SqlError, Scope.Scope | Reactivity.Reactivity> = Effect.fn("SqliteClient.make")(
  function*(options: SqliteClientConfig) {
    const sqlite = yield* loadSqlite
    const db = yield* acquireDatabase(sqlite, options)
    const connection = makeConnection(db, options.prepareCacheSize ?? defaultPrepareCacheSize)
    const acquirers = SqlClient.makeSqliteAcquirers({
      connection: Effect.succeed(connection),
      semaphore: yield* Semaphore.make(1),
      isTransaction: (conn) => conn.db.isTransaction
    })
    const client = yield* SqlClient.make({
      ...acquirers,
      beginTransaction: `BEGIN ${(options.transactionMode ?? "immediate").toUpperCase()}`,
      compiler: Statement.makeCompilerSqlite(options.transformQueryNames),
      driver: "node-sqlite",
      spanAttributes: spanAttributes(options),
      transformRows: options.transformResultNames === undefined
        ? undefined
        : Statement.defaultTransforms(options.transformResultNames).array
    })
    return Object.assign(client, { [TypeId]: TypeId, config: options }) as SqliteClient
  }
)

/**
 * A layer from an effect that builds the client; `Reactivity` is provided here.
 *
 * @category layers
 * @since 1.0.0
 */
export const layerFrom = <E, R>(
  acquire: Effect.Effect<SqliteClient, E, R>
): Layer.Layer<SqliteClient | SqlClient.SqlClient, E, Exclude<Exclude<R, Scope.Scope>, Reactivity.Reactivity>> =>
  Layer.effectContext(
    Effect.map(acquire, (client) => Context.make(SqliteClient, client).pipe(Context.add(SqlClient.SqlClient, client)))
  ).pipe(Layer.provide(Reactivity.layer))

/**
 * Provides `SqliteClient` and `SqlClient` for the database `options` names.
 *
 * @category layers
 * @since 1.0.0
 */
export const layer = (options: SqliteClientConfig): Layer.Layer<SqliteClient | SqlClient.SqlClient, SqlError> =>
  layerFrom(make(options))

/**
 * Like `layer`, with the options read from `Config`.
 *
 * @category layers
 * @since 1.0.0
 */
export const layerConfig = (
  config: Config.Wrap<SqliteClientConfig>
): Layer.Layer<SqliteClient | SqlClient.SqlClient, Config.ConfigError | SqlError> =>
  layerFrom(Effect.flatMap(Config.unwrap(config), make))
