import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { makeSessionClient } from "../../../src/internal/claude/conversation.ts"
import {
  bounded,
  earlyExit,
  interpretRun,
  isAuthFailure,
  remainingBudget,
  type RunInput
} from "../../../src/internal/claude/session.ts"
import { InitLine, ResultLine } from "../../../src/internal/claude/streamJson.ts"
import { makeTranscripts } from "../../../src/internal/claude/transcripts.ts"
import { InvalidResponseError, ProcessError, ProviderError, Usage } from "../../../src/services/ChatClient.ts"

const result = (fields: Record<string, unknown>) => Schema.decodeUnknownSync(ResultLine)({ type: "result", ...fields })
const init = (fields: Record<string, unknown>) =>
  Schema.decodeUnknownSync(InitLine)({ type: "system", subtype: "init", ...fields })

const base = {
  provider: "claude-local",
  serverName: "gtb",
  mounted: false,
  init: undefined,
  noResult: () => new ProviderError({ provider: "claude-local", reason: new ProcessError({ message: "no result" }) }),
  allowPermissionDenials: false,
  recordResult: () => Effect.succeed(Usage.empty)
}

describe("claudeSession.bounded", () => {
  it("keeps short text, cuts long text with an ellipsis", () => {
    expect(bounded("abc", 3)).toBe("abc")
    expect(bounded("abcd", 3)).toBe("abc…")
    expect(bounded("x".repeat(2_500))).toHaveLength(2_001)
  })
})

describe("claudeSession.interpretRun", () => {
  it.effect("an error result with an API status is an http error, retryable for 429 and 5xx only; 401 is auth", () =>
    Effect.gen(function*() {
      const run = (status: number) =>
        Effect.flip(interpretRun({
          ...base,
          result: result({ subtype: "success", is_error: true, api_error_status: status, result: "rate limited" })
        }))
      const e429 = yield* run(429)
      expect(e429).toMatchObject({
        _tag: "ProviderError",
        reason: { _tag: "RateLimitError" },
        status: 429,
        isRetryable: true
      })
      expect(e429.message).toContain("(is_error): rate limited")
      expect(yield* run(529)).toMatchObject({
        reason: { _tag: "InternalProviderError" },
        status: 529,
        isRetryable: true
      })
      expect(yield* run(408)).toMatchObject({ isRetryable: true })
      expect(yield* run(401)).toMatchObject({
        reason: { _tag: "AuthenticationError" },
        status: 401,
        isRetryable: false
      })
    }))

  it.effect("a non-zero exit without subtype or status is a process error naming the exit code; long output is bounded", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(interpretRun({
        ...base,
        exitCode: 3,
        result: result({ api_error_status: null, result: "y".repeat(5_000) })
      }))
      expect(error).toMatchObject({ reason: { _tag: "ProcessError" }, isRetryable: false })
      expect(error._tag === "ProviderError" && error.status).toBeUndefined()
      expect(error.message).toContain("(exit 3)")
      expect(error.message.length).toBeLessThan(2_200)
    }))

  it.effect("a non-success subtype fails even without is_error", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(interpretRun({ ...base, result: result({ subtype: "error_max_turns" }) }))
      expect(error.message).toContain("(error_max_turns)")
    }))

  it.effect("the usage is recorded even when the run failed", () =>
    Effect.gen(function*() {
      const seen: Array<unknown> = []
      yield* Effect.flip(interpretRun({
        ...base,
        recordResult: (line) => Effect.sync(() => (seen.push(line.total_cost_usd), Usage.empty)),
        result: result({ is_error: true, total_cost_usd: 0.5 })
      }))
      expect(seen).toEqual([0.5])
    }))

  it.effect("a mounted tool server must be connected, else a config error names its status", () =>
    Effect.gen(function*() {
      const failed = yield* Effect.flip(interpretRun({
        ...base,
        mounted: true,
        init: init({ mcp_servers: [{ name: "gtb", status: "failed" }, { name: "other", status: "connected" }] }),
        result: result({ result: "answered anyway" })
      }))
      expect(failed).toMatchObject({ reason: { _tag: "ConfigurationError" }, isRetryable: false })
      expect(failed.message).toContain("MCP server gtb: failed")
      const missing = yield* Effect.flip(interpretRun({ ...base, mounted: true, result: result({}) }))
      expect(missing.message).toContain("not reported")
    }))

  it.effect("no result line is the provider's own error", () =>
    Effect.gen(function*() {
      expect(yield* Effect.flip(interpretRun({ ...base, result: undefined }))).toMatchObject({ message: "no result" })
    }))

  it.effect("the session id falls back to the init line's", () =>
    Effect.gen(function*() {
      const outcome = yield* interpretRun({
        ...base,
        mounted: true,
        init: init({ session_id: "from-init", mcp_servers: [{ name: "gtb", status: "connected" }] }),
        result: result({ result: "hi", structured_output: { a: 1 } })
      })
      expect(outcome).toEqual({ text: "hi", structured: { a: 1 }, sessionId: "from-init" })
      const own = yield* interpretRun({ ...base, init: init({ session_id: "x" }), result: result({ session_id: "y" }) })
      expect(own.sessionId).toBe("y")
    }))

  it.effect("permission denials fail with the tools named, or only warn when allowed", () =>
    Effect.gen(function*() {
      const line = result({ result: "could not", permission_denials: [{ tool_name: "Bash" }, { tool_name: "Write" }] })
      const error = yield* Effect.flip(interpretRun({ ...base, result: line }))
      expect(error).toMatchObject({ _tag: "PermissionDeniedError", tools: ["Bash", "Write"], answer: "could not" })
      const outcome = yield* interpretRun({ ...base, allowPermissionDenials: true, result: line })
      expect(outcome.text).toBe("could not")
    }))

  it.effect("a resume the CLI cannot find is a SessionNotFoundError naming the session, from every CLI's wording", () =>
    Effect.gen(function*() {
      const id = "11111111-2222-3333-4444-555555555555"
      const said = `No conversation found with session ID: ${id}`
      // claude 2.1.335: a zeroed result with `startup_failure_reason`, `errors` and no `result`.
      const current = yield* Effect.flip(interpretRun({
        ...base,
        exitCode: 1,
        result: result({
          subtype: "error_during_execution",
          is_error: true,
          session_id: id,
          errors: [said],
          startup_failure_reason: "resume_target_not_found"
        })
      }))
      expect(current).toMatchObject({
        _tag: "ProviderError",
        reason: { _tag: "SessionNotFoundError", sessionId: id },
        isRetryable: false
      })
      expect(current.message).toContain(id)
      // claude 2.1.332: the same result without the reason.
      const older = yield* Effect.flip(interpretRun({
        ...base,
        exitCode: 1,
        result: result({ subtype: "error_during_execution", is_error: true, session_id: id, errors: [said] })
      }))
      expect(older).toMatchObject({ reason: { _tag: "SessionNotFoundError", sessionId: id } })
      // claude 2.0.0: no result line, only stderr.
      expect(earlyExit("claude-local", 1, `${said}\n`)).toMatchObject({
        reason: { _tag: "SessionNotFoundError", sessionId: id }
      })
      // Another start-up failure keeps its own words, read from `errors`.
      const other = yield* Effect.flip(interpretRun({
        ...base,
        exitCode: 1,
        result: result({
          subtype: "error_during_execution",
          is_error: true,
          errors: ["the working directory is gone"],
          startup_failure_reason: "cwd_unavailable"
        })
      }))
      expect(other).toMatchObject({ reason: { _tag: "ProcessError" } })
      expect(other.message).toContain("the working directory is gone")
    }))
})

