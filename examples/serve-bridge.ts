/**
 * Serves in-process tools to the `claude` CLI (or any MCP client) through the loopback MCP bridge.
 * The MCP config, which holds the bearer token, is written to an owner-only temp file; the token is
 * never printed. Runs until Ctrl-C, then stops the server, removes the file and exits with 130
 * (Effect 4's `NodeRuntime.runMain` convention for a program interrupted by SIGINT).
 *
 *   npx tsx examples/serve-bridge.ts                            # Node >= 22.19
 *   bash scripts/with-node22.sh npx tsx examples/serve-bridge.ts  # any Node
 */
import { Console, Context, Effect, Layer, Ref, Schema } from "effect"
import * as NodeMcpBridge from "../src/layers/NodeMcpBridge.ts"
import * as NodeSecretFile from "../src/layers/NodeSecretFile.ts"
import * as McpBridge from "../src/services/McpBridge.ts"
import * as SecretFile from "../src/services/SecretFile.ts"
import * as Tool from "../src/services/Tool.ts"
import { runExample } from "./support/providers.ts"

// --- An application service the tools use: handlers get it from the context that sets them. ---

class Notes extends Context.Service<Notes, Ref.Ref<ReadonlyArray<string>>>()("examples/Notes") {}

const addNote = Tool.make("add_note", {
  description: "Stores a short note and returns how many notes there are",
  parameters: { text: Schema.String },
  handler: ({ text }) =>
    Effect.flatMap(Notes, (notes) => Ref.updateAndGet(notes, (all) => [...all, text])).pipe(
      Effect.map((all) => ({ stored: text, count: all.length }))
    )
})

const listNotes = Tool.make("list_notes", {
  description: "Lists every stored note",
  parameters: {},
  handler: () => Effect.flatMap(Notes, Ref.get)
})

const add = Tool.make("add", {
  description: "Adds two numbers",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

// --- Serve them until interrupted. ---

const program = Effect.gen(function*() {
  const bridge = yield* McpBridge.McpBridge
  const configPath = yield* SecretFile.writeScoped(McpBridge.renderMcpConfig(bridge.mcpConfig))
  const tools = yield* bridge.toolNames
  yield* Console.log(`MCP bridge "${bridge.serverName}" at ${bridge.url} serving: ${tools.join(", ")}`)
  yield* Console.log(`MCP config: ${configPath}`)
  yield* Console.log(
    `Use it with:\n  claude -p "Add 2 and 40, then store the result as a note" --mcp-config ${configPath} ` +
      `--strict-mcp-config --allowedTools "mcp__${bridge.serverName}__*"`
  )
  yield* Console.log("Press Ctrl-C to stop; the config file is removed on exit.")
  return yield* Effect.never
}).pipe(Effect.scoped)

const NotesLive = Layer.effect(Notes, Ref.make<ReadonlyArray<string>>([]))

const MainLive = Layer.mergeAll(
  NodeMcpBridge.layer({ tools: [addNote, listNotes, add] }),
  NodeSecretFile.layer()
).pipe(Layer.provide(NotesLive))

program.pipe(
  Effect.provide(MainLive),
  // After `provide`, so it is printed once the layer (the server) has been released too.
  Effect.ensuring(Console.log("Bridge stopped, config file removed.")),
  runExample
)
