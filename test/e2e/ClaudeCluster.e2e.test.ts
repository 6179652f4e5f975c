/**
 * The cluster across processes (issue 33): three runner processes on 127.0.0.1, each with its
 * own sandbox, share PostgreSQL or one SQLite file; the real `claude` answers from the fake
 * Messages API in this process, and the client here talks to them through the shared storage.
 *
 * A six-turn conversation survives two SIGKILLs of different runners (each with its CLI): one
 * between turns 2 and 3, one during turn 4's slow `notify` call. Then: every turn answered, the
 * model saw each earlier prompt exactly once, the idempotent `charge` ran once while the plain
 * `notify` ran twice (at least once), a re-sent turn id is answered without a model call, idle
 * conversations stop their CLIs, and nothing is left behind. The failover times are printed.
 * Turn 1 waits until the shards have settled on the three runners (see `shardsSettled`).
 *
 * Also: a client whose `shardsPerGroup` differs from the runners' fails at once, naming both.
 */
import { expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import { existsSync } from "node:fs"
import { join } from "node:path"
import * as ClaudeCluster from "../../src/layers/ClaudeCluster.ts"
import * as ClaudeConversation from "../../src/services/ClaudeConversation.ts"
import {
  currentHost,
  isAlive,
  processesUnder,
  type Runner,
  sideEffects,
  startRunner,
  waitUntil
} from "../support/clusterProcesses.ts"
import { retryStorage, shardsSettled, sharedStorage, type StorageKind, tempDir } from "../support/clusterStorage.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

const turns = [1, 2, 3, 4, 5, 6] as const
const run = Math.random().toString(36).slice(2, 8)
/** A marker per turn, found nowhere else (not in answers, not in tool inputs). */
const marker = (turn: number) => `MARK${turn}X${run}`
const prompt = (turn: number) => `Turn ${turn}: reply please. ${marker(turn)}`
const answer = (turn: number) => `answer ${turn}`
const turnOf = (line: string) => turns.find((turn) => line.includes(marker(turn)))

/**
 * The model: a text answer per turn, but turn 4 calls `charge`, then (after its result) `notify`
 * — slow only the first time, so the redelivered run's notify returns. Tool results are read by
 * content, since the kept-alive CLI may send one in the same message as the next prompt.
 */
const model = () => {
  let notifies = 0
  return (req: Fake.FakeRequest): Fake.FakeReply => {
    const turn = turnOf(Fake.lastUserLine(req))
    if (turn === 4) return { toolUses: [{ name: "mcp__gtb__charge", input: { amount: 42 } }] }
    if (turn !== undefined) return { text: answer(turn) }
    const results = Fake.toolResults(req).map((r) => r.content).join("\n")
    if (results.includes("notified")) return { text: answer(4) }
    if (results.includes("charged")) {
      return { toolUses: [{ name: "mcp__gtb__notify", input: { message: "paid", slow: notifies++ === 0 } }] }
    }
    return { text: "unexpected request" }
  }
}

const countOf = (text: string, part: string) => text.split(part).length - 1

/** The runner process with pid `pid` (a side-effect line names the runner that made the call). */
const hostOf = (runners: ReadonlyArray<Runner>, pid: number) => runners.find((r) => r.pid === pid)

const conversationId = "conv-e2e"

/** Which runners set the conversation up, oldest first (for the log). */
const hostsOf = (runners: ReadonlyArray<Runner>) =>
  runners
    .filter((r) => r.hosted(conversationId))
    .sort((a, b) => a.lastHosted(conversationId)! - b.lastHosted(conversationId)!)
    .map((r) => r.name)
    .join(", ")

/** The six turns with two failovers; returns what the final checks need. */
const scenario = (kind: StorageKind) =>
  Effect.gen(function*() {
    const { sql, storage } = yield* sharedStorage(kind)
    const api = yield* Fake.make(model())
    const effectsDir = yield* tempDir("ecb-side-effects-")
    const effectsFile = join(effectsDir, "side-effects.jsonl")
    const runners = yield* Effect.all(
      [1, 2, 3].map((n) =>
        startRunner({
          name: `runner-${n}`,
          storage,
          apiUrl: api.url,
          sideEffects: effectsFile,
          maxIdle: "3 seconds"
        })
      ),
      { concurrency: "unbounded" }
    )
    const seenClis = new Set<number>()
    const noteClis = () => runners.forEach((r) => r.clis().forEach((pid) => seenClis.add(pid)))
    // Per kill: ms until the next turn was answered, and until a live runner set the conversation up.
    const failovers: Array<{ readonly answered: number; readonly hosted: number }> = []
    const hostedAfter = (killed: number) =>
      (currentHost(runners, conversationId)?.lastHosted(conversationId) ?? 0) - killed

    yield* Effect.provide(shardsSettled(kind, runners.length), sql)
    yield* Effect.gen(function*() {
      const conversations = yield* ClaudeConversation.client
      const c = yield* conversations(conversationId)
      const chat = (turn: number) =>
        c.chat(prompt(turn), { turnId: `turn-${turn}` }).pipe(
          retryStorage,
          Effect.timeoutOrElse({
            duration: "90 seconds",
            orElse: () => Effect.die(new Error(`turn ${turn} was not answered within 90 s`))
          })
        )

      expect(yield* chat(1)).toBe(answer(1))
      expect(yield* chat(2)).toBe(answer(2))
      noteClis()

      // Kill 1, between turns: the runner hosting the conversation, with its CLI.
      const first = currentHost(runners, conversationId)!
      expect(first).toBeDefined()
      console.log(`[${kind}] hosts before the first kill: ${hostsOf(runners)}`)
      // The kept-alive CLI is running: the kill takes it down with the runner.
      expect(first.clis().length).toBeGreaterThan(0)
      const killed1 = Date.now()
      yield* first.kill
      expect(first.clis()).toEqual([])
      expect(yield* chat(3)).toBe(answer(3))
      failovers.push({ answered: Date.now() - killed1, hosted: hostedAfter(killed1) })
      noteClis()

      // Kill 2, during turn 4's slow notify: whichever runner made that call.
      const turn4 = yield* Effect.forkChild(chat(4))
      const slow = yield* waitUntil(
        "the slow notify call",
        () => sideEffects(effectsFile).find((e) => e.tool === "notify" && e.input["slow"] === true),
        60_000
      )
      const second = hostOf(runners, slow.pid)
      expect(second).toBeDefined()
      expect(second!.pid).not.toBe(first.pid)
      noteClis()
      expect(second!.clis().length).toBeGreaterThan(0)
      const killed2 = Date.now()
      yield* second!.kill
      expect(second!.clis()).toEqual([])
      expect(yield* Fiber.join(turn4)).toBe(answer(4))
      failovers.push({ answered: Date.now() - killed2, hosted: hostedAfter(killed2) })

      expect(yield* chat(5)).toBe(answer(5))
      const before6 = api.messageRequests().length
      expect(yield* chat(6)).toBe(answer(6))
      const after6 = api.messageRequests()
      // The third runner hosts the conversation now, its CLI kept alive until the entity is idle.
      const survivor = runners.find((r) => r !== first && r !== second)!
      expect(currentHost(runners, conversationId)).toBe(survivor)
      expect(survivor.clis().length).toBeGreaterThan(0)
      expect(after6.length).toBeGreaterThan(before6)
      noteClis()

      // The model's view of the conversation: every earlier prompt exactly once.
      const last = after6.at(-1)!
      expect(Fake.lastUserLine(last)).toContain(marker(6))
      const messages = JSON.stringify(last.body.messages)
      for (const turn of [1, 2, 3, 4, 5]) {
        expect(countOf(messages, marker(turn)), `marker of turn ${turn}`).toBe(1)
      }

      // Tools: the idempotent charge once (replayed on the re-run), the plain notify twice.
      const effects = sideEffects(effectsFile)
      const charges = effects.filter((e) => e.tool === "charge")
      const notifies = effects.filter((e) => e.tool === "notify")
      expect(charges).toHaveLength(1)
      expect(charges[0]!.pid).toBe(second!.pid)
      expect(notifies).toHaveLength(2)
      // The second notify is the re-run's, on the third runner, which replayed its charge.
      expect(notifies.map((e) => [e.pid === second!.pid, e.input["slow"]])).toEqual([[true, true], [false, false]])

      // A re-sent turn id: turn 2's stored answer, no model request.
      expect(yield* c.chat(prompt(2), { turnId: "turn-2" })).toBe(answer(2))
      expect(api.messageRequests().length).toBe(after6.length)

      // Passivation: the survivor is idle for MAX_IDLE and stops its CLI.
      yield* waitUntil("no CLI in any runner sandbox", () =>
        runners.every((r) => r.clis().length === 0) || undefined, 30_000)
      expect(survivor.exited()).toBe(false)
    }).pipe(Effect.provide(ClaudeCluster.layerClient().pipe(Layer.provide(sql))))

    const [between, during] = failovers
    console.log(
      `[${kind}] failover (SIGKILL -> turn answered; -> new runner hosting): between turns ${between?.answered} ms ` +
        `(${between?.hosted} ms); during a tool call ${during?.answered} ms (${during?.hosted} ms); hosts: ${
          hostsOf(runners)
        }`
    )
    noteClis()
    return {
      runnerPids: runners.map((r) =>
        r.pid
      ),
      cliPids: [...seenClis],
      dirs: [...runners.map((r) => r.box.dir), effectsDir]
    }
  }).pipe(Effect.scoped)

/** After the scope: no runner, no CLI, no sandbox left. */
const nothingLeft = (left: { runnerPids: Array<number>; cliPids: Array<number>; dirs: Array<string> }) => {
  expect(left.cliPids.length).toBeGreaterThan(0)
  expect(left.runnerPids.filter(isAlive)).toEqual([])
  expect(left.cliPids.filter(isAlive)).toEqual([])
  expect(left.dirs.flatMap(processesUnder)).toEqual([])
  expect(left.dirs.filter((dir) => existsSync(dir))).toEqual([])
}

describeWithClaude("ClaudeCluster (runner processes)", () => {
  for (const kind of ["PostgreSQL", "SQLite"] as const) {
    it.live(`${kind}: six turns survive two runner kills`, () => Effect.map(scenario(kind), nothingLeft), 240_000)
  }

  it.live(
    "SQLite: a client with another shardsPerGroup fails to start, naming both values",
    () =>
      Effect.gen(function*() {
        const { sql, storage } = yield* sharedStorage("SQLite")
        const api = yield* Fake.make(() => ({ text: "unused" }))
        const effectsDir = yield* tempDir("ecb-side-effects-")
        yield* startRunner({ name: "runner", storage, apiUrl: api.url, sideEffects: join(effectsDir, "effects.jsonl") })
        const started = Date.now()
        const error = yield* ClaudeConversation.client.pipe(
          Effect.provide(ClaudeCluster.layerClient({ shardingConfig: { shardsPerGroup: 7 } }).pipe(Layer.provide(sql))),
          Effect.flip,
          Effect.timeoutOrElse({
            duration: "10 seconds",
            orElse: () => Effect.die(new Error("the client neither failed nor started within 10 s"))
          })
        )
        const elapsed = Date.now() - started
        expect(error).toBeInstanceOf(ClaudeCluster.ClusterConfigError)
        const config = error as ClaudeCluster.ClusterConfigError
        expect(config.setting).toBe("shardsPerGroup")
        expect(config.local).toBe("7")
        expect(config.cluster).toBe("300")
        expect(config.message).toContain("shardsPerGroup=7")
        expect(config.message).toContain("shardsPerGroup=300")
        expect(elapsed).toBeLessThan(5_000)
      }).pipe(Effect.scoped),
    120_000
  )
})
