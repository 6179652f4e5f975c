/**
 * ClaudeLocal:
 * 1. Library overhead per turn: a `chat` on ClaudeLocal with a stub `claude` (a tiny script that
 *    prints a canned result) against spawning that same stub directly with node:child_process.
 * 2. Model round trips per tool-using turn with the real `claude` binary against a fake Messages
 *    API, with the bridge's `alwaysLoad` on (the library's setting) and off (tools deferred behind
 *    ToolSearch), and the wall time of such a turn.
 * 3. `keepAlive` (one CLI per conversation, stream-json input) vs a fresh `claude -p --resume` per
 *    turn, real binary against the fake API: a later plain turn, a later tool-using turn, the first
 *    turn of a client built with `prewarm` vs a cold one, and the resident memory of a kept CLI.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { spawn } from "node:child_process"
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import * as UserMessage from "../src/internal/claude/userMessage.ts"
import * as ClaudeLocal from "../src/layers/ClaudeLocal.ts"
import * as NodeSecretFile from "../src/layers/NodeSecretFile.ts"
import * as NodeSubprocess from "../src/layers/NodeSubprocess.ts"
import { ChatClient } from "../src/services/ChatClient.ts"
import { SecretFile } from "../src/services/SecretFile.ts"
import * as Tool from "../src/services/Tool.ts"
import { claudeBinary, claudeProcessesIn, sandbox } from "../test/support/claudeCli.ts"
import * as Fake from "../test/support/FakeMessagesApi.ts"
import { compare, median, rssMiB, untilIdle } from "./util.ts"

const dir = mkdtempSync(join(tmpdir(), "ecb-bench-"))
const stub = join(dir, "claude")
writeFileSync(
  stub,
  `#!/usr/bin/env node
process.stdin.resume()
process.stdin.on("end", () => {
  console.log('{"type":"system","subtype":"init","mcp_servers":[]}')
  console.log('{"type":"result","is_error":false,"result":"ok","session_id":"s","usage":{"input_tokens":1,"output_tokens":1}}')
})
`
)
chmodSync(stub, 0o755)

const spawnDirect = () =>
  new Promise<void>((resolve, reject) => {
    const child = spawn(stub, ["-p", "--output-format", "stream-json", "--verbose"], { cwd: dir, detached: true })
    let out = ""
    child.stdout.on("data", (c: Buffer) => (out += c.toString()))
    child.on("error", reject)
    child.on("close", () => (out.includes("\"result\"") ? resolve() : reject(new Error(out))))
    child.stdin.end("hello")
  })

const add = Tool.make("add", {
  description: "Adds two numbers",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

const buildClient = (options: ClaudeLocal.Options, scope: Scope.Scope, secretFile: Layer.Layer<SecretFile>) =>
  // Fresh: on Effect 4 a layer value built twice is memoized, and each call here is a new client.
  Layer.buildWithScope(
    Layer.fresh(
      ClaudeLocal.layer(options).pipe(Layer.provide(NodeSubprocess.layer), Layer.provide(secretFile), Layer.orDie)
    ),
    scope
  ).pipe(Effect.map((ctx) => Context.get(ctx, ChatClient)))

const overhead = Effect.gen(function*() {
  const scope = yield* Scope.make()
  const chat = yield* buildClient(
    { binary: stub, cwd: dir, cliVersion: "2.1.332" },
    scope,
    NodeSecretFile.layer({ directory: dir })
  )
  yield* Effect.promise(() =>
    compare(
      "ClaudeLocal turn with a stub claude vs spawning the stub directly",
      () => Effect.runPromise(chat.chat("hello")),
      spawnDirect,
      { rounds: 4, perRound: 15 }
    )
  )
  yield* Scope.close(scope, Exit.void)
})

/** A fake model that behaves like a real one: calls the tool if it has it, searches for it if not. */
const roundTrips = (alwaysLoad: boolean) =>
  Effect.scoped(Effect.gen(function*() {
    const api = yield* Fake.make((req) => {
      const names = (req.body.tools ?? []).map((t) => t.name)
      const results = Fake.toolResults(req)
      if (results.some((r) => r.content === "5")) return { text: "The answer is 5." }
      if (names.includes("mcp__gtb__add")) return { toolUses: [{ name: "mcp__gtb__add", input: { a: 2, b: 3 } }] }
      if (names.includes("ToolSearch")) {
        return { toolUses: [{ name: "ToolSearch", input: { query: "select:mcp__gtb__add", max_results: 5 } }] }
      }
      return { text: "I have no add tool." }
    })
    const box = yield* sandbox(api.url)
    const secretFile = Layer.effect(
      SecretFile,
      Effect.map(Effect.service(SecretFile), (real) => ({
        writeScoped: (contents: string) =>
          real.writeScoped(alwaysLoad ? contents : contents.replace("\"alwaysLoad\": true", "\"alwaysLoad\": false"))
      }))
    ).pipe(Layer.provide(NodeSecretFile.layer({ directory: box.secrets })))
    // A fresh client (fresh session) per sample: a resumed session already has the tool loaded.
    const trips: Array<number> = []
    const times: Array<number> = []
    const answers: Array<string> = []
    for (let i = 0; i < 4; i++) {
      const scope = yield* Scope.make()
      const chat = yield* buildClient({ binary: claudeBinary, cwd: box.cwd, env: box.env }, scope, secretFile)
      yield* chat.setTools([add])
      const before = api.messageRequests().length
      const started = performance.now()
      answers.push(yield* chat.chat("What is 2 + 3? Use the add tool."))
      if (i > 0) times.push(performance.now() - started) // the first run warms the binary's page cache
      trips.push(api.messageRequests().length - before)
      yield* Scope.close(scope, Exit.void)
    }
    return { trips: median(trips), ms: median(times), answer: answers.at(-1) }
  }))

