/**
 * Live controls through the cluster (issue 45): two runner processes share one SQLite file; the
 * real `claude` answers from the fake Messages API in this process; this process is a client-only
 * member, so every control crosses to the runner hosting the conversation.
 *
 * One conversation, hosted by one runner throughout (same CLI process):
 * - interrupt while the hosted `charge` tool runs → the turn fails with the `Interrupted` reason;
 *   a turn sent meanwhile waited for it (turns stay one at a time, while `mcpStatus` is answered
 *   at once) and is answered next by the same runner and CLI, with the interrupted one in its history;
 * - steer (`next`) into a turn while its tool runs → the request carrying the tool's result
 *   carries the steered text, and the turn answers from it;
 * - `setModel` (through `ClaudeConversation.live`, a `ClaudeLiveService`) → the next request's model;
 * - `contextUsage` numbers, and `NoRunningTurn` for an interrupt between turns and for a
 *   conversation no runner hosted yet (the control sets it up).
 */
import { expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import { join } from "node:path"
import * as ClaudeCluster from "../../src/layers/ClaudeCluster.ts"
import * as ClaudeConversation from "../../src/services/ClaudeConversation.ts"
import { ClaudeLiveError } from "../../src/services/ClaudeLive.ts"
import { currentHost, sideEffects, startRunner, waitUntil } from "../support/clusterProcesses.ts"
import { retryStorage, shardsSettled, sharedStorage, tempDir } from "../support/clusterStorage.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

const turns = [1, 2, 3, 4, 5] as const
const run = Math.random().toString(36).slice(2, 8)
/** A marker per turn, found nowhere else (not in answers, not in tool inputs). */
const marker = (turn: number) => `LIVE${turn}X${run}`
const prompt = (turn: number) => `Turn ${turn}: reply please. ${marker(turn)}`
const answer = (turn: number) => `answer ${turn}`
const turnOf = (line: string) => turns.find((turn) => line.includes(marker(turn)))
const steered = `steered text STEER${run}`
const otherModel = "claude-sonnet-4-5"

const textOf = (req: Fake.FakeRequest) => JSON.stringify(req.body.messages)

/**
 * The model: turn 2 calls a `charge` that waits 30 s (interrupted), turn 4 one that waits 4 s (the
 * steer arrives meanwhile); a request whose last user line is no turn's but holds the steered
 * text is answered "steered"; every other turn gets its answer.
 */
const model = (req: Fake.FakeRequest): Fake.FakeReply => {
  const turn = turnOf(Fake.lastUserLine(req))
  if (turn === 2) return { toolUses: [{ name: "mcp__gtb__charge", input: { amount: 2, wait: 30 } }] }
  if (turn === 4) return { toolUses: [{ name: "mcp__gtb__charge", input: { amount: 4, wait: 4 } }] }
  if (turn !== undefined) return { text: answer(turn) }
  if (textOf(req).includes(steered)) return { text: "steered" }
  return { text: "unexpected request" }
}

const conversationId = "conv-live"

describeWithClaude("ClaudeConversation live controls (runner processes)", () => {
  it.live(
    "SQLite: interrupt, steer and setModel reach the runner hosting the conversation",
    () =>
      Effect.gen(function*() {
        const { sql, storage } = yield* sharedStorage("SQLite")
        const api = yield* Fake.make(model)
        const effectsDir = yield* tempDir("ecb-side-effects-")
        const effectsFile = join(effectsDir, "side-effects.jsonl")
        const runners = yield* Effect.all(
          [1, 2].map((n) => startRunner({ name: `runner-${n}`, storage, apiUrl: api.url, sideEffects: effectsFile })),
          { concurrency: "unbounded" }
        )
        yield* Effect.provide(shardsSettled("SQLite", runners.length), sql)
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
          const chargeStarted = (amount: number) =>
            waitUntil(
              `charge ${amount} to start`,
              () => sideEffects(effectsFile).find((e) => e.tool === "charge:start" && e.input["amount"] === amount),
              60_000
            )

          expect(yield* chat(1)).toBe(answer(1))
          const host = currentHost(runners, conversationId)!
          expect(host).toBeDefined()
          const [cli] = host.clis()
          expect(cli).toBeDefined()

          // Between turns: nothing to interrupt, said by the hosting runner's client.
          const idle = yield* Effect.flip(c.controls.interrupt)
          expect(idle).toMatchObject({ _tag: "ClaudeLiveError", reason: { _tag: "NoRunningTurn" } })

          // Interrupt while the hosted tool runs: the turn ends Interrupted, well before the tool would.
          const turn2 = yield* Effect.forkChild(c.chat(prompt(2), { turnId: "turn-2" }))
          yield* chargeStarted(2)
          // A turn sent meanwhile waits for it (turns stay one at a time); a control does not.
          const turn3 = yield* Effect.forkChild(chat(3))
          const servers = yield* c.controls.mcpStatus
          expect(servers.find((server) => server.name === "gtb")?.status).toBe("connected")
          yield* Effect.sleep("1 second")
          expect(api.messageRequests().some((r) => Fake.lastUserLine(r).includes(marker(3)))).toBe(false)
          const t0 = Date.now()
          yield* c.controls.interrupt
          const error = yield* Effect.flip(Fiber.join(turn2))
          const took = Date.now() - t0
          expect(error).toBeInstanceOf(ClaudeLiveError)
          expect(error).toMatchObject({
            reason: { _tag: "Interrupted", terminalReason: "aborted_tools", tools: [{ name: "charge" }] }
          })
          expect(took).toBeLessThan(10_000)

          // The queued turn runs next: same runner, same CLI, the interrupted turn in the history.
          expect(yield* Fiber.join(turn3)).toBe(answer(3))
          expect(currentHost(runners, conversationId)).toBe(host)
          expect(host.clis()).toEqual([cli])
          const history = textOf(api.messageRequests().at(-1)!)
          for (const turn of [1, 2, 3]) expect(history).toContain(marker(turn))
          expect(history).toContain("[Request interrupted by user for tool use]")

          // Steer into the running turn at its next tool boundary: the model reads it with the tool's result.
          const live = yield* ClaudeConversation.live(conversationId)
          const turn4 = yield* Effect.forkChild(chat(4))
          yield* chargeStarted(4)
          yield* live.steer(steered, { when: "next" })
          expect(yield* Fiber.join(turn4)).toBe("steered")
          const carrying = api.messageRequests().filter((r) => textOf(r).includes(steered))
          expect(carrying.length).toBeGreaterThan(0)
          // Folded into turn 4: the first request with the steer is the one with the tool's result.
          expect(textOf(carrying[0]!)).toContain("charged 4")
          expect(turnOf(Fake.lastUserLine(carrying[0]!))).toBeUndefined()

          // setModel: the next request asks for that model.
          yield* live.setModel(otherModel)
          expect(yield* chat(5)).toBe(answer(5))
          expect(api.messageRequests().at(-1)?.body.model).toBe(otherModel)

          const usage = yield* live.contextUsage
          expect(usage.totalTokens).toBeGreaterThan(0)
          expect(usage.totalTokens).toBeLessThanOrEqual(usage.maxTokens)
          expect(host.clis()).toEqual([cli])
          // One runner hosted the conversation, once.
          expect(runners.filter((r) => r.hosted(conversationId))).toEqual([host])
          expect(host.lines().filter((l) => l === `HOSTING ${conversationId}`)).toHaveLength(1)

          // A conversation no runner hosts: the control sets it up, and no turn runs there.
          const cold = yield* ClaudeConversation.live("conv-live-cold")
          const none = yield* Effect.flip(cold.interrupt)
          expect(none.reason._tag).toBe("NoRunningTurn")
          expect(runners.some((r) => r.hosted("conv-live-cold"))).toBe(true)
          console.log(`cluster interrupt while a tool runs -> Interrupted at the caller in ${took} ms`)
        }).pipe(Effect.provide(ClaudeCluster.layerClient().pipe(Layer.provide(sql))))
      }).pipe(Effect.scoped),
    240_000
  )
})
