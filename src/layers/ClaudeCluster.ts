/**
 * The cluster under `ClaudeConversation`: Effect's socket runners (`NodeClusterSocket`) with
 * their messages, shard locks and runner list in SQL — PostgreSQL through `@effect/sql-pg` for
 * many machines, or one SQLite file for several processes on one machine. {@link layerRunner}
 * hosts conversations; {@link layerClient} only sends turns. Both take the same {@link Options}.
 *
 * **Details**
 *
 * Failover: a runner that dies is noticed by the others' health checks (every
 * `runnerHealthCheckInterval`) and by its registration going stale in storage; its shards then
 * move to the live runners, whose conversations resume from the session store. The {@link defaults}
 * here (1 s health check, 1 s lock refresh, 3 s lock expiry, 1 s assignment refresh) gave a median
 * of 4.7 s on PostgreSQL from SIGKILL to the next turn answered (`bench/cluster.bench.ts`); on
 * SQLite, whose lock rows free only when they expire, members use {@link sqliteDefaults} (2 s lock
 * expiry, ½ s assignment refresh). Effect's own defaults (1 minute health check, 35 s expiry) gave
 * about 38 s. `docs/cluster.md` has the measured times and what the short intervals cost.
 *
 * Stopping: a runner told to stop (scope close, SIGTERM under `NodeRuntime.runMain`) drains — it
 * leaves the runner list at once, lets running turns finish for up to `drainTimeout` (default 60 s),
 * and hands every turn still running after that back unanswered, so the next runner runs it again.
 *
 * **Gotchas**
 *
 * Runners and clients must agree on the shard layout: with different `shardsPerGroup` a client
 * addresses shards no runner owns, and its turns wait forever without an error. So both check it
 * when they start, against the first value recorded in the `effect_chat_bridge_cluster_settings`
 * table, and fail with {@link ClusterConfigError} if it differs.
 *
 * @summary Socket runner and client layers over SQL storage, checking every member shares the shard layout.
 * @group Cluster
 * @since 1.0.0
 * @module
 */
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import * as Cause from "effect/Cause"
import type * as MessageStorage from "effect/cluster/MessageStorage"
import * as RunnerAddress from "effect/cluster/RunnerAddress"
import type * as Runners from "effect/cluster/Runners"
import type * as Sharding from "effect/cluster/Sharding"
import * as ShardingConfig from "effect/cluster/ShardingConfig"
import type * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as SocketServer from "effect/socket/SocketServer"
import * as SqlClient from "effect/sql/SqlClient"

/**
 * Where the cluster records the settings every member must share.
 *
 * @category config
 * @since 1.0.0
 */
export const settingsTable = "effect_chat_bridge_cluster_settings"

/**
 * A member of the cluster disagrees with the others on a setting they must share.
 *
 * @category errors
 * @since 1.0.0
 */
