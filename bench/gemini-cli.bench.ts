/**
 * GeminiCli, with the real `gemini` binary (`@google/gemini-cli`) against the library's fake
 * Gemini API:
 * 1. Library overhead of a tool turn: a `chat` on a new GeminiCli client (bridge, private home,
 *    `gemini --acp`, the tool called through the bridge) vs a bare `gemini -p` of the same turn
 *    (the same tool on the same kind of bridge, mounted in its settings), timed to its answer.
 *    Twice: the default client's whole `chat` (it returns once the CLI is stopped, a second after
 *    its answer, so that the session file is written), and a `keepAlive` client's first `chat`
 *    (it returns at the answer; the CLI is stopped after the timing).
 * 2. `keepAlive`: a later tool turn on the kept `gemini --acp` vs the same later turn on a fresh
 *    CLI per turn (which loads the session first), and the resident memory of a kept CLI.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { execFileSync, spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, readlinkSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { performance } from "node:perf_hooks"
import * as GeminiCli from "../src/layers/GeminiCli.ts"
import * as NodeMcpBridge from "../src/layers/NodeMcpBridge.ts"
import * as NodeSubprocess from "../src/layers/NodeSubprocess.ts"
import * as Tool from "../src/services/Tool.ts"
import * as Fake from "../test/support/FakeGemini.ts"
import { median, rssMiB } from "./util.ts"

const binary = resolve("node_modules/.bin/gemini")
const model = GeminiCli.DefaultModel

const add = Tool.make("add", {
  description: "Adds two numbers",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

/** A model that calls the `add` tool when it has it, then reports the sum. */
const reply = (req: Fake.FakeRequest): Fake.FakeReply => {
  const answers = Fake.functionResponses(req)
  if (answers.length > 0) return { text: `sum: ${JSON.stringify(answers[0]!.response)}` }
  const tool = (req.body.tools ?? []).flatMap((t) => t.functionDeclarations ?? []).find((d) => /add$/.test(d.name))
  return tool === undefined ? { text: "no add tool" } : { functionCalls: [{ name: tool.name, args: { a: 2, b: 3 } }] }
}

/**
 * Alternates candidate and baseline (each `n` times after one warm-up of each) so machine noise hits
 * both alike, and prints both medians and their ratio.
 */
const compareSlow = async (
  label: string,
  candidate: () => Promise<number | void>,
  baseline: () => Promise<number | void>,
  n: number
) => {
  // A sample that returns a number timed itself (to leave out a part it does not measure).
  const time = async (fn: () => Promise<number | void>) => {
    const t = performance.now()
    const own = await fn()
    return typeof own === "number" ? own : performance.now() - t
  }
  await baseline()
  await candidate()
  const c: Array<number> = []
  const b: Array<number> = []
  for (let i = 0; i < n; i++) {
    b.push(await time(baseline))
    c.push(await time(candidate))
  }
  const mc = median(c)
  const mb = median(b)
  console.log(`${label}: ${mc.toFixed(0)} ms vs baseline ${mb.toFixed(0)} ms → ratio ${(mc / mb).toFixed(2)}×`)
}

/** Gemini CLI processes working in `cwd` (the CLI relaunches itself as a child). */
const geminiIn = (cwd: string): Array<number> =>
  execFileSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" })
    .split("\n")
    .filter((line) => line.includes("gemini"))
    .flatMap((line) => {
      const pid = Number(line.trim().split(/\s+/)[0])
      try {
        return readlinkSync(`/proc/${pid}/cwd`) === cwd ? [pid] : []
      } catch {
        return []
      }
    })