const untilIdleIn = (cwd: string) => Effect.promise(() => untilIdle(() => claudeProcessesIn(cwd)))

/**
 * The CLI's own share of a first turn, without the library: the argv and environment of a CLI the
 * library prewarmed, run directly with node:child_process, the first message written once it is
 * idle vs right after spawning it. A wrapper cannot beat this ratio.
 */
const cliFloor = (cwd: string, client: (options: ClaudeLocal.Options) => Effect.Effect<unknown, never, Scope.Scope>) =>
  Effect.gen(function*() {
    const { argv, env } = yield* Effect.scoped(Effect.gen(function*() {
      yield* client({ prewarm: true })
      yield* untilIdleIn(cwd)
      const pid = claudeProcessesIn(cwd)[0]!
      const read = (file: string) => readFileSync(`/proc/${pid}/${file}`, "utf8").split("\0").filter((s) => s !== "")
      return {
        argv: read("cmdline"),
        env: Object.fromEntries(
          read("environ").map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)])
        )
      }
    }))
    const firstTurn = (warm: boolean) =>
      Effect.promise(async () => {
        const child = spawn(argv[0]!, argv.slice(1), { cwd, env, stdio: ["pipe", "pipe", "ignore"] })
        let out = ""
        const result = new Promise<void>((resolve, reject) => {
          child.stdout.on("data", (c: Buffer) => {
            out += c.toString()
            if (out.includes("\"type\":\"result\"")) resolve()
          })
          child.on("exit", () => reject(new Error(`claude exited before its result: ${out.slice(-500)}`)))
        })
        if (warm) await untilIdle(() => (child.pid === undefined ? [] : [child.pid]))
        const started = performance.now()
        child.stdin.write(`${JSON.stringify(UserMessage.make({ prompt: "hello" }, true))}\n`)
        await result
        const ms = performance.now() - started
        child.removeAllListeners("exit")
        const exited = new Promise((resolve) => child.once("exit", resolve))
        child.stdin.end()
        child.kill()
        await exited
        return ms
      })
    const warm: Array<number> = []
    const cold: Array<number> = []
    for (let i = 0; i < 5; i++) {
      cold.push(yield* firstTurn(false))
      warm.push(yield* firstTurn(true))
    }
    return { warm: median(warm), cold: median(cold) }
  })

