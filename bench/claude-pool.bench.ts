/**
 * Many conversations on one machine: N concurrent ClaudeLocal conversations × T tool-using turns
 * each, real `claude` binary against the fake Messages API, with `keepAlive` and a shared
 * ClaudeProcessPool (at most M live CLIs) vs one fresh CLI per turn (keepAlive off, no pool).
 * Reports turns/s of both and their ratio (target ≥ 5×), and the peak resident memory of the CLIs
 * against M × the RSS of one kept CLI × 1.2.
 *
 * Both runs are CPU-bound on a small machine, so it also reports the CPU (this process and every
 * CLI) per turn of both, the CLIs each started, and the ceiling this shape allows: every
 * conversation needs at least one CLI of its own, so even a pool that never restarts one and
 * loses nothing to contention spends the CPU of a T-turn conversation run alone on one kept CLI;
 * the ceiling is the baseline's CPU per conversation (measured under load) over that.
 *
 * Every turn must answer "The sum is 42.": a turn answered otherwise, or failed (such as a tool
 * call the CLI lost to its connection to the bridge, reported as a ProviderError), is printed and
 * makes the bench exit non-zero once its numbers are out.
 *
 * Scale: POOL_BENCH_CONVERSATIONS (16), POOL_BENCH_TURNS (3), POOL_BENCH_MAX_LIVE (4).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { performance } from "node:perf_hooks"
import * as ClaudeLocal from "../src/layers/ClaudeLocal.ts"
import * as NodeSecretFile from "../src/layers/NodeSecretFile.ts"
import * as NodeSubprocess from "../src/layers/NodeSubprocess.ts"
import { ChatClient, type ChatClientService } from "../src/services/ChatClient.ts"
import * as Pool from "../src/services/ClaudeProcessPool.ts"
import * as Tool from "../src/services/Tool.ts"
import { claudeBinary, claudeProcessesIn, type Sandbox, sandbox } from "../test/support/claudeCli.ts"
import * as Fake from "../test/support/FakeMessagesApi.ts"
import { cpuMillis, cpuSince, median, rssMiB } from "./util.ts"

const intFromEnv = (name: string, fallback: number) => {
  const n = Number(process.env[name])
  return Number.isInteger(n) && n > 0 ? n : fallback
}
const conversations = intFromEnv("POOL_BENCH_CONVERSATIONS", 16)
const turnsEach = intFromEnv("POOL_BENCH_TURNS", 3)
const maxLive = intFromEnv("POOL_BENCH_MAX_LIVE", 4)

const add = Tool.make("add", {
  description: "Adds two numbers",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

const client = (
  box: Sandbox,
  scope: Scope.Scope,
  keepAlive: boolean,
  pool: Pool.ClaudeProcessPoolService | undefined
) =>
  // Fresh: on Effect 4 a layer value built twice is memoized, and each call here is a new client.
  Layer.buildWithScope(
    Layer.fresh(
      ClaudeLocal.layer({ binary: claudeBinary, cwd: box.cwd, env: box.env, keepAlive, requestTimeout: "10 minutes" })
        .pipe(
          Layer.provide(NodeSubprocess.layer),
          Layer.provide(NodeSecretFile.layer({ directory: box.secrets })),
          Layer.provide(pool === undefined ? Layer.empty : Layer.succeed(Pool.ClaudeProcessPool, pool))
        )
    ),
    scope
  ).pipe(Effect.map((ctx) => Context.get(ctx, ChatClient)))

/** Runs every conversation's turns, all conversations at once; wall time, peak CLI count and RSS. */
const run = (box: Sandbox, keepAlive: boolean, pool: Pool.ClaudeProcessPoolService | undefined) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const clients: Array<ChatClientService> = []
    for (let i = 0; i < conversations; i++) {
      const chat = yield* client(box, scope, keepAlive, pool)
      yield* chat.setTools([add])
      clients.push(chat)
    }
    let peakRss = 0
    let peakCount = 0
    const sampler = yield* Effect.forkChild(Effect.forever(Effect.andThen(
      Effect.sync(() => {
        const pids = claudeProcessesIn(box.cwd)
        peakCount = Math.max(peakCount, pids.length)
        peakRss = Math.max(peakRss, rssMiB(pids))
      }),
      Effect.sleep("100 millis")
    )))
    let done = 0
    const progress = yield* Effect.forkChild(Effect.forever(Effect.andThen(
      Effect.sleep("10 seconds"),
      Effect.flatMap(
        pool === undefined ? Effect.succeed(undefined) : pool.stats,
        (stats) =>
          Effect.sync(() =>
            console.error(
              `  … ${done}/${conversations * turnsEach} turns, ${claudeProcessesIn(box.cwd).length} CLIs${
                stats === undefined ? "" : `, pool ${JSON.stringify(stats)}`
              }`
            )
          )
      )
    )))
    const cpuBefore = cpuMillis(() => claudeProcessesIn(box.cwd))
    const started = performance.now()
    const answers = yield* Effect.forEach(clients, (chat) =>
      Effect.forEach(
        Array.from({ length: turnsEach }, (_, t) => t),
        (t) =>
          chat.chat(`Turn ${t}: please add 2 and 40`).pipe(
            Effect.result,
            Effect.tap(() =>
              Effect.sync(() => {
                done++
              })
            )
          )
      ), { concurrency: "unbounded" })
    const seconds = (performance.now() - started) / 1000
    yield* Fiber.interrupt(sampler)
    yield* Fiber.interrupt(progress)
    yield* Scope.close(scope, Exit.void)
    // After the close every CLI has exited and been reaped: its CPU is in this process's cutime.
    const cpu = cpuSince(cpuBefore, cpuMillis(() => claudeProcessesIn(box.cwd)))
    const cpuPerTurn = cpu.total / (conversations * turnsEach)
    const selfPerTurn = cpu.self / (conversations * turnsEach)
    // Reported here and failed on at the end: one odd answer should not hide the measurement.
    const wrong = answers.flat().flatMap((a) =>
      a._tag === "Success"
        ? (a.success === "The sum is 42." ? [] : [a.success])
        : [`${a.failure._tag}: ${a.failure.message}`]
    )
    // The library's own report of a tool result the CLI lost on its way (see interpretRun).
    const lost = answers.flat().filter((a) =>
      a._tag === "Failure" && a.failure._tag === "ProviderError" && a.failure.message.includes("of bridge tools")
    ).length
    if (wrong.length > 0) {
      const kinds = [...new Set(wrong)]
      console.error(
        `  ${wrong.length} turn(s) answered otherwise (${lost} lost a bridge call to the CLI's connection); ${kinds.length} distinct: ${
          kinds.map((k) =>
            JSON.stringify(k)
          ).join(" | ")
        }`
      )
    }
    return {
      seconds,
      turnsPerSecond: (conversations * turnsEach) / seconds,
      cpuPerTurn,
      selfPerTurn,
      peakRss,
      peakCount,
      wrong: wrong.length,
      lost
    }
  })

