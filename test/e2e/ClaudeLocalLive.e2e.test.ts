import { expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import * as Stream from "effect/Stream"
import * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import type * as ToolPolicy from "../../src/registry/ToolPolicy.ts"
import { ChatClient } from "../../src/services/ChatClient.ts"
import { ClaudeLive } from "../../src/services/ClaudeLive.ts"
import * as Tool from "../../src/services/Tool.ts"
import { claudeBinary, claudeProcessesIn, type Sandbox, sandbox } from "../support/claudeCli.ts"
import { localServices, requestTimeout } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"
import {
  allText,
  expectPermissionModeSwitch,
  expectPoliteFiberStop,
  expectSameProcess,
  interruptedOf,
  model,
  onlyProcess,
  slowTool,
  until,
  waitTool
} from "../support/liveHarness.ts"

/** A kept-alive (unless `options` says otherwise) ClaudeLocal in `box`: its ChatClient and ClaudeLive. */
const liveIn = (box: Sandbox, options: ClaudeLocal.Options = {}) =>
  Effect.map(
    Layer.build(Layer.fresh(
      ClaudeLocal.layer({
        binary: claudeBinary,
        cwd: box.cwd,
        env: box.env,
        requestTimeout,
        keepAlive: true,
        ...options
      }).pipe(Layer.provide(localServices(box)), Layer.orDie)
    )),
    (ctx) => ({ chat: Context.get(ctx, ChatClient), live: Context.get(ctx, ClaudeLive) })
  )

describeWithClaude("ClaudeLocal keepAlive: live controls on the real claude CLI", () => {
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
        // The first text delta is on its way; give the CLI a moment to print it.
        yield* Effect.sleep("500 millis")
        const started = Date.now()
        yield* live.interrupt
        const reason = interruptedOf(yield* Fiber.await(turn))
        const took = Date.now() - started
        expect(took).toBeLessThan(10_000)
        expect("Once upon a time, in a land far away".startsWith(reason.answer)).toBe(true)
        expect(reason.answer.length).toBeGreaterThan(0)
        expect(reason.terminalReason).toBe("aborted_streaming")
        expect(reason.tools).toEqual([])
        // Nothing runs now: a second interrupt says so.
        const again = yield* Effect.flip(live.interrupt)
        expect(again.reason._tag).toBe("NoRunningTurn")
        expect(yield* chat.chat("And now?")).toBe("You said: And now?")
        expect(claudeProcessesIn(box.cwd)).toEqual([pid])
        // The next request carries the whole session: the first turn, the interrupted one, and the marker.
        const history = allText(api.messageRequests().at(-1))
        expect(history).toContain("pineapple")
        expect(history).toContain("Tell me a story")
        expect(history).toContain("[Request interrupted by user]")
        console.log(`interrupt while streaming -> Interrupted in ${took} ms`)
      }),
    180_000
  )

  it.live("chatStream: the deltas so far, then the stream fails with Interrupted", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(model)
      const box = yield* sandbox(api.url)
      const { chat, live } = yield* liveIn(box)
      yield* chat.chat("Hello")
      const texts = yield* Ref.make("")
      const stream = yield* Effect.forkChild(
        chat.chatStream("Tell me a story").pipe(
          Stream.runForEach((event) =>
            event._tag === "TextDelta" ? Ref.update(texts, (t) => t + event.text) : Effect.void
          )
        )
      )
      yield* until(() => allText(api.messageRequests().at(-1)).includes("Tell me a story"))
      yield* Effect.sleep("500 millis")
      yield* live.interrupt
      const reason = interruptedOf(yield* Fiber.await(stream))
      expect(yield* Ref.get(texts)).toBe(reason.answer)
      expect(reason.answer.length).toBeGreaterThan(0)
    }), 180_000)

  it.live(
    "interrupt while a bridge tool runs: the handler is interrupted, the model is told on the next turn",
    () =>
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
        const t0 = Date.now()
        yield* live.interrupt
        const reason = interruptedOf(yield* Fiber.await(turn))
        const took = Date.now() - t0
        expect(took).toBeLessThan(10_000)
        expect(reason.terminalReason).toBe("aborted_tools")
        expect(reason.tools.map((t) => t.name)).toEqual(["slow"])
        // The CLI cancels the MCP call: the handler's fiber is interrupted (its finalizer says so).
        expect(yield* Deferred.await(slow.ended).pipe(Effect.timeout("20 seconds"))).toBe("interrupted")
        // The next turn's request holds the rejected tool result, the marker and the new prompt; the
        // CLI tells the model that the call was stopped while running, not refused.
        yield* chat.chat("Hello again")
        expectSameProcess(box, pid)
        const last = api.messageRequests().at(-1)!
        const history = allText(last)
        expect(history).toContain("Do the slow thing")
        expect(history).toContain("[Request interrupted by user for tool use]")
        expect(history).toContain("Hello again")
        expect(Fake.toolResults(last)[0]?.content).toContain("this call was stopped while running, not refused")
        // An uninterruptible handler finishes, though the turn's fiber was interrupted (a polite
        // stop): the model is told the same, not that it completed.
        const second = yield* Effect.forkChild(chat.chat("Do the steady thing"))
        yield* Deferred.await(steady.started)
        yield* Fiber.interrupt(second)
        expect(yield* Deferred.await(steady.ended).pipe(Effect.timeout("20 seconds"))).toBe("finished")
        yield* chat.chat("And now?")
        expectSameProcess(box, pid)
        const told = Fake.toolResults(api.messageRequests().at(-1)!)[0]
        expect(told?.is_error).toBe(true)
        expect(told?.content).toContain("this call was stopped while running, not refused")
        expect(told?.content).not.toContain("finished")
        console.log(`interrupt while a tool runs -> Interrupted in ${took} ms`)
      }),
    180_000
  )

  for (const when of ["next", "later", "now"] as const) {
    it.live(`steer with when: "${when}" while a tool runs`, () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const box = yield* sandbox(api.url)
        const { chat, live } = yield* liveIn(box)
        const started = yield* Deferred.make<void>()
        const gate = yield* Deferred.make<void>()
        yield* chat.setTools([waitTool(started, gate)])
        const turn = yield* Effect.forkChild(chat.chat("Please wait for me"))
        yield* Deferred.await(started)
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
          // Folded into the same turn: the request that carries the tool's result carries the steer
          // (after it, as the CLI's note), and no request after that.
          const carrying = requests.filter((r) => allText(r).includes(steered))
          expect(carrying).toEqual([last])
          expect(allText(last)).toContain("released")
          expect(allText(last)).toContain("The user sent a new message while you were working")
          expect(typeof answer).toBe("string")
        } else if (when === "later") {
          // A turn of its own after this one: the last request is the steered message; the chat
          // call returns the last turn's answer.
          expect(Fake.lastUserLine(last!)).toBe(steered)
          expect(answer).toBe(`You said: ${steered}`)
          expect(requests.some((r) => Fake.toolResults(r).some((t) => t.content.includes("released")))).toBe(true)
          // Both turns' results count (the first: two model calls, 20 in / 10 out as the CLI
          // reports the fake's; the steered one: 10 / 5), not only the last one's.
          const usage = yield* chat.usage
          expect([usage.inputTokens, usage.outputTokens]).toEqual([30, 15])
        } else {
          // Replaces the running turn: the next request has it right after the tool's result.
          expect(allText(last)).toContain(steered)
          expect(answer).toContain("after tool")
          // The stopped tool's result, as the CLI tells the model.
          expect(answer).toContain("The tool call was interrupted before a result was received")
        }
        // The next turn is the next turn (nothing left unread).
        expect(yield* chat.chat("Next one")).toBe("You said: Next one")
        const steerWithoutTurn = yield* Effect.flip(live.steer("too late"))
        expect(steerWithoutTurn.reason._tag).toBe("NoRunningTurn")
      }), 180_000)
  }

  it.live(
    "setModel, contextUsage and mcpStatus on the running CLI; setPermissionMode is told to it",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const box = yield* sandbox(api.url)
        const { chat, live } = yield* liveIn(box, { model: "claude-opus-4-5" })
        const noProcess = yield* Effect.flip(live.contextUsage)
        expect(noProcess.reason._tag).toBe("NoProcess")
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
        expect(usage.totalTokens).toBeLessThanOrEqual(usage.maxTokens)
        expect(usage.categories.length).toBeGreaterThan(0)
        const servers = yield* live.mcpStatus
        expect(servers.find((s) => s.name === "gtb")?.status).toBe("connected")
        yield* live.setPermissionMode("plan")
        // The type refuses an unknown mode; one that gets past it (untyped code) is refused by the CLI.
        const refused = yield* Effect.flip(
          live.setPermissionMode("no-such-mode" as ToolPolicy.PermissionMode)
        )
        expect(refused.reason._tag).toBe("Rejected")
        expect(claudeProcessesIn(box.cwd)).toEqual([pid])
        console.log(`contextUsage: ${usage.totalTokens}/${usage.maxTokens} tokens (${usage.percentage}%)`)
      }),
    180_000
  )

  it.live("setPermissionMode changes whether a tool is allowed on the running CLI", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(model)
      const box = yield* sandbox(api.url)
      const { chat, live } = yield* liveIn(box, { permissionMode: "acceptEdits" })
      yield* expectPermissionModeSwitch(box, chat, live)
    }), 180_000)

  it.live(
    "interrupting the turn's fiber stops the CLI's turn politely and keeps the process",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const box = yield* sandbox(api.url)
        const { chat } = yield* liveIn(box)
        const took = yield* expectPoliteFiberStop(api, box, chat, 10_000)
        console.log(`fiber interrupt -> polite stop in ${took} ms`)
      }),
    180_000
  )

  it.live(
    "fresh CLI per turn: setModel applies to the next run, process controls say to use keepAlive",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const box = yield* sandbox(api.url)
        const { chat, live } = yield* liveIn(box, { keepAlive: false, model: "claude-opus-4-5" })
        const seen = yield* Ref.make<ReadonlyArray<string>>([])
        for (const control of [live.interrupt, live.steer("hi"), live.contextUsage, live.mcpStatus]) {
          const error = yield* Effect.flip(control)
          expect(error.reason._tag).toBe("NotKeptAlive")
          expect(error.message).toContain("keepAlive")
          yield* Ref.update(seen, (s) => [...s, error.reason._tag])
        }
        expect((yield* Ref.get(seen)).length).toBe(4)
        yield* live.setModel("claude-sonnet-4-5")
        yield* chat.chat("Hi")
        expect(api.messageRequests().at(-1)?.body.model).toBe("claude-sonnet-4-5")
      }),
    180_000
  )
})
