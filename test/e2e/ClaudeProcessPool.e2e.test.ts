import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Scope from "effect/Scope"
import { readFileSync } from "node:fs"
import * as Pool from "../../src/services/ClaudeProcessPool.ts"
import { claudeProcessesIn, type Sandbox, sandbox } from "../support/claudeCli.ts"
import { agentClient, localClient } from "../support/claudeClients.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

/** The user's own words: the last line of the last user message (the CLI may prepend reminders). */
const said = (req: Fake.FakeRequest) => Fake.lastUserText(req).split("\n").at(-1) ?? ""
const echo = (req: Fake.FakeRequest): Fake.FakeReply => ({ text: `You said: ${said(req)}` })

/** A keepAlive ClaudeLocal client in `scope` sharing `pool`. */
const clientIn = (box: Sandbox, scope: Scope.Scope, pool: Pool.ClaudeProcessPoolService) =>
  localClient(box, {
    requestTimeout: "120 seconds",
    keepAlive: true,
    // The pool bounds live CLIs; a client's one-off `claude --version` probe is not one, but it
    // runs in the same folder and would be counted by the process sampling below.
    cliVersion: "2.1.335"
  }, { pool }).pipe(Scope.provide(scope))

const until = (condition: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 600 && !condition(); i++) yield* Effect.sleep("50 millis")
    expect(condition()).toBe(true)
  })

describe("ClaudeProcessPool with the real claude CLI (ClaudeLocal keepAlive)", () => {
  it.live("the bound is never exceeded under 3× as many concurrent conversations", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(echo)
      const box = yield* sandbox(api.url)
      const pool = yield* Pool.make({ maxLiveProcesses: 2, reclaimAfter: "200 millis", acquireTimeout: "5 minutes" })
      const scope = yield* Scope.make()
      const clients = yield* Effect.forEach(Array.from({ length: 6 }, (_, i) => i), () => clientIn(box, scope, pool))
      let peak = 0
      const sampler = yield* Effect.forkChild(Effect.forever(Effect.andThen(
        Effect.sync(() => {
          peak = Math.max(peak, claudeProcessesIn(box.cwd).length)
        }),
        Effect.sleep("20 millis")
      )))
      const answers = yield* Effect.forEach(
        clients,
        (chat, i) =>
          Effect.gen(function*() {
            const first = yield* chat.chat(`conversation ${i} turn 1`)
            const second = yield* chat.chat(`conversation ${i} turn 2`)
            return [first, second]
          }),
        { concurrency: "unbounded" }
      )
      yield* Fiber.interrupt(sampler)
      answers.forEach(([first, second], i) => {
        expect(first).toBe(`You said: conversation ${i} turn 1`)
        expect(second).toBe(`You said: conversation ${i} turn 2`)
      })
      expect(peak).toBeGreaterThan(0)
      expect(peak).toBeLessThanOrEqual(2)
      expect((yield* pool.stats).live).toBeLessThanOrEqual(2)
      // Every conversation's second turn carried its first, whether or not its CLI was reclaimed.
      for (let i = 0; i < 6; i++) {
        const second = api.messageRequests().find((r) => said(r) === `conversation ${i} turn 2`)!
        expect(JSON.stringify(second.body.messages)).toContain(`You said: conversation ${i} turn 1`)
      }
      yield* Scope.close(scope, Exit.void)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
      expect((yield* pool.stats).live).toBe(0)
    }), 300_000)

  it.live(
    "an evicted conversation's next turn resumes its session and sees its earlier turns",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(echo)
        const box = yield* sandbox(api.url)
        const pool = yield* Pool.make({ maxLiveProcesses: 2, idleTimeout: "1 second" })
        const scope = yield* Scope.make()
        const chat = yield* clientIn(box, scope, pool)
        expect(yield* chat.chat("Remember the word: pineapple.")).toBe("You said: Remember the word: pineapple.")
        const [first] = claudeProcessesIn(box.cwd)
        expect(first).toBeDefined()
        // Idle for a second: the pool stops it.
        yield* until(() => claudeProcessesIn(box.cwd).length === 0 && Effect.runSync(pool.stats).live === 0)
        expect(yield* pool.stats).toMatchObject({ live: 0, evictions: 1 })
        expect(yield* chat.chat("What was the word?")).toBe("You said: What was the word?")
        expect(JSON.stringify(api.messageRequests().at(-1)!.body.messages)).toContain("pineapple")
        const [second] = claudeProcessesIn(box.cwd)
        expect(second).not.toBe(first)
        expect(readFileSync(`/proc/${second}/cmdline`, "utf8").split("\0")).toContain("--resume")
        yield* Scope.close(scope, Exit.void)
        expect(claudeProcessesIn(box.cwd)).toEqual([])
      }),
    120_000
  )

  it.live("interrupting a waiting turn releases nothing it did not hold", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(echo)
      const box = yield* sandbox(api.url)
      // Nothing is reclaimed here: a waiting turn waits.
      const pool = yield* Pool.make({ maxLiveProcesses: 1, reclaimAfter: "10 minutes", idleTimeout: "10 minutes" })
      const scopeA = yield* Scope.make()
      const a = yield* clientIn(box, scopeA, pool)
      const scopeB = yield* Scope.make()
      const b = yield* clientIn(box, scopeB, pool)
      expect(yield* a.chat("first")).toBe("You said: first")
      const pids = claudeProcessesIn(box.cwd)
      expect(pids.length).toBe(1)
      const waiting = yield* Effect.forkChild(b.chat("waiting"))
      yield* until(() => Effect.runSync(pool.stats).waiting === 1)
      yield* Fiber.interrupt(waiting)
      expect(yield* pool.stats).toMatchObject({ live: 1, waiting: 0, evictions: 0 })
      // a keeps its process and its turns.
      expect(yield* a.chat("second")).toBe("You said: second")
      expect(claudeProcessesIn(box.cwd)).toEqual(pids)
      expect(api.messageRequests().some((r) => said(r) === "waiting")).toBe(false)
      // Still one permit, held by a: b waits again until a's client closes, then runs.
      const next = yield* Effect.forkChild(b.chat("now"))
      yield* until(() => Effect.runSync(pool.stats).waiting === 1)
      yield* Scope.close(scopeA, Exit.void)
      expect(yield* Fiber.join(next)).toBe("You said: now")
      expect(claudeProcessesIn(box.cwd).length).toBe(1)
      yield* Scope.close(scopeB, Exit.void)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
    }), 120_000)

  it.live("scope close stops every live CLI and returns every permit", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(echo)
      const box = yield* sandbox(api.url)
      const pool = yield* Pool.make({ maxLiveProcesses: 3 })
      const scope = yield* Scope.make()
      const clients = yield* Effect.forEach([0, 1, 2], () => clientIn(box, scope, pool))
      yield* Effect.forEach(clients, (chat, i) => chat.chat(`hello ${i}`), { concurrency: "unbounded" })
      expect(claudeProcessesIn(box.cwd).length).toBe(3)
      expect((yield* pool.stats).live).toBe(3)
      yield* Scope.close(scope, Exit.void)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
      expect(yield* pool.stats).toMatchObject({ live: 0, waiting: 0 })
    }), 120_000)
})

