import { assert, describe, expect, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as TestClock from "effect/testing/TestClock"
import { parseRun } from "../../../src/internal/claude/streamJson.ts"
import type * as UserMessage from "../../../src/internal/claude/userMessage.ts"
import {
  freshControls,
  interruptedError,
  liveControls,
  type Overrides,
  withOverrides
} from "../../../src/internal/claudeLocal/controls.ts"
import type * as LiveCli from "../../../src/internal/claudeLocal/liveCli.ts"
import type { LocalEnv } from "../../../src/internal/claudeLocal/plan.ts"
import type { ClaudeLiveError } from "../../../src/services/ClaudeLive.ts"

type Request = { readonly subtype: string; readonly [k: string]: unknown }

/** A live CLI whose control answers the test decides; it records what it was sent. */
const fakeCli = (answer: (request: Request) => Effect.Effect<LiveCli.ControlAnswer>) => {
  const requests: Array<Request> = []
  const steered: Array<UserMessage.UserMessage> = []
  const state = {
    alive: true,
    steerAccepted: true,
    interruptAnswer: Effect.succeed(
      Option.some<LiveCli.ControlAnswer>({ _tag: "Success", response: {} })
    ) as Effect.Effect<
      Option.Option<LiveCli.ControlAnswer>
    >
  }
  const cli = {
    key: "k",
    sessionId: () => Option.none(),
    forks: () => false,
    alive: () => state.alive,
    turn: () => Effect.die("no turn in this test"),
    control: (request: Request) => {
      requests.push(request)
      return answer(request)
    },
    interrupt: Effect.suspend(() => state.interruptAnswer),
    steer: (message: UserMessage.UserMessage) =>
      Effect.sync(() => {
        steered.push(message)
        return state.steerAccepted
      }),
    settle: () => Effect.succeed(true),
    close: Effect.void
  } as unknown as LiveCli.LiveCli
  return { cli, requests, steered, state }
}

const slotOf = (cli: LiveCli.LiveCli | undefined) => ({ current: () => cli }) as unknown as LiveCli.LiveSlot

const envOf = (version: string, trustedPrompts = false) => {
  const [major, minor, patch] = version.split(".").map(Number)
  return {
    options: { trustedPrompts },
    toolPrefix: "mcp__bridge__",
    cliVersion: Effect.succeed({ major, minor, patch })
  } as unknown as LocalEnv
}

const success = (response: unknown = {}) => Effect.succeed<LiveCli.ControlAnswer>({ _tag: "Success", response })

const reasonOf = <A>(exit: Exit.Exit<A, ClaudeLiveError>) => {
  assert(Exit.isFailure(exit))
  const error = exit.cause.reasons.find((r) => r._tag === "Fail")
  assert(error !== undefined && error._tag === "Fail")
  return error.error.reason
}

describe("claudeLocal controls", () => {
  it("withOverrides keeps the env when nothing was changed and sets the changed options", () => {
    const env = { options: { model: "a" } } as unknown as LocalEnv
    expect(withOverrides(env, {})).toBe(env)
    const changed = withOverrides(env, { model: "b", maxThinkingTokens: 128 })
    expect(changed.options.model).toBe("b")
    expect(changed.options.env).toMatchObject({ MAX_THINKING_TOKENS: "128" })
  })

  it("interruptedError names the bridge's tools without their prefix and keeps the result's reason and session", () => {
    const line = (value: unknown) => JSON.stringify(value)
    const parsed = parseRun(
      [
        line({
          type: "assistant",
          message: {
            content: [
              { type: "text", text: "Half an ans" },
              { type: "tool_use", id: "t1", name: "mcp__bridge__lookup", input: {} },
              { type: "tool_use", id: "t2", name: "Read", input: {} }
            ]
          }
        }),
        line({ type: "user", message: { content: [{ type: "tool_result", tool_use_id: "t1", is_error: true }] } }),
        line({
          type: "result",
          subtype: "error_during_execution",
          is_error: true,
          terminal_reason: "aborted_tools",
          session_id: "s-1"
        })
      ].join("\n"),
      "mcp__bridge__"
    )
    const error = interruptedError(envOf("2.1.300"), parsed)
    assert(error.reason._tag === "Interrupted")
    expect(error.reason.answer).toBe("Half an ans")
    expect(error.reason.tools.map((t) => ({ id: t.id, name: t.name, isError: t.isError }))).toEqual([
      { id: "t1", name: "lookup", isError: true },
      { id: "t2", name: "Read", isError: undefined }
    ])
    expect(error.reason.terminalReason).toBe("aborted_tools")
    expect(error.reason.sessionId).toBe("s-1")

    const bare = interruptedError(envOf("2.1.300"), parseRun("", "mcp__bridge__"))
    assert(bare.reason._tag === "Interrupted")
    expect(bare.reason).toMatchObject({ answer: "", tools: [] })
    expect(bare.reason.terminalReason).toBeUndefined()
    expect(bare.reason.sessionId).toBeUndefined()
  })

  it.effect("fresh controls remember settings for the next run and refuse the rest as NotKeptAlive", () =>
    Effect.gen(function*() {
      const overrides: Overrides = {}
      const controls = freshControls(overrides)
      yield* controls.setModel("claude-x")
      yield* controls.setPermissionMode("plan")
      yield* controls.setMaxThinkingTokens(64)
      expect(overrides).toEqual({ model: "claude-x", permissionMode: "plan", maxThinkingTokens: 64 })
      yield* controls.setModel(undefined)
      yield* controls.setMaxThinkingTokens(undefined)
      expect(overrides).toMatchObject({ model: null, maxThinkingTokens: null })
      const refused = [
        reasonOf(yield* Effect.exit(controls.interrupt)),
        reasonOf(yield* Effect.exit(controls.steer("more"))),
        reasonOf(yield* Effect.exit(controls.contextUsage)),
        reasonOf(yield* Effect.exit(controls.mcpStatus))
      ]
      expect(refused.map((r) => [r._tag, "control" in r ? r.control : ""])).toEqual([
        ["NotKeptAlive", "interrupt"],
        ["NotKeptAlive", "steer"],
        ["NotKeptAlive", "contextUsage"],
        ["NotKeptAlive", "mcpStatus"]
      ])
    }))

  it.effect("settings are told to a running CLI once each, and a new CLI is told all of them", () =>
    Effect.gen(function*() {
      const first = fakeCli(() => success())
      let current: LiveCli.LiveCli | undefined = undefined
      const slot = { current: () => current } as unknown as LiveCli.LiveSlot
      const overrides: Overrides = {}
      const { applySettings, service } = liveControls(envOf("2.1.300"), slot, overrides)

      // No CLI yet: only remembered.
      yield* service.setModel("m1")
      expect(first.requests).toEqual([])

      current = first.cli
      yield* service.setPermissionMode("acceptEdits")
      expect(first.requests).toEqual([
        { subtype: "set_model", model: "m1" },
        { subtype: "set_permission_mode", mode: "acceptEdits" }
      ])
      yield* service.setMaxThinkingTokens(undefined)
      expect(first.requests.slice(2)).toEqual([{ subtype: "set_max_thinking_tokens", max_thinking_tokens: null }])
      // Nothing new: nothing is sent again.
      yield* applySettings(first.cli)
      expect(first.requests).toHaveLength(3)

      const second = fakeCli(() => success())
      yield* applySettings(second.cli)
      expect(second.requests.map((r) => r.subtype)).toEqual([
        "set_model",
        "set_permission_mode",
        "set_max_thinking_tokens"
      ])

      // A dead CLI is not running: the setting waits.
      first.state.alive = false
      yield* service.setModel("m2")
      expect(first.requests).toHaveLength(3)
      expect(overrides.model).toBe("m2")
    }))

  it.effect("a refused or unanswered setting fails with Rejected or NoAnswer", () =>
    Effect.gen(function*() {
      const refusing = fakeCli(() => Effect.succeed({ _tag: "Error", error: "unknown model" }))
      const live = liveControls(envOf("2.1.300"), slotOf(refusing.cli), {})
      const rejected = reasonOf(yield* Effect.exit(live.service.setModel("nope")))
      expect(rejected).toMatchObject({ _tag: "Rejected", control: "set_model", error: "unknown model" })

      const ended = fakeCli(() => Effect.succeed({ _tag: "Ended" }))
      const gone = reasonOf(
        yield* Effect.exit(liveControls(envOf("2.1.300"), slotOf(ended.cli), {}).service.setModel("m"))
      )
      expect(gone).toMatchObject({ _tag: "NoAnswer", control: "set_model", detail: "the CLI ended" })

      const silent = fakeCli(() => Effect.never)
      const fiber = yield* Effect.forkChild(
        Effect.exit(liveControls(envOf("2.1.300"), slotOf(silent.cli), {}).service.setPermissionMode("plan"))
      )
      yield* TestClock.adjust(Duration.seconds(30))
      const late = reasonOf(yield* Fiber.join(fiber))
      expect(late._tag).toBe("NoAnswer")
      expect(late).toMatchObject({ control: "set_permission_mode" })
      expect(late.message).toContain("no answer within 30s")
    }))

  it.effect("contextUsage and mcpStatus decode the CLI's answer; a malformed one is NoAnswer; no CLI is NoProcess", () =>
    Effect.gen(function*() {
      const usage = { totalTokens: 10, maxTokens: 100, percentage: 10, model: "m", categories: [] }
      const cli = fakeCli((request) =>
        request.subtype === "get_context_usage"
          ? success(usage)
          : success({ mcpServers: [{ name: "bridge", status: "connected" }] })
      )
      const { service } = liveControls(envOf("2.1.300"), slotOf(cli.cli), {})
      expect(yield* service.contextUsage).toMatchObject(usage)
      expect((yield* service.mcpStatus).map((s) => [s.name, s.status])).toEqual([["bridge", "connected"]])
      expect(cli.requests).toEqual([{ subtype: "get_context_usage", detail: "summary" }, { subtype: "mcp_status" }])

      const odd = fakeCli(() => success({ mcpServers: "none" }))
      const malformed = reasonOf(
        yield* Effect.exit(liveControls(envOf("2.1.300"), slotOf(odd.cli), {}).service.mcpStatus)
      )
      expect(malformed).toMatchObject({ _tag: "NoAnswer", control: "mcpStatus" })

      const none = liveControls(envOf("2.1.300"), slotOf(undefined), {}).service
      expect(reasonOf(yield* Effect.exit(none.contextUsage))).toMatchObject({
        _tag: "NoProcess",
        control: "contextUsage"
      })
      expect(reasonOf(yield* Effect.exit(none.interrupt))).toMatchObject({
        _tag: "NoRunningTurn",
        control: "interrupt"
      })
      expect(reasonOf(yield* Effect.exit(none.steer("x")))).toMatchObject({ _tag: "NoRunningTurn", control: "steer" })
    }))

  it.effect("interrupt: the CLI's answer, no turn running, a refusal, and no answer in time", () =>
    Effect.gen(function*() {
      const cli = fakeCli(() => success())
      const { service } = liveControls(envOf("2.1.300"), slotOf(cli.cli), {})
      yield* service.interrupt

      cli.state.interruptAnswer = Effect.succeed(Option.none())
      expect(reasonOf(yield* Effect.exit(service.interrupt))).toMatchObject({ _tag: "NoRunningTurn" })

      cli.state.interruptAnswer = Effect.succeed(Option.some({ _tag: "Error", error: "busy" }))
      expect(reasonOf(yield* Effect.exit(service.interrupt))).toMatchObject({
        _tag: "Rejected",
        control: "interrupt",
        error: "busy"
      })

      cli.state.interruptAnswer = Effect.never
      const fiber = yield* Effect.forkChild(Effect.exit(service.interrupt))
      yield* TestClock.adjust(Duration.seconds(30))
      expect(reasonOf(yield* Fiber.join(fiber))).toMatchObject({ _tag: "NoRunningTurn", control: "interrupt" })
    }))

  it.effect("steer writes a verbatim message with a uuid and priority into the running turn", () =>
    Effect.gen(function*() {
      const cli = fakeCli(() => success())
      const { service } = liveControls(envOf("2.1.300"), slotOf(cli.cli), {})
      yield* service.steer("also this")
      yield* service.steer("and @that", { when: "now" })
      expect(cli.steered.map((m) => [m.message.content, m.priority, m.client_composed])).toEqual([
        ["also this", "next", true],
        ["and @that", "now", true]
      ])
      expect(cli.steered.every((m) => typeof m.uuid === "string" && m.uuid.length > 0)).toBe(true)

      cli.state.steerAccepted = false
      expect(reasonOf(yield* Effect.exit(service.steer("late")))).toMatchObject({
        _tag: "NoRunningTurn",
        control: "steer"
      })
    }))

  it.effect("steer on a CLI that would interpret the text is Rejected unless prompts are trusted", () =>
    Effect.gen(function*() {
      const old = fakeCli(() => success())
      const strict = liveControls(envOf("2.1.100"), slotOf(old.cli), {}).service
      const refused = reasonOf(yield* Effect.exit(strict.steer("/compact")))
      expect(refused).toMatchObject({ _tag: "Rejected", control: "steer" })
      expect(refused.message).toContain("slash command")
      expect(old.steered).toEqual([])
      // Plain text is fine on an old CLI too.
      yield* strict.steer("plain")
      expect(old.steered).toHaveLength(1)

      const trusted = liveControls(envOf("2.1.100", true), slotOf(old.cli), {}).service
      yield* trusted.steer("/compact")
      expect(old.steered[1]?.client_composed).toBeUndefined()
    }))
})
