/**
 * A Claude Code conversation around one run per turn, the lifecycle both providers compose:
 * prepare (the budget, the `add` buffer, the prompt), restore (the store step's `beforeRun`), run
 * (the provider's start → turn → close, `RunInput` → `RunOutcome`), store (`afterRun`), then
 * finish (decode an `ask` answer, move the session). `ClaudeLocal` and `ClaudeAgent` supply only
 * the run and how tools are applied; the session store enters in one place (`claudeTranscripts.ts`).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import type * as Schema from "effect/Schema"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import { ChatClient, type ChatClientService, type ChatError, Usage } from "../../services/ChatClient.ts"
import { type AgentToolEnd, type AgentToolStart, UsageEvent } from "../../services/ChatEvent.ts"
import { Attributes } from "../../services/ChatTelemetry.ts"
import type { ClaudeApprovalsService } from "../../services/ClaudeApprovals.ts"
import { ClaudeSession, type ClaudeSessionService, ClaudeSnapshot } from "../../services/ClaudeCodeOptions.ts"
import { ClaudeLive, type ClaudeLiveService, isInterrupted } from "../../services/ClaudeLive.ts"
import { NoSession, SessionStoreError } from "../../services/ClaudeSessionStore.ts"
import type { Prompt } from "../../services/Content.ts"
import type { ResponseFormat } from "../../services/ModelTurn.ts"
import * as Tool from "../../services/Tool.ts"
import { type Emit, streamOf } from "../chat/loopClient.ts"
import { type MediaSupport, requirePrompt, textOnly, userMessage } from "../chat/media.ts"
import * as Telemetry from "../chat/telemetry.ts"
import { decodeAnswer, responseFormatFor } from "../core/structuredAnswer.ts"
import { ApprovalsKey, type DeferredUse } from "./approvals.ts"
import { budgetSpent, remainingBudget, type RunInput, type RunOutcome } from "./session.ts"
import type { ResultLine } from "./streamJson.ts"
import type { Transcripts } from "./transcripts.ts"

/** What a provider gives the conversation. */
export interface ConversationParams {
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
  /** The store step of each run (`claudeTranscripts.ts`). */
  readonly transcripts: Transcripts
  /** What the conversation used before this client (an imported snapshot's usage). */
  readonly initialUsage?: Usage | undefined
  /** The tool policy of a turn started now (`ClaudeSession.toolPolicy`); both providers give it. */
  readonly toolPolicy?: ClaudeSessionService["toolPolicy"] | undefined
  /** The conversation's live controls (`ClaudeLive`), when the provider has them. */
  readonly live?: ClaudeLiveService | undefined
  /**
   * A turn that ended on a call parked for an approval (stored by then): stores the approval and
   * fails with its `ApprovalRequired`. Without it such a turn answers its (empty) text.
   */
  readonly onDeferred?: ((sessionId: string, use: DeferredUse) => Effect.Effect<never, ChatError>) | undefined
}

/**
 * The conversation's usage: each run's result line counted once. The CLI reports
 * `total_cost_usd` cumulatively over a resumed session (usage tokens are per run), so a run's cost
 * is the difference from the last total seen for that session.
 */
