import { expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ClaudeAgent from "../../src/layers/ClaudeAgent.ts"
import { ChatClient } from "../../src/services/ChatClient.ts"
import { ClaudeLive, ClaudeLiveError, type Interrupted } from "../../src/services/ClaudeLive.ts"
import * as Tool from "../../src/services/Tool.ts"
import { claudeProcessesIn, type Sandbox, sandbox } from "../support/claudeCli.ts"
import { requestTimeout } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

/**
 * The scripted model: "story" streams a little and then hangs (so a turn is mid-text), "slow" and
 * "wait" call the bridge tools of those names, a tool result is answered with its text, and
 * anything else is echoed.
 */
const model = (req: Fake.FakeRequest): Fake.FakeReply => {
  const results = Fake.toolResults(req)
  if (results.length > 0) return { text: `after tool: ${results.map((r) => r.content).join(" | ")}` }
  const last = Fake.lastUserText(req)
  if (last.includes("story")) return { text: "Once upon a time, in a land far away", breakMidway: "hang" }
  if (last.includes("slow")) return { toolUses: [{ name: "mcp__gtb__slow", input: {} }] }
  if (last.includes("wait")) return { toolUses: [{ name: "mcp__gtb__wait", input: {} }] }
  const write = /write (\S+)/.exec(Fake.lastUserLine(req))
  if (write !== null) return { toolUses: [{ name: "Write", input: { file_path: write[1], content: "hello" } }] }
  return { text: `You said: ${Fake.lastUserLine(req)}` }
}

/** A kept-alive (unless `options` says otherwise) ClaudeAgent in `box`: its ChatClient and ClaudeLive. */
const liveIn = (box: Sandbox, options: ClaudeAgent.Options = {}) =>
  Effect.map(
    Layer.build(Layer.fresh(
      ClaudeAgent.layer({ cwd: box.cwd, env: box.env, requestTimeout, keepAlive: true, ...options }).pipe(Layer.orDie)
    )),
    (ctx) => ({ chat: Context.get(ctx, ChatClient), live: Context.get(ctx, ClaudeLive) })
  )

/** Waits (polling) until `done` holds, for at most 30 s. */
const until = (done: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 600 && !done(); i++) yield* Effect.sleep("50 millis")
    expect(done()).toBe(true)
  })

/** The `Interrupted` reason a turn failed with. */
const interruptedOf = <A>(exit: Exit.Exit<A, unknown>): Interrupted => {
  const error = Exit.isFailure(exit) ? Option.getOrUndefined(Exit.findErrorOption(exit)) : undefined
  expect(error).toBeInstanceOf(ClaudeLiveError)
  const reason = (error as ClaudeLiveError).reason
  expect(reason._tag).toBe("Interrupted")
  return reason as Interrupted
}

const allText = (req: Fake.FakeRequest | undefined) => JSON.stringify(req?.body.messages ?? [])

/** A tool that blocks until `gate` opens, telling `started` when it runs. */
const waitTool = (started: Deferred.Deferred<void>, gate: Deferred.Deferred<void>) =>
  Tool.make("wait", {
    description: "Waits for the operator",
    parameters: {},
    handler: () =>
      Deferred.succeed(started, undefined).pipe(Effect.andThen(Deferred.await(gate)), Effect.as("released"))
  })

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
      const started = yield* Deferred.make<void>()
      const stopped = yield* Deferred.make<void>()
      const slow = Tool.make("slow", {
        description: "Takes a long time",
        parameters: {},
        handler: () =>
          Deferred.succeed(started, undefined).pipe(
            Effect.andThen(Effect.sleep("60 seconds")),
            Effect.as("finished"),
            Effect.onInterrupt(() => Deferred.succeed(stopped, undefined))
          )
      })
      yield* chat.setTools([slow])
      const turn = yield* Effect.forkChild(chat.chat("Do the slow thing"))
      yield* Deferred.await(started)
      const [pid] = claudeProcessesIn(box.cwd)
      yield* live.interrupt
      const reason = interruptedOf(yield* Fiber.await(turn))
      expect(reason.terminalReason).toBe("aborted_tools")
      expect(reason.tools.map((t) => t.name)).toEqual(["slow"])
      yield* Deferred.await(stopped).pipe(Effect.timeout("20 seconds"))
      yield* chat.chat("Hello again")
      expect(claudeProcessesIn(box.cwd)).toEqual([pid])
      expect(allText(api.messageRequests().at(-1))).toContain("[Request interrupted by user for tool use]")
    }), 180_000)

  it.live(
    "ClaudeAgent: interrupting the turn's fiber stops the CLI's turn politely and keeps the process",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const box = yield* sandbox(api.url)
        const { chat } = yield* liveIn(box)
        yield* chat.chat("Remember the word: pineapple.")
        const [pid] = claudeProcessesIn(box.cwd)
        const turn = yield* Effect.forkChild(chat.chat("Tell me a story"))
        yield* until(() => allText(api.messageRequests().at(-1)).includes("Tell me a story"))
        yield* Effect.sleep("500 millis")
        const t0 = Date.now()
        yield* Fiber.interrupt(turn)
        const took = Date.now() - t0
        // Within the 3 s bound of a polite stop (and not the bound's fallback: the process stays).
        expect(took).toBeLessThan(3_000)
        expect(yield* chat.chat("Still there?")).toBe("You said: Still there?")
        expect(claudeProcessesIn(box.cwd)).toEqual([pid])
        const history = allText(api.messageRequests().at(-1))
        expect(history).toContain("pineapple")
        expect(history).toContain("Tell me a story")
        expect(history).toContain("[Request interrupted by user]")
        console.log(`ClaudeAgent: fiber interrupt -> polite stop in ${took} ms`)
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
