/**
 * What the two Claude Code providers (`ClaudeLocal` on the CLI, `ClaudeAgent` on the Agent SDK)
 * share about one run: what goes in (`RunInput`) and comes out (`RunOutcome`), the budget left,
 * the reading of a run's init and result lines into an outcome or a typed error, and the errors
 * of a run stopped at a bound. The conversation around the runs is `claudeConversation.ts`.
 */
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import {
  AuthenticationError,
  type ChatError,
  ConfigurationError,
  NetworkError,
  PermissionDeniedError,
  ProcessError,
  ProviderError,
  RateLimitError,
  reasonFromHttpStatus,
  RunLimitError,
  SessionNotFoundError,
  StalledError,
  StructuredOutputError,
  TimeoutError,
  Usage
} from "../../services/ChatClient.ts"
import type { AgentToolEnd, AgentToolStart } from "../../services/ChatEvent.ts"
import { Attributes } from "../../services/ChatTelemetry.ts"
import type { Part } from "../../services/Content.ts"
import type { ResponseFormat } from "../../services/ModelTurn.ts"
import type { Emit } from "../chat/loopClient.ts"
import * as Telemetry from "../chat/telemetry.ts"
import { denialMessage } from "../policy/headlessTools.ts"
import type { InitLine, RateLimitWindow, ResultLine, StructuredAttempt, ToolUse } from "./streamJson.ts"

/** What a successful run gives back. */
export interface RunOutcome {
  readonly text: string
  readonly structured: unknown
  readonly sessionId: string | undefined
  /** The agent runtime's own tool calls during the run. */
  readonly activity?: ReadonlyArray<AgentToolStart | AgentToolEnd> | undefined
  /** The call the turn ended on, parked for an approval (`terminal_reason: "tool_deferred"`). */
  readonly deferred?: { readonly id: string; readonly name: string; readonly input: unknown } | undefined
}

/** One turn, as the shell asks a provider to run it. */
export interface RunInput {
  /** The prompt's text (with media, its text parts joined). */
  readonly prompt: string
  /** Set when the prompt carries images or documents: every part, in order. */
  readonly parts?: ReadonlyArray<Part> | undefined
  /** For `ask`: the object-rooted JSON Schema the answer must follow. */
  readonly responseFormat: ResponseFormat | undefined
  /** The session to resume, from the previous successful turn. */
  readonly sessionId: Option.Option<string>
  /** Continue `sessionId` in a new session (the first turn of a `forkSession` client). */
  readonly fork: boolean
  /** Set for `chatStream`: report events as they happen. */
  readonly emit: Emit | undefined
  /**
   * What the run may spend in USD (`--max-budget-usd`): what is left of the conversation's
   * `maxBudgetUsd`, always more than 0; `undefined` when the conversation has no budget.
   */
  readonly budgetUsd: number | undefined
  /** Counts the run's usage (and cost) from its result line, and reports it when streaming. */
  readonly recordResult: (line: ResultLine) => Effect.Effect<Usage>
  /** Resume `sessionId` with no user message: the CLI replays the call parked for an approval. */
  readonly replay?: boolean | undefined
  /**
   * A turn whose fiber was interrupted and that a kept-alive CLI stopped politely ran in this
   * session (also a first turn, whose session nothing else recorded): the next turn continues it.
   */
  readonly stopped?: ((sessionId: string) => Effect.Effect<void>) | undefined
}

/**
 * What is left of `maxBudgetUsd` once `spentUsd` is spent: `undefined` without a budget, 0 when
 * nothing is left. The spend is a sum of differences of the CLI's running totals: rounding to a
 * billionth of a dollar drops their float noise (0.05 - 0.02 is 0.030000000000000002), so a
 * conversation that spent exactly its budget has nothing left.
 */
export const remainingBudget = (maxBudgetUsd: number | undefined, spentUsd: number | undefined): number | undefined => {
  if (maxBudgetUsd === undefined) return undefined
  const left = Math.round((maxBudgetUsd - (spentUsd ?? 0)) * 1e9) / 1e9
  return left > 0 ? left : 0
}

