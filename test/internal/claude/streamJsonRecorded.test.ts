/**
 * The stream-json reader against output recorded from the pinned `claude` binary (2.1.332) run
 * against a fake Messages API (`test/fixtures/streamJson/`; the sandbox path is rewritten to
 * `/sandbox`): a foreground subagent, command hooks with `--include-hook-events`, partial
 * messages with tool calls, and plan rate-limit windows sent as `anthropic-ratelimit-unified-*`
 * response headers to a CLI logged in with an OAuth token (with an API key the CLI reports none).
 */
import { describe, expect, it } from "@effect/vitest"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { interpretRun } from "../../../src/internal/claude/session.ts"
import { makeRunReader, rateLimitWindows, type TranslatedEvent } from "../../../src/internal/claude/streamJson.ts"
import { ProcessError, ProviderError, Usage } from "../../../src/services/ChatClient.ts"
import { Attributes, rateLimitUtilization } from "../../../src/services/ChatTelemetry.ts"

const recorded = (name: string) => {
  const reader = makeRunReader("mcp__gtb__")
  const events: Array<TranslatedEvent> = []
  for (const l of readFileSync(join(import.meta.dirname, "../../fixtures/streamJson", name), "utf8").split("\n")) {
    events.push(...reader.line(l))
  }
  return { events, run: reader.done() }
}

const ofTag = <T extends TranslatedEvent["_tag"]>(events: ReadonlyArray<TranslatedEvent>, tag: T) =>
  events.filter((e): e is Extract<TranslatedEvent, { _tag: T }> => e._tag === tag)

