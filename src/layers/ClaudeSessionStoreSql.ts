/**
 * `ClaudeSessionStore` on any `effect/sql` client whose dialect is SQLite or PostgreSQL: a SQLite
 * file through this library's `node:sqlite` client ({@link layerSqlite}, for one machine), or
 * PostgreSQL through `@effect/sql-pg` (for conversations that move between machines):
 *
 * **Example** (Sessions in PostgreSQL)
 *
 * ```ts
 * import { PgClient } from "@effect/sql-pg"
 * import { Config, Layer } from "effect"
 * import { ClaudeSessionStoreSql } from "effect-chat-bridge/session-store-sql"
 *
 * const SessionStore = ClaudeSessionStoreSql.layer.pipe(
 *   Layer.provide(PgClient.layerConfig({ url: Config.Redacted("DATABASE_URL") }))
 * )
 * ```
 *
 * **Details**
 *
 * Schema (migrated by `effect/sql`'s Migrator in its own table, {@link migrationsTable}, so the
 * database can hold an application's own migrations and `AgentSettingsSqlite`'s):
 * - `claude_session_entries`: one row per transcript entry — `project_key`, `session_id`,
 *   `subpath` (`''` for the main transcript), `seq` (the append order), `uuid` (NULL when the
 *   entry has none), `entry` (the entry's JSON text) and `created_at` (epoch ms). A UNIQUE index
 *   on `(project_key, session_id, subpath, uuid)` makes `INSERT … ON CONFLICT DO NOTHING` skip an
 *   entry already stored, whichever process stored it; entries without a `uuid` never conflict
 *   (NULLs are distinct), so they are appended each time, as the contract says.
 * - `claude_sessions`: one row per transcript with its `mtime` (epoch ms), for `listSessions` and
 *   `listSubkeys` without scanning entries.
 * - `claude_approvals` (2.1.0): one row per tool call parked for an approval (`ClaudeApprovals`),
 *   keyed by `(project_key, approval_id)`, with its session, tool, input (JSON), state, times and
 *   decision; see {@link makeApprovalStore}.
 *
 * One `append` is one transaction that first upserts the transcript's `claude_sessions` row: the
 * row lock it takes (PostgreSQL) or the write lock taken by `BEGIN IMMEDIATE` (SQLite) serialises
 * appends to one transcript across connections and processes, so `seq` follows commit order and
 * two concurrent appends never interleave their entries. A failed append stores nothing. The
 * entries of one append go in multi-row INSERTs of {@link insertBatchSize} rows.
 *
 * Every failure of an operation is a `SessionStoreError` whose message says what to check and
 * whose reason is `StoreUnavailable` (retryable) when the `SqlError` is retryable (connection
 * failures, lock and statement timeouts), `StoreFailed` otherwise; the `SqlError` is kept as `cause`. Building the layer fails with {@link SessionStoreSetupError}.
 *
 * @summary `ClaudeSessionStore` on an `effect/sql` client: SQLite (one machine) or PostgreSQL (many).
 * @group Sessions & storage
 * @since 1.0.0
 * @module
 */
import * as Arr from "effect/Array"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Migrator from "effect/sql/Migrator"
import * as SqlClient from "effect/sql/SqlClient"
import { SqlError } from "effect/sql/SqlError"
import {
  ApprovalError,
  ApprovalState,
  ClaudeApprovalStore,
  type ClaudeApprovalStoreService,
  PendingApproval
} from "../services/ClaudeApprovals.ts"
import {
  ClaudeSessionStore,
  type ClaudeSessionStoreService,
  CorruptTranscript,
  type SessionKey,
  SessionStoreError,
  type StoredSession,
  StoreFailed,
  type StoreOperation,
  StoreUnavailable,
  type TranscriptEntry
} from "../services/ClaudeSessionStore.ts"
import * as SqliteClient from "./SqliteClient.ts"

/**
 * The table the store's migrations are recorded in (not the one of `AgentSettingsSqlite`).
 *
 * @category config
 * @since 1.0.0
 */
export const migrationsTable = "effect_chat_bridge_session_migrations"

/**
 * Entries per INSERT statement: 7 parameters each, well under SQLite's and PostgreSQL's limits.
 *
 * @category config
 * @since 1.0.0
 */
export const insertBatchSize = 500

/**
 * Why building the store failed: the store's own `StoreUnavailable` (retryable: the database was
 * unreachable or locked) or `StoreFailed` (not retryable).
 *
 * @since 2.0.0
 * @category schemas
 */