const main = Effect.gen(function*() {
  const api = yield* Fake.make(reply)
  const box = mkdtempSync(join(tmpdir(), "ecb-bench-gemini-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(box, { recursive: true, force: true })))
  const env = { GOOGLE_GEMINI_BASE_URL: api.url, GEMINI_API_KEY: "bench-key" }
  const options: GeminiCli.Options = { binary, model, env }

  // The bare CLI: its own home whose settings mount a bridge serving the same tool (trusted, so
  // `-p` offers it), run with `-p` and read up to its result line.
  const bridge = yield* NodeMcpBridge.make({ serverName: "gtb", tools: [add], guardJsonText: true })
  const run = yield* bridge.openRun
  const bare = join(box, "bare")
  mkdirSync(join(bare, "home", ".gemini"), { recursive: true })
  mkdirSync(join(bare, "work"))
  writeFileSync(
    join(bare, "home", ".gemini", "settings.json"),
    JSON.stringify({
      security: { auth: { selectedType: "gemini-api-key" } },
      privacy: { usageStatisticsEnabled: false },
      telemetry: { enabled: false },
      general: { disableAutoUpdate: true, disableUpdateNag: true },
      mcpServers: {
        gtb: { httpUrl: bridge.url, headers: { Authorization: `Bearer ${Redacted.value(run.token)}` }, trust: true }
      }
    })
  )
  const barePrompt = () =>
    new Promise<void>((done, reject) => {
      const child = spawn(
        binary,
        ["-p", "What is 2 + 3?", "--skip-trust", "--model", model, "-o", "stream-json"],
        {
          cwd: join(bare, "work"),
          detached: true,
          env: {
            PATH: process.env["PATH"],
            HOME: join(bare, "home"),
            GEMINI_CLI_HOME: join(bare, "home"),
            TMPDIR: join(bare, "home"),
            ...env
          }
        }
      )
      let out = ""
      const finish = (error?: Error) => {
        try {
          process.kill(-child.pid!, "SIGKILL")
        } catch {
          // already gone
        }
        if (error === undefined) done()
        else reject(error)
      }
      child.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString()
        // Its answer, as a caller of `gemini -p` sees it: the result line.
        if (/"type":"result"/.test(out)) {
          finish(out.includes("\"tool_result\"") && out.includes("sum:") ? undefined : new Error(out))
        }
      })
      child.on("error", finish)
      child.on("close", () => finish(new Error(`gemini -p ended without a result: ${out}`)))
    })

  /** A new client's first tool turn, timed from `make` to the answer. */
  const libraryTurn = (keepAlive: boolean) => () =>
    Effect.runPromise(
      Effect.scoped(Effect.gen(function*() {
        const started = performance.now()
        const client = yield* GeminiCli.make({ ...options, keepAlive }).pipe(Effect.provide(NodeSubprocess.layer))
        yield* client.setTools([add])
        const answer = yield* client.chat("What is 2 + 3?")
        if (!answer.includes("5")) return yield* Effect.die(new Error(answer))
        return performance.now() - started
      })).pipe(Effect.orDie)
    )
  yield* Effect.promise(() =>
    compareSlow(
      "GeminiCli tool turn (new client, whole chat) vs a bare gemini -p of the same turn",
      libraryTurn(false),
      barePrompt,
      5
    )
  )
  yield* Effect.promise(() =>
    compareSlow(
      "GeminiCli tool turn (new keepAlive client, to the answer) vs a bare gemini -p of the same turn",
      libraryTurn(true),
      barePrompt,
      5
    )
  )

  // Later turns: a kept-alive client and a fresh-per-turn one, each past its first turn.
  const keptCwd = join(box, "kept")
  const freshCwd = join(box, "fresh")
  mkdirSync(keptCwd)
  mkdirSync(freshCwd)
  const clients = yield* Scope.make()
  const kept = yield* GeminiCli.make({ ...options, cwd: keptCwd, keepAlive: true }).pipe(
    Scope.provide(clients),
    Effect.provide(NodeSubprocess.layer)
  )
  const fresh = yield* GeminiCli.make({ ...options, cwd: freshCwd }).pipe(
    Scope.provide(clients),
    Effect.provide(NodeSubprocess.layer)
  )
  yield* kept.setTools([add])
  yield* fresh.setTools([add])
  const turn = (client: GeminiCli.GeminiCliClient) => () =>
    Effect.runPromise(Effect.asVoid(Effect.orDie(client.chat("What is 2 + 3?"))))
  yield* Effect.promise(() =>
    compareSlow("keepAlive later tool turn vs a fresh CLI per turn", turn(kept), turn(fresh), 5)
  )
  const pids = geminiIn(keptCwd)
  console.log(`kept CLI: ${pids.length} processes, ${rssMiB(pids).toFixed(0)} MiB resident`)
  const closing = performance.now()
  yield* Scope.close(clients, Exit.void)
  console.log(`closing both clients: ${(performance.now() - closing).toFixed(0)} ms`)
})

Effect.runPromise(Effect.scoped(main)).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
