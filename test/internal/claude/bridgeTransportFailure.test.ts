/**
 * A bridge tool call the CLI could not deliver (issue 30): the CLI puts its own fetch error where
 * the tool's result should be and the model answers with it. The run reader marks such results
 * and `interpretRun` fails the turn, counted and logged, instead of returning that answer.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Schema from "effect/Schema"
import { interpretRun } from "../../../src/internal/claude/session.ts"
import { InitLine, isTransportFailure, parseRun, ResultLine } from "../../../src/internal/claude/streamJson.ts"
import { ProcessError, ProviderError, Usage } from "../../../src/services/ChatClient.ts"
import { toolErrors } from "../../../src/services/ChatTelemetry.ts"

/** What claude 2.1.332 printed for a tools/call whose socket the bridge reset. */
const bunReset =
  "ECONNRESET: The socket connection was closed unexpectedly. For more information, pass `verbose: true` in the second argument to fetch()"

const lines = (results: ReadonlyArray<{ name: string; text: string; isError: boolean }>, answer: string) =>
  [
    { type: "system", subtype: "init", session_id: "s", mcp_servers: [{ name: "gtb", status: "connected" }] },
    ...results.flatMap((r, i) => [
      { type: "assistant", message: { content: [{ type: "tool_use", id: `t${i}`, name: r.name, input: {} }] } },
      {
        type: "user",
        message: {
          content: [{
            type: "tool_result",
            tool_use_id: `t${i}`,
            is_error: r.isError,
            content: [{ type: "text", text: r.text }]
          }]
        }
      }
    ]),
    { type: "result", subtype: "success", is_error: false, result: answer, session_id: "s" }
  ].map((l) => JSON.stringify(l)).join("\n")

const interpret = (stdout: string) => {
  const parsed = parseRun(stdout, "mcp__gtb__")
  return interpretRun({
    provider: "claude-local",
    serverName: "gtb",
    mounted: true,
    init: parsed.init === undefined ? undefined : Schema.decodeUnknownSync(InitLine)(parsed.init),
    result: parsed.result === undefined ? undefined : Schema.decodeUnknownSync(ResultLine)(parsed.result),
    toolUses: parsed.toolUses,
    noResult: () => new ProviderError({ provider: "claude-local", reason: new ProcessError({ message: "none" }) }),
    allowPermissionDenials: false,
    recordResult: () => Effect.succeed(Usage.empty)
  })
}

const lostCount = (tool: string) =>
  Metric.value(Metric.withAttributes(toolErrors, { "gen_ai.tool.name": tool, "error.type": "BridgeTransportError" }))

describe("isTransportFailure", () => {
  it("matches the CLI's fetch errors, not the bridge's own error results", () => {
    for (
      const text of [
        bunReset,
        "ECONNREFUSED: Unable to connect. Is the computer able to access the url?",
        "Unable to connect. Is the computer able to access the url?",
        "TypeError: fetch failed",
        "fetch failed",
        "UND_ERR_SOCKET: other side closed"
      ]
    ) expect(isTransportFailure(text), text).toBe(true)
    for (
      const text of [
        // executeTool's forms: a failing handler (even one whose own fetch was reset), a panic, a missing tool.
        `Error: ${bunReset}`,
        "tool handler panicked: ECONNRESET",
        "Tool add not found",
        "42",
        "The sum is ECONNRESET"
      ]
    ) expect(isTransportFailure(text), text).toBe(false)
  })
})

describe("a bridge call lost to the CLI's connection", () => {
  it.effect("fails the turn with a network ProviderError naming the tool, counted as BridgeTransportError", () =>
    Effect.gen(function*() {
      const before = (yield* lostCount("lostAdd")).count
      const error = yield* Effect.flip(interpret(lines([
        { name: "mcp__gtb__lostAdd", text: "1", isError: false },
        { name: "mcp__gtb__lostAdd", text: bunReset, isError: true }
      ], `The sum is ${bunReset}.`)))
      expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "NetworkError" }, isRetryable: false })
      expect(error.message).toContain("lost 1 call(s) of bridge tools (lostAdd)")
      expect(error.message).toContain("ECONNRESET")
      expect((yield* lostCount("lostAdd")).count).toBe(before + 1)
    }))

  it.effect("the reader marks only bridge tools' error results; the run's other tools and the bridge's own errors pass", () =>
    Effect.gen(function*() {
      const stdout = lines([
        { name: "mcp__gtb__add", text: `Error: ${bunReset}`, isError: true },
        { name: "mcp__other__fetch", text: bunReset, isError: true },
        { name: "mcp__gtb__add", text: bunReset, isError: false },
        { name: "WebFetch", text: "fetch failed", isError: true }
      ], "fine")
      expect(parseRun(stdout, "mcp__gtb__").toolUses.map((u) => u.transportError)).toEqual([
        undefined,
        undefined,
        undefined,
        undefined
      ])
      const outcome = yield* interpret(stdout)
      expect(outcome.text).toBe("fine")
    }))
})
