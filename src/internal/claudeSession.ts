/**
 * What the two Claude Code providers (`ClaudeLocal` on the CLI, `ClaudeAgent` on the Agent SDK)
 * share: the conversation shell around one run per turn (the `add` buffer, `--resume`, `ask`,
 * streaming, usage) and the reading of a run's init and result lines. Each provider supplies only
 * how a run is started.
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import type * as Schema from "effect/Schema"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import {
  ChatClient,
  type ChatClientService,
  type ChatError,
  PermissionDeniedError,
  ProviderError,
  RunLimitError,
  Usage
} from "../services/ChatClient.js"
import { type AgentToolEnd, type AgentToolStart, UsageEvent } from "../services/ChatEvent.js"
import { Attributes } from "../services/ChatTelemetry.js"
import { ClaudeSession, type ClaudeSessionService, ClaudeSnapshot } from "../services/ClaudeCodeOptions.js"
import { SessionStoreError } from "../services/ClaudeSessionStore.ts"
import type { Part, Prompt } from "../services/Content.js"
import type { ResponseFormat } from "../services/ModelTurn.js"
import * as Tool from "../services/Tool.js"
import type { InitLine, ResultLine, ToolUse } from "./claudeStreamJson.js"
import type { Transcripts } from "./claudeTranscripts.ts"
import { decodeAnswer, type Emit, responseFormatFor, streamOf } from "./loopClient.js"
import { type MediaSupport, requirePrompt, textOnly, userMessage } from "./media.js"
import * as Telemetry from "./telemetry.js"

/** What a successful run gives back. */
export interface RunOutcome {
  readonly text: string
  readonly structured: unknown
  readonly sessionId: string | undefined
  /** The agent runtime's own tool calls during the run. */
  readonly activity?: ReadonlyArray<AgentToolStart | AgentToolEnd> | undefined
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
    kind: "config",
    message: `The claude CLI could not use the tool server (MCP server ${serverName}: ${
      serverStatus(init, serverName) ?? `not reported; it listed ${listedServers(init)}`
    }); refusing an answer given without tools`,
    retryable: false
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
    kind: "timeout",
    message: `The claude CLI did not finish the turn within ${
      Duration.format(Duration.fromInputUnsafe(timeout))
    } and was stopped; raise the requestTimeout option if turns need longer`,
    retryable: true
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

/** What to do about it, in every `auth` error of the Claude Code providers. */
export const loginHint = "log in by running `claude` once (then /login), or set ANTHROPIC_API_KEY"

/** A run whose CLI refused or lacked credentials: `kind: "auth"`, naming the fix. */
export const authError = (provider: string, said: string, status?: number) =>
  new ProviderError({
    provider,
    kind: "auth",
    ...(status === undefined ? {} : { status }),
    message: `The claude CLI has no valid credentials (${bounded(said, 500)}): ${loginHint}`,
    retryable: false
  })

/**
 * A run whose process failed before it printed its init line: whatever was configured (tools
 * included) never came into play, so the exit code and stderr are what explains it.
 */
export const earlyExit = (provider: string, exitCode: number, stderr: string) => {
  const tail = bounded(stderr.trim(), 1_000)
  return isAuthFailure(tail)
    ? authError(provider, `exit ${exitCode}: ${tail}`)
    : new ProviderError({
      provider,
      kind: "process",
      message: `The claude CLI exited with code ${exitCode} before starting${tail === "" ? "" : `: ${tail}`}`,
      retryable: false
    })
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
    kind: "network",
    message: `The claude CLI lost ${lost.length} call(s) of bridge tools (${
      [...new Set(lost.map((l) => l.name))].join(", ")
    }) to its connection to the bridge (${
      bounded(lost[0]!.error, 200)
    }); the model answered with that error in place of the tool's result, so the answer is dropped. The handler may or may not have run`,
    retryable: false
  })

