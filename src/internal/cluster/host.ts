/**
 * One conversation hosted on one runner: the client built on its first turn (resuming the CLI
 * session the conversation's records name), each turn recorded as started and done, and the
 * answer of a turn that finished here kept in the records, so a turn delivered again after this
 * runner died between finishing it and replying is answered from them without a model call.
 *
 * A runner that stops (scope close, SIGTERM) never stores a turn it cut short as that turn's
 * reply: the client lives in a scope that closes only after the cluster has interrupted the
 * running turn, and a turn that fails while the runner is shutting down (its CLI stopped under it)
 * ends as the cluster's "abandoned" interrupt, so the request stays unanswered in storage and the
 * conversation's next runner runs it again.
 */
import * as Cause from "effect/Cause"
import * as ClusterSchema from "effect/cluster/ClusterSchema"
import { Sharding } from "effect/cluster/Sharding"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as SynchronizedRef from "effect/SynchronizedRef"
import { ApprovalRequired, type ChatError, ProcessError, ProviderError, Usage } from "../../services/ChatClient.ts"
import type { ChatEvent } from "../../services/ChatEvent.ts"
import { Complete } from "../../services/ChatEvent.ts"
import type { ApprovalError, ClaudeApprovalsService, PendingApproval } from "../../services/ClaudeApprovals.ts"
import type { ClaudeCodeOptions } from "../../services/ClaudeCodeOptions.ts"
import {
  type ControlError,
  ConversationSetupError,
  type DecisionError,
  turnCutShort,
  type TurnError
} from "../../services/ClaudeConversation.ts"
import type { ClaudeLiveError, ClaudeLiveService } from "../../services/ClaudeLive.ts"
import { ClaudeSessionStore, type ClaudeSessionStoreService } from "../../services/ClaudeSessionStore.ts"
import type * as Tool from "../../services/Tool.ts"
import { approvalsOf, liveOf, type SessionClient } from "../claude/conversation.ts"
import { makeIdempotent, type TurnCalls } from "./idempotentTools.ts"
import * as ConversationLog from "./log.ts"
import * as Metrics from "./metrics.ts"

/**
 * What a runner knows about the conversation it is setting up.
 *
 * @category models
 * @since 1.0.0
 */
export interface ConversationContext {
  /** The entity id: the conversation id the caller chose. */
  readonly conversationId: string
  /**
   * Wraps a tool so that a turn run again after a failover replays its stored result instead of
   * running the handler twice (keyed by conversation, turn id, tool, arguments and repeat count).
   */
  readonly idempotent: <R>(tool: Tool.Tool<R>) => Tool.Tool<R>
}

/**
 * The options and tools of one conversation.
 *
 * @category models
 * @since 1.0.0
 */
export interface ConversationSetup<O, R> {
  readonly options?: O | undefined
  readonly tools?: ReadonlyArray<Tool.Tool<R>> | undefined
}

/**
 * Options a Claude Code client builder takes, as far as the host sets them.
 *
 * @category config
 * @since 1.0.0
 */
export type HostedOptions = ClaudeCodeOptions & { readonly keepAlive?: boolean | undefined }

/** How the host builds a conversation's client. */
export interface HostParams<O extends HostedOptions, RM, E, R> {
  readonly make: (options?: O) => Effect.Effect<SessionClient, never, RM>
  readonly conversation: (context: ConversationContext) => Effect.Effect<ConversationSetup<O, R>, E, R>
  readonly projectKey: string
}

interface Hosted {
  readonly client: SessionClient
  /** Usage of the conversation before this activation's client. */
  readonly base: Usage
  readonly state: ConversationLog.LogState
  /** Answers of finished turns: the records' at activation, then each turn finished here. */
  readonly replies: Map<string, unknown>
}

const describe = (cause: unknown): string =>
  typeof cause === "object" && cause !== null && "message" in cause
    ? String((cause as { readonly message: unknown }).message)
    : String(cause)

const setupFailed = (conversationId: string) => (cause: unknown) =>
  new ConversationSetupError({
    conversationId,
    message: `The runner could not set conversation ${conversationId} up (nothing ran; fix the cause and ` +
      `send the turn again with a new turn id): ${describe(cause)}`,
    cause
  })