describe("ClaudeProcessPool with the Agent SDK's real claude CLI (ClaudeAgent keepAlive)", () => {
  const agentIn = (box: Sandbox, scope: Scope.Scope, pool: Pool.ClaudeProcessPoolService) =>
    agentClient(box, { requestTimeout: "120 seconds", keepAlive: true }, { pool }).pipe(Scope.provide(scope))

  it.live(
    "a kept query holds a permit; evicted, the next turn resumes with its history; a waiter is bounded",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(echo)
        const box = yield* sandbox(api.url)
        const pool = yield* Pool.make({ maxLiveProcesses: 1, idleTimeout: "1 second", acquireTimeout: "300 millis" })
        const scope = yield* Scope.make()
        const chat = yield* agentIn(box, scope, pool)
        const other = yield* agentIn(box, scope, pool)
        expect(yield* chat.chat("Remember the word: pineapple.")).toBe("You said: Remember the word: pineapple.")
        expect((yield* pool.stats).live).toBe(1)
        // The one permit is held by a CLI idle for less than reclaimAfter: the other turn times out.
        const refused = yield* Effect.flip(other.chat("me too"))
        expect(refused).toMatchObject({ _tag: "ProviderError", reason: { _tag: "TimeoutError" }, isRetryable: true })
        expect(refused.message).toContain("maxLiveProcesses")
        yield* until(() => claudeProcessesIn(box.cwd).length === 0 && Effect.runSync(pool.stats).live === 0)
        expect((yield* pool.stats).evictions).toBe(1)
        expect(yield* chat.chat("What was the word?")).toBe("You said: What was the word?")
        expect(JSON.stringify(api.messageRequests().at(-1)!.body.messages)).toContain("pineapple")
        yield* Scope.close(scope, Exit.void)
        expect(claudeProcessesIn(box.cwd)).toEqual([])
        expect((yield* pool.stats).live).toBe(0)
      }),
    120_000
  )
})
