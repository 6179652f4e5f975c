/**
 * ClaudeAgent costs, with the real `claude` binary against the same fake Messages API on 127.0.0.1:
 * - one tool-using turn: ClaudeAgent (tools in-process over the CLI's control channel) vs
 *   ClaudeLocal (tools over the loopback MCP bridge), each on a client reused across turns;
 * - turns 2..N of a conversation: one CLI kept alive with streaming input (the SDK used directly)
 *   vs a fresh CLI per turn resuming the session (what ClaudeAgent does).
 */
import type { SDKUserMessage } from "@anthropic-ai/claude-agent-sdk"
import { query } from "@anthropic-ai/claude-agent-sdk"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { performance } from "node:perf_hooks"
import * as ClaudeAgent from "../src/layers/ClaudeAgent.js"
import * as ClaudeLocal from "../src/layers/ClaudeLocal.js"
import { ChatClient, type ChatClientService } from "../src/services/ChatClient.js"
import * as Tool from "../src/services/Tool.js"
import { claudeBinary, sandbox } from "../test/support/claudeCli.js"
import * as Fake from "../test/support/FakeMessagesApi.js"
import { compare, median } from "./util.js"

const add = Tool.make("add", {
  description: "Adds two numbers",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

const scope = Effect.runSync(Scope.make())
const inScope = <A, E>(effect: Effect.Effect<A, E, Scope.Scope>) => Effect.runPromise(Scope.extend(effect, scope))

// A tool call whenever the last message is the user's question, then the answer.
const api = await inScope(Fake.make((req) => {
  const results = Fake.toolResults(req)
  if (results.length > 0) return { text: `The sum is ${results[0]!.content}.` }
  if (Fake.lastUserText(req).includes("add")) return { toolUses: [{ name: "mcp__gtb__add", input: { a: 2, b: 40 } }] }
  return { text: `ok: ${Fake.lastUserText(req).slice(-20)}` }
}))
const box = await inScope(sandbox(api.url))

const client = (layer: Layer.Layer<ChatClient>) =>
  inScope(Layer.build(layer).pipe(Effect.map((ctx) => Context.get(ctx, ChatClient))))
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

// --- turns 2..N: kept-alive CLI vs fresh CLI per turn ---

const Turns = 6

/** A prompt iterable the bench pushes user messages into. */
const inbox = () => {
  const queue: Array<SDKUserMessage> = []
  let wake: (() => void) | undefined
  let done = false
  const iterable: AsyncIterable<SDKUserMessage> = {
    async *[Symbol.asyncIterator]() {
      while (!done) {
        if (queue.length === 0) await new Promise<void>((r) => (wake = r))
        while (queue.length > 0) yield queue.shift()!
      }
    }
  }
  return {
    iterable,
    push: (text: string) => {
      queue.push({ type: "user", message: { role: "user", content: text }, parent_tool_use_id: null })
      wake?.()
    },
    end: () => {
      done = true
      wake?.()
    }
  }
}

const env: Record<string, string> = { PATH: process.env.PATH ?? "", ...box.env }

const keptAlive = async (): Promise<Array<number>> => {
  const input = inbox()
  const q = query({
    prompt: input.iterable,
    options: { cwd: box.cwd, env, settingSources: [], strictMcpConfig: true, permissionMode: "default" }
  })
  const times: Array<number> = []
  const iterator = q[Symbol.asyncIterator]()
  for (let i = 1; i <= Turns; i++) {
    const t = performance.now()
    input.push(`turn ${i}`)
    for (;;) {
      const next = await iterator.next()
      if (next.done === true) throw new Error("the CLI ended early")
      if (next.value.type === "result") break
    }
    times.push(performance.now() - t)
  }
  input.end()
  q.close()
  return times.slice(1)
}

const freshPerTurn = async (): Promise<Array<number>> => {
  const chat = await client(ClaudeAgent.layer({ cwd: box.cwd, env: box.env }))
  const times: Array<number> = []
  for (let i = 1; i <= Turns; i++) {
    const t = performance.now()
    await turn(chat, `turn ${i}`)
    times.push(performance.now() - t)
  }
  return times.slice(1)
}

const kept: Array<number> = []
const fresh: Array<number> = []
for (let round = 0; round < 3; round++) {
  fresh.push(...(await freshPerTurn()))
  kept.push(...(await keptAlive()))
}
const mk = median(kept)
const mf = median(fresh)
console.log(
  `turns 2..${Turns}, kept-alive CLI (streaming input) vs fresh CLI per turn (resume): ` +
    `${mk.toFixed(1)} ms vs baseline ${mf.toFixed(1)} ms → ratio ${(mk / mf).toFixed(2)}×`
)

await Effect.runPromise(Scope.close(scope, Exit.void))