const main = Effect.scoped(Effect.gen(function*() {
  const api = yield* Fake.make((req) => {
    const results = Fake.toolResults(req)
    if (results.length > 0) return { text: `The sum is ${results[0]!.content}.` }
    return { toolUses: [{ name: "mcp__gtb__add", input: { a: 2, b: 40 } }] }
  })
  const box = yield* sandbox(api.url)
  // One kept CLI after a turn: the unit of memory.
  const single = yield* Effect.gen(function*() {
    const scope = yield* Scope.make()
    const chat = yield* client(box, scope, true, undefined)
    yield* chat.setTools([add])
    yield* chat.chat("please add 2 and 40")
    yield* chat.chat("please add 2 and 40")
    const rss = rssMiB(claudeProcessesIn(box.cwd))
    yield* Scope.close(scope, Exit.void)
    return rss
  })
  // The least CPU a T-turn conversation with a CLI of its own costs: alone, on one kept CLI.
  const conversationCpu = Effect.gen(function*() {
    const scope = yield* Scope.make()
    const chat = yield* client(box, scope, true, undefined)
    yield* chat.setTools([add])
    const before = cpuMillis(() => claudeProcessesIn(box.cwd))
    for (let t = 0; t < turnsEach; t++) yield* chat.chat(`Turn ${t}: please add 2 and 40`)
    yield* Scope.close(scope, Exit.void)
    return cpuSince(before, cpuMillis(() => claudeProcessesIn(box.cwd))).total
  })
  const alone: Array<number> = []
  for (let i = 0; i < 3; i++) alone.push(yield* conversationCpu)
  const pool = yield* Pool.make({ maxLiveProcesses: maxLive, reclaimAfter: "200 millis", acquireTimeout: "10 minutes" })
  // Every CLI the pool lets start takes a permit: counting the acquisitions counts the starts.
  let starts = 0
  const counted: Pool.ClaudeProcessPoolService = {
    ...pool,
    acquire: (evict) =>
      Effect.suspend(() => {
        starts++
        return pool.acquire(evict)
      })
  }
  const pooled = yield* run(box, true, counted)
  console.error(`  pooled: ${JSON.stringify(pooled)}`)
  const fresh = yield* run(box, false, undefined)
  const ratio = pooled.turnsPerSecond / fresh.turnsPerSecond
  const ceiling = (fresh.cpuPerTurn * turnsEach) / median(alone)
  const bound = maxLive * single * 1.2
  const stats = yield* pool.stats
  console.log(
    `${conversations} concurrent conversations × ${turnsEach} tool-using turns, keepAlive + ClaudeProcessPool(max ${maxLive}) vs one CLI per turn: ` +
      `${pooled.turnsPerSecond.toFixed(2)} turns/s (${pooled.seconds.toFixed(1)} s) vs baseline ${
        fresh.turnsPerSecond.toFixed(2)
      } turns/s (${fresh.seconds.toFixed(1)} s) → ratio ${ratio.toFixed(2)}×  (target ≥ 5×: ${
        ratio >= 5 ? "met" : "MISSED"
      }); pool evictions ${stats.evictions}; turns answered otherwise: ${pooled.wrong} vs ${fresh.wrong} (bridge calls lost by the CLI: ${pooled.lost} vs ${fresh.lost})`
  )
  console.log(
    `CPU per turn (this process + every CLI): pooled ${pooled.cpuPerTurn.toFixed(0)} ms (${
      pooled.selfPerTurn.toFixed(0)
    } in this process) vs one CLI per turn ${fresh.cpuPerTurn.toFixed(0)} ms (${fresh.selfPerTurn.toFixed(0)}) → ${
      (fresh.cpuPerTurn / pooled.cpuPerTurn).toFixed(2)
    }× less; CLIs started: pooled ${starts} for ${conversations} conversations vs ${
      conversations * turnsEach
    }; ceiling for ${turnsEach} turns per conversation (the baseline's CPU per conversation ${
      (fresh.cpuPerTurn * turnsEach).toFixed(0)
    } ms vs ${median(alone).toFixed(0)} ms for one alone on one kept CLI) ${ceiling.toFixed(2)}×`
  )
  console.log(
    `peak RSS of the CLIs: pooled ${
      pooled.peakRss.toFixed(0)
    } MiB over at most ${pooled.peakCount} CLIs vs one CLI per turn ${
      fresh.peakRss.toFixed(0)
    } MiB over at most ${fresh.peakCount}; bound ${maxLive} × ${single.toFixed(0)} MiB (one kept CLI) × 1.2 = ${
      bound.toFixed(0)
    } MiB  (${pooled.peakRss <= bound ? "met" : "MISSED"})`
  )
  if (pooled.wrong + fresh.wrong > 0) {
    return yield* Effect.fail(
      new Error(`${pooled.wrong} pooled and ${fresh.wrong} one-CLI-per-turn turn(s) answered otherwise`)
    )
  }
}))

Effect.runPromise(main).catch((e) => {
  console.error(e)
  process.exit(1)
})