const noLiveControls = (conversationId: string) =>
  new ConversationSetupError({
    conversationId,
    message: `The runner's \`make\` built conversation ${conversationId} a client without live controls; ` +
      "pass ClaudeLocal.make or ClaudeAgent.make"
  })

const noApprovals = (conversationId: string) =>
  new ConversationSetupError({
    conversationId,
    message: `The runner's \`make\` built conversation ${conversationId} a client without approvals; ` +
      "pass ClaudeLocal.make or ClaudeAgent.make"
  })

/** The `ApprovalRequired` of a turn that parked a call, if it is one. */
const parkedOf = (error: unknown): ApprovalRequired | undefined =>
  error instanceof ProviderError && error.reason._tag === "ApprovalRequired" ? error.reason : undefined
/**
 * How long a turn runs before it is recorded as started. A runner that dies sooner leaves no
 * started record, so that redelivery goes uncounted in `redeliveredTurns` (the turn still runs again:
 * the cluster redelivers it, not the record); a model turn with a tool call rarely ends sooner.
 */
const startedRecordDelay = "1 second"

/** The cause a cluster handler ends with to leave a persisted request for the shard's next owner. */
const abandoned: Cause.Cause<never> = Cause.annotate(Cause.interrupt(), ClusterSchema.Abandon.annotation)

