/**
 * The `effect/sql` connection over one `node:sqlite` `DatabaseSync`. Private: the public face is
 * `layers/SqliteClient.ts`.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as SqlConnection from "effect/sql/SqlConnection"
import { classifySqliteError, SqlError } from "effect/sql/SqlError"
import * as Stream from "effect/Stream"
import type * as NodeSqliteModule from "node:sqlite"
import type { DatabaseSync, SQLInputValue, StatementSync } from "node:sqlite"

/** The module's own type, so callers can hold it without importing `node:sqlite` eagerly. */
export type NodeSqlite = typeof NodeSqliteModule

type Rows = ReadonlyArray<Record<string, unknown>>
type TransformRows = (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined

export interface SqliteConnection extends SqlConnection.Connection {
  readonly db: DatabaseSync
}

/**
 * Node 22 prints an `ExperimentalWarning` the first time `node:sqlite` loads (24 does not). It is
 * noise for a library's users, so that one warning is dropped while the module loads; anything
 * else still reaches `process.emitWarning`. Exported for its test; use `importSqlite`.
 */
export const importSqliteQuietly = async (): Promise<NodeSqlite> => {
  const emitWarning = process.emitWarning
  process.emitWarning = function(this: NodeJS.Process, warning: string | Error, ...rest: Array<unknown>) {
    if (!isSqliteExperimentalWarning(warning, rest[0])) {
      Reflect.apply(emitWarning, this, [warning, ...rest])
    }
  } as typeof process.emitWarning
  try {
    return await import("node:sqlite")
  } finally {
    process.emitWarning = emitWarning
  }
}

let loading: Promise<NodeSqlite> | undefined

/**
 * Loads `node:sqlite` once: two overlapping quiet imports would each restore the other's
 * `emitWarning` replacement and could leave one installed for good.
 */
export const importSqlite = (): Promise<NodeSqlite> => loading ??= importSqliteQuietly()

const isSqliteExperimentalWarning = (warning: string | Error, typeOrOptions: unknown): boolean => {
  const text = typeof warning === "string" ? warning : warning.message
  const type = typeof typeOrOptions === "string"
    ? typeOrOptions
    : typeof warning === "string"
    ? (typeOrOptions as { readonly type?: unknown } | undefined)?.type
    : warning.name
  return type === "ExperimentalWarning" && /SQLite/.test(text)
}

/**
 * `node:sqlite` puts the SQLite result code in `errcode`, where `classifySqliteError` does not
 * look (it reads `code`, which Node sets to `ERR_SQLITE_ERROR`, and `errno`): copying it to
 * `errno` lets unique, constraint and busy errors classify.
 */
const withErrno = (cause: unknown): unknown => {
  if (typeof cause === "object" && cause !== null && "errcode" in cause && !("errno" in cause)) {
    Object.defineProperty(cause, "errno", { value: cause.errcode, enumerable: false, configurable: true })
  }
  return cause
}

export const sqlError = (cause: unknown, message: string, operation: string): SqlError =>
  new SqlError({ reason: classifySqliteError(withErrno(cause), { message, operation }) })

/** `node:sqlite` refuses booleans and `undefined`; SQLite itself stores booleans as 0/1. */
const toParam = (value: unknown): SQLInputValue => {
  if (typeof value === "boolean") return value ? 1 : 0
  if (value === undefined) return null
  return value as SQLInputValue
}

const toParams = (params: ReadonlyArray<unknown>): Array<SQLInputValue> => params.map(toParam)

/** Rows come with a null prototype; plain objects keep `toEqual`, `hasOwnProperty` and friends working. */
const toPlainRows = (rows: ReadonlyArray<object>): Rows =>
  rows.map((row) => Object.assign({}, row) as Record<string, unknown>)

/** A bounded cache of prepared statements: re-preparing is the slow part of a small query. */
const makeStatementCache = (db: DatabaseSync, size: number) => {
  const cache = new Map<string, StatementSync>()
  return (sql: string): StatementSync => {
    const cached = cache.get(sql)
    if (cached !== undefined) {
      // Re-insert so eviction drops the least recently used statement.
      cache.delete(sql)
      cache.set(sql, cached)
      return cached
    }
    const statement = db.prepare(sql)
    if (size > 0) {
      cache.set(sql, statement)
      if (cache.size > size) cache.delete(cache.keys().next().value as string)
    }
    return statement
  }
}

const run = <A>(operation: string, f: () => A): Effect.Effect<A, SqlError> =>
  Effect.try({ try: f, catch: (cause) => sqlError(cause, "Failed to execute statement", operation) })

const applyTransform = (rows: Rows, transformRows: TransformRows): Rows =>
  transformRows === undefined ? rows : transformRows(rows)

const allRows = (statement: StatementSync, params: ReadonlyArray<unknown>) =>
  toPlainRows(statement.all(...toParams(params)))

const allValues = (statement: StatementSync, params: ReadonlyArray<unknown>) => {
  statement.setReturnArrays(true)
  try {
    return statement.all(...toParams(params)) as unknown as ReadonlyArray<ReadonlyArray<unknown>>
  } finally {
    // Cached statements are shared: leave them returning objects for the next caller.
    statement.setReturnArrays(false)
  }
}

const streamChunkSize = 128

/**
 * A stream gets its own statement: iterating a cached one would be reset by the next query that
 * uses the same SQL. The iterator is closed when the stream ends, fails or is interrupted.
 */
const streamRows = (
  db: DatabaseSync,
  sql: string,
  params: ReadonlyArray<unknown>,
  transformRows: TransformRows
): Stream.Stream<Record<string, unknown>, SqlError> =>
  Stream.unwrap(
    Effect.map(
      Effect.acquireRelease(
        run("stream", () => db.prepare(sql).iterate(...toParams(params))),
        (iterator) => Effect.sync(() => iterator.return?.())
      ),
      (iterator) =>
        Stream.paginate(undefined, () =>
          run("stream", () => {
            const chunk: Array<object> = []
            let next = iterator.next()
            while (next.done !== true) {
              chunk.push(next.value)
              if (chunk.length === streamChunkSize) break
              next = iterator.next()
            }
            const rows = applyTransform(toPlainRows(chunk), transformRows)
            return [rows, next.done === true ? Option.none() : Option.some(undefined)] as const
          }))
    )
  )

export const makeConnection = (db: DatabaseSync, prepareCacheSize: number): SqliteConnection => {
  const prepare = makeStatementCache(db, prepareCacheSize)
  return {
    db,
    execute: (sql, params, transformRows) =>
      run("execute", () => applyTransform(allRows(prepare(sql), params), transformRows)),
    executeRaw: (sql, params) => run("executeRaw", () => prepare(sql).run(...toParams(params))),
    executeStream: (sql, params, transformRows) => streamRows(db, sql, params, transformRows),
    executeValues: (sql, params) => run("executeValues", () => allValues(prepare(sql), params)),
    executeValuesUnprepared: (sql, params) => run("executeValues", () => allValues(db.prepare(sql), params)),
    executeUnprepared: (sql, params, transformRows) =>
      run("execute", () => applyTransform(allRows(db.prepare(sql), params), transformRows))
  }
}
