/**
 * `keepAlive` for the ClaudeAgent provider: one query (and CLI) kept between turns, fed through
 * the SDK's streaming input. It lives in a scope forked from the client's; a failed or
 * interrupted turn, `setTools`, an `ask`, a pool eviction or a session change ends it, and the
 * next turn starts a new one resuming the session.
 */
import type * as AgentSdk from "@anthropic-ai/claude-agent-sdk"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Equal from "effect/Equal"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import type { ChatError, ProviderError } from "../../services/ChatClient.ts"
import { isInterrupted } from "../../services/ClaudeLive.ts"
import * as Pool from "../../services/ClaudeProcessPool.ts"
import type { Emit } from "../chat/loopClient.ts"
import type { RunInput, RunOutcome } from "../claude/session.ts"
import type { InitLine } from "../claude/streamJson.ts"
import type * as UserMessage from "../claude/userMessage.ts"
import { makeInbox, type QueryParams, type Started } from "./query.ts"
import { provider } from "./sdk.ts"
import type * as Spare from "./spare.ts"
import type { Transcript, TurnEnd } from "./turn.ts"

/** The query a `keepAlive` client keeps between turns; it and its CLI live in `scope`. */
export interface LiveQuery extends Started {
  readonly scope: Scope.Closeable
  readonly send: (message: UserMessage.UserMessage) => void
  /** Resolves once the SDK has written every message sent so far to the CLI. */
  readonly flushed: () => Promise<void>
  /** Its ClaudeProcessPool permit (bounds nothing without a pool). */
  readonly permit: Pool.Permit
  /** The CLI prints its init line once per process (or per turn); the last one seen. */
  init: InitLine | undefined
  /** The turn being read (see {@link RunningTurn}). */
  running: RunningTurn | undefined
}

/**
 * The turn being read: whether `ClaudeLive.interrupt` asked to stop it, and the user messages
 * written into it (its own and the steered ones, by uuid) that the CLI has not finished yet. The
 * CLI reports each one's progress (`command_lifecycle`: queued, started, completed, cancelled);
 * one that did not (an older CLI) ends the turn at its first result.
 */
export interface RunningTurn {
  interrupted: boolean
  readonly pending: Set<string>
  tracked: boolean
  resulted: boolean
}

/** Whether `message` ends `turn` (see {@link RunningTurn}). */
const turnOver = (turn: RunningTurn, message: AgentSdk.SDKMessage): boolean => {
  const m = message as { type?: unknown; command_uuid?: unknown; state?: unknown }
  if (m.type === "command_lifecycle" && typeof m.command_uuid === "string" && turn.pending.has(m.command_uuid)) {
    turn.tracked = true
    if (m.state === "completed" || m.state === "cancelled") turn.pending.delete(m.command_uuid)
  } else if (m.type === "result") {
    turn.resulted = true
    // After our interrupt the first result ends the turn (queued messages were cancelled).
    if (turn.interrupted || !turn.tracked) return true
  }
  return turn.resulted && turn.pending.size === 0
}

/** The session the next turn continues: at first the one to resume, then the last successful turn's. */
export interface SessionState {
  last: Option.Option<string>
  /** Whether the next turn forks `last` (the first turn of a `forkSession` client). */
  fork: boolean
}

/** The parts of the client a kept-alive query is built from. */
export interface LiveSetup {
  readonly clientScope: Scope.Scope
  readonly pool: Option.Option<Pool.ClaudeProcessPoolService>
  readonly session: SessionState
  readonly start: (params: QueryParams) => Effect.Effect<Started, ProviderError, Scope.Scope>
  /**
   * A brand-new conversation's first query on a spare of the pool (see `spare.ts`), in the
   * current scope; undefined (or none) starts it cold.
   */
  readonly spare?:
    | ((
      prompt: AsyncIterable<AgentSdk.SDKUserMessage>,
      budgetUsd: number | undefined
    ) => Effect.Effect<Option.Option<Spare.Claimed>, never, Scope.Scope>)
    | undefined
  readonly consume: (
    started: Started,
    emit: Emit | undefined,
    untilResult: boolean,
    turnEnd?: TurnEnd
  ) => Effect.Effect<Transcript, ProviderError>
  readonly interpret: (input: RunInput, started: Started, transcript: Transcript) => Effect.Effect<
    RunOutcome,
    ChatError
  >
  /** The turn's user message; `uuid` lets the CLI report when it is done. */
  readonly userMessage: (input: RunInput, uuid?: UserMessage.Uuid) => UserMessage.UserMessage
  /** Tells a query started now the settings changed through `ClaudeLive` (before its first turn). */
  readonly applySettings?: ((started: Started) => Effect.Effect<void>) | undefined
  /** The `Interrupted` failure of a turn ended by our own interrupt. */
  readonly interrupted: (transcript: Transcript) => ChatError
}

