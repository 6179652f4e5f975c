/**
 * Sends turns to a conversation hosted by the cluster's runners (start one or more with
 * `examples/cluster-runner.ts` first, on the same storage: `DATABASE_URL`, else the SQLite file
 * `CLUSTER_SQLITE_FILE`, default `./cluster.db`). This process hosts nothing and listens on no
 * port: the turns go to whichever runner owns the conversation's shard.
 *
 * Each turn carries a turn id the caller chooses. Sending a turn again with the same id — a retry
 * after a timeout, a second click — returns the stored reply: no second model call, no second
 * order. `CONVERSATION_ID` continues a conversation (default: a new one each run).
 *
 *   node --import tsx examples/cluster-client.ts
 */
import { Config, Console, Effect, Layer, Option, Redacted, Schema } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import { ClaudeCluster, ClaudeConversation } from "../src/cluster.ts"
import { SqliteClient } from "../src/session-store-sql.ts"
import { runExample } from "./support/providers.ts"

/** The shared storage, chosen as the runners choose it. */
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

const Receipt = Schema.Struct({ item: Schema.String, total: Schema.Number })

const program = Effect.gen(function*() {
  const id = yield* Config.String("CONVERSATION_ID").pipe(Config.withDefault(`coffee-${crypto.randomUUID()}`))
  const conversations = yield* ClaudeConversation.client
  const conversation = yield* conversations(id)
  yield* Console.log(`conversation ${id}`)

  const chat = (turnId: string, text: string) =>
    Effect.gen(function*() {
      yield* Console.log(`you [${turnId}]: ${text}`)
      const reply = yield* conversation.chat(text, { turnId })
      yield* Console.log(`claude [${turnId}]: ${reply}`)
      return reply
    })

  yield* chat("turn-1", "How much is a flat white?")
  const ordered = yield* chat("turn-2", "Order one for me, please.")
  // The same turn id again: the cluster answers from its storage; nothing runs twice.
  const again = yield* chat("turn-2", "Order one for me, please.")
  yield* Console.log(`turn-2 sent twice: ${again === ordered ? "the same reply, one order" : "different replies"}`)
  // `ask` is decoded here, on the caller's side, with the caller's schema.
  const receipt = yield* conversation.ask("My receipt, please.", Receipt, { turnId: "turn-3" })
  yield* Console.log(`receipt [turn-3]: ${receipt.item}, ${receipt.total.toFixed(2)} EUR`)
  const usage = yield* conversation.usage
  yield* Console.log(`usage: ${usage.inputTokens} in / ${usage.outputTokens} out tokens`)
})

program.pipe(
  Effect.provide(ClaudeCluster.layerClient().pipe(Layer.provide(storage))),
  runExample
)