export class ClusterConfigError extends Schema.TaggedError<ClusterConfigError>()("ClusterConfigError", {
  /** The setting, such as `shardsPerGroup`. */
  setting: Schema.String,
  /** This process's value. */
  local: Schema.String,
  /** The value the cluster recorded first. */
  cluster: Schema.String,
  /** What differs and how to fix it. */
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

/**
 * Options of {@link layerRunner} and {@link layerClient}.
 *
 * @category config
 * @since 1.0.0
 */
export interface Options {
  /** Where other members reach this runner (and, unless `listenAddress`, where it listens). */
  readonly host?: string | undefined
  /** The runner's port. Default 34431. */
  readonly port?: number | undefined
  /**
   * How long a stopping runner (scope close, SIGTERM under `NodeRuntime.runMain`) lets its running
   * turns finish before it hands them back unanswered, so the conversation's next runner runs them
   * again from the stored session. Default {@link DefaultDrainTimeout}; it is Effect's
   * `entityTerminationTimeout`, so it also bounds how long a shard moving to a new runner waits.
   */
  readonly drainTimeout?: Duration.Input | undefined
  /** More `ShardingConfig` settings; they win over {@link defaults} (or {@link sqliteDefaults}) and the environment. */
  readonly shardingConfig?: Partial<ShardingConfig.ShardingConfig["Service"]> | undefined
}

/**
 * The settings this module changes from Effect's: a failover in seconds instead of a minute. A
 * dead runner drops out of the runner list when its heartbeat is older than `shardLockExpiration`
 * (or at once, when the health check finds its port closed), members re-read the assignments every
 * `refreshAssignmentsInterval`, and on SQLite its lock rows free after `shardLockExpiration`; the
 * new owner then reads the turn from storage. `docs/cluster.md` has the measured times and costs.
 * Members whose `SqlClient` is SQLite use {@link sqliteDefaults} instead.
 *
 * @category config
 * @since 1.0.0
 */
export const defaults: Partial<ShardingConfig.ShardingConfig["Service"]> = {
  runnerHealthCheckInterval: Duration.seconds(1),
  shardLockRefreshInterval: Duration.seconds(1),
  shardLockExpiration: Duration.seconds(3),
  refreshAssignmentsInterval: Duration.seconds(1),
  entityMessagePollInterval: Duration.millis(500)
}

/**
 * {@link defaults} for members on SQLite, where a dead runner's shard locks free only when they
 * expire (PostgreSQL frees its advisory locks when the runner's connection drops): a 2 s lock
 * expiry (refreshed every ⅔ s) and a ½ s assignment refresh, for a failover about 1.2 s shorter.
 * The cost: a runner whose lock refreshes stall for about 2 s (a frozen process, a file locked by
 * a long write) loses its shards to the others, and each runner writes its locks half again as
 * often and reads the assignments twice as often. `layerRunner` and `layerClient` use them when
 * their `SqlClient` is SQLite.
 *
 * @category config
 * @since 2.2.0
 */
export const sqliteDefaults: Partial<ShardingConfig.ShardingConfig["Service"]> = {
  ...defaults,
  shardLockExpiration: Duration.seconds(2),
  refreshAssignmentsInterval: Duration.millis(500)
}

/**
 * The default of {@link Options.drainTimeout}: long enough for a typical turn with a slow tool.
 *
 * @category config
 * @since 1.0.0
 */
export const DefaultDrainTimeout: Duration.Input = "60 seconds"

const shardingOptions = (
  options: Options,
  base: Partial<ShardingConfig.ShardingConfig["Service"]>
): Partial<ShardingConfig.ShardingConfig["Service"]> => ({
  ...base,
  entityTerminationTimeout: options.drainTimeout ?? DefaultDrainTimeout,
  ...(options.host === undefined && options.port === undefined
    ? {}
    : { runnerAddress: Option.some(RunnerAddress.make(options.host ?? "localhost", options.port ?? 34431)) }),
  ...options.shardingConfig
})

/**
 * The part of a `ShardingConfig` every member must share.
 *
 * @category models
 * @since 1.0.0
 */
export type SharedSettings = Pick<ShardingConfig.ShardingConfig["Service"], "shardsPerGroup" | "availableShardGroups">

/**
 * The settings members must share, as recorded: name and text value.
 *
 * @category utils
 * @since 1.0.0
 */
export const sharedSettings = (config: SharedSettings): ReadonlyArray<readonly [string, string]> => [
  ["shardsPerGroup", String(config.shardsPerGroup)],
  ["availableShardGroups", [...config.availableShardGroups].sort().join(",")]
]

const storageFailed = (cause: unknown) =>
  new ClusterConfigError({
    setting: "*",
    local: "",
    cluster: "",
    message: `Could not read or record the cluster's shared settings in ${settingsTable}: ${String(cause)}`,
    cause
  })

/**
 * Records this member's shared settings where none are recorded yet, then fails with
 * {@link ClusterConfigError} if any differs from the recorded one.
 *
 * @category utils
 * @since 1.0.0
 */
export const checkSettings = Effect.fn("ClaudeCluster.checkSettings")(function*(config: SharedSettings) {
  const sql = yield* SqlClient.SqlClient
  const table = sql(settingsTable)
  yield* Effect.mapError(
    sql`CREATE TABLE IF NOT EXISTS ${table} (name TEXT PRIMARY KEY, value TEXT NOT NULL)`,
    storageFailed
  )
  for (const [name, local] of sharedSettings(config)) {
    yield* Effect.mapError(
      sql`INSERT INTO ${table} (name, value) VALUES (${name}, ${local}) ON CONFLICT (name) DO NOTHING`,
      storageFailed
    )
    const rows = yield* Effect.mapError(
      sql<{ readonly value: string }>`SELECT value FROM ${table} WHERE name = ${name}`,
      storageFailed
    )
    const cluster = rows[0]?.value ?? local
    if (cluster !== local) {
      return yield* new ClusterConfigError({
        setting: name,
        local,
        cluster,
        message: `This process has ${name}=${local} but the cluster uses ${name}=${cluster} (recorded in ` +
          `${settingsTable} by its first member). With different values turns are never processed; give every ` +
          `runner and client the same ClaudeCluster options (and the same ${
            name === "shardsPerGroup" ? "SHARDS_PER_GROUP" : "AVAILABLE_SHARD_GROUPS"
          } environment variable). To change it for the whole cluster, stop every member and delete that row.`
      })
    }
  }
})

/**
 * Members starting together race to create the settings table: on SQLite the loser finds the file
 * locked; on PostgreSQL two `CREATE TABLE IF NOT EXISTS` at once can fail with a duplicate key in
 * `pg_type` (seen here with three runners starting on a new database). Either way, try again.
 */
const isStartRace = (error: ClusterConfigError) => {
  if (error.setting !== "*") return false
  // The driver's error sits a few `cause`s down (SqlError, its reason, the driver's error).
  let text = ""
  let cause: unknown = error.cause
  for (let depth = 0; depth < 5 && typeof cause === "object" && cause !== null; depth++) {
    const { _tag, message } = cause as { readonly _tag?: unknown; readonly message?: unknown }
    text += ` ${String(_tag ?? "")} ${String(message ?? "")}`
    cause = (cause as { readonly cause?: unknown }).cause
  }
  return /locked|busy|UniqueViolation|duplicate key|already exists/i.test(text)
}

/**
 * {@link checkSettings}, tried again when members starting together race to create its table.
 *
 * @category utils
 * @since 1.0.0
 */
export const checkSettingsRetrying = (config: SharedSettings) =>
  checkSettings(config).pipe(
    Effect.retry({ while: isStartRace, schedule: Schedule.exponential("20 millis"), times: 8 })
  )

const checked = (sharding: Partial<ShardingConfig.ShardingConfig["Service"]>) =>
  Layer.effectDiscard(Effect.flatMap(ShardingConfig.ShardingConfig, checkSettingsRetrying)).pipe(
    Layer.provide(ShardingConfig.layerFromEnv(sharding))
  )

/** The sharding settings of a member: {@link sqliteDefaults} on SQLite, else {@link defaults}, then `options`. */
const withSettings = <A, E, R>(
  options: Options,
  make: (sharding: Partial<ShardingConfig.ShardingConfig["Service"]>) => Layer.Layer<A, E, R>
): Layer.Layer<A, E, R | SqlClient.SqlClient> =>
  Layer.unwrap(
    Effect.map(SqlClient.SqlClient, (sql) =>
      make(shardingOptions(
        options,
        sql.onDialectOrElse({ sqlite: () => sqliteDefaults, orElse: () => defaults })
      )))
  )

/** Whether a failed build hit a locked database (a cluster table being created by another member). */
const isLockedCause = (cause: Cause.Cause<unknown>): boolean =>
  cause.reasons.some((reason) => {
    const error = Cause.isFailReason(reason) ? reason.error : Cause.isDieReason(reason) ? reason.defect : undefined
    const inner = (error as { readonly cause?: { readonly _tag?: unknown; readonly message?: unknown } } | undefined)
      ?.cause
    return inner?._tag === "LockTimeoutError" || /database is locked/i.test(String(inner?.message ?? ""))
  })

/**
 * Members starting together on one new SQLite file race for its write lock while Effect's cluster
 * storage creates its tables, and the loser's build fails with "database is locked" (about one
 * start in ten with three runners): build it again, a few times, after a short pause.
 */
const retryLocked = <A, E, R>(layer: Layer.Layer<A, E, R>, times = 5): Layer.Layer<A, E, R> =>
  Layer.fresh(layer).pipe(
    Layer.catchCause((cause) =>
      Layer.unwrap(
        times > 0 && isLockedCause(cause)
          ? Effect.as(Effect.sleep(Duration.millis(50 * (6 - times))), retryLocked(layer, times - 1))
          : Effect.failCause(cause)
      )
    )
  )

/**
 * A runner: hosts the entities registered on it (`ClaudeConversationRunner.layer`), listening on
 * `port`. Needs the `SqlClient` every member shares.
 *
 * @category layers
 * @since 1.0.0
 */
export const layerRunner = (
  options: Options = {}
): Layer.Layer<
  Sharding.Sharding | Runners.Runners | MessageStorage.MessageStorage,
  ClusterConfigError | SocketServer.SocketServerError | Config.ConfigError,
  SqlClient.SqlClient
> =>
  withSettings(
    options,
    (sharding) =>
      retryLocked(NodeClusterSocket.layer({ storage: "sql", shardingConfig: sharding })).pipe(
        Layer.provide(checked(sharding))
      )
  )

/**
 * A member that only sends turns (an API server, a worker): no entities, no port.
 *
 * @category layers
 * @since 1.0.0
 */
export const layerClient = (
  options: Options = {}
): Layer.Layer<
  Sharding.Sharding | Runners.Runners | MessageStorage.MessageStorage,
  ClusterConfigError | Config.ConfigError,
  SqlClient.SqlClient
> =>
  withSettings(
    options,
    (sharding) =>
      retryLocked(NodeClusterSocket.layer({ storage: "sql", clientOnly: true, shardingConfig: sharding })).pipe(
        Layer.provide(checked(sharding))
      )
  )