/** A session client whose runs answer from `lines` in turn, recording each input (and each setTools' budget). */
const scripted = (lines: ReadonlyArray<ReturnType<typeof result> | "fail">, maxBudgetUsd?: number) =>
  Effect.gen(function*() {
    const inputs: Array<RunInput> = []
    const toolBudgets: Array<number | undefined> = []
    let i = 0
    const client = yield* makeSessionClient({
      provider: "test",
      maxBudgetUsd,
      transcripts: makeTranscripts({
        store: Option.none(),
        projectKey: undefined,
        storeTimeout: undefined,
        configDir: () => "/nonexistent",
        cwd: undefined,
        snapshot: undefined
      }),
      setTools: (_, budgetUsd) => Effect.sync(() => void toolBudgets.push(budgetUsd)),
      run: (input) =>
        Effect.gen(function*() {
          inputs.push(input)
          const line = lines[i++]
          if (line === undefined || line === "fail") {
            return yield* new ProviderError({ provider: "test", reason: new ProcessError({ message: "boom" }) })
          }
          yield* input.recordResult(line)
          return { text: line.result, structured: line.structured_output, sessionId: line.session_id }
        })
    })
    return { client, inputs, toolBudgets }
  })

describe("claudeSession.makeSessionClient", () => {
  it.effect("the CLI's cumulative session cost is turned into per-run costs; a run without session counts whole", () =>
    Effect.gen(function*() {
      const { client } = yield* scripted([
        result({ result: "a", session_id: "s1", total_cost_usd: 0.1, usage: { input_tokens: 1, output_tokens: 2 } }),
        result({ result: "b", session_id: "s1", total_cost_usd: 0.25, usage: { input_tokens: 1, output_tokens: 2 } }),
        result({ result: "c", total_cost_usd: 0.05 })
      ])
      yield* client.chat("one")
      const afterOne = yield* client.usage
      expect(afterOne.costUsd).toBeCloseTo(0.1)
      yield* client.chat("two")
      expect((yield* client.usage).costUsd).toBeCloseTo(0.25)
      yield* client.chat("three")
      const total = yield* client.usage
      expect(total.costUsd).toBeCloseTo(0.3)
      expect(total).toMatchObject({ inputTokens: 2, outputTokens: 4, known: true })
    }))

  it.effect("a lower cumulative total (a new CLI session under the same id) never counts negative", () =>
    Effect.gen(function*() {
      const { client } = yield* scripted([
        result({ result: "a", session_id: "s", total_cost_usd: 0.5 }),
        result({ result: "b", session_id: "s", total_cost_usd: 0.2 })
      ])
      yield* client.chat("one")
      yield* client.chat("two")
      expect((yield* client.usage).costUsd).toBeCloseTo(0.5)
    }))

  it.effect("cache tokens count as input; a result with neither usage nor cost leaves the usage unknown", () =>
    Effect.gen(function*() {
      const { client } = yield* scripted([
        result({ result: "a", total_cost_usd: null }),
        result({
          result: "b",
          usage: { input_tokens: 1, cache_creation_input_tokens: 10, cache_read_input_tokens: 100, output_tokens: null }
        })
      ])
      yield* client.chat("one")
      expect((yield* client.usage).known).toBe(false)
      yield* client.chat("two")
      const u = yield* client.usage
      expect(u).toMatchObject({ inputTokens: 111, outputTokens: 0, cachedTokens: 100, known: true })
      expect(u.costUsd).toBeUndefined()
    }))

  it.effect("a failed turn keeps the added text and the session; the next turn sends them", () =>
    Effect.gen(function*() {
      const { client, inputs } = yield* scripted([
        result({ result: "a", session_id: "s1" }),
        "fail",
        result({ result: "c", session_id: "s2" }),
        result({ result: "d" })
      ])
      yield* client.chat("first")
      yield* client.add("context")
      expect((yield* Effect.flip(client.chat("second")))._tag).toBe("ProviderError")
      yield* client.chat("third")
      yield* client.chat("fourth")
      expect(inputs.map((i) => [i.prompt, Option.getOrUndefined(i.sessionId)])).toEqual([
        ["first", undefined],
        ["context\n\nsecond", "s1"],
        ["context\n\nthird", "s1"],
        // A run without a session id keeps the previous one.
        ["fourth", "s2"]
      ])
    }))

  it.effect("empty prompts, questions and added text are rejected before any run", () =>
    Effect.gen(function*() {
      const { client, inputs } = yield* scripted([])
      expect((yield* Effect.flip(client.chat("  ")))._tag).toBe("EmptyPromptError")
      expect((yield* Effect.flip(client.add("")))._tag).toBe("EmptyPromptError")
      expect((yield* Effect.flip(client.ask("\n", Schema.String)))._tag).toBe("EmptyPromptError")
      const streamed = yield* Effect.flip(Stream.runDrain(client.chatStream(" ")))
      expect(streamed._tag).toBe("EmptyPromptError")
      expect(inputs).toHaveLength(0)
    }))

  it.effect("ask: the structured output is decoded; an undecodable answer fails and keeps the buffer", () =>
    Effect.gen(function*() {
      const { client, inputs } = yield* scripted([
        result({ result: "{}", structured_output: { n: "not a number" }, session_id: "s1" }),
        result({ result: "", structured_output: { n: 4 }, session_id: "s1" })
      ])
      const Answer = Schema.Struct({ n: Schema.Number })
      yield* client.add("ctx")
      const bad = yield* Effect.flip(client.ask("how many?", Answer))
      expect(bad._tag).toBe("StructuredOutputError")
      expect(yield* client.ask("how many?", Answer)).toEqual({ n: 4 })
      expect(inputs[1]!.prompt).toBe("ctx\n\nhow many?")
      // The session moves only on a decoded answer.
      expect(Option.getOrUndefined(inputs[1]!.sessionId)).toBeUndefined()
      expect(inputs[0]!.responseFormat?.schema).toMatchObject({ type: "object" })
    }))

  it("remainingBudget: the budget less the spend, nothing without a budget, 0 once spent, without float noise", () => {
    expect(remainingBudget(undefined, 5)).toBeUndefined()
    expect(remainingBudget(0.05, undefined)).toBe(0.05)
    expect(remainingBudget(0.05, 0.02)).toBe(0.03)
    expect(remainingBudget(0.042, 0.014 + 0.014 + 0.014)).toBe(0)
    expect(remainingBudget(0.04, 0.042)).toBe(0)
    expect(remainingBudget(0, 0)).toBe(0)
  })

  it.effect("maxBudgetUsd: each run gets what the conversation has left; with nothing left a turn fails without running", () =>
    Effect.gen(function*() {
      // A resumed session's cumulative totals: each run costs 0.02.
      const { client, inputs, toolBudgets } = yield* scripted([
        result({ result: "a", session_id: "s1", total_cost_usd: 0.02 }),
        result({ result: "b", session_id: "s1", total_cost_usd: 0.04 }),
        result({ result: "c", session_id: "s1", total_cost_usd: 0.06 })
      ], 0.05)
      yield* client.setTools([])
      yield* client.chat("one")
      yield* client.chat("two")
      yield* client.setTools([])
      yield* client.chat("three")
      expect(inputs.map((i) => i.budgetUsd)).toEqual([0.05, 0.03, 0.01])
      expect(toolBudgets).toEqual([0.05, 0.01])
      yield* client.add("kept")
      const error = yield* Effect.flip(client.chat("four"))
      expect(error).toMatchObject({ _tag: "RunLimitError", provider: "test", limit: "maxBudgetUsd", answer: "" })
      if (error._tag === "RunLimitError") {
        expect(error.usage).toEqual(Usage.empty)
        expect(error.message).toContain("spent $0.06 of its maxBudgetUsd ($0.05)")
      }
      expect(inputs).toHaveLength(3)
      expect((yield* client.usage).costUsd).toBeCloseTo(0.06)
      yield* client.setTools([])
      expect(toolBudgets.at(-1)).toBe(0)
      // Still nothing left: no run.
      expect((yield* Effect.flip(client.chat("five")))._tag).toBe("RunLimitError")
      expect(inputs).toHaveLength(3)
    }))

  it.effect("without maxBudgetUsd runs get no budget", () =>
    Effect.gen(function*() {
      const { client, inputs } = yield* scripted([
        result({ result: "a", total_cost_usd: 100 }),
        result({ result: "b" })
      ])
      yield* client.chat("one")
      yield* client.chat("two")
      expect(inputs.map((i) => i.budgetUsd)).toEqual([undefined, undefined])
    }))

  it.effect("chatStream reports the run's usage, then completes with the text", () =>
    Effect.gen(function*() {
      const { client } = yield* scripted([result({ result: "done", usage: { input_tokens: 2, output_tokens: 3 } })])
      const events = yield* Stream.runCollect(client.chatStream("go"))
      expect(events.map((e) => e._tag)).toEqual(["Usage", "Complete"])
      expect(events[0]).toMatchObject({ usage: { inputTokens: 2, outputTokens: 3 } })
      expect(events[1]).toMatchObject({ text: "done" })
    }))
})