describe("claudeStreamJson recorded output", () => {
  it("a subagent run: its task's start, progress and end, and its tools parented to the Agent call", () => {
    const { events, run } = recorded("subagent.jsonl")
    const agent = ofTag(events, "AgentToolStart").find((e) => e.name === "Agent")!
    expect(agent.parentToolCallId).toBeUndefined()
    expect(ofTag(events, "TaskStarted")).toEqual([{
      _tag: "TaskStarted",
      taskId: expect.any(String),
      toolCallId: agent.id,
      description: "Read the file",
      taskType: "local_agent",
      subagentType: "general-purpose"
    }])
    const taskId = ofTag(events, "TaskStarted")[0]!.taskId
    expect(ofTag(events, "TaskProgress")).toMatchObject([{ taskId, toolCallId: agent.id, lastToolName: "Read" }])
    expect(ofTag(events, "TaskProgress")[0]!.toolUses).toBe(1)
    expect(ofTag(events, "TaskEnded")).toEqual([
      { _tag: "TaskEnded", taskId, toolCallId: agent.id, status: "completed", summary: "done 3" }
    ])
    // The subagent's own tool: its start and end carry the Agent call as their parent.
    const inner = events.filter((e) => (e._tag === "AgentToolStart" || e._tag === "AgentToolEnd") && e.name === "Read")
    expect(inner.map((e) => [e._tag, "parentToolCallId" in e ? e.parentToolCallId : undefined])).toEqual([
      ["AgentToolStart", agent.id],
      ["AgentToolEnd", agent.id]
    ])
    expect(inner[1]).toMatchObject({ result: expect.stringContaining("hello from a file"), isError: false })
    // Order: the task starts after its Agent call and ends before the Agent call's result.
    const tags = events.map((e) => e._tag)
    expect(tags.indexOf("TaskStarted")).toBeGreaterThan(tags.indexOf("AgentToolStart"))
    expect(tags.indexOf("TaskEnded")).toBeLessThan(tags.lastIndexOf("AgentToolEnd"))
    // The main agent's tool-argument deltas (subagents are not streamed) join to its input.
    const deltas = ofTag(events, "ToolInputDelta")
    expect(deltas.length).toBe(2)
    expect(deltas.every((d) => d.id === agent.id && d.name === "Agent" && d.parentToolCallId === undefined)).toBe(true)
    expect(JSON.parse(deltas.map((d) => d.delta).join(""))).toEqual(agent.input)
    expect(run.result?.result).toBe("done 4")
    expect(run.activity.map((e) => `${e._tag}:${e.name}`)).toEqual([
      "AgentToolStart:Agent",
      "AgentToolStart:Read",
      "AgentToolEnd:Read",
      "AgentToolEnd:Agent"
    ])
  })

  it("a hook run: each hook's start and finish, between the tool's start and end, with its output", () => {
    const { events } = recorded("hooks.jsonl")
    const seen = events
      .filter((e) => e._tag !== "ToolInputDelta" && e._tag !== "TextDelta")
      .map((e) => e._tag === "HookStarted" || e._tag === "HookFinished" ? `${e._tag}:${e.hookName}` : e._tag)
    expect(seen).toEqual([
      "AgentToolStart",
      "HookStarted:PreToolUse:Read",
      "HookFinished:PreToolUse:Read",
      "HookStarted:PostToolUse:Read",
      "HookFinished:PostToolUse:Read",
      "AgentToolEnd"
    ])
    const [preStart, preEnd] = events.filter((e) => e._tag === "HookStarted" || e._tag === "HookFinished")
    expect(preEnd).toEqual({
      _tag: "HookFinished",
      hookId: preStart!._tag === "HookStarted" ? preStart!.hookId : "",
      hookName: "PreToolUse:Read",
      hookEvent: "PreToolUse",
      outcome: "success",
      exitCode: 0,
      output: "pre-hook-ran\n"
    })
    // Partial messages: the Read call's arguments stream before its start event.
    const deltas = ofTag(events, "ToolInputDelta")
    expect(deltas.map((d) => d.delta).join("")).toBe(JSON.stringify({ file_path: "/sandbox/work/a.txt" }))
    expect(events.findIndex((e) => e._tag === "ToolInputDelta")).toBeLessThan(
      events.findIndex((e) => e._tag === "AgentToolStart")
    )
  })

  it("rate-limit windows: one event per window with utilisation and reset; none spent on an allowed run", () => {
    const { events, run } = recorded("rateLimitAllowed.jsonl")
    expect(
      ofTag(events, "RateLimit").map((e) => ({ ...e, resetsAt: e.resetsAt && DateTime.toEpochMillis(e.resetsAt) }))
    )
      .toEqual([
        {
          _tag: "RateLimit",
          window: "five_hour",
          status: "allowed_warning",
          utilization: 0.91,
          resetsAt: 1796336600000
        },
        { _tag: "RateLimit", window: "seven_day", status: "allowed", utilization: 0.4, resetsAt: 1796419400000 }
      ])
    expect(run.rateLimits?.map((w) => w.window)).toEqual(["five_hour", "seven_day"])
    expect(run.spentWindow).toBeUndefined()
    expect(run.result?.is_error).toBe(false)
  })

  it("a spent five-hour window: the rejected window is the run's spent one, and the result is a 429", () => {
    const { events, run } = recorded("rateLimitRejected.jsonl")
    expect(ofTag(events, "RateLimit").map((e) => `${e.window}:${e.status}:${e.utilization}`)).toEqual([
      "five_hour:rejected:1",
      "seven_day:allowed:0.5"
    ])
    expect(run.spentWindow?.window).toBe("five_hour")
    expect(run.spentWindow?.resetsAt && DateTime.toEpochMillis(run.spentWindow.resetsAt)).toBe(1796336600000)
    expect(run.result).toMatchObject({ is_error: true, api_error_status: 429 })
  })
})