/** Dollars without the float noise of summed totals. */
const usd = (amount: number) => `$${Number(amount.toPrecision(6))}`

/** A turn refused before it ran: the conversation has spent its `maxBudgetUsd`. */
export const budgetSpent = (provider: string, maxBudgetUsd: number, spentUsd: number | undefined) =>
  new RunLimitError({
    provider,
    limit: "maxBudgetUsd",
    answer: "",
    usage: Usage.empty,
    message:
      `The conversation has spent ${usd(spentUsd ?? 0)} of its maxBudgetUsd (${usd(maxBudgetUsd)}), so the turn ` +
      "did not run; raise maxBudgetUsd or start a new conversation"
  })

export const bounded = (text: string, max = 2_000) => (text.length > max ? `${text.slice(0, max)}…` : text)

/** The MCP server carrying the caller's tools is not connected: never answer without tools. */
export const toolServerFailure = (provider: string, serverName: string, init: InitLine | undefined) =>
  new ProviderError({
    provider,
    reason: new ConfigurationError({
      message: `The claude CLI could not use the tool server (MCP server ${serverName}: ${
        serverStatus(init, serverName) ?? `not reported; it listed ${listedServers(init)}`
      }); refusing an answer given without tools`
    })
  })

const listedServers = (init: InitLine | undefined) =>
  init === undefined || init.mcp_servers.length === 0
    ? "no MCP servers"
    : init.mcp_servers.map((s) => `${s.name} (${s.status})`).join(", ")

/**
 * A turn that outlived `requestTimeout`: retryable (its CLI is stopped, and the next turn resumes
 * the session), naming the bound and the option that sets it.
 */
export const turnTimeout = (provider: string, timeout: Duration.Input) =>
  new ProviderError({
    provider,
    reason: new TimeoutError({
      message: `The claude CLI did not finish the turn within ${
        Duration.format(Duration.fromInputUnsafe(timeout))
      } and was stopped; raise the requestTimeout option if turns need longer`
    })
  })

/**
 * A turn whose CLI printed nothing for `stallTimeout` while no tool ran and no permission decision
 * was pending: retryable (its CLI is stopped, and the next turn resumes the session).
 */
export const stalled = (provider: string, stallTimeout: Duration.Input) =>
  new ProviderError({
    provider,
    reason: new StalledError({
      message:
        `The claude CLI printed nothing for ${
          Duration.format(Duration.fromInputUnsafe(stallTimeout))
        } while no tool ran (the stallTimeout option) and was stopped; the next turn resumes the session. ` +
        "Retry the turn, or raise stallTimeout if the model legitimately pauses that long"
    })
  })

/** Bounds a turn by `requestTimeout`, failing with {@link turnTimeout}. */
export const withTurnTimeout =
  (provider: string, timeout: Duration.Input) =>
  <A, E, R>(turn: Effect.Effect<A, E, R>): Effect.Effect<A, E | ProviderError, R> =>
    Effect.timeoutOrElse(turn, { duration: timeout, orElse: () => Effect.fail(turnTimeout(provider, timeout)) })

/** What the CLI says when its credentials are missing or refused. */
const AuthFailure =
  /invalid api key|not logged in|please run \/login|authentication_error|oauth token (?:has )?(?:expired|revoked)/i

/** Whether CLI output (stderr or a result's text) reports missing or refused credentials. */
export const isAuthFailure = (text: string): boolean => AuthFailure.test(text)

/**
 * What the CLI says when it never reached the model's API (after its own retries: about three
 * minutes by default, `CLAUDE_CODE_MAX_RETRIES` bounds them).
 */