const makeUsageBook = Effect.fnUntraced(function*(info: Telemetry.TurnInfo, initial: Usage | undefined) {
  const usage = yield* Ref.make(initial ?? Usage.empty)
  const sessionCosts = yield* Ref.make<ReadonlyMap<string, number>>(new Map())
  const costOfRun = (session: string | undefined, total: number) =>
    Ref.modify(sessionCosts, (seen) => {
      if (session === undefined) return [total, seen] as const
      const before = seen.get(session) ?? 0
      return [Math.max(0, total - before), new Map(seen).set(session, Math.max(before, total))] as const
    })

  const recordResult = (emit: Emit | undefined) =>
    Effect.fnUntraced(function*(line: ResultLine) {
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

  return { usage, recordResult, spentUsd: Effect.map(Ref.get(usage), (spent) => spent.costUsd) }
})

/** The store step failed after the run: the answer is kept in the error. */
const storeFailed = (answer: string) => (error: SessionStoreError) =>
  new SessionStoreError({
    operation: error.operation,
    ...(error.sessionId === undefined ? {} : { sessionId: error.sessionId }),
    reason: error.reason,
    answer,
    cause: error.cause
  })

/**
 * Builds the ChatClient around `run`. Turns are serialised; the `add` buffer and the session move
 * only when a turn succeeds (for `ask`: when its answer decodes).
 */
export const makeSessionClient = Effect.fnUntraced(
  function*(params: ConversationParams): Effect.fn.Return<SessionClient> {
    const { provider } = params
    const info: Telemetry.TurnInfo = { provider, model: params.model }
    const sessionId = yield* Ref.make(Option.fromUndefinedOr(params.resume))
    const fork = yield* Ref.make(params.resume !== undefined && params.forkSession === true)
    const activity = yield* Ref.make<ReadonlyArray<AgentToolStart | AgentToolEnd>>([])
    const pending = yield* Ref.make<ReadonlyArray<Prompt>>([])
    const media = params.media ?? textOnly(provider)
    const lock = yield* Semaphore.make(1)
    const { recordResult, spentUsd, usage } = yield* makeUsageBook(info, params.initialUsage)
    // Every run gets what is left, so a kept-alive CLI (whose own count starts at its start) and
    // fresh CLIs (each counting only itself) stop at the same total.
    const budgetLeft = Effect.map(spentUsd, (spent) => remainingBudget(params.maxBudgetUsd, spent))

    const converse = Effect.fnUntraced(function*<A>(
      prompt: Prompt,
      responseFormat: ResponseFormat | undefined,
      finish: (outcome: RunOutcome) => Effect.Effect<A, ChatError>,
      emit?: Emit
    ) {
      const spent = yield* spentUsd
      const budgetUsd = remainingBudget(params.maxBudgetUsd, spent)
      if (budgetUsd === 0) return yield* budgetSpent(provider, params.maxBudgetUsd ?? 0, spent)
      const buffered = yield* Ref.get(pending)
      const user = userMessage([...buffered, prompt])
      yield* Telemetry.recordPrompt(user.content)
      const resumed = yield* Ref.get(sessionId)
      if (Option.isSome(resumed)) yield* params.transcripts.beforeRun(resumed.value)
      // One CLI run is one turn span; the run's own model turns are inside the CLI.
      // An interrupted turn ran in the session: the next turn continues it (and stores it).
      const continueIn = (id: string) =>
        Effect.asVoid(Effect.all([
          Ref.set(sessionId, Option.some(id)),
          Ref.set(fork, false),
          Ref.set(pending, [])
        ]))
      const ranIn = (id: string) => Effect.andThen(params.transcripts.afterRun(id).pipe(Effect.ignore), continueIn(id))
      const interrupted = (error: ChatError) =>
        isInterrupted(error) && error.reason.sessionId !== undefined ? ranIn(error.reason.sessionId) : Effect.void
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
          recordResult: recordResult(emit),
          // A turn whose fiber was interrupted is continued by this client's next turn (which
          // stores it), but not stored now: a cluster runner interrupts its turns when it stops,
          // and hands them back to run again elsewhere from the stored session.
          stopped: continueIn
        })
      ).pipe(Effect.tapError(interrupted))
      const ran = outcome.sessionId ?? Option.getOrUndefined(resumed)
      // Stored before anything else can fail: a store step that fails keeps the answer, and the
      // entries it could not store are sent again after the next turn.
      if (ran !== undefined) {
        yield* params.transcripts.afterRun(ran).pipe(
          // The turn ran: the next one continues its session (and stores what this one could not).
          Effect.tapError(() =>
            Effect.all([Ref.set(sessionId, Option.some(ran)), Ref.set(fork, false), Ref.set(pending, [])])
          ),
          Effect.mapError(storeFailed(outcome.text))
        )
      }
      if (outcome.deferred !== undefined && ran !== undefined && params.onDeferred !== undefined) {
        // The turn ran and is stored: the conversation continues from it, the call waits.
        yield* Ref.set(sessionId, Option.some(ran))
        yield* Ref.set(fork, false)
        yield* Ref.set(pending, [])
        return yield* params.onDeferred(ran, outcome.deferred)
      }
      const value = yield* finish(outcome)
      yield* Telemetry.recordAnswer(outcome.text)
      if (ran !== undefined) yield* Ref.set(sessionId, Option.some(ran))
      yield* Ref.set(fork, false)
      yield* Ref.set(activity, outcome.activity ?? [])
      yield* Ref.set(pending, [])
      return value
    }, lock.withPermits(1))

    // `ClaudeApprovals`: the session resumed with no user message, so the CLI asks for its parked
    // call again; the conversation continues from that session.
    const replay = (session: string) =>
      lock.withPermits(1)(Effect.gen(function*() {
        const spent = yield* spentUsd
        const budgetUsd = remainingBudget(params.maxBudgetUsd, spent)
        if (budgetUsd === 0) return yield* budgetSpent(provider, params.maxBudgetUsd ?? 0, spent)
        yield* params.transcripts.beforeRun(session)
        const outcome = yield* Telemetry.turnSpan(
          info,
          params.run({
            prompt: "",
            responseFormat: undefined,
            sessionId: Option.some(session),
            fork: false,
            emit: undefined,
            budgetUsd,
            recordResult: recordResult(undefined),
            replay: true
          })
        )
        const ran = outcome.sessionId ?? session
        yield* params.transcripts.afterRun(ran).pipe(Effect.mapError(storeFailed(outcome.text)))
        yield* Ref.set(sessionId, Option.some(ran))
        yield* Ref.set(fork, false)
        if (outcome.deferred !== undefined && params.onDeferred !== undefined) {
          return yield* params.onDeferred(ran, outcome.deferred)
        }
        yield* Ref.set(activity, outcome.activity ?? [])
        return outcome.text
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

    // The cluster's `Ask`: the caller holds the schema and decodes; the runner only runs the turn.
    const askRaw = (question: Prompt, format: ResponseFormat) =>
      Effect.andThen(
        requirePrompt("question", question, media),
        labelled(converse(question, format, (outcome) =>
          Effect.succeed({
            text: outcome.text,
            ...(outcome.structured === undefined ? {} : { structured: outcome.structured })
          })))
      ).pipe(Effect.withSpan("ChatClient.ask", { attributes: spanAttributes }))

    const setTools = Effect.fn("ChatClient.setTools")(function*<R>(list: ReadonlyArray<Tool.Tool<R>>) {
      const set = yield* Tool.capture(list)
      yield* lock.withPermits(1)(Effect.flatMap(budgetLeft, (budgetUsd) => params.setTools(set, budgetUsd)))
    })

    const snapshot = lock.withPermits(1)(Effect.gen(function*() {
      const current = yield* Ref.get(sessionId)
      if (Option.isNone(current)) {
        return yield* new SessionStoreError({
          operation: "load",
          reason: new NoSession({
            message: "The conversation has no session yet, so there is nothing to snapshot; snapshot after a turn"
          })
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
      snapshot,
      toolPolicy: params.toolPolicy ?? Effect.die(new Error(`${params.provider} gave no tool policy`)),
      [AskRaw]: askRaw,
      [Replay]: (session: string) => labelled(replay(session)),
      [Live]: params.live
    } as SessionClient
  }
)

/** Where a session client keeps its live controls, for {@link sessionContext}. */
const Live: unique symbol = Symbol.for("effect-chat-bridge/internal/live")

/** Where a session client keeps its replay of a parked call (`ClaudeApprovals`; not public API). */
export const Replay: unique symbol = Symbol.for("effect-chat-bridge/internal/replay")

/** The replay of a client built by {@link makeSessionClient}: resumes a session with no user message. */
export const replayOf = (client: SessionClient): (sessionId: string) => Effect.Effect<string, ChatError> =>
  (client as SessionClient & { readonly [Replay]: (sessionId: string) => Effect.Effect<string, ChatError> })[Replay]

/** Where a Claude Code client keeps its `ClaudeApprovals` (set by the provider; not public API). */
export const Approvals = ApprovalsKey

/** The approvals of a Claude Code client (the cluster runner's `Approve`/`Deny`); undefined for others. */
export const approvalsOf = (client: SessionClient): ClaudeApprovalsService | undefined =>
  (client as SessionClient & { readonly [Approvals]?: ClaudeApprovalsService })[Approvals]

/** Where a session client keeps its schema-less `ask` (the cluster runner's; not public API). */
export const AskRaw: unique symbol = Symbol.for("effect-chat-bridge/internal/askRaw")

/** A structured answer before decoding: the CLI's structured output, or the text to parse. */
export interface RawAnswer {
  readonly text: string
  readonly structured?: unknown
}

/** The schema-less `ask` of a client built by {@link makeSessionClient}, if it is one. */
export const askRawOf = (
  client: SessionClient
): ((question: Prompt, format: ResponseFormat) => Effect.Effect<RawAnswer, ChatError>) | undefined =>
  (client as SessionClient & {
    readonly [AskRaw]?: (question: Prompt, format: ResponseFormat) => Effect.Effect<RawAnswer, ChatError>
  })[AskRaw]

/** A Claude Code chat client that also tells its session. */
export type SessionClient = ChatClientService & ClaudeSessionService

/** The context a Claude Code layer provides: the client as `ChatClient` and as `ClaudeSession`. */
export const sessionContext = (client: SessionClient): Context.Context<ChatClient | ClaudeSession> =>
  Context.make(ChatClient, client).pipe(
    Context.add(ClaudeSession, {
      sessionId: client.sessionId,
      lastActivity: client.lastActivity,
      snapshot: client.snapshot,
      toolPolicy: client.toolPolicy
    })
  )

/**
 * The live controls of a client built by {@link makeSessionClient} with `live`. The cluster runner
 * reaches them here for `ClaudeConversation`'s control RPCs (as it reaches `askRawOf`).
 */
export const liveOf = (client: SessionClient): ClaudeLiveService | undefined =>
  (client as SessionClient & { readonly [Live]?: ClaudeLiveService | undefined })[Live]

/** {@link sessionContext} with the conversation's live controls as `ClaudeLive`. */
export const liveSessionContext = (client: SessionClient): Context.Context<ChatClient | ClaudeSession | ClaudeLive> => {
  const live = liveOf(client)
  // Only a client built with `live` is given to this (a defect at layer build otherwise).
  if (live === undefined) throw new Error("the Claude Code client has no live controls")
  return Context.add(sessionContext(client), ClaudeLive, live)
}