describe("claudeStreamJson.rateLimitWindows", () => {
  it("the representative window alone when there are no unified windows; its rejection wins; junk is no window", () => {
    expect(rateLimitWindows({ status: "rejected", rateLimitType: "seven_day_opus", resetsAt: 10 })).toEqual([
      { window: "seven_day_opus", status: "rejected", resetsAt: DateTime.makeUnsafe(10_000) }
    ])
    expect(
      rateLimitWindows({
        status: "rejected",
        rateLimitType: "five_hour",
        unifiedWindows: { five_hour: { utilization: 0.99, status: "allowed_warning" }, seven_day: "junk" }
      })
    ).toEqual([{ window: "five_hour", status: "rejected", utilization: 0.99 }])
    expect(rateLimitWindows({ status: "allowed" })).toEqual([{ window: "unknown", status: "allowed" }])
    expect(rateLimitWindows(null)).toEqual([])
    expect(rateLimitWindows({ unifiedWindows: [] })).toEqual([])
  })

  it("an unknown message type or system subtype gives no event; an MCP server is reported again only on change", () => {
    const reader = makeRunReader("mcp__gtb__")
    const line = (u: unknown) => reader.line(JSON.stringify(u))
    expect(line({ type: "brand_new_kind", rate_limit_info: { status: "rejected" } })).toEqual([])
    expect(line({ type: "system", subtype: "brand_new_subtype", task_id: "t1" })).toEqual([])
    expect(line({ type: "system", subtype: "task_started" })).toEqual([])
    const init = (status: string) =>
      line({
        type: "system",
        subtype: "init",
        mcp_servers: [{ name: "gtb", status }, { name: "docs", status: "failed" }]
      })
    expect(init("pending")).toEqual([
      { _tag: "McpServerStatus", name: "gtb", status: "pending" },
      { _tag: "McpServerStatus", name: "docs", status: "failed" }
    ])
    expect(init("pending")).toEqual([])
    expect(init("connected")).toEqual([{ _tag: "McpServerStatus", name: "gtb", status: "connected" }])
    expect(reader.done().spentWindow).toBeUndefined()
  })
})

describe("claudeSession.interpretRun on recorded rate-limit windows", () => {
  const interpret = (name: string) => {
    const { run } = recorded(name)
    return interpretRun({
      provider: "claude-local",
      serverName: "gtb",
      mounted: false,
      init: run.init,
      result: run.result,
      noResult: () => new ProviderError({ provider: "claude-local", reason: new ProcessError({ message: "none" }) }),
      allowPermissionDenials: false,
      recordResult: () => Effect.succeed(Usage.empty),
      rateLimits: run.rateLimits,
      spentWindow: run.spentWindow
    })
  }
  const gauge = (window: string) =>
    Effect.map(
      Metric.value(Metric.withAttributes(rateLimitUtilization, { [Attributes.rateLimitWindow]: window })),
      (state) => state.value
    )

  it.effect("a spent window is a retryable RateLimitError with its window, resetsAt and the 429", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(interpret("rateLimitRejected.jsonl"))
      expect(error).toMatchObject({
        _tag: "ProviderError",
        reason: { _tag: "RateLimitError", window: "five_hour", status: 429 },
        isRetryable: true
      })
      if (error._tag !== "ProviderError" || error.reason._tag !== "RateLimitError") return
      expect(error.reason.resetsAt && DateTime.toEpochMillis(error.reason.resetsAt)).toBe(1796336600000)
      expect(error.message).toContain("five_hour is spent until 2026-12-03T22:23:20")
      expect(error.message).toContain("5-hour limit")
      // The windows are metrics too: the last report of each window.
      expect(yield* gauge("five_hour")).toBe(1)
      expect(yield* gauge("seven_day")).toBe(0.5)
    }))

  it.effect("an allowed run answers and sets each window's utilisation gauge", () =>
    Effect.gen(function*() {
      expect((yield* interpret("rateLimitAllowed.jsonl")).text).toBe("done 1")
      expect(yield* gauge("five_hour")).toBe(0.91)
      expect(yield* gauge("seven_day")).toBe(0.4)
    }))
})
