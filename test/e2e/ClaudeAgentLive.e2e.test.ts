import { expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as ClaudeAgent from "../../src/layers/ClaudeAgent.ts"
import { ChatClient } from "../../src/services/ChatClient.ts"
import { ClaudeLive } from "../../src/services/ClaudeLive.ts"
import * as Tool from "../../src/services/Tool.ts"
import { claudeProcessesIn, type Sandbox, sandbox } from "../support/claudeCli.ts"
import { requestTimeout } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"
import {
  allText,
  expectPermissionModeSwitch,
  expectPoliteFiberStop,
  expectSameProcess,
  fixture,
  interruptedOf,
  model,
  onlyProcess,
  slowTool,
  until,
  waitTool
} from "../support/liveHarness.ts"

/** A kept-alive (unless `options` says otherwise) ClaudeAgent in `box`: its ChatClient and ClaudeLive. */
const liveIn = (box: Sandbox, options: ClaudeAgent.Options = {}) =>
  Effect.map(
    Layer.build(Layer.fresh(
      ClaudeAgent.layer({ cwd: box.cwd, env: box.env, requestTimeout, keepAlive: true, ...options }).pipe(Layer.orDie)
    )),
    (ctx) => ({ chat: Context.get(ctx, ChatClient), live: Context.get(ctx, ClaudeLive) })
  )

describeWithClaude("ClaudeAgent keepAlive: live controls through the SDK's Query", () => {
  it.live(
    "interrupt while text streams: Interrupted with the partial answer, same process, history kept",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const box = yield* sandbox(api.url)
        const { chat, live } = yield* liveIn(box)
        expect(yield* chat.chat("Remember the word: pineapple.")).toBe("You said: Remember the word: pineapple.")
        const [pid] = claudeProcessesIn(box.cwd)
        const turn = yield* Effect.forkChild(chat.chat("Tell me a story"))
        yield* until(() => allText(api.messageRequests().at(-1)).includes("Tell me a story"))
        yield* Effect.sleep("500 millis")
        const started = Date.now()
        yield* live.interrupt
        const reason = interruptedOf(yield* Fiber.await(turn))
        const took = Date.now() - started
        expect(took).toBeLessThan(10_000)
        expect("Once upon a time, in a land far away".startsWith(reason.answer)).toBe(true)
        expect(reason.terminalReason).toBe("aborted_streaming")
        const again = yield* Effect.flip(live.interrupt)
        expect(again.reason._tag).toBe("NoRunningTurn")
        expect(yield* chat.chat("And now?")).toBe("You said: And now?")
        expect(claudeProcessesIn(box.cwd)).toEqual([pid])
        const history = allText(api.messageRequests().at(-1))
        expect(history).toContain("pineapple")
        expect(history).toContain("Tell me a story")
        expect(history).toContain("[Request interrupted by user]")
        console.log(`ClaudeAgent: interrupt while streaming -> Interrupted in ${took} ms`)
      }),
    180_000
  )

  it.live("interrupt while a tool runs: the handler is interrupted, same process", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(model)
      const box = yield* sandbox(api.url)
      const { chat, live } = yield* liveIn(box)
      const slow = yield* slowTool("slow")
      const steady = yield* slowTool("steady", { duration: "2 seconds", uninterruptible: true })
      yield* chat.setTools([slow.tool, steady.tool])
      const turn = yield* Effect.forkChild(chat.chat("Do the slow thing"))
      yield* Deferred.await(slow.started)
      const pid = onlyProcess(box)
      yield* live.interrupt
      const reason = interruptedOf(yield* Fiber.await(turn))
      expect(reason.terminalReason).toBe("aborted_tools")
      expect(reason.tools.map((t) => t.name)).toEqual(["slow"])
      // The CLI cancels the MCP call: the handler's fiber is interrupted (its finalizer says so).
      expect(yield* Deferred.await(slow.ended).pipe(Effect.timeout("20 seconds"))).toBe("interrupted")
      yield* chat.chat("Hello again")
      expectSameProcess(box, pid)
      const last = api.messageRequests().at(-1)!
      expect(allText(last)).toContain("[Request interrupted by user for tool use]")
      const told = Fake.toolResults(last)[0]
      expect(told?.is_error).toBe(true)
      expect(told?.content).toContain("this call was stopped while running, not refused")
      // An uninterruptible handler finishes, though the turn's fiber was interrupted (a polite
      // stop): the model is told the same, not that it completed.
      const second = yield* Effect.forkChild(chat.chat("Do the steady thing"))
      yield* Deferred.await(steady.started)
      yield* Fiber.interrupt(second)
      expect(yield* Deferred.await(steady.ended).pipe(Effect.timeout("20 seconds"))).toBe("finished")
      yield* chat.chat("And now?")
      expectSameProcess(box, pid)
      const toldAgain = Fake.toolResults(api.messageRequests().at(-1)!)[0]
      expect(toldAgain?.is_error).toBe(true)
      expect(toldAgain?.content).toBe(told?.content)
    }), 180_000)

  it.live(
    "ClaudeAgent: interrupting the turn's fiber stops the CLI's turn politely and keeps the process",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const box = yield* sandbox(api.url)
        const { chat } = yield* liveIn(box)
        // Within the 3 s bound of a polite stop (and not the bound's fallback: the process stays).
        const took = yield* expectPoliteFiberStop(api, box, chat, 3_000)
        expect(allText(api.messageRequests().at(-1))).toContain("[Request interrupted by user]")
        console.log(`ClaudeAgent: fiber interrupt -> polite stop in ${took} ms`)
      }),
    180_000
  )

  it.live(
    "ClaudeAgent: interrupt drops a queued later steer; the next turn is the next turn",
    () =>
      Effect.gen(function*() {
        const { api, box } = yield* fixture
        const { chat, live } = yield* liveIn(box)
        const started = yield* Deferred.make<void>()
        const gate = yield* Deferred.make<void>()
        yield* chat.setTools([waitTool(started, gate)])
        const turn = yield* Effect.forkChild(chat.chat("Please wait for me"))
        yield* Deferred.await(started)
        const pid = onlyProcess(box)
        yield* live.steer("queued for later", { when: "later" })
        yield* live.interrupt
        interruptedOf(yield* Fiber.await(turn))
        yield* Deferred.succeed(gate, undefined)
        // Answered for this turn, not for the dropped message.
        const answer = yield* chat.chat("Next one")
        expect(answer).not.toContain("queued for later")
        expect(api.messageRequests().at(-1) && allText(api.messageRequests().at(-1))).toContain("Next one")
        expectSameProcess(box, pid)
        // The queued message never reached the model.
        expect(api.messageRequests().every((r) => !allText(r).includes("queued for later"))).toBe(true)
      }),
    180_000
  )

  it.live("setModel, contextUsage and mcpStatus through the Query", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(model)
      const box = yield* sandbox(api.url)
      const { chat, live } = yield* liveIn(box, { model: "claude-opus-4-5" })
      yield* chat.setTools([
        Tool.make("noop", { description: "Does nothing", parameters: {}, handler: () => Effect.succeed("ok") })
      ])
      yield* chat.chat("First")
      expect(api.messageRequests().at(-1)?.body.model).toBe("claude-opus-4-5")
      const [pid] = claudeProcessesIn(box.cwd)
      yield* live.setModel("claude-sonnet-4-5")
      yield* chat.chat("Second")
      expect(api.messageRequests().at(-1)?.body.model).toBe("claude-sonnet-4-5")
      const usage = yield* live.contextUsage
      expect(usage.maxTokens).toBeGreaterThan(0)
      expect(usage.totalTokens).toBeGreaterThan(0)
      expect(usage.categories.length).toBeGreaterThan(0)
      const servers = yield* live.mcpStatus
      expect(servers.find((s) => s.name === "gtb")?.status).toBe("connected")
      expect(claudeProcessesIn(box.cwd)).toEqual([pid])
    }), 180_000)

  it.live(
    "ClaudeAgent: setPermissionMode changes whether a tool is allowed on the running CLI",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const box = yield* sandbox(api.url)
        const { chat, live } = yield* liveIn(box, { permissionMode: "acceptEdits" })
        yield* expectPermissionModeSwitch(box, chat, live)
      }),
    180_000
  )

  for (const when of ["next", "later", "now"] as const) {
    it.live(`ClaudeAgent steer with when: "${when}" while a tool runs`, () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const box = yield* sandbox(api.url)
        const { chat, live } = yield* liveIn(box)
        const started = yield* Deferred.make<void>()
        const gate = yield* Deferred.make<void>()
        yield* chat.setTools([waitTool(started, gate)])
        const turn = yield* Effect.forkChild(chat.chat("Please wait for me"))
        yield* Deferred.await(started)
        const [pid] = claudeProcessesIn(box.cwd)
        // Data, not commands: the CLI must not read a file or run a slash command.
        const steered = `/help @README.md steered ${when}`
        yield* live.steer(steered, { when })
        // The CLI needs the steer before the tool's result is released.
        yield* Effect.sleep("1 second")
        yield* Deferred.succeed(gate, undefined)
        const answer = yield* Fiber.join(turn)
        const requests = api.messageRequests()
        const last = requests.at(-1)
        if (when === "next") {
          // Folded into the same turn: the request carrying the tool's result carries the steer.
          const carrying = requests.filter((r) => allText(r).includes(steered))
          expect(carrying).toEqual([last])
          expect(allText(last)).toContain("released")
          expect(allText(last)).toContain("The user sent a new message while you were working")
        } else if (when === "later") {
          // A turn of its own after this one; the chat call returns the last turn's answer.
          expect(Fake.lastUserLine(last!)).toBe(steered)
          expect(answer).toBe(`You said: ${steered}`)
          expect(requests.some((r) => Fake.toolResults(r).some((t) => t.content.includes("released")))).toBe(true)
          const usage = yield* chat.usage
          expect([usage.inputTokens, usage.outputTokens]).toEqual([30, 15])
        } else {
          // Replaces the running turn: the next request has it right after the tool's result.
          expect(allText(last)).toContain(steered)
          expect(answer).toContain("after tool")
          // The stopped tool's result, as the CLI tells the model.
          expect(answer).toContain("The tool call was interrupted before a result was received")
        }
        // Verbatim: the model got the text as written, no file read, no command run.
        expect(requests.some((r) => allText(r).includes("README"))).toBe(true)
        expect(requests.every((r) => Fake.toolResults(r).every((t) => !t.content.includes("README")))).toBe(true)
        // The next turn is the next turn (nothing left unread), on the same process.
        expect(yield* chat.chat("Next one")).toBe("You said: Next one")
        expect(claudeProcessesIn(box.cwd)).toEqual([pid])
        const steerWithoutTurn = yield* Effect.flip(live.steer("too late"))
        expect(steerWithoutTurn.reason._tag).toBe("NoRunningTurn")
      }), 180_000)
  }

  it.live(
    "a fresh query per turn: setModel applies to the next query, process controls say to use keepAlive",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const box = yield* sandbox(api.url)
        const { chat, live } = yield* liveIn(box, { keepAlive: false, model: "claude-opus-4-5" })
        for (const control of [live.interrupt, live.steer("hi"), live.contextUsage, live.mcpStatus]) {
          const error = yield* Effect.flip(control)
          expect(error.reason._tag).toBe("NotKeptAlive")
        }
        yield* chat.chat("One")
        expect(api.messageRequests().at(-1)?.body.model).toBe("claude-opus-4-5")
        yield* live.setModel("claude-sonnet-4-5")
        yield* chat.chat("Two")
        expect(api.messageRequests().at(-1)?.body.model).toBe("claude-sonnet-4-5")
      }),
    180_000
  )
})