const Unreachable =
  /^API Error: (?:Can't reach the API server|Connection refused|Connection error|Request timed out)|\b(?:ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT)\b/

/** A run whose CLI could not reach the model's API: a `NetworkError`, naming what to check. */
export const unreachableError = (provider: string, said: string) =>
  new ProviderError({
    provider,
    reason: new NetworkError({
      message: `The claude CLI could not reach the model's API (${bounded(said, 500)}): check the network, ` +
        "or ANTHROPIC_BASE_URL if it is set in the CLI's environment (CLAUDE_CODE_MAX_RETRIES bounds the CLI's own " +
        "retries, about three minutes by default)"
    })
  })

/** What to do about it, in every `auth` error of the Claude Code providers. */
export const loginHint = "log in by running `claude` once (then /login), or set ANTHROPIC_API_KEY"

/** A run whose CLI refused or lacked credentials: an `AuthenticationError`, naming the fix. */
export const authError = (provider: string, said: string, status?: number) =>
  new ProviderError({
    provider,
    reason: new AuthenticationError({
      ...(status === undefined ? {} : { status }),
      message: `The claude CLI has no valid credentials (${bounded(said, 500)}): ${loginHint}`
    })
  })

/**
 * A run whose process failed before it printed its init line: whatever was configured (tools
 * included) never came into play, so the exit code and stderr are what explains it.
 */
export const earlyExit = (provider: string, exitCode: number, stderr: string) => {
  const tail = bounded(stderr.trim(), 1_000)
  const missing = NoConversation.exec(tail)
  return isAuthFailure(tail)
    ? authError(provider, `exit ${exitCode}: ${tail}`)
    : missing !== null
    ? sessionNotFound(provider, missing[1]!)
    : new ProviderError({
      provider,
      reason: new ProcessError({
        message: `The claude CLI exited with code ${exitCode} before starting${tail === "" ? "" : `: ${tail}`}`,
        exitCode
      })
    })
}

/** What a CLI without `startup_failure_reason` (before 2.1.335) prints for a session it cannot resume. */
const NoConversation = /No conversation found with session ID: (\S+)/

/** A resume whose session the CLI could not find, naming it. */
const sessionNotFound = (provider: string, sessionId: string) =>
  new ProviderError({
    provider,
    reason: new SessionNotFoundError({
      message: `The claude CLI found no conversation to resume for session ${sessionId} (gone, written under ` +
        `another config dir or working directory, or unreadable for now); start a new conversation or resume another.`,
      sessionId
    })
  })

/** The session a failed result says the CLI could not resume, if that is why it failed. */
const resumeTargetOf = (line: ResultLine): string | undefined => {
  if (line.startup_failure_reason === "resume_target_not_found") {
    return line.session_id ?? NoConversation.exec((line.errors ?? []).join("\n"))?.[1] ?? "(unnamed)"
  }
  return NoConversation.exec([line.result, ...(line.errors ?? [])].join("\n"))?.[1]
}

/** The status the init line reports for `serverName`. */
export const serverStatus = (init: InitLine | undefined, serverName: string) =>
  init?.mcp_servers.find((s) => s.name === serverName)?.status

/** The bridge's tool calls whose result the CLI replaced by its own transport error, with bare names. */
const bridgeTransportFailures = (serverName: string, uses: ReadonlyArray<ToolUse>) => {
  const prefix = `mcp__${serverName}__`
  return uses.flatMap((use) =>
    use.transportError !== undefined && use.name.startsWith(prefix)
      ? [{ id: use.id, name: use.name.slice(prefix.length), error: use.transportError }]
      : []
  )
}

/**
 * A run in which the CLI could not deliver some bridge calls or their results: the model was
 * handed the CLI's transport error as the tool's answer, so the answer is not returned as one.
 * Not retryable: whether the handler ran is unknown (the request may have been lost before it
 * reached the bridge or its answer after).
 */
const lostResults = (provider: string, lost: ReadonlyArray<{ readonly name: string; readonly error: string }>) =>
  new ProviderError({
    provider,
    reason: new NetworkError({
      message: `The claude CLI lost ${lost.length} call(s) of bridge tools (${
        [...new Set(lost.map((l) => l.name))].join(", ")
      }) to its connection to the bridge (${
        bounded(lost[0]!.error, 200)
      }); the model answered with that error in place of the tool's result, so the answer is dropped. The handler may or may not have run`,
      transient: false
    })
  })

/** Result subtypes of a run stopped at a caller's bound. */
const LimitSubtypes: Readonly<Record<string, "maxTurns" | "maxBudgetUsd">> = {
  error_max_turns: "maxTurns",
  error_max_budget_usd: "maxBudgetUsd"
}

/** The result subtype of an `ask` whose answers the CLI rejected until it gave up. */
const StructuredRetriesSubtype = "error_max_structured_output_retries"

/** `ask` got no answer the schema accepts: what the model last tried, and why it was refused. */
const structuredRetriesExhausted = (attempt: StructuredAttempt | undefined, text: string) => {
  const tried = attempt === undefined ? text : JSON.stringify(attempt.input) ?? ""
  return new StructuredOutputError({
    message: "The model gave no answer matching the schema within the claude CLI's structured-output retries " +
      `(error_max_structured_output_retries)${
        attempt?.rejection === undefined ? "" : `; its last attempt was refused: ${bounded(attempt.rejection, 500)}`
      }. Loosen the schema, or describe the expected shape in the question`,
    answer: bounded(tried)
  })
}

/**
 * A run refused because a plan window is spent: a retryable `RateLimitError` naming the window and
 * when it resets (with the API's 429 when the CLI reports it), so `Fallback` moves to the next
 * provider and a caller can wait until `resetsAt`.
 */
export const spentWindowError = (provider: string, window: RateLimitWindow, said: string, status?: number) =>
  new ProviderError({
    provider,
    reason: new RateLimitError({
      message: `The claude CLI's plan rate-limit window ${window.window} is spent${
        window.resetsAt === undefined ? "" : ` until ${DateTime.formatIso(window.resetsAt)}`
      }${said === "" ? "" : ` (${bounded(said, 500)})`}; wait until it resets or use another provider`,
      window: window.window,
      ...(window.resetsAt === undefined ? {} : { resetsAt: window.resetsAt }),
      ...(status === undefined ? {} : { status })
    })
  })

/**
 * Reads a finished run: the tool server must have connected (when mounted), a result line must
 * exist, usage is recorded, an error result is a typed error carrying the API status, a bridge
 * call whose result the CLI replaced by its own transport error fails the turn (a `network`
 * ProviderError, counted as `BridgeTransportError` in the tool-error metric), and permission
 * denials fail with `PermissionDeniedError` unless allowed.
 */
export const interpretRun = Effect.fnUntraced(function*(params: {
  readonly provider: string
  readonly serverName: string
  readonly mounted: boolean
  readonly init: InitLine | undefined
  readonly result: ResultLine | undefined
  /** The process's exit code, when the provider knows it. */
  readonly exitCode?: number | undefined
  /** The tail of the process's stderr, when the provider has it. */
  readonly stderr?: string | undefined
  /** The error for a run that printed no result line. */
  readonly noResult: () => ProviderError
  readonly allowPermissionDenials: boolean
  readonly recordResult: (line: ResultLine) => Effect.Effect<Usage>
  /** The text of the last assistant message, for the partial answer of a run stopped at a bound. */
  readonly lastText?: string | undefined
  /** Denials the application decided itself (`canUseTool`), by tool use id: not failures. */
  readonly decidedDenials?: ReadonlySet<string> | undefined
  /** The tools the CLI ran; those not served by the bridge become events of the turn span. */
  readonly toolUses?: ReadonlyArray<ToolUse> | undefined
  /** `ask`: the model's last structured answer attempt, for the error when none was accepted. */
  readonly structuredAttempt?: StructuredAttempt | undefined
  /** The plan rate-limit windows the run reported, for the utilisation metric. */
  readonly rateLimits?: ReadonlyArray<RateLimitWindow> | undefined
  /** The window the run reported spent: an error result with it is a {@link spentWindowError}. */
  readonly spentWindow?: RateLimitWindow | undefined
}): Effect.fn.Return<RunOutcome, ChatError> {
  const { exitCode = 0, provider, result: line } = params
  if (params.rateLimits !== undefined) yield* Telemetry.recordRateLimits(params.rateLimits)

  if (params.init?.model !== undefined) yield* Effect.annotateCurrentSpan(Attributes.responseModel, params.init.model)
  if (params.toolUses !== undefined) {
    // The bridge's tools have spans of their own (the bridge parents them to this run).
    const bridged = `mcp__${params.serverName}__`
    yield* Telemetry.recordToolUses(params.toolUses.filter((use) => !use.name.startsWith(bridged)))
  }
  // How the process ended comes first: a CLI that died before its init line never got as far
  // as the tool server, so blaming the server would hide the real cause.
  if (params.init === undefined && line === undefined && exitCode !== 0) {
    return yield* earlyExit(provider, exitCode, params.stderr ?? "")
  }
  if (params.mounted) {
    const status = serverStatus(params.init, params.serverName)
    if (status !== "connected") return yield* toolServerFailure(provider, params.serverName, params.init)
  }
  if (line === undefined) return yield* params.noResult()
  const runUsage = yield* params.recordResult(line)
  const limit = LimitSubtypes[line.subtype ?? ""]
  if (limit !== undefined) {
    const answer = line.result !== "" ? line.result : params.lastText ?? ""
    return yield* new RunLimitError({
      provider,
      limit,
      answer,
      usage: runUsage,
      message: `The claude CLI stopped at ${limit} (${line.subtype}); raise ${limit} or split the task`
    })
  }
  if (line.subtype === StructuredRetriesSubtype) {
    return yield* structuredRetriesExhausted(params.structuredAttempt, line.result || params.lastText || "")
  }
  if (line.is_error || (line.subtype !== undefined && line.subtype !== "success") || exitCode !== 0) {
    const status = line.api_error_status ?? undefined
    if ((status !== undefined && (status === 401 || status === 403)) || isAuthFailure(line.result)) {
      return yield* authError(provider, line.result, status)
    }
    if (status === undefined && Unreachable.test(line.result)) return yield* unreachableError(provider, line.result)
    const missing = resumeTargetOf(line)
    if (missing !== undefined) return yield* sessionNotFound(provider, missing)
    if (params.spentWindow !== undefined && (status === undefined || status === 429)) {
      return yield* spentWindowError(provider, params.spentWindow, line.result, status)
    }
    // An `is_error` result may still have the subtype "success": name what failed instead.
    const what = line.subtype !== undefined && line.subtype !== "success"
      ? line.subtype
      : exitCode !== 0
      ? `exit ${exitCode}`
      : "is_error"
    // A start-up failure has no `result`, only `errors`.
    const said = line.result !== "" ? line.result : (line.errors ?? []).join("; ")
    const message = `The claude CLI reported an error (${what}): ${bounded(said)}`
    return yield* new ProviderError({
      provider,
      reason: status === undefined
        ? new ProcessError({ message, ...(exitCode === 0 ? {} : { exitCode }) })
        : reasonFromHttpStatus({ status, message })
    })
  }
  const lost = bridgeTransportFailures(params.serverName, params.toolUses ?? [])
  if (lost.length > 0) {
    return yield* Telemetry.recordLostToolResults(lost).pipe(Effect.andThen(lostResults(provider, lost)))
  }
  const denials = line.permission_denials.filter((d) =>
    d.tool_use_id === undefined || params.decidedDenials?.has(d.tool_use_id) !== true
  )
  if (denials.length > 0) {
    const denied = denials.map((d) => d.tool_name)
    if (!params.allowPermissionDenials) {
      return yield* new PermissionDeniedError({
        provider,
        tools: denied,
        answer: line.result,
        message: denialMessage(denied)
      })
    }
    yield* Effect.logWarning("claude CLI denied tool calls").pipe(Effect.annotateLogs({ tools: denied.join(",") }))
  }
  return {
    text: line.result,
    structured: line.structured_output,
    sessionId: line.session_id ?? params.init?.session_id
  }
})