describe("claudeSession: how a run ended comes first", () => {
  it("an exit before the init line is a process error with code and stderr, or auth for a login problem", () => {
    const plain = earlyExit("p", 2, "  boom\n")
    expect(plain).toMatchObject({
      reason: { _tag: "ProcessError" },
      message: "The claude CLI exited with code 2 before starting: boom"
    })
    expect(earlyExit("p", 1, "").message).toBe("The claude CLI exited with code 1 before starting")
    const auth = earlyExit("p", 1, "Not logged in · Please run /login")
    expect(auth).toMatchObject({ reason: { _tag: "AuthenticationError" }, isRetryable: false })
    expect(auth.message).toContain("exit 1: Not logged in")
    for (const said of ["Invalid API key · Please run /login", "OAuth token has expired", "authentication_error"]) {
      expect(isAuthFailure(said)).toBe(true)
    }
    expect(isAuthFailure("rate limited")).toBe(false)
  })

  it.effect("interpretRun: a mounted tool server is not blamed for a CLI that never started", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(interpretRun({
        provider: "p",
        serverName: "gtb",
        mounted: true,
        init: undefined,
        result: undefined,
        exitCode: 1,
        stderr: "segfault",
        allowPermissionDenials: false,
        recordResult: () => Effect.succeed(Usage.empty),
        noResult: () => new ProviderError({ provider: "p", reason: new InvalidResponseError({ message: "none" }) })
      }))
      expect(error).toMatchObject({
        reason: { _tag: "ProcessError" },
        message: "The claude CLI exited with code 1 before starting: segfault"
      })
    }))
})
