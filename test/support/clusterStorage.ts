/**
 * The storage of the multi-process cluster tests: PostgreSQL (a real server) or one SQLite file,
 * given both to the runner processes and to the test's own `SqlClient`; a wait until the shards
 * have settled on the runners; and the retry of a turn the storage failed.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as SqlClient from "effect/sql/SqlClient"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as SqliteClient from "../../src/layers/SqliteClient.ts"
import type { SharedStorage } from "./clusterProcesses.ts"
import * as Postgres from "./postgres.ts"

export type StorageKind = "PostgreSQL" | "SQLite"

/** A folder removed with the scope. */
export const tempDir = (prefix: string) =>
  Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), prefix))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )

/** The storage the runners share, and the same storage as this process's SqlClient. */
export const sharedStorage = (
  kind: StorageKind
): Effect.Effect<
  { readonly storage: SharedStorage; readonly sql: Layer.Layer<SqlClient.SqlClient, unknown> },
  Postgres.PostgresStartError,
  Scope.Scope
> =>
  kind === "PostgreSQL"
    ? Effect.map(Postgres.start(), (server) => ({
      storage: { _tag: "Postgres", url: Redacted.value(server.url()) },
      sql: PgClient.layer({ url: server.url() })
    }))
    : Effect.map(tempDir("ecb-cluster-e2e-"), (dir) => ({
      storage: { _tag: "Sqlite", file: join(dir, "cluster.db") },
      sql: SqliteClient.layer({ filename: join(dir, "cluster.db") })
    }))

/** Shard locks held per holder (runner address on SQLite, backend pid on PostgreSQL), as one string. */
export const lockHolders = (kind: StorageKind) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    (kind === "SQLite"
      ? sql<{ readonly holder: string; readonly n: number }>`
          SELECT address AS holder, COUNT(*) AS n FROM cluster_locks GROUP BY address ORDER BY address`
      : sql<{ readonly holder: string; readonly n: number }>`
          SELECT pid::text AS holder, COUNT(*) AS n FROM pg_locks
          WHERE locktype = 'advisory' AND granted GROUP BY pid ORDER BY pid`).pipe(
        Effect.map((rows) => rows.map((r) => `${r.holder}=${r.n}`)),
        Effect.orDie
      ))

/**
 * Waits until each of the `runners` holds shard locks and the split has not changed for 3 s:
 * runners that start together hand shards to each other for a few seconds, which would move
 * the conversation (and stop its CLI) without any kill.
 */
export const shardsSettled = (kind: StorageKind, runners: number) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 60_000
    let last = ""
    let since = Date.now()
    while (Date.now() < deadline) {
      const holders = yield* lockHolders(kind)
      const now = holders.join(",")
      if (now !== last) [last, since] = [now, Date.now()]
      else if (holders.length === runners && Date.now() - since >= 3_000) return
      yield* Effect.sleep("500 millis")
    }
    return yield* Effect.die(new Error(`the shards did not settle on ${runners} runners within 60 s: ${last}`))
  })

/**
 * Sends a turn again, with the same turn id, when the cluster's storage failed it: on one SQLite
 * file shared by four or five busy processes a write can wait past its lock timeout
 * (`PersistenceError`, retryable, see docs/cluster.md). The same turn id makes it safe.
 */
export const retryStorage = <A, E extends { readonly _tag: string }, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.retry(effect, { while: (e) => e._tag === "PersistenceError", times: 5 })
