/**
 * A runner of a cluster of Claude Code conversations (`effect-chat-bridge/cluster`): it hosts the
 * conversations whose shards it owns, each on a kept-alive `claude` CLI (ClaudeLocal) with two
 * tools of the coffee shop — `place_order`, a side effect wrapped in `idempotent` so a turn
 * delivered again after a failover does not order twice, and `menu`, a read that may run again.
 * Start as many as you like, on one machine or many; `examples/cluster-client.ts` sends them
 * turns. Needs Claude Code installed and logged in (or ANTHROPIC_API_KEY); CLAUDE_BINARY points
 * at another binary, CLAUDE_CWD is the CLI's working directory.
 *
 * Storage, shared by every runner and client: `DATABASE_URL` (PostgreSQL, for many machines),
 * else the SQLite file `CLUSTER_SQLITE_FILE` (default `./cluster.db`, for processes on one
 * machine). `RUNNER_HOST` (default 127.0.0.1) and `RUNNER_PORT` (default 34431) are where the
 * other members reach this runner. Stop it with Ctrl-C: its conversations' CLIs stop with it.
 *
 *   RUNNER_PORT=34431 node --import tsx examples/cluster-runner.ts
 */
import { Config, Console, Effect, Layer, Option, Redacted, Schema } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import { ClaudeCluster, ClaudeConversationRunner } from "../src/cluster.ts"
import { ClaudeLocal, ClaudeProcessPool, NodeSecretFile, NodeSubprocess, Tool } from "../src/index.ts"
import { ClaudeSessionStoreSql, SqliteClient } from "../src/session-store-sql.ts"
import { exampleClaudeBinary, runExample } from "./support/providers.ts"
import { logged } from "./support/weatherTools.ts"

const prices: Record<string, number> = { "flat white": 3.5, espresso: 2.2, "oat latte": 4.1 }

// A read: running it twice is harmless, so it stays a plain tool.
const menu = Tool.make("menu", {
  description: "The price of a drink, in euros",
  parameters: { item: Schema.String },
  handler: ({ item }) => Effect.succeed(String(prices[item.toLowerCase()] ?? "not on the menu"))
})

let orders = 0
// A side effect: wrapped in `idempotent` below, so a redelivered turn replays its stored result.
const placeOrder = Tool.make("place_order", {
  description: "Places an order for a drink and gives its order number",
  parameters: { item: Schema.String },
  handler: ({ item }) => Effect.sync(() => `order #${++orders}: one ${item}`)
})

/** The shared storage: PostgreSQL when DATABASE_URL is set, else a SQLite file. */
const storage: Layer.Layer<SqlClient, unknown> = Layer.unwrap(Effect.gen(function*() {
  const url = yield* Config.option(Config.Redacted("DATABASE_URL"))
  const file = yield* Config.String("CLUSTER_SQLITE_FILE").pipe(Config.withDefault("./cluster.db"))
  // @effect/sql-pg is loaded only for PostgreSQL: on SQLite it need not be installed.
  return Option.isSome(url) && Redacted.value(url.value) !== ""
    ? Layer.unwrap(
      Effect.map(Effect.promise(() => import("@effect/sql-pg")), ({ PgClient }) => PgClient.layer({ url: url.value }))
    )
    : SqliteClient.layer({ filename: file })
}))

const program = Effect.gen(function*() {
  const host = yield* Config.String("RUNNER_HOST").pipe(Config.withDefault("127.0.0.1"))
  const port = yield* Config.Port("RUNNER_PORT").pipe(Config.withDefault(34431))
  const binary = exampleClaudeBinary()
  const cwd = Option.getOrUndefined(yield* Config.option(Config.String("CLAUDE_CWD")))

  const conversations = ClaudeConversationRunner.layer({
    make: ClaudeLocal.make,
    // Called once per conversation, on the runner that activates it (again after a failover).
    conversation: ({ conversationId, idempotent }) =>
      Effect.as(Console.log(`hosting ${conversationId}`), {
        options: { binary, cwd, systemPrompt: "You are a coffee shop's assistant. Answer in one sentence." },
        tools: [idempotent(logged(placeOrder)), logged(menu)]
      })
  })

  yield* Layer.build(
    conversations.pipe(
      Layer.provide(ClaudeCluster.layerRunner({ host, port })),
      // The cluster's records and the conversations' transcripts share one database.
      Layer.provide(ClaudeSessionStoreSql.layer),
      Layer.provide(Layer.mergeAll(
        NodeSubprocess.layer,
        NodeSecretFile.layer(),
        // At most 8 live CLIs on this runner (~240 MiB each); more conversations wait for one.
        ClaudeProcessPool.layer({ maxLiveProcesses: 8 })
      )),
      Layer.provide(storage)
    )
  )
  yield* Console.log(`runner ready on ${host}:${port}`)
  return yield* Effect.never
})

// Ctrl-C (or SIGTERM) interrupts the program and the runner drains: running turns get up to
// `drainTimeout` (default 60 s) to finish, any still running is handed back unanswered for another
// runner, and then the conversations' finalizers stop their CLIs.
program.pipe(Effect.scoped, runExample)
