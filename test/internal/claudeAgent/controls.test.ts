import { assert, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import { ResultLine } from "../../../src/internal/claude/streamJson.ts"
import * as UserMessage from "../../../src/internal/claude/userMessage.ts"
import { interruptedError, makeControls, type Steering } from "../../../src/internal/claudeAgent/controls.ts"
import type { KeepAlive, LiveQuery, RunningTurn } from "../../../src/internal/claudeAgent/live.ts"
import type { QuerySetup } from "../../../src/internal/claudeAgent/query.ts"
import { ConfigurationError, ProviderError } from "../../../src/services/ChatClient.ts"
import type { ClaudeLiveError } from "../../../src/services/ClaudeLive.ts"

/** The SDK `Query`'s control methods, recording each call; a method in `refuse` rejects. */
const fakeQuery = (answers: { contextUsage?: unknown; mcpStatus?: unknown } = {}) => {
  const calls: Array<[string, unknown]> = []
  const refuse = new Set<string>()
  const sent: Array<UserMessage.UserMessage> = []
  const method = (name: string, answer?: unknown) => async (arg?: unknown) => {
    calls.push([name, arg])
    if (refuse.has(name)) throw new Error(`${name} refused`)
    return answer
  }
  const controls = {
    setModel: method("setModel"),
    setPermissionMode: method("setPermissionMode"),
    setMaxThinkingTokens: method("setMaxThinkingTokens"),
    interrupt: method("interrupt"),
    getContextUsage: method("getContextUsage", answers.contextUsage),
    mcpServerStatus: method("mcpServerStatus", answers.mcpStatus)
  }
  const query = {
    controls,
    send: (message: UserMessage.UserMessage) => void sent.push(message),
    flushed: () => Promise.resolve(),
    running: undefined
  } as unknown as LiveQuery
  return { query, calls, refuse, sent }
}

const keepAliveOf = (current: () => LiveQuery | undefined) => ({ current }) as unknown as KeepAlive

const turn = (): RunningTurn => ({ interrupted: false, pending: new Set(), tracked: false, resulted: false })

const steering: Steering = {
  check: (input) =>
    input.prompt.startsWith("/")
      ? Effect.fail(
        new ProviderError({ provider: "claude-agent", reason: new ConfigurationError({ message: "too old" }) })
      )
      : Effect.void,
  message: (input, delivery) => UserMessage.make(input, true, delivery)
}

const reasonOf = <A>(exit: Exit.Exit<A, ClaudeLiveError>) => {
  assert(Exit.isFailure(exit))
  const failure = exit.cause.reasons.find((r) => r._tag === "Fail")
  assert(failure !== undefined && failure._tag === "Fail")
  return failure.error.reason
}

describe("claudeAgent controls", () => {
  it("interruptedError strips the bridge's prefix and keeps what the result said", () => {
    const result = Schema.decodeUnknownSync(ResultLine)({
      type: "result",
      subtype: "error_during_execution",
      terminal_reason: "aborted_streaming",
      session_id: "s-9"
    })
    const error = interruptedError("bridge")({
      init: undefined,
      result,
      lastText: "partial",
      toolUses: [
        { id: "a", name: "mcp__bridge__search", isError: false },
        { id: "b", name: "Bash", isError: undefined }
      ]
    })
    assert(error.reason._tag === "Interrupted")
    expect(error.reason.answer).toBe("partial")
    expect(error.reason.tools.map((t) => [t.id, t.name, t.isError])).toEqual([
      ["a", "search", false],
      ["b", "Bash", undefined]
    ])
    expect(error.reason.terminalReason).toBe("aborted_streaming")
    expect(error.reason.sessionId).toBe("s-9")

    const nullReason = Schema.decodeUnknownSync(ResultLine)({ type: "result", terminal_reason: null })
    const bare = interruptedError("bridge")({ init: undefined, result: nullReason })
    assert(bare.reason._tag === "Interrupted")
    expect(bare.reason.answer).toBe("")
    expect(bare.reason.tools).toEqual([])
    expect(bare.reason.terminalReason).toBeUndefined()
    expect(bare.reason.sessionId).toBeUndefined()
  })

  it.effect("without keepAlive settings only change the next query's setup; the rest is NotKeptAlive", () =>
    Effect.gen(function*() {
      const { service, withOverrides } = makeControls(false, steering)
      const setup = { options: { model: "base" }, permissionMode: "default" } as unknown as QuerySetup
      expect(withOverrides(setup)).toBe(setup)

      yield* service.setModel("claude-y")
      const withModel = withOverrides(setup)
      expect(withModel.options.model).toBe("claude-y")
      expect(withModel.permissionMode).toBe("default")

      yield* service.setPermissionMode("plan")
      yield* service.setMaxThinkingTokens(256)
      const changed = withOverrides(setup)
      expect(changed.permissionMode).toBe("plan")
      expect(changed.options.env).toMatchObject({ MAX_THINKING_TOKENS: "256" })

      for (
        const [name, effect] of [
          ["interrupt", service.interrupt],
          ["steer", service.steer("x")],
          ["contextUsage", service.contextUsage],
          ["mcpStatus", service.mcpStatus]
        ] as const
      ) {
        expect(reasonOf(yield* Effect.exit(effect)), name).toMatchObject({ _tag: "NotKeptAlive", control: name })
      }
    }))

  it.effect("with keepAlive a setting is told to the running query, and all of them to a query started later", () =>
    Effect.gen(function*() {
      const fake = fakeQuery()
      let current: LiveQuery | undefined = undefined
      const controls = makeControls(true, steering)
      controls.attach(keepAliveOf(() => current))

      yield* controls.service.setModel("m1") // no query yet: remembered only
      expect(fake.calls).toEqual([])
      current = fake.query
      yield* controls.service.setMaxThinkingTokens(undefined)
      yield* controls.service.setPermissionMode("acceptEdits")
      yield* controls.service.setModel(undefined)
      expect(fake.calls).toEqual([
        ["setMaxThinkingTokens", null],
        ["setPermissionMode", "acceptEdits"],
        ["setModel", undefined]
      ])

      const later = fakeQuery()
      yield* controls.applySettings(later.query)
      expect(later.calls.map(([name]) => name)).toEqual(["setModel", "setPermissionMode", "setMaxThinkingTokens"])
    }))

  it.effect("a refused setting fails with Rejected; applySettings only logs it", () =>
    Effect.gen(function*() {
      const fake = fakeQuery()
      fake.refuse.add("setModel")
      const controls = makeControls(true, steering)
      controls.attach(keepAliveOf(() => fake.query))
      const refused = reasonOf(yield* Effect.exit(controls.service.setModel("bad")))
      expect(refused).toMatchObject({ _tag: "Rejected", control: "setModel" })
      expect(refused.message).toContain("setModel refused")

      const later = fakeQuery()
      later.refuse.add("setModel")
      yield* controls.applySettings(later.query)
      expect(later.calls.map(([name]) => name)).toEqual(["setModel"])
    }))

  it.effect("contextUsage and mcpStatus decode the query's answers; a malformed answer is Rejected", () =>
    Effect.gen(function*() {
      const usage = { totalTokens: 5, maxTokens: 50, percentage: 10, model: "m", categories: [] }
      const fake = fakeQuery({ contextUsage: usage, mcpStatus: [{ name: "bridge", status: "failed", error: "boom" }] })
      const controls = makeControls(true, steering)
      let current: LiveQuery | undefined = undefined
      controls.attach(keepAliveOf(() => current))
      expect(reasonOf(yield* Effect.exit(controls.service.mcpStatus))).toMatchObject({
        _tag: "NoProcess",
        control: "mcpStatus"
      })
      current = fake.query
      expect(yield* controls.service.contextUsage).toMatchObject(usage)
      expect(fake.calls[0]).toEqual(["getContextUsage", { detail: "summary" }])
      expect((yield* controls.service.mcpStatus).map((s) => [s.name, s.status, s.error])).toEqual([
        ["bridge", "failed", "boom"]
      ])

      const odd = fakeQuery({ contextUsage: { totalTokens: "many" } })
      const other = makeControls(true, steering)
      other.attach(keepAliveOf(() => odd.query))
      expect(reasonOf(yield* Effect.exit(other.service.contextUsage))).toMatchObject({
        _tag: "Rejected",
        control: "contextUsage"
      })
    }))

  it.live("interrupt marks the running turn and calls the query's interrupt with cancelQueued; refusals are Rejected", () =>
    Effect.gen(function*() {
      const fake = fakeQuery()
      const controls = makeControls(true, steering)
      controls.attach(keepAliveOf(() => fake.query))
      expect(reasonOf(yield* Effect.exit(controls.service.interrupt))).toMatchObject({
        _tag: "NoRunningTurn",
        control: "interrupt"
      })

      const running = turn()
      fake.query.running = running
      yield* controls.service.interrupt
      expect(running.interrupted).toBe(true)
      expect(fake.calls).toEqual([["interrupt", { cancelQueued: true }]])

      fake.refuse.add("interrupt")
      const refused = reasonOf(yield* Effect.exit(controls.service.interrupt))
      expect(refused).toMatchObject({ _tag: "Rejected", control: "interrupt" })
      expect(refused.message).toContain("interrupt refused")
    }))

  it.effect("steer writes a message with a uuid and priority into the running turn and tracks it", () =>
    Effect.gen(function*() {
      const fake = fakeQuery()
      const controls = makeControls(true, steering)
      let current: LiveQuery | undefined = undefined
      controls.attach(keepAliveOf(() => current))
      expect(reasonOf(yield* Effect.exit(controls.service.steer("x")))).toMatchObject({ _tag: "NoRunningTurn" })
      current = fake.query
      expect(reasonOf(yield* Effect.exit(controls.service.steer("x")))).toMatchObject({ _tag: "NoRunningTurn" })

      const running = turn()
      fake.query.running = running
      yield* controls.service.steer("first")
      yield* controls.service.steer("second", { when: "later" })
      expect(fake.sent.map((m) => [m.message.content, m.priority])).toEqual([["first", "next"], ["second", "later"]])
      expect([...running.pending]).toEqual(fake.sent.map((m) => m.uuid))

      const refused = reasonOf(yield* Effect.exit(controls.service.steer("/compact")))
      expect(refused).toMatchObject({ _tag: "Rejected", control: "steer" })
      expect(refused.message).toContain("too old")

      // A turn being stopped drops queued messages: steering into it is refused.
      running.interrupted = true
      expect(reasonOf(yield* Effect.exit(controls.service.steer("lost")))).toMatchObject({
        _tag: "NoRunningTurn",
        control: "steer"
      })
      expect(fake.sent).toHaveLength(2)
    }))
})
