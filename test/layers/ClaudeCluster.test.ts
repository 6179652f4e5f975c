/**
 * The shard-settings check, on a SQLite file and on a real PostgreSQL server: the first member
 * records the layout, the same layout passes, a different one is refused with both values named;
 * and a cluster client built with another `shardsPerGroup` fails to start instead of waiting forever.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { describe, expect, it, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as SqlClient from "effect/sql/SqlClient"
import * as TestClock from "effect/testing/TestClock"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as ClaudeCluster from "../../src/layers/ClaudeCluster.ts"
import * as SqliteClient from "../../src/layers/SqliteClient.ts"
import * as Postgres from "../support/postgres.ts"

const sqliteFile = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "ecb-cluster-settings-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
).pipe(Effect.map((dir) => path.join(dir, "cluster.db")))

const layout = (shardsPerGroup: number, availableShardGroups: ReadonlyArray<string> = ["default"]) => ({
  shardsPerGroup,
  availableShardGroups
})

const checks = <E>(db: Layer.Layer<SqlClient.SqlClient, E>) =>
  Effect.gen(function*() {
    const sql = Layer.orDie(db)
    // Two "members": separate clients on the same database.
    yield* Effect.provide(ClaudeCluster.checkSettings(layout(300)), sql)
    yield* Effect.provide(ClaudeCluster.checkSettings(layout(300)), sql)
    yield* Effect.provide(ClaudeCluster.checkSettings(layout(300, ["default"])), sql)
    const shards = yield* Effect.flip(Effect.provide(ClaudeCluster.checkSettings(layout(100)), sql))
    expect(shards._tag).toBe("ClusterConfigError")
    expect(shards).toMatchObject({ setting: "shardsPerGroup", local: "100", cluster: "300" })
    expect(shards.message).toContain("shardsPerGroup=100")
    expect(shards.message).toContain("shardsPerGroup=300")
    expect(shards.message).toContain("SHARDS_PER_GROUP")
    expect(shards.message).toContain(ClaudeCluster.settingsTable)
    const groups = yield* Effect.flip(Effect.provide(ClaudeCluster.checkSettings(layout(300, ["a", "default"])), sql))
    expect(groups).toMatchObject({ setting: "availableShardGroups", local: "a,default", cluster: "default" })
  })

describe("ClaudeCluster on SQLite", () => {
  it.live("checkSettings: the first layout is recorded, a different one is refused", () =>
    Effect.gen(function*() {
      const filename = yield* sqliteFile
      yield* checks(SqliteClient.layer({ filename }))
    }).pipe(Effect.scoped))

  it.live("a cluster client with another shardsPerGroup fails to start, naming both values", () =>
    Effect.gen(function*() {
      const filename = yield* sqliteFile
      const sql = SqliteClient.layer({ filename })
      yield* Effect.provide(ClaudeCluster.checkSettings(layout(300)), sql)
      const started = Date.now()
      const error = yield* Effect.flip(
        Layer.build(ClaudeCluster.layerClient({ shardingConfig: { shardsPerGroup: 7 } }).pipe(Layer.provide(sql)))
      )
      expect(error._tag).toBe("ClusterConfigError")
      expect(String((error as { message?: unknown }).message)).toContain("shardsPerGroup=7")
      expect(Date.now() - started).toBeLessThan(10_000)
      // The same options as the cluster start.
      yield* Layer.build(ClaudeCluster.layerClient().pipe(Layer.provide(sql)))
    }).pipe(Effect.scoped))

  it.live("storage that cannot be read is a ClusterConfigError too, with its cause", () =>
    Effect.gen(function*() {
      const dir = path.dirname(yield* sqliteFile)
      const readonly = path.join(dir, "ro.db")
      yield* Effect.provide(Effect.void, SqliteClient.layer({ filename: readonly }))
      const error = yield* Effect.flip(
        Effect.provide(
          ClaudeCluster.checkSettings(layout(300)),
          Layer.orDie(SqliteClient.layer({ filename: readonly, readonly: true }))
        )
      )
      expect(error.setting).toBe("*")
      expect(error.message).toContain(ClaudeCluster.settingsTable)
      expect(error.cause).toBeDefined()
    }).pipe(Effect.scoped))
})

layer(Postgres.layer(), { timeout: "180 seconds" })("ClaudeCluster on PostgreSQL", (it) => {
  it.effect("checkSettings: the first layout is recorded, a different one is refused", () =>
    Effect.gen(function*() {
      const server = yield* Postgres.PostgresServer
      const name = `c_${randomUUID().replaceAll("-", "")}`
      yield* Effect.provide(
        Effect.gen(function*() {
          const sql = yield* PgClient.PgClient
          yield* sql`CREATE DATABASE ${sql(name)}`
        }),
        PgClient.layer({ url: server.url() })
      )
      yield* checks(PgClient.layer({ url: server.url(name) }))
    }))

  it.effect("members starting together on a new database all start (the settings table's creation races)", () =>
    Effect.gen(function*() {
      const server = yield* Postgres.PostgresServer
      for (let round = 0; round < 3; round++) {
        const name = `c_${randomUUID().replaceAll("-", "")}`
        yield* Effect.provide(
          Effect.flatMap(PgClient.PgClient, (sql) => sql`CREATE DATABASE ${sql(name)}`),
          PgClient.layer({ url: server.url() })
        )
        // Each member with its own connection, as separate processes have (real time: it retries).
        yield* TestClock.withLive(Effect.forEach(
          [1, 2, 3, 4],
          () =>
            Effect.scoped(Effect.provide(
              ClaudeCluster.checkSettingsRetrying(layout(300)),
              Layer.orDie(PgClient.layer({ url: server.url(name) }))
            )),
          { concurrency: "unbounded" }
        ))
      }
    }))
})
