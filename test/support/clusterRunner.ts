/**
 * A cluster runner process for the multi-process tests and the failover bench: hosts
 * `ClaudeConversation` on ClaudeLocal (the real `claude`), with SQL storage shared with the
 * other runners. Run with `node --import tsx test/support/clusterRunner.ts`; configured by the
 * environment (its HOME, CLAUDE_CONFIG_DIR and TMPDIR are its own sandbox's):
 *
 * - `CLUSTER_DATABASE_URL` (PostgreSQL) or `CLUSTER_SQLITE_FILE`: the shared storage.
 * - `RUNNER_PORT`: the runner's port on 127.0.0.1.
 * - `CLAUDE_BINARY`, `CLAUDE_CWD`, `SECRETS_DIR`: the CLI, its working directory, secret files.
 * - `SIDE_EFFECTS`: a file each tool call appends one JSON line to (`{ tool, pid, input }`).
 * - `MAX_IDLE`: the entities' idle time (default `5 minutes`); `SHARDS_PER_GROUP` is read by the
 *   cluster itself.
 * - `DRAIN_TIMEOUT`: `ClaudeCluster`'s `drainTimeout` (default its own).
 * - `CLAUDE_POOL_SPARES`: when set, the runner's CLIs run through `ClaudeProcessPool.layerFromEnv()`
 *   (spare CLIs and the other `CLAUDE_POOL_*` / `CLAUDE_MAX_LIVE_PROCESSES` variables).
 *
 * Tools: `charge` (wrapped in `idempotent`) and `notify` (plain); an input whose `slow` is true
 * makes `notify` wait a minute after recording its call, so a test can kill the runner during it.
 * A `charge` with `wait` (seconds) records `charge:start`, waits, then records `charge`: a test
 * can stop the runner during it and count the charges that completed.
 * With `APPROVAL_TOOL=1`, `transfer` too (wrapped in `idempotent`; every call waits for an
 * approval, records `transfer` when it runs and answers `sent <amount>`).
 * Prints `READY <port>` once the runner is up and `HOSTING <conversation id>` each time it sets a
 * conversation up.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as PgClient from "@effect/sql-pg/PgClient"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type * as SqlClient from "effect/sql/SqlClient"
import { appendFileSync } from "node:fs"
import * as ClaudeCluster from "../../src/layers/ClaudeCluster.ts"
import * as ClaudeConversationRunner from "../../src/layers/ClaudeConversationRunner.ts"
import * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import * as ClaudeSessionStoreSql from "../../src/layers/ClaudeSessionStoreSql.ts"
import * as NodeSecretFile from "../../src/layers/NodeSecretFile.ts"
import * as NodeSubprocess from "../../src/layers/NodeSubprocess.ts"
import * as SqliteClient from "../../src/layers/SqliteClient.ts"
import * as ClaudeProcessPool from "../../src/services/ClaudeProcessPool.ts"
import * as Tool from "../../src/services/Tool.ts"

const env = (name: string): string => {
  const value = process.env[name]
  if (value === undefined || value === "") throw new Error(`clusterRunner: ${name} is not set`)
  return value
}

const record = (tool: string, input: unknown) =>
  Effect.sync(() => appendFileSync(env("SIDE_EFFECTS"), `${JSON.stringify({ tool, pid: process.pid, input })}\n`))

const charge = Tool.make("charge", {
  description: "Charges an amount",
  parameters: { amount: Schema.Number, wait: Schema.optional(Schema.Number) },
  handler: (input) =>
    (input.wait === undefined
      ? record("charge", input)
      : record("charge:start", input).pipe(
        Effect.andThen(Effect.sleep(`${input.wait} seconds`)),
        Effect.andThen(record("charge", input))
      )).pipe(Effect.as(`charged ${input.amount}`))
})

const notify = Tool.make("notify", {
  description: "Sends a notification",
  parameters: { message: Schema.String, slow: Schema.optional(Schema.Boolean) },
  handler: (input) =>
    Effect.andThen(record("notify", input), input.slow === true ? Effect.sleep("1 minute") : Effect.void).pipe(
      Effect.as(`notified ${input.message}`)
    )
})

const transfer = Tool.make("transfer", {
  description: "Sends money",
  parameters: { amount: Schema.Number },
  needsApproval: true,
  handler: (input) => record("transfer", input).pipe(Effect.as(`sent ${input.amount}`))
})

/** The shared storage: PostgreSQL when a URL is given, else the SQLite file. */
export const storage = (): Layer.Layer<SqlClient.SqlClient, unknown> => {
  const url = process.env["CLUSTER_DATABASE_URL"]
  return url !== undefined && url !== ""
    ? PgClient.layer({ url: Redacted.make(url) })
    : SqliteClient.layer({ filename: env("CLUSTER_SQLITE_FILE") })
}

const port = Number(env("RUNNER_PORT"))

const runner = ClaudeConversationRunner.layer({
  make: ClaudeLocal.make,
  maxIdleTime: (process.env["MAX_IDLE"] ?? "5 minutes") as Duration.Input,
  conversation: ({ conversationId, idempotent }) =>
    Effect.sync(() => {
      process.stdout.write(`HOSTING ${conversationId}\n`)
      return {
        options: { binary: env("CLAUDE_BINARY"), cwd: env("CLAUDE_CWD"), requestTimeout: "60 seconds" },
        tools: process.env["APPROVAL_TOOL"] === "1"
          ? [idempotent(charge), notify, idempotent(transfer)]
          : [idempotent(charge), notify]
      }
    })
}).pipe(
  // One pool per runner: the spares it keeps serve the conversations its shards bring.
  Layer.provide(process.env["CLAUDE_POOL_SPARES"] === undefined ? Layer.empty : ClaudeProcessPool.layerFromEnv()),
  Layer.provide(ClaudeCluster.layerRunner({
    host: "127.0.0.1",
    port,
    drainTimeout: (process.env["DRAIN_TIMEOUT"] || undefined) as Duration.Input | undefined
  })),
  Layer.provide(ClaudeSessionStoreSql.layer),
  Layer.provide(Layer.merge(NodeSubprocess.layer, NodeSecretFile.layer({ directory: env("SECRETS_DIR") }))),
  Layer.provide(storage())
)

// SIGTERM/SIGINT interrupt the program, so the entities' finalizers stop their CLIs.
NodeRuntime.runMain(
  Effect.scoped(Effect.gen(function*() {
    yield* Layer.build(runner)
    process.stdout.write(`READY ${port}\n`)
    return yield* Effect.never
  }))
)