/** Result subtypes of a run stopped at a caller's bound. */
const LimitSubtypes: Readonly<Record<string, "maxTurns" | "maxBudgetUsd">> = {
  error_max_turns: "maxTurns",
  error_max_budget_usd: "maxBudgetUsd"
}

/**
 * Reads a finished run: the tool server must have connected (when mounted), a result line must
 * exist, usage is recorded, an error result is a typed error carrying the API status, a bridge
 * call whose result the CLI replaced by its own transport error fails the turn (a `network`
 * ProviderError, counted as `BridgeTransportError` in the tool-error metric), and permission
 * denials fail with `PermissionDeniedError` unless allowed.
 */
export const interpretRun = (params: {
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
}): Effect.Effect<RunOutcome, ChatError> =>
  Effect.gen(function*() {
    const { exitCode = 0, provider, result: line } = params
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
    if (line.is_error || (line.subtype !== undefined && line.subtype !== "success") || exitCode !== 0) {
      const status = line.api_error_status ?? undefined
      if ((status !== undefined && (status === 401 || status === 403)) || isAuthFailure(line.result)) {
        return yield* authError(provider, line.result, status)
      }
      return yield* new ProviderError({
        provider,
        kind: status === undefined ? "process" : "http",
        ...(status === undefined ? {} : { status }),
        message: `The claude CLI reported an error (${line.subtype ?? `exit ${exitCode}`}): ${bounded(line.result)}`,
        retryable: status !== undefined && (status === 408 || status === 429 || status >= 500)
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
          message: `The claude CLI denied ${denied.join(", ")}: allow them with the tool policy or the permission mode`
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

/**
 * Builds the ChatClient around `run`. Turns are serialised; the `add` buffer and the session move
 * only when a turn succeeds (for `ask`: when its answer decodes).
 */
export const makeSessionClient = (params: {
  readonly provider: string
  /** The configured model, for spans and metrics. */
  readonly model?: string | undefined
  readonly run: (input: RunInput) => Effect.Effect<RunOutcome, ChatError>
  /**
   * Applies a validated tool set (already holding the caller's context). `budgetUsd` is what a
   * CLI started now may spend (as `RunInput.budgetUsd`, but 0 when nothing is left).
   */
  readonly setTools: (set: Tool.ToolSet, budgetUsd: number | undefined) => Effect.Effect<void, ChatError>
  /** What media the runtime takes; prompts are checked against it before any run. Default: text only. */
  readonly media?: MediaSupport | undefined
  /** The session the first turn continues. */
  readonly resume?: string | undefined
  /** With `resume`: the first successful turn continues it in a new session. */
  readonly forkSession?: boolean | undefined
  /**
   * Bound on the conversation's cost (the client's `usage`) in USD. Each run may spend what is
   * left; a turn with nothing left fails with `RunLimitError` without running.
   */
  readonly maxBudgetUsd?: number | undefined
  /** The store step of each run (`claudeTranscripts.ts`); none: the runtime's own files only. */
  readonly transcripts: Transcripts
  /** What the conversation used before this client (an imported snapshot's usage). */
  readonly initialUsage?: Usage | undefined
}): Effect.Effect<SessionClient> =>
  Effect.gen(function*() {
    const { provider } = params
    const info: Telemetry.TurnInfo = { provider, model: params.model }
    const sessionId = yield* Ref.make(Option.fromUndefinedOr(params.resume))
    const fork = yield* Ref.make(params.resume !== undefined && params.forkSession === true)
    const activity = yield* Ref.make<ReadonlyArray<AgentToolStart | AgentToolEnd>>([])
    const pending = yield* Ref.make<ReadonlyArray<Prompt>>([])
    const usage = yield* Ref.make(params.initialUsage ?? Usage.empty)
    const media = params.media ?? textOnly(provider)
    const lock = yield* Semaphore.make(1)
    // The CLI reports `total_cost_usd` cumulatively over a resumed session (usage tokens are per
    // run), so a run's cost is the difference from the last total seen for that session.
    const sessionCosts = yield* Ref.make<ReadonlyMap<string, number>>(new Map())
    const costOfRun = (session: string | undefined, total: number) =>
      Ref.modify(sessionCosts, (seen) => {
        if (session === undefined) return [total, seen] as const
        const before = seen.get(session) ?? 0
        return [Math.max(0, total - before), new Map(seen).set(session, Math.max(before, total))] as const
      })

    const recordResult = (emit: Emit | undefined) => (line: ResultLine) =>
      Effect.gen(function*() {
        if (line.usage === undefined && line.total_cost_usd == null) return Usage.empty
        const u = line.usage
        const cacheRead = u?.cache_read_input_tokens ?? 0
        const runUsage = Usage.of({
          inputTokens: (u?.input_tokens ?? 0) + (u?.cache_creation_input_tokens ?? 0) + cacheRead,
          outputTokens: u?.output_tokens ?? 0,
          cachedTokens: cacheRead,
          costUsd: line.total_cost_usd == null ? undefined : yield* costOfRun(line.session_id, line.total_cost_usd)
        })
        yield* Ref.update(usage, (total) => Usage.add(total, runUsage))
        yield* Telemetry.recordUsage(info, runUsage)
        yield* Telemetry.recordFinishReason(line.stop_reason ?? line.subtype)
        if (emit !== undefined) yield* emit(new UsageEvent({ usage: runUsage }))
        return runUsage
      })

    // Every run gets what is left, so a kept-alive CLI (whose own count starts at its start) and
    // fresh CLIs (each counting only itself) stop at the same total.
    const spentUsd = Effect.map(Ref.get(usage), (spent) => spent.costUsd)
    const budgetLeft = Effect.map(spentUsd, (spent) => remainingBudget(params.maxBudgetUsd, spent))

    const converse = <A>(
      prompt: Prompt,
      responseFormat: ResponseFormat | undefined,
      finish: (outcome: RunOutcome) => Effect.Effect<A, ChatError>,
      emit?: Emit
    ) =>
      lock.withPermits(1)(Effect.gen(function*() {
        const spent = yield* spentUsd
        const budgetUsd = remainingBudget(params.maxBudgetUsd, spent)
        if (budgetUsd === 0) return yield* budgetSpent(provider, params.maxBudgetUsd ?? 0, spent)
        const buffered = yield* Ref.get(pending)
        const user = userMessage([...buffered, prompt])
        yield* Telemetry.recordPrompt(user.content)
        const resumed = yield* Ref.get(sessionId)
        if (Option.isSome(resumed)) yield* params.transcripts.beforeRun(resumed.value)
        // One CLI run is one turn span; the run's own model turns are inside the CLI.
        const outcome = yield* Telemetry.turnSpan(
          info,
          params.run({
            prompt: user.content,
            ...(user.parts === undefined ? {} : { parts: user.parts }),
            responseFormat,
            sessionId: resumed,
            fork: yield* Ref.get(fork),
            emit,
            budgetUsd,
            recordResult: recordResult(emit)
          })
        )
        const ran = outcome.sessionId ?? Option.getOrUndefined(resumed)
        // Stored before anything else can fail: a store step that fails keeps the answer, and the
        // entries it could not store are sent again after the next turn.
        if (ran !== undefined) {
          yield* params.transcripts.afterRun(ran).pipe(
            Effect.catch((error) =>
              // The turn ran: the next one continues its session (and stores what this one could not).
              Effect.andThen(
                Effect.all([Ref.set(sessionId, Option.some(ran)), Ref.set(fork, false), Ref.set(pending, [])]),
                Effect.fail(
                  new SessionStoreError({
                    operation: error.operation,
                    sessionId: error.sessionId,
                    message: error.message,
                    retryable: error.retryable,
                    answer: outcome.text,
                    cause: error.cause
                  })
                )
              )
            )
          )
        }
        const value = yield* finish(outcome)
        yield* Telemetry.recordAnswer(outcome.text)
        if (ran !== undefined) yield* Ref.set(sessionId, Option.some(ran))
        yield* Ref.set(fork, false)
        yield* Ref.set(activity, outcome.activity ?? [])
        yield* Ref.set(pending, [])
        return value
      }))

    const add = Effect.fn("ChatClient.add")(function*(prompt: Prompt) {
      yield* requirePrompt("added message", prompt, media)
      yield* lock.withPermits(1)(Ref.update(pending, (p) => [...p, prompt]))
    })

    const spanAttributes = Telemetry.clientSpanAttributes(info)
    const labelled = <A, E>(effect: Effect.Effect<A, E>) =>
      Effect.updateService(effect, Metric.CurrentMetricAttributes, (attributes) => ({
        ...attributes,
        [Attributes.provider]: provider
      }))

    const chat = Effect.fn("ChatClient.chat")(function*(prompt: Prompt) {
      yield* Effect.annotateCurrentSpan(spanAttributes)
      yield* requirePrompt("prompt", prompt, media)
      return yield* labelled(converse(prompt, undefined, (outcome) => Effect.succeed(outcome.text)))
    })

    const chatStream = (prompt: Prompt) =>
      streamOf((emit) =>
        Effect.andThen(
          requirePrompt("prompt", prompt, media),
          labelled(converse(prompt, undefined, (outcome) => Effect.succeed(outcome.text), emit))
        )
      ).pipe(Stream.withSpan("ChatClient.chatStream", { attributes: spanAttributes }))

    const ask = Effect.fn("ChatClient.ask")(function*<A, I>(question: Prompt, schema: Schema.Codec<A, I>) {
      yield* Effect.annotateCurrentSpan(spanAttributes)
      yield* requirePrompt("question", question, media)
      const { format, wrapped } = yield* responseFormatFor(schema)
      return yield* labelled(converse(question, format, (outcome) =>
        decodeAnswer(schema, {
          text: outcome.text,
          ...(outcome.structured === undefined ? {} : { structured: outcome.structured })
        }, wrapped)))
    })

    const setTools = Effect.fn("ChatClient.setTools")(function*<R>(list: ReadonlyArray<Tool.Tool<R>>) {
      const set = yield* Tool.capture(list)
      yield* lock.withPermits(1)(Effect.flatMap(budgetLeft, (budgetUsd) => params.setTools(set, budgetUsd)))
    })

    const snapshot = lock.withPermits(1)(Effect.gen(function*() {
      const current = yield* Ref.get(sessionId)
      if (Option.isNone(current)) {
        return yield* new SessionStoreError({
          operation: "load",
          message: "The conversation has no session yet, so there is nothing to snapshot; snapshot after a turn",
          retryable: false
        })
      }
      const transcript = yield* params.transcripts.load(current.value)
      return new ClaudeSnapshot({ sessionId: current.value, transcript, usage: yield* Ref.get(usage) })
    })).pipe(Effect.withSpan("ClaudeSession.snapshot"))

    return {
      add,
      chat,
      chatStream,
      ask,
      setTools,
      usage: Ref.get(usage),
      sessionId: Ref.get(sessionId),
      lastActivity: Ref.get(activity),
      snapshot
    }
  })

/** A Claude Code chat client that also tells its session. */
export type SessionClient = ChatClientService & ClaudeSessionService

/** The context a Claude Code layer provides: the client as `ChatClient` and as `ClaudeSession`. */
export const sessionContext = (client: SessionClient): Context.Context<ChatClient | ClaudeSession> =>
  Context.make(ChatClient, client).pipe(
    Context.add(ClaudeSession, {
      sessionId: client.sessionId,
      lastActivity: client.lastActivity,
      snapshot: client.snapshot
    })
  )
