/**
 * ClaudeLocal:
 * 1. Library overhead per turn: a `chat` on ClaudeLocal with a stub `claude` (a tiny script that
 *    prints a canned result) against spawning that same stub directly with node:child_process.
 * 2. Model round trips per tool-using turn with the real `claude` binary against a fake Messages
 *    API, with the bridge's `alwaysLoad` on (the library's setting) and off (tools deferred behind
 *    ToolSearch), and the wall time of such a turn.
 */
import { Context, Effect, Exit, Layer, Schema, Scope } from "effect"
import { spawn } from "node:child_process"
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import * as ClaudeLocal from "../src/layers/ClaudeLocal.js"
import * as NodeSecretFile from "../src/layers/NodeSecretFile.js"
import * as NodeSubprocess from "../src/layers/NodeSubprocess.js"
import { ChatClient } from "../src/services/ChatClient.js"
import { SecretFile } from "../src/services/SecretFile.js"
import * as Tool from "../src/services/Tool.js"
import { claudeBinary, sandbox } from "../test/support/claudeCli.js"
import * as Fake from "../test/support/FakeMessagesApi.js"
import { compare, median } from "./util.js"

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
  Layer.buildWithScope(
    ClaudeLocal.layer(options).pipe(Layer.provide(NodeSubprocess.layer), Layer.provide(secretFile)),
    scope
  ).pipe(Effect.map((ctx) => Context.get(ctx, ChatClient)))

const overhead = Effect.gen(function*() {
  const scope = yield* Scope.make()
  const chat = yield* buildClient({ binary: stub, cwd: dir }, scope, NodeSecretFile.layer({ directory: dir }))
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
      Effect.map(SecretFile, (real) => ({
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

const main = Effect.gen(function*() {
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
