/**
 * A Claude Code conversation that outlives its machine: turn 1 runs under one config dir, turn 2
 * on "another machine" — a new client with an empty config dir of its own — which resumes the
 * session from a SQLite session store (set SESSION_STORE to keep the file; PostgreSQL works the
 * same through `@effect/sql-pg`). Then the conversation is exported as one value and continued
 * by a third client from that snapshot alone. Needs Claude Code installed and logged in (or
 * ANTHROPIC_API_KEY); CLAUDE_BINARY points at another binary.
 *
 *   node --import tsx examples/session-store.ts
 */
import { Console, Effect, Layer, Option, Schema } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ChatClient, ClaudeCodeOptions, ClaudeLocal } from "../src/index.ts"
import { ClaudeSessionStoreSql } from "../src/session-store-sql.ts"
import { exampleClaudeBinary, runExample } from "./support/providers.ts"

/** A machine of its own: an empty config dir, removed with the scope. */
const machine = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "machine-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** A client on `configDir`, continuing `from` (a session id or a snapshot) when given. */
const client = (configDir: string, from: { resume?: string; snapshot?: ClaudeCodeOptions.ClaudeSnapshot } = {}) =>
  ClaudeLocal.layerFromEnv({
    binary: exampleClaudeBinary(),
    systemPrompt: "Answer in one short sentence.",
    projectKey: "example",
    env: { CLAUDE_CONFIG_DIR: configDir },
    ...from
  })

/** One turn on a client of its own; gives what the turn left behind. */
const turn = (layer: Layer.Layer<ChatClient.ChatClient | ClaudeCodeOptions.ClaudeSession, unknown>, text: string) =>
  Effect.gen(function*() {
    const chat = yield* ChatClient.ChatClient
    const session = yield* ClaudeCodeOptions.ClaudeSession
    yield* Console.log(`you: ${text}`)
    yield* Console.log(`claude: ${yield* chat.chat(text)}`)
    return { sessionId: yield* session.sessionId, snapshot: yield* session.snapshot }
  }).pipe(Effect.provide(Layer.fresh(layer)))

const program = Effect.gen(function*() {
  const first = yield* turn(client(yield* machine), "My favourite colour is teal. Remember it.")
  const sessionId = Option.getOrElse(first.sessionId, () => "")
  yield* Console.log(`-- session ${sessionId} is in the store; another machine resumes it`)
  const second = yield* turn(client(yield* machine, { resume: sessionId }), "What is my favourite colour?")
  // A snapshot is plain JSON: keep it anywhere, continue it anywhere.
  const json = Schema.encodeSync(Schema.fromJsonString(ClaudeCodeOptions.ClaudeSnapshot))(second.snapshot)
  yield* Console.log(`-- snapshot: ${second.snapshot.transcript.length} entries, ${json.length} bytes of JSON`)
  const snapshot = Schema.decodeSync(Schema.fromJsonString(ClaudeCodeOptions.ClaudeSnapshot))(json)
  yield* turn(client(yield* machine, { snapshot }), "And what did I ask you just before?")
})

Effect.gen(function*() {
  // The store is what the machines share; a temporary file unless SESSION_STORE names one.
  const filename = process.env["SESSION_STORE"] ?? path.join(yield* machine, "sessions.db")
  yield* program.pipe(Effect.provide(ClaudeSessionStoreSql.layerSqlite({ filename })))
}).pipe(Effect.scoped, runExample)
