/**
 * Spare CLIs: the first turn of a brand-new conversation (`keepAlive`, one tool call), real
 * `claude` binary against the fake Messages API, for both Claude providers:
 * - ClaudeLocal: the conversation claims a spare (started and idle beforehand), hands it its
 *   bridge run with `mcp_set_servers` and sends its first message;
 * - ClaudeAgent: the conversation claims a spare the SDK's `prewarm()` started (`claim()`, then
 *   its own tool server with `setMcpServers`) and sends its first message;
 * - baseline (each): the same pool without spares — the first turn starts its CLI cold.
 * ClaudeLocal passes `cliVersion` and ClaudeAgent runs the SDK's own binary, so neither runs a
 * `claude --version` probe first. `SPARES_BENCH_PROVIDERS=local` (or `agent`) runs one of them.
 * Rounds alternate candidate and baseline so both see the same load. Reports the median
 * first-turn time of both and their ratio (target ≤ 0.3×, that of a prewarmed conversation), and
 * the peak resident memory of all CLIs (the conversation's and the spares') against the pool's
 * budget: its bound × the RSS of one kept CLI × 1.2, as `claude-pool.bench.ts` counts it.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { readdirSync, readFileSync, readlinkSync } from "node:fs"
import { performance } from "node:perf_hooks"
import { PinnedVersion } from "../src/internal/claude/cliVersion.ts"
import * as ClaudeAgent from "../src/layers/ClaudeAgent.ts"
import * as ClaudeLocal from "../src/layers/ClaudeLocal.ts"
import * as NodeSecretFile from "../src/layers/NodeSecretFile.ts"
import * as NodeSubprocess from "../src/layers/NodeSubprocess.ts"
import { ChatClient } from "../src/services/ChatClient.ts"
import * as Pool from "../src/services/ClaudeProcessPool.ts"
import * as Tool from "../src/services/Tool.ts"
import { claudeBinary, type Sandbox, sandbox } from "../test/support/claudeCli.ts"
import * as Fake from "../test/support/FakeMessagesApi.ts"
import { median, rssMiB, untilIdle } from "./util.ts"

const Rounds = 6
const Target = 0.3
const MaxLive = 4

const add = Tool.make("add", {
  description: "Adds two numbers",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

/**
 * Pids of live claude CLIs working inside `dir`: a parked ClaudeAgent spare works in a parking
 * folder under the config home, not in the session's cwd.
 */
const claudeProcessesUnder = (dir: string): Array<number> => {
  const pids: Array<number> = []
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (!readlinkSync(`/proc/${entry}/cwd`).startsWith(`${dir}/`)) continue
      if (!readFileSync(`/proc/${entry}/cmdline`, "utf8").includes("claude")) continue
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8")
      if (!stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) pids.push(Number(entry))
    } catch {
      // The process went away while we looked.
    }
  }
  return pids
}

/** A kept-alive client of one provider on `pool`, in `box`. */
type ClientLayer = (box: Sandbox, pool: Pool.ClaudeProcessPoolService) => Layer.Layer<ChatClient, unknown>

const providers: Record<string, ClientLayer> = {
  local: (box, pool) =>
    ClaudeLocal.layer({
      binary: claudeBinary,
      cwd: box.cwd,
      env: box.env,
      keepAlive: true,
      // Without it each new client's first turn first runs `claude --version` (a CLI start of
      // its own, spare or not): a server that starts many conversations passes it.
      cliVersion: PinnedVersion,
      requestTimeout: "10 minutes"
    }).pipe(
      Layer.provide(NodeSubprocess.layer),
      Layer.provide(NodeSecretFile.layer({ directory: box.secrets })),
      Layer.provide(Layer.succeed(Pool.ClaudeProcessPool, pool))
    ),
  agent: (box, pool) =>
    ClaudeAgent.layer({ cwd: box.cwd, env: box.env, keepAlive: true, requestTimeout: "10 minutes" }).pipe(
      Layer.provide(Layer.succeed(Pool.ClaudeProcessPool, pool))
    )
}