const keepAlive = Effect.scoped(Effect.gen(function*() {
  // A tool call whenever the prompt asks to add, then the answer.
  const api = yield* Fake.make((req) => {
    const results = Fake.toolResults(req)
    if (results.length > 0) return { text: `The sum is ${results[0]!.content}.` }
    if (Fake.lastUserLine(req).includes("add")) return { toolUses: [{ name: "mcp__gtb__add", input: { a: 2, b: 40 } }] }
    return { text: `ok: ${Fake.lastUserLine(req).slice(-20)}` }
  })
  const box = yield* sandbox(api.url)
  const secretFile = NodeSecretFile.layer({ directory: box.secrets })
  const base = { binary: claudeBinary, cwd: box.cwd, env: box.env }
  // First turn: a client built with prewarm, once its CLI has finished starting (standing for the
  // time between building the layer and the first prompt; not timed), vs a client whose CLI
  // starts with the turn. Both know the CLI's version, so neither runs `claude --version`.
  const firstTurn = (options: ClaudeLocal.Options) =>
    Effect.gen(function*() {
      const s = yield* Scope.make()
      const client = yield* buildClient({ ...base, cliVersion: "2.1.332", ...options }, s, secretFile)
      yield* untilIdleIn(box.cwd)
      const calls = api.messageRequests().length
      const started = performance.now()
      yield* client.chat("hello")
      const ms = performance.now() - started
      // One model call, or the sample measures something else (a script matching the CLI's reminders).
      if (api.messageRequests().length !== calls + 1) {
        return yield* Effect.die(
          new Error(`a first turn made ${api.messageRequests().length - calls} model calls, not 1`)
        )
      }
      yield* Scope.close(s, Exit.void)
      return ms
    })
  const warm: Array<number> = []
  const cold: Array<number> = []
  for (let i = 0; i < 5; i++) {
    cold.push(yield* firstTurn({ keepAlive: true }))
    warm.push(yield* firstTurn({ prewarm: true }))
  }
  const ratio = median(warm) / median(cold)
  console.log(
    `the first turn, ClaudeLocal prewarm vs cold start: ${median(warm).toFixed(0)} ms vs baseline ${
      median(cold).toFixed(0)
    } ms → ratio ${ratio.toFixed(2)}×  (target ≤ 0.3×: ${ratio <= 0.3 ? "met" : "MISSED"})`
  )
  // Verbatim prompts (the default) skip the CLI's turn-start attachment pass; trusted ones get it.
  const verbatim: Array<number> = []
  const trusted: Array<number> = []
  for (let i = 0; i < 5; i++) {
    trusted.push(yield* firstTurn({ prewarm: true, trustedPrompts: true }))
    verbatim.push(yield* firstTurn({ prewarm: true }))
  }
  console.log(
    `the first turn, prewarmed, verbatim prompt (default) vs trustedPrompts: ${median(verbatim).toFixed(0)} ms vs ` +
      `baseline ${median(trusted).toFixed(0)} ms → ratio ${(median(verbatim) / median(trusted)).toFixed(2)}×`
  )
  const floor = yield* cliFloor(
    box.cwd,
    (options) => Effect.flatMap(Effect.scope, (s) => buildClient({ ...base, ...options }, s, secretFile))
  )
  console.log(
    `the first turn, the CLI alone (the library's argv and environment, node:child_process) started ahead vs with the message: ${
      floor.warm.toFixed(0)
    } ms vs baseline ${floor.cold.toFixed(0)} ms → ratio ${
      (floor.warm / floor.cold).toFixed(2)
    }×; library share of the prewarmed first turn ${(median(warm) - floor.warm).toFixed(0)} ms`
  )
  const scope = yield* Scope.make()
  const kept = yield* buildClient({ ...base, keepAlive: true }, scope, secretFile)
  const fresh = yield* buildClient(base, scope, secretFile)
  yield* kept.setTools([add])
  yield* fresh.setTools([add])
  let keptTurns = 0
  const turn = (client: typeof kept, prompt: string) => () => {
    if (client === kept) keptTurns++
    return Effect.runPromise(client.chat(prompt))
  }
  // compare's warm-up turns include each client's first: the samples are later turns only.
  yield* Effect.promise(() =>
    compare(
      "a later plain turn, ClaudeLocal keepAlive (one CLI, stream-json input) vs fresh CLI per turn (--resume)",
      turn(kept, "hello again"),
      turn(fresh, "hello again"),
      { rounds: 3, perRound: 5, target: 0.10 }
    )
  )
  yield* Effect.promise(() =>
    compare(
      "a later tool-using turn, ClaudeLocal keepAlive vs fresh CLI per turn",
      turn(kept, "Please add 2 and 40"),
      turn(fresh, "Please add 2 and 40"),
      { rounds: 3, perRound: 4, target: 0.15 }
    )
  )
  // Only the kept CLI runs now (the fresh client's ended with its turn).
  const pids = claudeProcessesIn(box.cwd)
  console.log(
    `resident memory of a kept-alive claude CLI (after ${keptTurns} turns on it): ${
      rssMiB(pids).toFixed(0)
    } MiB over ${pids.length} process(es)`
  )
  yield* Scope.close(scope, Exit.void)
}))

const main = Effect.gen(function*() {
  yield* keepAlive
  yield* overhead
  const on = yield* roundTrips(true)
  const off = yield* roundTrips(false)
  console.log(
    `model round trips per tool-using turn (real claude ${"2.1.332"}): alwaysLoad on ${on.trips} (${
      on.ms.toFixed(0)
    } ms, "${on.answer}")` +
      ` vs off ${off.trips} (${off.ms.toFixed(0)} ms, "${off.answer}") → ratio ${
        (on.trips / off.trips).toFixed(2)
      }× round trips, ${(on.ms / off.ms).toFixed(2)}× time`
  )
})

Effect.runPromise(main).finally(() => rmSync(dir, { recursive: true, force: true }))
