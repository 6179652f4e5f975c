/**
 * The store's history is the truth in the cluster (issue 42, item 3's cluster variant): two
 * runner processes share PostgreSQL or SQLite. The runner hosting a conversation is SIGKILLed
 * during turn 2's slow tool call (its CLI had written the turn's prompt to its session file; the
 * store never got it); the other runner answers the redelivered turn 2. The killed runner is
 * restarted on its old HOME and the other one killed, so turn 3 is hosted by the restarted runner,
 * whose local file still holds the abandoned attempt: turn 3's model request must hold every
 * earlier prompt and answer exactly once.
 */
import { expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import { join } from "node:path"
import * as ClaudeCluster from "../../src/layers/ClaudeCluster.ts"
import * as ClaudeConversation from "../../src/services/ClaudeConversation.ts"
import {
  currentHost,
  restartRunner,
  type RunnerOptions,
  sideEffects,
  startRunner,
  waitUntil
} from "../support/clusterProcesses.ts"
import { sharedStorage, type StorageKind, tempDir } from "../support/clusterStorage.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

const run = Math.random().toString(36).slice(2, 8)
const marker = (turn: number) => `MARK${turn}Y${run}`
const prompt = (turn: number) => `Turn ${turn}: reply please. ${marker(turn)}`
const answer = (turn: number) => `reply number ${turn}`
const turnOf = (line: string) => [1, 2, 3].find((turn) => line.includes(marker(turn)))

/** Turn 2 calls `notify`, slow the first time (the runner is killed during it); the others answer at once. */
const model = () => {
  let notifies = 0
  return (req: Fake.FakeRequest): Fake.FakeReply => {
    const turn = turnOf(Fake.lastUserLine(req))
    if (turn === 2) {
      return { toolUses: [{ name: "mcp__gtb__notify", input: { message: "hi", slow: notifies++ === 0 } }] }
    }
    if (turn !== undefined) return { text: answer(turn) }
    if (Fake.toolResults(req).some((r) => r.content.includes("notified"))) return { text: answer(2) }
    return { text: "unexpected request" }
  }
}

const countOf = (text: string, part: string) => text.split(part).length - 1
const conversationId = "conv-truth"

const scenario = (kind: StorageKind) =>
  Effect.gen(function*() {
    const { sql, storage } = yield* sharedStorage(kind)
    const api = yield* Fake.make(model())
    const effectsDir = yield* tempDir("ecb-side-effects-")
    const options = (n: number): RunnerOptions => ({
      name: `runner-${n}`,
      storage,
      apiUrl: api.url,
      sideEffects: join(effectsDir, "side-effects.jsonl"),
      maxIdle: "5 minutes"
    })
    const runners = yield* Effect.all([1, 2].map((n) => startRunner(options(n))), { concurrency: "unbounded" })
    yield* Effect.gen(function*() {
      const c = yield* (yield* ClaudeConversation.client)(conversationId)
      const chat = (turn: number) =>
        c.chat(prompt(turn), { turnId: `turn-${turn}` }).pipe(
          Effect.timeoutOrElse({
            duration: "120 seconds",
            orElse: () => Effect.die(new Error(`turn ${turn} was not answered within 120 s`))
          })
        )
      expect(yield* chat(1)).toBe(answer(1))

      // Turn 2: its host is killed during the slow tool call; the other runner answers it.
      const turn2 = yield* Effect.forkChild(chat(2))
      const slow = yield* waitUntil(
        "the slow notify call",
        () => sideEffects(options(1).sideEffects).find((e) => e.tool === "notify" && e.input["slow"] === true),
        60_000
      )
      const killed = runners.find((r) => r.pid === slow.pid)!
      const other = runners.find((r) => r !== killed)!
      expect(killed).toBeDefined()
      yield* killed.kill
      expect(yield* Fiber.join(turn2)).toBe(answer(2))
      expect(currentHost(runners, conversationId)).toBe(other)

      // The killed runner comes back on its old HOME; the other one goes: turn 3 is hosted by
      // the restarted runner, whose session file still holds the abandoned turn 2 attempt.
      const restarted = yield* restartRunner(options(3), killed.box)
      yield* other.kill
      expect(yield* chat(3)).toBe(answer(3))
      expect(restarted.hosted(conversationId)).toBe(true)

      const last = [...api.messageRequests()].reverse().find((r) => Fake.lastUserLine(r).includes(marker(3)))!
      const messages = JSON.stringify(last.body.messages)
      expect({
        marker1: countOf(messages, marker(1)),
        answer1: countOf(messages, answer(1)),
        marker2: countOf(messages, marker(2)),
        answer2: countOf(messages, answer(2)),
        marker3: countOf(messages, marker(3))
      }).toEqual({ marker1: 1, answer1: 1, marker2: 1, answer2: 1, marker3: 1 })
    }).pipe(Effect.provide(ClaudeCluster.layerClient().pipe(Layer.provide(sql))))
  }).pipe(Effect.scoped)

describeWithClaude("ClaudeCluster: a runner restarted on its old HOME continues the store's history", () => {
  for (const kind of ["PostgreSQL", "SQLite"] as const) {
    it.live(
      `${kind}: killed mid-turn, restarted, the next turn holds every earlier turn once`,
      () => scenario(kind),
      300_000
    )
  }
})