export const SessionStoreSetupErrorReason: Schema.Union<[typeof StoreUnavailable, typeof StoreFailed]> = Schema
  .Union([StoreUnavailable, StoreFailed])

/**
 * The type of {@link SessionStoreSetupErrorReason}.
 *
 * @since 2.0.0
 * @category models
 */
export type SessionStoreSetupErrorReason = typeof SessionStoreSetupErrorReason.Type

/**
 * Building the store failed: the database could not be opened or migrated. `stage` says which;
 * the reason says whether building the layer again may succeed
 * (`Effect.catchReason("SessionStoreSetupError", "StoreUnavailable", …)`).
 *
 * @since 2.0.0
 * @category errors
 */
export class SessionStoreSetupError extends Schema.TaggedError<SessionStoreSetupError>()("SessionStoreSetupError", {
  /** What failed: opening the database, or migrating it. */
  stage: Schema.Literals(["open", "migrate"]),
  /** What happened; its message says what to check. */
  reason: SessionStoreSetupErrorReason,
  cause: Schema.optional(Schema.Defect())
}) {
  /** The reason's message. */
  override get message(): string {
    return this.reason.message
  }

  /** Whether building the layer again may succeed; the reason decides. */
  get isRetryable(): boolean {
    return this.reason.isRetryable
  }
}

const entriesTable = "claude_session_entries"

/**
 * The migrations, in order; PostgreSQL and SQLite differ only in the sequence column.
 *
 * @category models
 * @since 1.0.0
 */