/** Builds the host of one conversation in the entity's scope. */
export const make = Effect.fnUntraced(
  function*<O extends HostedOptions, RM, E, R>(
    params: HostParams<O, RM, E, R>,
    address: { readonly conversationId: string; readonly runner: string; readonly store: ClaudeSessionStoreService }
  ) {
    const { conversationId, runner } = address
    const store = Metrics.instrumented(address.store)
    const log = ConversationLog.make(store, params.projectKey, conversationId, runner)
    const labels = { runner }
    yield* Effect.acquireRelease(
      Metrics.track(Metrics.conversations, labels, 1),
      () => Metrics.track(Metrics.conversations, labels, -1)
    )
    const turn = yield* Ref.make<TurnCalls>({ turnId: "", seen: new Map() })
    const results = ConversationLog.toolResults(store, params.projectKey, conversationId)
    const idempotent = makeIdempotent(conversationId, turn, results)
    const sharding = yield* Sharding
    // Forked now, before the cluster's RPC server adds its finalizers to the entity's scope, so it
    // closes after them: the server interrupts a running turn first, and only then is its CLI stopped.
    const scope = yield* Scope.fork(yield* Effect.scope)
    const context = yield* Effect.context<RM | R>()
    const hosted = yield* SynchronizedRef.make(Option.none<Hosted>())

    const build = Effect.gen(function*() {
      const state = yield* log.load
      if (state.failedOver) {
        yield* Metrics.track(Metrics.failovers, labels, 1)
      }
      yield* log.activated
      yield* Scope.addFinalizer(scope, Effect.ignore(log.passivated))
      const setup = yield* Effect.mapError(
        params.conversation({ conversationId, idempotent }),
        setupFailed(conversationId)
      )
      const client = yield* params.make({
        ...setup.options,
        keepAlive: setup.options?.keepAlive ?? true,
        projectKey: params.projectKey,
        resume: state.sessionId,
        snapshot: undefined,
        forkSession: false
      } as O).pipe(Effect.provideService(ClaudeSessionStore, store))
      if (setup.tools !== undefined && setup.tools.length > 0) {
        yield* Effect.mapError(client.setTools(setup.tools), setupFailed(conversationId))
      }
      return { client, base: state.usage, state, replies: new Map(state.replies) }
    }).pipe(Effect.provideService(Scope.Scope, scope), Effect.provideContext(context))

    const ensure: Effect.Effect<Hosted, TurnError> = SynchronizedRef.modifyEffect(
      hosted,
      (current) =>
        Option.isSome(current)
          ? Effect.succeed([current.value, current] as const)
          : Effect.map(build, (h) => [h, Option.some(h)] as const)
    )

    /**
     * Records the turn as started off its path, and only once it has run for
     * {@link startedRecordDelay}: that record only feeds the redelivery count (a started turn
     * without a done record), and a turn that finishes sooner has its done record instead, so a
     * short turn pays one record, not two. The returned `finish` cancels the pending record or
     * awaits the one being written (so the records stay in order), then records the turn done.
     */
    const startTurn = Effect.fnUntraced(function*(h: Hosted, turnId: string) {
      if (h.state.unfinished.has(turnId)) {
        yield* Metrics.track(Metrics.redeliveredTurns, labels, 1)
      }
      yield* Ref.set(turn, { turnId, seen: new Map() })
      const started = yield* Effect.forkIn(
        Effect.sleep(startedRecordDelay).pipe(
          Effect.andThen(Effect.uninterruptible(
            log.turnStarted(turnId).pipe(
              Effect.catch((error) =>
                Effect.logWarning("a cluster turn's start was not recorded").pipe(
                  Effect.annotateLogs({ turnId, error: error.message })
                )
              )
            )
          ))
        ),
        scope
      )
      return Effect.fnUntraced(function*(reply: unknown) {
        // Interrupting waits for a record already being written (it is uninterruptible).
        yield* Fiber.interrupt(started)
        const usage = Usage.add(h.base, yield* h.client.usage)
        yield* log.turnDone(turnId, Option.getOrUndefined(yield* h.client.sessionId), usage, reply)
        h.replies.set(turnId, reply)
      })
    })

    /**
     * A turn that ends badly while this runner shuts down was cut short by the shutdown (its CLI
     * stopped, its tool interrupted), not failed by the model or a tool: hand it back unanswered.
     * One that ends in a bare interrupt while the runner is up would have that interrupt stored as
     * its answer (the cluster stores what is not its own shutdown's): store an error that says so.
     */
    const handBackOnShutdown = <A, E>(
      turnId: string,
      effect: Effect.Effect<A, E>
    ): Effect.Effect<A, E | ProviderError> =>
      Effect.catchCause(
        effect,
        (cause) =>
          Effect.flatMap(sharding.isShutdown, (down): Effect.Effect<never, E | ProviderError> => {
            if (down) {
              return Effect.logInfo("a turn cut short by the runner's shutdown is left for the next runner").pipe(
                Effect.annotateLogs({ conversationId, turnId }),
                Effect.andThen(Effect.failCause(abandoned))
              )
            }
            if (!Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
            return Effect.logWarning("a cluster turn ended in an interrupt from inside it", cause).pipe(
              Effect.annotateLogs({ conversationId, turnId }),
              Effect.andThen(Effect.fail(interruptedInside(turnId)))
            )
          })
      )

    const interruptedInside = (turnId: string) =>
      new ProviderError({
        provider: "claude-cluster",
        reason: new ProcessError({
          message: `Turn ${turnId} of conversation ${conversationId} was interrupted from inside on runner ${runner} ` +
            "(its CLI or a tool was stopped; not by its caller, nor by a stop of the runner), and nothing of it was " +
            "answered. Send the prompt again with a new turn id: this error is the stored answer of this one",
          transient: true
        })
      })

    /**
     * A turn that parked a call: the session it is parked in becomes the conversation's (so the
     * next runner continues it — the turn ran), and the caller learns which conversation to
     * decide it in.
     */
    const onParked = <E>(h: Hosted, turnId: string) => (error: E): Effect.Effect<never, E> => {
      const parked = parkedOf(error)
      if (parked === undefined) return Effect.fail(error)
      const marked = new ProviderError({
        provider: (error as ProviderError).provider,
        reason: new ApprovalRequired({
          message: parked.message,
          approvalId: parked.approvalId,
          sessionId: parked.sessionId,
          tool: parked.tool,
          input: parked.input,
          conversationId
        })
      }) as E
      return Effect.flatMap(
        h.client.usage,
        (usage) =>
          log.turnDone(turnId, parked.sessionId, Usage.add(h.base, usage), undefined).pipe(
            Effect.catch((stored) =>
              Effect.logWarning("a parked cluster turn's session was not recorded").pipe(
                Effect.annotateLogs({ turnId, error: stored.message })
              )
            ),
            Effect.andThen(Effect.fail(marked))
          )
      )
    }

    /** Runs one turn, or answers it from the records when it already finished here before. */
    const runTurn = Effect.fnUntraced(
      function*<A, E = ChatError>(
        turnId: string,
        body: (client: SessionClient) => Effect.Effect<A, E>,
        decodeReply: (reply: unknown) => Option.Option<A>
      ): Effect.fn.Return<A, E | ConversationSetupError | TurnError> {
        const h = yield* ensure
        const done = h.replies.get(turnId)
        const replayed = done === undefined ? Option.none<A>() : decodeReply(done)
        if (Option.isSome(replayed)) return replayed.value
        const finish = yield* startTurn(h, turnId)
        const value = yield* handBackOnShutdown(turnId, body(h.client)).pipe(Effect.catch(onParked(h, turnId)))
        yield* finish(value)
        return value
      },
      Effect.withSpan("ClaudeConversation.turn", (turnId: string) => ({
        attributes: { "conversation.id": conversationId, "conversation.turn_id": turnId, "cluster.runner": runner }
      }))
    )

    const streamTurn = (
      turnId: string,
      body: (client: SessionClient) => Stream.Stream<ChatEvent, ChatError>
    ): Stream.Stream<ChatEvent, TurnError> =>
      Stream.unwrap(Effect.gen(function*() {
        const h = yield* ensure
        const done = h.replies.get(turnId)
        if (typeof done === "string") return Stream.make(new Complete({ text: done }))
        const finish = yield* startTurn(h, turnId)
        return body(h.client).pipe(
          Stream.tap((event) => event._tag === "Complete" ? finish(event.text) : Effect.void),
          Stream.catch((error) => Stream.fromEffect(onParked<ChatError>(h, turnId)(error))),
          // A stream is not persisted, so the cluster cannot hand it on: tell the caller what to do.
          Stream.catchCause((cause) =>
            Stream.fromEffect(Effect.flatMap(sharding.isShutdown, (down) =>
              down && !Cause.hasInterruptsOnly(cause)
                ? Effect.fail(turnCutShort(conversationId, turnId))
                : Effect.failCause(cause)))
          )
        )
      }))

    /**
     * Runs a live control on the hosted client, setting the conversation up first when no turn has
     * (so `interrupt` then fails honestly with `NoRunningTurn`). It never takes the turn's place: the
     * entity runs it beside the turn (`Rpc.fork`), and the client's controls are safe to call then.
     */
    const control = <A>(
      run: (live: ClaudeLiveService) => Effect.Effect<A, ClaudeLiveError>
    ): Effect.Effect<A, ControlError> =>
      Effect.flatMap(
        Effect.mapError(ensure, (error) =>
          error._tag === "ConversationSetupError" ? error : setupFailed(conversationId)(error)),
        (h): Effect.Effect<A, ControlError> => {
          const live = liveOf(h.client)
          return live === undefined ? Effect.fail(noLiveControls(conversationId)) : run(live)
        }
      )

    /**
     * An approval's decision, run like a turn (records keyed `approve:<id>` / `deny:<id>`): it
     * resumes the parked session on the hosted client, and its answer is recorded so a redelivery
     * answers from the records.
     */
    const decide = (
      kind: "approve" | "deny",
      approvalId: string,
      run: (approvals: ClaudeApprovalsService) => Effect.Effect<string, ApprovalError | ChatError>
    ): Effect.Effect<string, DecisionError> =>
      runTurn(`${kind}:${approvalId}`, (client): Effect.Effect<string, DecisionError> => {
        const approvals = approvalsOf(client)
        return approvals === undefined ? Effect.fail(noApprovals(conversationId)) : run(approvals)
      }, (reply) => typeof reply === "string" ? Option.some(reply) : Option.none())

    /** The calls waiting in the conversation's current session (none before its first turn). */
    const listApprovals: Effect.Effect<ReadonlyArray<PendingApproval>, ApprovalError | ConversationSetupError> = Effect
      .gen(function*() {
        const h = yield* Effect.mapError(
          ensure,
          (error) => error._tag === "ConversationSetupError" ? error : setupFailed(conversationId)(error)
        )
        const approvals = approvalsOf(h.client)
        if (approvals === undefined) return yield* noApprovals(conversationId)
        const session = yield* h.client.sessionId
        return Option.isNone(session) ? [] : yield* approvals.list(session.value)
      })

    const usage: Effect.Effect<Usage, ConversationSetupError> = Effect.gen(function*() {
      const current = yield* SynchronizedRef.get(hosted)
      if (Option.isSome(current)) return Usage.add(current.value.base, yield* current.value.client.usage)
      const state = yield* Effect.mapError(log.load, setupFailed(conversationId))
      return state.usage
    })

    return { ensure, runTurn, streamTurn, control, decide, listApprovals, usage }
  }
)
