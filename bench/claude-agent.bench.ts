/**
 * ClaudeAgent costs, with the real `claude` binary against the same fake Messages API on 127.0.0.1:
 * - one tool-using turn: ClaudeAgent (tools in-process over the CLI's control channel) vs
 *   ClaudeLocal (tools over the loopback MCP bridge), each on a client reused across turns;
 * - later turns of a conversation (plain, and tool-using): ClaudeAgent with `keepAlive: true` (one
 *   CLI kept alive, streaming input) vs the default (a fresh CLI per turn resuming the session).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as ClaudeAgent from "../src/layers/ClaudeAgent.ts"
import * as ClaudeLocal from "../src/layers/ClaudeLocal.ts"
import { ChatClient, type ChatClientService } from "../src/services/ChatClient.ts"
import * as Tool from "../src/services/Tool.ts"
import { claudeBinary, sandbox } from "../test/support/claudeCli.ts"
import * as Fake from "../test/support/FakeMessagesApi.ts"
import { compare } from "./util.ts"

const add = Tool.make("add", {
  description: "Adds two numbers",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

const scope = Effect.runSync(Scope.make())
const inScope = <A, E>(effect: Effect.Effect<A, E, Scope.Scope>) => Effect.runPromise(Scope.provide(effect, scope))

// A tool call whenever the prompt asks to add, then the answer.
const api = await inScope(Fake.make((req) => {
  const results = Fake.toolResults(req)
  if (results.length > 0) return { text: `The sum is ${results[0]!.content}.` }
  if (Fake.lastUserLine(req).includes("add")) return { toolUses: [{ name: "mcp__gtb__add", input: { a: 2, b: 40 } }] }
  return { text: `ok: ${Fake.lastUserLine(req).slice(-20)}` }
}))
const box = await inScope(sandbox(api.url))

const client = <E>(layer: Layer.Layer<ChatClient, E>) =>
  // Fresh: on Effect 4 a layer value built twice is memoized, and each call here is a new client.
  inScope(Layer.build(Layer.fresh(Layer.orDie(layer))).pipe(Effect.map((ctx) => Context.get(ctx, ChatClient))))
const turn = (chat: ChatClientService, prompt: string) => Effect.runPromise(chat.chat(prompt))

const agent = await client(ClaudeAgent.layer({ cwd: box.cwd, env: box.env }))
const local = await client(ClaudeLocal.layerNode({ binary: claudeBinary, cwd: box.cwd, env: box.env }))
await Effect.runPromise(agent.setTools([add]))
await Effect.runPromise(local.setTools([add]))

await compare(
  "one tool-using turn, ClaudeAgent (in-process tools) vs ClaudeLocal (MCP bridge)",
  () => turn(agent, "Please add 2 and 40"),
  () => turn(local, "Please add 2 and 40"),
  { rounds: 3, perRound: 4 }
)

// --- later turns of a conversation: one CLI kept alive vs a fresh CLI per turn ---

// Each client's warm-up turns include its first (the kept-alive CLI's start-up): the samples are
// later turns only.
const kept = await client(ClaudeAgent.layer({ cwd: box.cwd, env: box.env, keepAlive: true }))
const fresh = await client(ClaudeAgent.layer({ cwd: box.cwd, env: box.env }))
await Effect.runPromise(kept.setTools([add]))
await Effect.runPromise(fresh.setTools([add]))

await compare(
  "a later plain turn, ClaudeAgent keepAlive: true (one CLI, streaming input) vs false (fresh CLI, resume)",
  () => turn(kept, "hello again"),
  () => turn(fresh, "hello again"),
  { rounds: 3, perRound: 5 }
)
await compare(
  "a later tool-using turn, ClaudeAgent keepAlive: true vs false",
  () => turn(kept, "Please add 2 and 40"),
  () => turn(fresh, "Please add 2 and 40"),
  { rounds: 3, perRound: 4 }
)

await Effect.runPromise(Scope.close(scope, Exit.void))
