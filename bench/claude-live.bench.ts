/**
 * ClaudeLive: a Stop button, then the next message. From the stop to the next turn's answer, real
 * `claude` binary against the fake Messages API, mid-stream (the model's answer hangs after its
 * first words):
 * - candidate: `keepAlive` and `ClaudeLive.interrupt` — the CLI stops the turn and stays, and the
 *   next turn is one more user message to it;
 * - baseline: kill-and-resume, how every interrupted turn ended before — the turn's fiber is
 *   interrupted, its CLI killed, and the next turn starts a new `claude -p --resume`.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { performance } from "node:perf_hooks"
import * as ClaudeLocal from "../src/layers/ClaudeLocal.ts"
import * as NodeSecretFile from "../src/layers/NodeSecretFile.ts"
import * as NodeSubprocess from "../src/layers/NodeSubprocess.ts"
import { ChatClient } from "../src/services/ChatClient.ts"
import { ClaudeLive } from "../src/services/ClaudeLive.ts"
import { claudeBinary, sandbox } from "../test/support/claudeCli.ts"
import * as Fake from "../test/support/FakeMessagesApi.ts"
import { median } from "./util.ts"

const Rounds = 6
const Target = 0.2

const main = Effect.scoped(Effect.gen(function*() {
  const api = yield* Fake.make((req) =>
    Fake.lastUserText(req).includes("story")
      ? { text: "Once upon a time, in a land far away", breakMidway: "hang" }
      : { text: `You said: ${Fake.lastUserLine(req)}` }
  )
  const box = yield* sandbox(api.url)
  const scope = yield* Scope.make()
  const client = (keepAlive: boolean) =>
    Layer.buildWithScope(
      Layer.fresh(
        ClaudeLocal.layer({ binary: claudeBinary, cwd: box.cwd, env: box.env, keepAlive }).pipe(
          Layer.provide(NodeSubprocess.layer),
          Layer.provide(NodeSecretFile.layer({ directory: box.secrets })),
          Layer.orDie
        )
      ),
      scope
    ).pipe(Effect.map((ctx) => ({ chat: Context.get(ctx, ChatClient), live: Context.get(ctx, ClaudeLive) })))
  const kept = yield* client(true)
  const fresh = yield* client(false)
  yield* kept.chat.chat("hello")
  yield* fresh.chat.chat("hello")

  /** One sample: a turn mid-stream, `stop` it, then the next turn; the milliseconds from the stop to the answer. */
  const sample = (
    chat: typeof kept.chat,
    stop: (turn: Fiber.Fiber<string, unknown>) => Effect.Effect<unknown, unknown>
  ) =>
    Effect.gen(function*() {
      const before = api.messageRequests().length
      const turn = yield* Effect.forkChild(chat.chat("Tell me a story"))
      while (api.messageRequests().length === before) yield* Effect.sleep("20 millis")
      // The first words are on their way.
      yield* Effect.sleep("300 millis")
      const started = performance.now()
      yield* stop(turn)
      yield* chat.chat("What now?")
      return performance.now() - started
    })

  const candidate: Array<number> = []
  const baseline: Array<number> = []
  for (let i = 0; i < Rounds; i++) {
    baseline.push(yield* sample(fresh.chat, (turn) => Fiber.interrupt(turn)))
    candidate.push(yield* sample(kept.chat, (turn) => Effect.andThen(kept.live.interrupt, Fiber.await(turn))))
  }
  yield* Scope.close(scope, Exit.void)
  const mc = median(candidate)
  const mb = median(baseline)
  const ratio = mc / mb
  console.log(
    `interrupt → next turn answered, keepAlive + ClaudeLive.interrupt vs kill-and-resume: ${mc.toFixed(3)} ms vs ` +
      `baseline ${mb.toFixed(3)} ms → ratio ${ratio.toFixed(2)}×  (target ≤ ${Target}×: ${
        ratio <= Target ? "met" : "MISSED"
      })`
  )
}))

Effect.runPromise(main)