export const migrations: Migrator.Loader = Migrator.fromRecord({
  "1_create_session_tables": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const seq = sql.onDialectOrElse({
      pg: () => sql.unsafe("seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"),
      orElse: () => sql.unsafe("seq INTEGER PRIMARY KEY")
    })
    yield* sql`CREATE TABLE claude_session_entries (
      ${seq},
      project_key TEXT NOT NULL,
      session_id TEXT NOT NULL,
      subpath TEXT NOT NULL DEFAULT '',
      uuid TEXT,
      entry TEXT NOT NULL,
      created_at BIGINT NOT NULL
    )`
    yield* sql`CREATE UNIQUE INDEX claude_session_entries_uuid
      ON claude_session_entries (project_key, session_id, subpath, uuid)`
    yield* sql`CREATE INDEX claude_session_entries_order
      ON claude_session_entries (project_key, session_id, subpath, seq)`
    yield* sql`CREATE TABLE claude_sessions (
      project_key TEXT NOT NULL,
      session_id TEXT NOT NULL,
      subpath TEXT NOT NULL DEFAULT '',
      mtime BIGINT NOT NULL,
      PRIMARY KEY (project_key, session_id, subpath)
    )`
  }),
  // Tool calls parked for an approval (`ClaudeApprovals`), with their conversation's project.
  "2_create_approval_table": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE claude_approvals (
      project_key TEXT NOT NULL,
      approval_id TEXT NOT NULL,
      session_id TEXT NOT NULL,
      tool_use_id TEXT NOT NULL,
      tool TEXT NOT NULL,
      input TEXT NOT NULL,
      state TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      expires_at BIGINT NOT NULL,
      updated_input TEXT,
      reason TEXT,
      answer TEXT,
      PRIMARY KEY (project_key, approval_id)
    )`
    yield* sql`CREATE INDEX claude_approvals_session ON claude_approvals (project_key, session_id, created_at)`
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

/** `SqlError`'s message, then the driver's when it adds something. */
const details = (error: SqlError | Migrator.MigrationError): string => {
  const cause = underlying(error)
  const driver = cause === undefined ? "" : describe(cause)
  return driver === "" || driver === error.message ? error.message : `${error.message}: ${driver}`
}

const sqlErrorOf = (error: SqlError | Migrator.MigrationError): SqlError | undefined =>
  error instanceof SqlError ? error : error.cause instanceof SqlError ? error.cause : undefined

const operationAdvice =
  `check that the database is the one the store was set up on, and that its tables (migrated in ${migrationsTable}) are intact`

/** What to check, from the kind of failure the driver reported; `fallback` for the others. */
const advice = (error: SqlError | Migrator.MigrationError, fallback = operationAdvice): string => {
  switch (sqlErrorOf(error)?.reason._tag) {
    case "ConnectionError":
      return "check that the database server is running and reachable at the address the SqlClient is configured with, then try again"
    case "AuthenticationError":
      return "check the user name and password the SqlClient is configured with"
    case "AuthorizationError":
      return "check that the database user may read and write the session store's tables"
    case "LockTimeoutError":
    case "DeadlockError":
    case "SerializationError":
    case "StatementTimeoutError":
      return "the database was busy or slow (locks, timeouts): try again, and check what else holds locks on it"
    default:
      return fallback
  }
}

const isRetryable = (error: SqlError | Migrator.MigrationError): boolean => sqlErrorOf(error)?.isRetryable ?? false

/** The reason of a failure whose message is known: retryable when the database said so. */
const setupReason = (error: SqlError | Migrator.MigrationError, message: string): SessionStoreSetupErrorReason =>
  isRetryable(error) ? new StoreUnavailable({ message }) : new StoreFailed({ message })

/** A lock another connection held too long: worth a quick retry (a server that is down is not). */
const isLockTimeout = (error: SqlError | Migrator.MigrationError): boolean =>
  sqlErrorOf(error)?.reason._tag === "LockTimeoutError"

const storeError = (operation: StoreOperation, sessionId?: string) => (error: SqlError): SessionStoreError => {
  const message = `the session store's ${operation}${
    sessionId === undefined ? "" : ` of session ${sessionId}`
  } failed (${details(error)}); ${advice(error)}`
  return new SessionStoreError({
    operation,
    ...(sessionId === undefined ? {} : { sessionId }),
    // The SqlError's own verdict: connection failures, lock and statement timeouts are retryable.
    reason: error.isRetryable ? new StoreUnavailable({ message }) : new StoreFailed({ message }),
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
  SessionStoreSetupError,
  SqlClient.SqlClient
> = Migrator.make({})({ loader: migrations, table: migrationsTable }).pipe(
  // Processes that start together on one new SQLite file race for its write lock, and SQLite
  // refuses (rather than waits for) a read transaction that then writes: such a loser retries.
  Effect.retry({ while: isLockTimeout, schedule: Schedule.exponential("20 millis"), times: 8 }),
  Effect.mapError((error) =>
    new SessionStoreSetupError({
      stage: "migrate",
      reason: setupReason(
        error,
        `cannot set up the session store's tables (${details(error)}); ${
          advice(
            error,
            `check that the database exists, that the SqlClient's user may create tables in it, and the migrations recorded in ${migrationsTable}`
          )
        }`
      ),
      cause: error
    })
  ),
  Effect.withSpan("ClaudeSessionStoreSql.migrate")
)

type EntryRow = {
  readonly project_key: string
  readonly session_id: string
  readonly subpath: string
  readonly uuid: string | null
  readonly entry: string
  readonly created_at: number
}

/** The entries to insert: each `uuid` once (the first), entries without one all kept. */
const entryRows = (key: SessionKey, entries: ReadonlyArray<TranscriptEntry>, now: number) => {
  const seen = new Set<string>()
  const rows: Array<EntryRow> = []
  for (const entry of entries) {
    const uuid = typeof entry.uuid === "string" ? entry.uuid : null
    if (uuid !== null) {
      if (seen.has(uuid)) continue
      seen.add(uuid)
    }
    rows.push({
      project_key: key.projectKey,
      session_id: key.sessionId,
      subpath: key.subpath ?? "",
      uuid,
      entry: JSON.stringify(entry),
      created_at: now
    })
  }
  return rows
}

const spanAttributes = (key: SessionKey) => ({
  "claude_session_store.project_key": key.projectKey,
  "claude_session_store.session_id": key.sessionId,
  ...(key.subpath === undefined ? {} : { "claude_session_store.subpath": key.subpath })
})

const requireDialect = (sql: SqlClient.SqlClient) =>
  sql.onDialectOrElse({
    sqlite: () => Effect.void,
    pg: () => Effect.void,
    orElse: () =>
      Effect.fail(
        new SessionStoreSetupError({
          stage: "open",
          reason: new StoreFailed({
            message: "ClaudeSessionStoreSql needs a SQLite or PostgreSQL client (it relies on INSERT … ON CONFLICT)"
          })
        })
      )
  })

/** `append` and `delete`: each one transaction (see the module's description). */
const makeWrites = (sql: SqlClient.SqlClient) => {
  // SQLite: take the write lock at BEGIN, so another process waits (busy timeout) instead of
  // failing with SQLITE_BUSY_SNAPSHOT when the transaction would upgrade.
  const begin = sql.onDialectOrElse({ sqlite: () => "BEGIN IMMEDIATE", orElse: () => undefined })
  const transaction = <A>(effect: Effect.Effect<A, SqlError>) =>
    sql.withTransaction(effect).pipe(Effect.provideService(SqlClient.BeginTransaction, begin))
  const newerMtime = sql.onDialectOrElse({
    pg: () => sql.unsafe("GREATEST(claude_sessions.mtime, excluded.mtime)"),
    orElse: () => sql.unsafe("MAX(claude_sessions.mtime, excluded.mtime)")
  })

  const append = (key: SessionKey, entries: ReadonlyArray<TranscriptEntry>) => {
    const now = Date.now()
    const rows = entryRows(key, entries, now)
    const session = { project_key: key.projectKey, session_id: key.sessionId, subpath: key.subpath ?? "", mtime: now }
    return rows.length === 0 ? Effect.void : transaction(
      Effect.gen(function*() {
        // First, so its lock serialises appends to this transcript (see the module's description).
        yield* sql`INSERT INTO claude_sessions ${sql.insert(session)}
          ON CONFLICT (project_key, session_id, subpath) DO UPDATE SET mtime = ${newerMtime}`.withoutTransform
        for (const batch of Arr.chunksOf(rows, insertBatchSize)) {
          yield* sql`INSERT INTO ${sql(entriesTable)} ${sql.insert(batch)} ON CONFLICT DO NOTHING`.withoutTransform
        }
      })
    ).pipe(
      Effect.mapError(storeError("append", key.sessionId)),
      Effect.withSpan("ClaudeSessionStore.append", {
        attributes: { ...spanAttributes(key), "claude_session_store.entries": entries.length }
      })
    )
  }

  // A main transcript takes its subpaths with it; a subpath only itself.
  const remove = (key: SessionKey) => {
    const subpath = key.subpath === undefined ? sql`` : sql`AND subpath = ${key.subpath}`
    return transaction(Effect.gen(function*() {
      yield* sql`DELETE FROM claude_session_entries
        WHERE project_key = ${key.projectKey} AND session_id = ${key.sessionId} ${subpath}`.withoutTransform
      yield* sql`DELETE FROM claude_sessions
        WHERE project_key = ${key.projectKey} AND session_id = ${key.sessionId} ${subpath}`.withoutTransform
    })).pipe(
      Effect.mapError(storeError("delete", key.sessionId)),
      Effect.withSpan("ClaudeSessionStore.delete", { attributes: spanAttributes(key) })
    )
  }

  return { append, delete: remove }
}

/** `load`, `listSessions` and `listSubkeys`: single statements, outside any transaction. */
const makeReads = (sql: SqlClient.SqlClient) => {
  const load = (key: SessionKey) =>
    sql<{ readonly entry: string }>`SELECT entry FROM claude_session_entries
      WHERE project_key = ${key.projectKey} AND session_id = ${key.sessionId} AND subpath = ${key.subpath ?? ""}
      ORDER BY seq`.withoutTransform.pipe(
      Effect.mapError(storeError("load", key.sessionId)),
      Effect.flatMap((rows) =>
        Effect.try({
          try: () => rows.map((row) => JSON.parse(row.entry) as TranscriptEntry),
          catch: (cause) =>
            new SessionStoreError({
              operation: "load",
              sessionId: key.sessionId,
              reason: new CorruptTranscript({
                message: `session ${key.sessionId} holds an entry that is not JSON (${
                  describe(cause)
                }); check what else writes to ${entriesTable}`
              }),
              cause
            })
        })
      ),
      Effect.map((entries) => entries.length === 0 ? Option.none() : Option.some(entries)),
      Effect.withSpan("ClaudeSessionStore.load", { attributes: spanAttributes(key) })
    )

  const listSessions = (projectKey: string) =>
    sql<{ readonly session_id: string; readonly mtime: unknown }>`SELECT session_id, mtime FROM claude_sessions
      WHERE project_key = ${projectKey} AND subpath = ''`.withoutTransform.pipe(
      Effect.map((rows) => rows.map((row): StoredSession => ({ sessionId: row.session_id, mtime: Number(row.mtime) }))),
      Effect.mapError(storeError("listSessions")),
      Effect.withSpan("ClaudeSessionStore.listSessions", {
        attributes: { "claude_session_store.project_key": projectKey }
      })
    )

  const listSubkeys = (key: { readonly projectKey: string; readonly sessionId: string }) =>
    sql<{ readonly subpath: string }>`SELECT subpath FROM claude_sessions
      WHERE project_key = ${key.projectKey} AND session_id = ${key.sessionId} AND subpath <> ''
      ORDER BY subpath`.withoutTransform.pipe(
      Effect.map((rows) => rows.map((row) => row.subpath)),
      Effect.mapError(storeError("listSubkeys", key.sessionId)),
      Effect.withSpan("ClaudeSessionStore.listSubkeys", { attributes: spanAttributes(key) })
    )

  return { load, listSessions, listSubkeys }
}

/**
 * Migrates the database of the `SqlClient` in context (SQLite or PostgreSQL) and builds the
 * store over it. The store uses the client for as long as it is used; it holds no resource itself.
 *
 * @category constructors
 * @since 1.0.0
 */
export const make: Effect.Effect<ClaudeSessionStoreService, SessionStoreSetupError, SqlClient.SqlClient> = Effect.gen(
  function*() {
    const sql = yield* SqlClient.SqlClient
    yield* requireDialect(sql)
    yield* migrate
    return ClaudeSessionStore.of({ ...makeWrites(sql), ...makeReads(sql) })
  }
)

type ApprovalRow = {
  readonly project_key: string
  readonly approval_id: string
  readonly session_id: string
  readonly tool_use_id: string
  readonly tool: string
  readonly input: string
  readonly state: string
  readonly created_at: unknown
  readonly expires_at: unknown
  readonly updated_input: string | null
  readonly reason: string | null
  readonly answer: string | null
}

const decodeState = Schema.decodeUnknownSync(ApprovalState)

const fromRow = (row: ApprovalRow): PendingApproval =>
  new PendingApproval({
    approvalId: row.approval_id,
    projectKey: row.project_key,
    sessionId: row.session_id,
    toolUseId: row.tool_use_id,
    tool: row.tool,
    input: JSON.parse(row.input) as unknown,
    state: decodeState(row.state),
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
    ...(row.updated_input === null
      ? {}
      : { updatedInput: JSON.parse(row.updated_input) as Record<string, unknown> }),
    ...(row.reason === null ? {} : { reason: row.reason }),
    ...(row.answer === null ? {} : { answer: row.answer })
  })

const approvalError = (what: string, approvalId?: string) => (error: SqlError | Schema.SchemaError | Error) => {
  const message = `the approval store's ${what}${approvalId === undefined ? "" : ` of ${approvalId}`} failed (${
    error instanceof SqlError ? details(error) : error.message
  }); ${error instanceof SqlError ? advice(error) : operationAdvice}`
  return new ApprovalError({
    ...(approvalId === undefined ? {} : { approvalId }),
    reason: error instanceof SqlError && error.isRetryable
      ? new StoreUnavailable({ message })
      : new StoreFailed({ message }),
    cause: error
  })
}

/** Rows read back into approvals; a row that does not decode is a `StoreFailed`. */
const approvalsOf = (rows: ReadonlyArray<ApprovalRow>, what: string) =>
  Effect.try({
    try: () => rows.map(fromRow),
    catch: (cause) => approvalError(what)(cause instanceof Error ? cause : new Error(String(cause)))
  })

/**
 * The approval store over the `SqlClient` in context, migrated when built: the
 * `claude_approvals` table, one row per parked call. `decide` is one conditional `UPDATE …
 * WHERE state = 'pending'`, so of two processes deciding one call only one wins.
 *
 * @category constructors
 * @since 2.1.0
 */
export const makeApprovalStore: Effect.Effect<
  ClaudeApprovalStoreService,
  SessionStoreSetupError,
  SqlClient.SqlClient
> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* requireDialect(sql)
  yield* migrate
  return approvalStoreOn(sql)
})

/** The approval store's statements on a migrated database. */
const approvalStoreOn = (sql: SqlClient.SqlClient): ClaudeApprovalStoreService => {
  const select = sql`SELECT * FROM claude_approvals`
  return ClaudeApprovalStore.of({
    put: (a) =>
      sql`INSERT INTO claude_approvals ${
        sql.insert({
          project_key: a.projectKey,
          approval_id: a.approvalId,
          session_id: a.sessionId,
          tool_use_id: a.toolUseId,
          tool: a.tool,
          input: JSON.stringify(a.input ?? null),
          state: a.state,
          created_at: a.createdAt,
          expires_at: a.expiresAt
        })
      }`.withoutTransform.pipe(Effect.asVoid, Effect.mapError(approvalError("put", a.approvalId))),
    get: (projectKey, id) =>
      sql<ApprovalRow>`${select} WHERE project_key = ${projectKey} AND approval_id = ${id}`.withoutTransform.pipe(
        Effect.mapError(approvalError("get", id)),
        Effect.flatMap((rows) => approvalsOf(rows, "get")),
        Effect.map((found) => Option.fromUndefinedOr(found[0]))
      ),
    decide: (projectKey, id, decision) =>
      sql<{ readonly approval_id: string }>`UPDATE claude_approvals SET state = ${decision.state},
        updated_input = ${decision.updatedInput === undefined ? null : JSON.stringify(decision.updatedInput)},
        reason = ${decision.reason ?? null}
        WHERE project_key = ${projectKey} AND approval_id = ${id} AND state = 'pending'
        RETURNING approval_id`.withoutTransform.pipe(
        Effect.map((rows) => rows.length === 1),
        Effect.mapError(approvalError("decide", id))
      ),
    answer: (projectKey, id, answer) =>
      sql`UPDATE claude_approvals SET state = 'answered', answer = ${answer}
        WHERE project_key = ${projectKey} AND approval_id = ${id}`.withoutTransform.pipe(
        Effect.asVoid,
        Effect.mapError(approvalError("answer", id))
      ),
    list: (projectKey, sessionId) =>
      sql<ApprovalRow>`${select} WHERE project_key = ${projectKey} ${
        sessionId === undefined ? sql`` : sql`AND session_id = ${sessionId}`
      } ORDER BY created_at, approval_id`.withoutTransform.pipe(
        Effect.mapError(approvalError("list")),
        Effect.flatMap((rows) => approvalsOf(rows, "list"))
      )
  })
}

/**
 * The store over the `SqlClient` in context (SQLite or PostgreSQL), migrated when built, and
 * (since 2.1.0) the `ClaudeApprovalStore` in the same database.
 *
 * @category layers
 * @since 1.0.0
 */
export const layer: Layer.Layer<ClaudeSessionStore | ClaudeApprovalStore, SessionStoreSetupError, SqlClient.SqlClient> =
  Layer.effectContext(Effect.gen(function*() {
    // One migration for both: `make` migrates every table.
    const sessions = yield* make
    const approvals = approvalStoreOn(yield* SqlClient.SqlClient)
    return Context.make(ClaudeSessionStore, sessions).pipe(Context.add(ClaudeApprovalStore, approvals))
  }))

/**
 * Where the SQLite database lives.
 *
 * @category config
 * @since 1.0.0
 */
export interface SqliteOptions {
  /** A file path (its directory must exist), or `:memory:` for a private in-memory database. */
  readonly filename: string
  /**
   * When a commit reaches the disk (the file is in WAL mode). `normal` (default): at checkpoints —
   * an append survives the process (what a session that outlives it needs) and the file is never
   * corrupt, but an OS crash or power loss can undo the last appends (the CLI's own session file,
   * written without a sync, is no safer). `full`: at every commit, about 1.5 ms more per turn here
   * (`npm run bench`).
   */
  readonly synchronous?: "full" | "normal" | undefined
}

/** Opens the SQLite file as a scoped client; a Node without `node:sqlite` fails here. */
const openSqlite = (options: SqliteOptions) =>
  SqliteClient.make({ filename: options.filename, synchronous: options.synchronous ?? "normal" }).pipe(
    Effect.mapError((error) =>
      new SessionStoreSetupError({
        stage: "open",
        reason: setupReason(
          error,
          `cannot open the session store ${options.filename} (${
            details(error)
          }); check that its directory exists and is writable`
        ),
        cause: error
      })
    )
  )

/**
 * The store on a SQLite file, migrated when built; the connection closes with the layer's scope.
 * Processes that open the same file share the sessions (SQLite's locks order their appends).
 *
 * **Example** (Sessions in a SQLite file)
 *
 * ```ts
 * import { Effect } from "effect"
 * import { ClaudeSessionStore } from "effect-chat-bridge"
 * import { ClaudeSessionStoreSql } from "effect-chat-bridge/session-store-sql"
 *
 * const program = Effect.gen(function*() {
 *   const store = yield* ClaudeSessionStore.ClaudeSessionStore
 *   return yield* store.listSessions("my-project")
 * }).pipe(Effect.provide(ClaudeSessionStoreSql.layerSqlite({ filename: "sessions.sqlite" })))
 * ```
 *
 * @category layers
 * @since 1.0.0
 */
export const layerSqlite = (
  options: SqliteOptions
): Layer.Layer<ClaudeSessionStore | ClaudeApprovalStore, SessionStoreSetupError> =>
  layer.pipe(Layer.provide(SqliteClient.layerFrom(openSqlite(options))))