/** The kept-alive query of one client. Turns (and `setTools`) are serialised by the session shell. */
export interface KeepAlive {
  /** A turn on the kept-alive query (started first when there is none). */
  readonly turn: (input: RunInput) => Effect.Effect<RunOutcome, ChatError>
  /** Ends the kept-alive query and its CLI; the next turn starts a new one. */
  readonly drop: Effect.Effect<void>
  /** Starts the kept-alive query now, on the session the next turn would continue (prewarm). */
  readonly warm: (budgetUsd: number | undefined) => Effect.Effect<void>
  /** The kept-alive query, if one runs: `ClaudeLive` controls it. */
  readonly current: () => LiveQuery | undefined
}

const sameSession = Option.makeEquivalence<string>(Equal.equals)

/**
 * How long a turn whose fiber was interrupted may take to stop politely (the SDK's interrupt, then
 * the turn's result) before its query is closed instead (as ClaudeLocal's kept-alive CLI).
 */
const PoliteStop = Duration.seconds(3)

/**
 * Asks the CLI to stop the running turn, with the steered messages still queued (the SDK 0.3.332
 * takes `cancelQueued` though its types do not declare it): they would otherwise run as turns
 * nobody reads. Rejects as the SDK does.
 */
export const interruptTurn = (query: LiveQuery) =>
  Effect.tryPromise(async () => {
    // The SDK pumps the streaming input on its own: a steer sent just before must reach the CLI
    // first, or it would arrive after the interrupt and run as a turn of its own. Bounded: a
    // stuck input must not hold the stop back.
    await Promise.race([query.flushed(), new Promise((resolve) => setTimeout(resolve, 1_000))])
    const interrupt = query.controls.interrupt as (options?: { readonly cancelQueued?: boolean }) => Promise<unknown>
    return interrupt.call(query.controls, { cancelQueued: true })
  })