const measure = Effect.fnUntraced(function*(name: string, clientLayer: ClientLayer) {
  const api = yield* Fake.make((req) => {
    const results = Fake.toolResults(req)
    if (results.length > 0) return { text: `The sum is ${results[0]!.content}.` }
    return { toolUses: [{ name: "mcp__gtb__add", input: { a: 2, b: 40 } }] }
  })
  const box = yield* sandbox(api.url)
  const cliPids = () => claudeProcessesUnder(box.dir)

  /** A new conversation on `pool`: the time of its first turn (the client is built beforehand). */
  const firstTurn = (pool: Pool.ClaudeProcessPoolService) =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const chat = yield* Layer.buildWithScope(Layer.fresh(clientLayer(box, pool)), scope).pipe(
        Effect.map((ctx) => Context.get(ctx, ChatClient))
      )
      yield* chat.setTools([add])
      const started = performance.now()
      const answer = yield* chat.chat("please add 2 and 40")
      const millis = performance.now() - started
      if (answer !== "The sum is 42.") return yield* Effect.fail(new Error(`answered ${JSON.stringify(answer)}`))
      const rss = rssMiB(cliPids())
      // The same conversation's next turn on its kept CLI: the floor a warm first turn can reach.
      const again = performance.now()
      yield* chat.chat("please add 2 and 40")
      const laterMillis = performance.now() - again
      yield* Scope.close(scope, Exit.void)
      return { millis, rss, laterMillis }
    })

  const cold = yield* Pool.make({ maxLiveProcesses: MaxLive })
  const spares = yield* Pool.make({ maxLiveProcesses: MaxLive, spares: 2, spareIdleTimeout: "10 minutes" })
  // One kept CLI after a turn: the unit of memory (and the spare pool learns its configuration).
  const single = (yield* firstTurn(spares)).rss
  let peakRss = 0
  let peakCount = 0
  const sampler = yield* Effect.forkChild(Effect.forever(Effect.andThen(
    Effect.sync(() => {
      const pids = cliPids()
      peakCount = Math.max(peakCount, pids.length)
      peakRss = Math.max(peakRss, rssMiB(pids))
    }),
    Effect.sleep("100 millis")
  )))
  const later: Array<number> = []
  const warm: Array<number> = []
  const baseline: Array<number> = []
  for (let round = 0; round < Rounds; round++) {
    // Spares replaced and finished starting: what a conversation arriving a moment later finds.
    while ((yield* spares.stats).spares < 2) yield* Effect.sleep("50 millis")
    yield* Effect.promise(() => untilIdle(cliPids))
    const claimed = yield* firstTurn(spares)
    warm.push(claimed.millis)
    later.push(claimed.laterMillis)
    // The spare pool's two spares stay up: the cold turn runs beside them, as it would in a server.
    yield* Effect.promise(() => untilIdle(cliPids))
    baseline.push((yield* firstTurn(cold)).millis)
  }
  yield* Fiber.interrupt(sampler)
  const stats = yield* spares.stats
  const ratio = median(warm) / median(baseline)
  const budget = MaxLive * single * 1.2
  console.log(
    `${name}: first turn of a new conversation (one tool call), median of ${Rounds}: with a spare ${
      median(warm).toFixed(0)
    } ms vs cold ${median(baseline).toFixed(0)} ms → ratio ${ratio.toFixed(2)}×  (target ≤ ${Target}×: ${
      ratio <= Target ? "met" : "MISSED"
    }); a later turn of the same conversation (its kept CLI) ${median(later).toFixed(0)} ms = ${
      (median(later) / median(baseline)).toFixed(2)
    }× of cold; spare pool: ${stats.claims} claims, ${stats.misses} misses`
  )
  console.log(
    `${name}: peak RSS of the CLIs with 2 spares: ${
      peakRss.toFixed(0)
    } MiB over at most ${peakCount} CLIs; budget ${MaxLive} × ${single.toFixed(0)} MiB (one kept CLI) × 1.2 = ${
      budget.toFixed(0)
    } MiB  (${peakRss <= budget ? "met" : "MISSED"})`
  )
}, Effect.scoped)

const main = Effect.gen(function*() {
  const only = Option.fromNullishOr(process.env["SPARES_BENCH_PROVIDERS"]?.split(","))
  for (const [name, clientLayer] of Object.entries(providers)) {
    if (Option.isNone(only) || only.value.includes(name)) {
      yield* measure(name === "local" ? "ClaudeLocal" : "ClaudeAgent", clientLayer)
    }
  }
})

Effect.runPromise(main).catch((e) => {
  console.error(e)
  process.exit(1)
})