export const make = (setup: LiveSetup): KeepAlive => {
  const { session } = setup
  let live: LiveQuery | undefined

  const drop = Effect.suspend(() => {
    const ending = live
    live = undefined
    return ending === undefined ? Effect.void : Scope.close(ending.scope, Exit.void)
  })

  /**
   * Its CLI counts its own spend from its start, so it gets what the conversation has left then,
   * and stops when the conversation's total reaches the bound.
   */
  const startLive = Effect.fnUntraced(
    function*(resume: Option.Option<string>, fork: boolean, budgetUsd: number | undefined) {
      const scope = yield* Scope.fork(setup.clientScope, "sequential")
      const spare = Option.isNone(resume) && setup.spare !== undefined
        ? yield* claimSpare(scope, setup.spare, budgetUsd)
        : undefined
      if (spare !== undefined) return spare
      // ClaudeProcessPool: a permit while the query lives; eviction ends it (the next turn resumes).
      const permit = yield* Pool.acquireFrom(
        setup.pool,
        Effect.suspend(() => {
          if (live?.scope === scope) live = undefined
          return Scope.close(scope, Exit.void)
        })
      ).pipe(
        Scope.provide(scope),
        Effect.onError(() => Scope.close(scope, Exit.void)),
        Effect.mapError(Pool.toProviderError(provider))
      )
      const inbox = makeInbox()
      const started = yield* setup.start({
        prompt: inbox.iterable,
        resume,
        fork,
        responseFormat: undefined,
        partialMessages: true,
        budgetUsd
      }).pipe(Scope.provide(scope), Effect.onError(() => Scope.close(scope, Exit.void)))
      // Runs first on close: the SDK sees the end of its input, then the query is closed.
      yield* Scope.addFinalizer(scope, Effect.sync(inbox.end))
      // Started: from now on the pool may count it idle (and reclaim it for a waiting turn).
      yield* permit.touch
      return yield* liveQuery(scope, started, inbox, permit)
    }
  )

  const liveQuery = Effect.fnUntraced(function*(
    scope: Scope.Closeable,
    started: Started,
    inbox: ReturnType<typeof makeInbox>,
    permit: Pool.Permit
  ) {
    const query: LiveQuery = {
      ...started,
      scope,
      send: inbox.push,
      flushed: inbox.flushed,
      permit,
      init: undefined,
      running: undefined
    }
    if (setup.applySettings !== undefined) yield* setup.applySettings(query)
    return query
  })

  /** A spare of the pool as the new conversation's query; undefined when none was claimed. */
  const claimSpare = Effect.fnUntraced(function*(
    scope: Scope.Closeable,
    spare: NonNullable<LiveSetup["spare"]>,
    budgetUsd: number | undefined
  ) {
    const inbox = makeInbox()
    const claimed = yield* spare(inbox.iterable, budgetUsd).pipe(Scope.provide(scope))
    if (Option.isNone(claimed)) return undefined
    // Runs first on close: the SDK sees the end of its input, then the spare is stopped.
    yield* Scope.addFinalizer(scope, Effect.sync(inbox.end))
    return yield* liveQuery(scope, claimed.value.started, inbox, claimed.value.permit)
  })

  /**
   * After the fiber of a turn was interrupted: asks the CLI to stop that turn and reads its
   * remaining messages up to its result, within {@link PoliteStop}. True when the query is ready
   * for the next turn; false means it must be closed.
   */
  const settle = (query: LiveQuery, running: RunningTurn, turnEnd: TurnEnd, input: RunInput) =>
    Effect.gen(function*() {
      if (running.resulted && running.pending.size === 0) return true
      running.interrupted = true
      yield* interruptTurn(query)
      const transcript = yield* setup.consume(query, undefined, true, turnEnd)
      if (transcript.result === undefined) return false
      yield* input.recordResult(transcript.result)
      return true
    }).pipe(
      // Run from a finalizer (uninterruptible): the bound must still be able to stop the wait.
      Effect.interruptible,
      Effect.timeoutOrElse({ duration: PoliteStop, orElse: () => Effect.succeed(false) }),
      Effect.catchCause(() => Effect.succeed(false))
    )

  const turn = Effect.fnUntraced(
    function*(input: RunInput) {
      // A warm CLI started on another session than the conversation's (a failed `ask`) is not it.
      if (
        live !== undefined &&
        (live.permit.evicted() || !sameSession(session.last, input.sessionId) || session.fork !== input.fork)
      ) yield* drop
      const query = live ?? (yield* startLive(input.sessionId, input.fork, input.budgetUsd))
      live = query
      const uuid = crypto.randomUUID()
      const running: RunningTurn = { interrupted: false, pending: new Set([uuid]), tracked: false, resulted: false }
      const turnEnd: TurnEnd = { over: (message) => turnOver(running, message), earlier: input.recordResult }
      const transcript = yield* query.permit.busy(Effect.suspend(() => {
        query.running = running
        query.send(setup.userMessage(input, uuid))
        return setup.consume(query, input.emit, true, turnEnd)
      })).pipe(
        Effect.ensuring(Effect.sync(() => (query.running = undefined))),
        // The caller's interruption wins, but the query is kept when the CLI stops the turn in time.
        Effect.onInterrupt(() =>
          Effect.flatMap(settle(query, running, turnEnd, input), (kept) => kept ? Effect.void : drop)
        )
      )
      if (transcript.init !== undefined) query.init = transcript.init
      // Only a result that follows our own interrupt is an interruption; the query stays.
      if (running.interrupted && transcript.result?.subtype === "error_during_execution") {
        yield* input.recordResult(transcript.result)
        return yield* Effect.fail(setup.interrupted(transcript))
      }
      // Only the init line is per process rather than per turn: the rest reads as a fresh turn's.
      return yield* setup.interpret(input, query, { ...transcript, init: query.init })
    },
    Effect.onError((cause) =>
      // Our own `Interrupted` keeps the query; an interrupted fiber was settled above (or, outside
      // the reading, left the query between turns); anything else ends it.
      isInterrupted(Option.getOrUndefined(Cause.findErrorOption(cause))) || Cause.hasInterruptsOnly(cause)
        ? Effect.void
        : drop
    )
  )

  // With the budget spent the next turn fails without a CLI, so none is started.
  const warm = (budgetUsd: number | undefined) =>
    budgetUsd === 0 ? Effect.void : Effect.suspend(() => startLive(session.last, session.fork, budgetUsd)).pipe(
      Effect.tap((query) =>
        Effect.sync(() => {
          live = query
        })
      ),
      Effect.asVoid,
      Effect.catch((error) =>
        Effect.logWarning("claude CLI warm start failed; the first turn starts it").pipe(
          Effect.annotateLogs({ error: error.message })
        )
      )
    )

  return { turn, drop, warm, current: () => live }
}
