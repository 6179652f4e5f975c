/**
 * The Agent SDK's `sessionStore` on a `ClaudeSessionStore`, for the ClaudeAgent provider, with no
 * silent gaps. The SDK mirrors the CLI's session file itself (`append` after each batch, `load`
 * once before a resume), but left alone it keys sessions by the cwd, waits 60 s for an `append`
 * that hangs, and drops a batch that failed three times (a `mirror_error` message, and the turn
 * still succeeds). Here:
 *
 * - every key gets the client's `projectKey` in place of the SDK's cwd-derived one, so a client
 *   in another directory (or on another machine) finds the session;
 * - every call is bounded by `storeTimeout`; a batch that could not be stored stays in a backlog
 *   of its session (the SDK is told it landed, so it neither retries nor drops it), is sent again,
 *   in order, before the session's next batch, and {@link AgentStore.flush} (after each turn's
 *   result) fails the turn with the `SessionStoreError` while it is not stored;
 * - a `load` first sends the session's backlog (a resume never starts from a store with a gap),
 *   and remembers why it failed or found nothing, so that the turn's error says so
 *   ({@link AgentStore.explain}) rather than the CLI's "No conversation found";
 * - closing the client's scope waits for appends in flight and sends what is left, bounded.
 */
import type * as AgentSdk from "@anthropic-ai/claude-agent-sdk"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import type { ChatError } from "../../services/ChatClient.ts"
import {
  type ClaudeSessionStoreService,
  type SessionKey,
  SessionNotFound,
  SessionStoreError,
  type SessionStoreErrorReason,
  type StoreOperation,
  type TranscriptEntry
} from "../../services/ClaudeSessionStore.ts"
import { boundedCall, DefaultProjectKey, DefaultStoreTimeout, notLanded, storeFailure } from "../claude/transcripts.ts"

/** What a client's queries share to store their sessions. */
export interface AgentStore {
  /** The adapter to pass as the SDK's `sessionStore`. */
  readonly sdkStore: AgentSdk.SessionStore
  /** The SDK's `loadTimeoutMs`: above `storeTimeout`, so that the bound here answers first. */
  readonly loadTimeoutMs: number
  /**
   * After a turn's result: waits for the session's appends in flight, then sends its backlog;
   * fails with the store's error while some entries of the session are still not stored.
   */
  readonly flush: (sessionId: string) => Effect.Effect<void, SessionStoreError>
  /**
   * A turn that resumed `sessionId` and failed in the SDK or the CLI because the store's `load`
   * failed, timed out or found nothing fails with that `SessionStoreError` instead.
   */
  readonly explain: (
    sessionId: Option.Option<string>
  ) => <A, R>(turn: Effect.Effect<A, ChatError, R>) => Effect.Effect<A, ChatError, R>
}

/** How the adapter keys and bounds its calls. */
export interface AgentStoreOptions {
  readonly projectKey: string | undefined
  readonly storeTimeout: Duration.Input | undefined
}

interface Batch {
  readonly key: SessionKey
  readonly entries: ReadonlyArray<TranscriptEntry>
}

/** One session's sends, one at a time, and what is not stored yet. */
interface SessionState {
  readonly lock: Semaphore.Semaphore
  backlog: Array<Batch>
  failure: SessionStoreError | undefined
  /** A send failed: its batch may have landed all the same (a reply lost after the commit, a timeout). */
  unsure: boolean
}

/**
 * The error with its `message` an own enumerable field: the conversation shell adds the turn's
 * answer by spreading it into a new error, and an Error's own `message` does not spread.
 */
const spreadable = (error: SessionStoreError): SessionStoreError => {
  Object.defineProperty(error, "message", {
    value: error.message,
    enumerable: true,
    writable: true,
    configurable: true
  })
  return error
}

/** Consecutive batches of the same key become one call. */
const coalesce = (batches: ReadonlyArray<Batch>): Array<Batch> => {
  const out: Array<Batch> = []
  for (const batch of batches) {
    const last = out.at(-1)
    if (last !== undefined && last.key.subpath === batch.key.subpath) {
      out[out.length - 1] = { key: last.key, entries: [...last.entries, ...batch.entries] }
    } else out.push(batch)
  }
  return out
}

type Bound = (
  operation: StoreOperation,
  sessionId: string
) => <A>(call: Effect.Effect<A, SessionStoreError>) => Effect.Effect<A, SessionStoreError>

/** One store call, bounded, any failure of it (a defect too) typed. */
const guarded = <A>(
  bound: Bound,
  operation: StoreOperation,
  sessionId: string,
  call: Effect.Effect<A, SessionStoreError>
) => storeFailure(operation, sessionId)(bound(operation, sessionId)(call))

/** The sessions' backlogs: sends in order, one at a time per session; what failed is kept. */
const makeBacklogs = (store: ClaudeSessionStoreService, bound: Bound) => {
  const sessions = new Map<string, SessionState>()
  const stateOf = Effect.fnUntraced(function*(sessionId: string) {
    const known = sessions.get(sessionId)
    if (known !== undefined) return known
    const state: SessionState = { lock: yield* Semaphore.make(1), backlog: [], failure: undefined, unsure: false }
    sessions.set(sessionId, state)
    return state
  })

  /**
   * After a failed send, the backlog is checked against the store first: what landed all the
   * same is dropped, so a late append is not stored twice (entries without a uuid, such as
   * `queue-operation`, would be: `append` cannot deduplicate them).
   */
  const dropLanded = (sessionId: string, state: SessionState) =>
    Effect.forEach(state.backlog, (batch) =>
      Effect.map(
        guarded(bound, "load", sessionId, store.load(batch.key)),
        (held): Batch => ({
          key: batch.key,
          entries: Option.isNone(held) ? batch.entries : notLanded(held.value, batch.entries)
        })
      )).pipe(Effect.map((checked) => {
        state.backlog = checked.filter((batch) => batch.entries.length > 0)
      }))

  /** Sends the backlog in order; what fails stays, from the batch that failed on. */
  const send = (sessionId: string, state: SessionState) =>
    Effect.suspend(() => {
      state.backlog = coalesce(state.backlog)
      return Effect.andThen(
        state.unsure ? dropLanded(sessionId, state) : Effect.void,
        Effect.whileLoop({
          while: () => state.backlog.length > 0,
          body: () =>
            guarded(bound, "append", sessionId, store.append(state.backlog[0]!.key, state.backlog[0]!.entries)),
          step: () => {
            state.backlog.shift()
          }
        })
      )
    }).pipe(
      Effect.onExit((exit) =>
        Effect.sync(() => {
          state.failure = exit._tag === "Failure" ? Option.getOrUndefined(Cause.findErrorOption(exit.cause)) : undefined
          state.unsure = exit._tag === "Failure"
        })
      )
    )

  const append = Effect.fnUntraced(function*(key: SessionKey, entries: ReadonlyArray<TranscriptEntry>) {
    const state = yield* stateOf(key.sessionId)
    yield* state.lock.withPermits(1)(Effect.suspend(() => {
      state.backlog.push({ key, entries })
      // Once a send failed, the rest waits for the turn's flush: a store that hangs costs
      // the turn two bounds (the failed send and the flush), not one per batch.
      return state.failure === undefined ? send(key.sessionId, state) : Effect.void
    })).pipe(
      // Kept in the backlog and reported by `flush`: rejecting would only make the SDK retry
      // (holding the turn's result back) and then drop the batch.
      Effect.catch((error) =>
        Effect.logWarning("session store append failed; kept for the next flush").pipe(
          Effect.annotateLogs({ sessionId: key.sessionId, error: error.message })
        )
      )
    )
  })

  /** Sends what the session has not stored; an append in flight holds the lock (and is bounded itself). */
  const flush = (sessionId: string) =>
    Effect.suspend(() => {
      const state = sessions.get(sessionId)
      if (state === undefined) return Effect.void
      return state.lock.withPermits(1)(
        Effect.suspend(() => state.backlog.length === 0 ? Effect.void : send(sessionId, state))
      )
    }).pipe(Effect.mapError(spreadable))

  const pending = () => [...sessions].flatMap(([sessionId, state]) => (state.backlog.length === 0 ? [] : [sessionId]))
  return { append, flush, pending }
}

const notFound = (sessionId: string, projectKey: string) =>
  new SessionStoreError({
    operation: "load",
    sessionId,
    reason: new SessionNotFound({
      message: `Session ${sessionId} is not in the session store (project key ${
        JSON.stringify(projectKey)
      }); resume a session stored under this project key, check projectKey, or start a new conversation`
    })
  })

/** The same kind of reason with another message (every reason's only field is its message). */
const reworded = (reason: SessionStoreErrorReason, message: string): SessionStoreErrorReason =>
  new (reason.constructor as new(props: { readonly message: string }) => SessionStoreErrorReason)({ message })

/** A failed resume, saying which session of which project could not be read. */
const loadFailed = (sessionId: string, projectKey: string) => (error: SessionStoreError) =>
  error.message.startsWith(`Session ${sessionId} `) ? error : new SessionStoreError({
    operation: error.operation,
    sessionId,
    reason: reworded(
      error.reason,
      `Session ${sessionId} (project key ${JSON.stringify(projectKey)}) could not be read from the ` +
        `session store to resume it: ${error.message}`
    ),
    cause: error
  })

/** Maps a turn's failure to the load failure recorded for the session it resumed (see {@link AgentStore.explain}). */
const explainWith =
  (loadFailures: Map<string, SessionStoreError>) =>
  (sessionId: Option.Option<string>) =>
  <A, R>(turn: Effect.Effect<A, ChatError, R>): Effect.Effect<A, ChatError, R> => {
    if (Option.isNone(sessionId)) return turn
    const id = sessionId.value
    return turn.pipe(
      Effect.catchIf(
        // The SDK throws a failed load at once (a `process` error); a load that found nothing
        // lets the CLI fail on the missing session.
        (error: ChatError) =>
          error._tag === "ProviderError" &&
          (error.reason._tag === "ProcessError" || error.reason._tag === "SessionNotFoundError") &&
          loadFailures.has(id),
        () => Effect.fail(loadFailures.get(id)!)
      ),
      // A record is about one resume: a later turn's failure is its own.
      Effect.ensuring(Effect.sync(() => loadFailures.delete(id)))
    )
  }

/** Builds the adapter in the current scope (see the module's description). */
export const make = Effect.fnUntraced(
  function*(
    store: ClaudeSessionStoreService,
    options: AgentStoreOptions
  ): Effect.fn.Return<AgentStore, never, Scope.Scope> {
    const projectKey = options.projectKey ?? DefaultProjectKey
    const timeout = options.storeTimeout ?? DefaultStoreTimeout
    const bound: Bound = (operation, sessionId) => boundedCall(operation, sessionId, timeout)
    const runPromise = Effect.runPromiseWith(yield* Effect.context<never>())
    const backlogs = makeBacklogs(store, bound)
    const loadFailures = new Map<string, SessionStoreError>()
    const inFlight = new Set<Promise<unknown>>()

    const ours = (key: { readonly sessionId: string; readonly subpath?: string | undefined }): SessionKey => ({
      projectKey,
      sessionId: key.sessionId,
      ...(key.subpath === undefined ? {} : { subpath: key.subpath })
    })
    /** Runs an Effect for the SDK, counted in flight until it settles. */
    const settle = <A>(effect: Effect.Effect<A, SessionStoreError>): Promise<A> => {
      const promise = runPromise(effect)
      inFlight.add(promise)
      void promise.then(() => inFlight.delete(promise), () => inFlight.delete(promise))
      return promise
    }
    const recordingLoad = (sessionId: string) => <A>(effect: Effect.Effect<A, SessionStoreError>) =>
      effect.pipe(
        Effect.mapError(loadFailed(sessionId, projectKey)),
        Effect.tapError((error) => Effect.sync(() => loadFailures.set(sessionId, error)))
      )

    /** A resume reads the store: the session's backlog goes first, so what it reads has no gap. */
    const load = Effect.fnUntraced(function*(key: AgentSdk.SessionKey) {
      loadFailures.delete(key.sessionId)
      yield* backlogs.flush(key.sessionId)
      const entries = yield* guarded(bound, "load", key.sessionId, store.load(ours(key)))
      if (Option.isNone(entries) || entries.value.length === 0) {
        // The SDK then lets the CLI look in its own config dir, which may hold the session.
        if (key.subpath === undefined) loadFailures.set(key.sessionId, notFound(key.sessionId, projectKey))
        return null
      }
      // JSON values: an absent `uuid` is absent, never `undefined`.
      return [...entries.value] as Array<AgentSdk.SessionStoreEntry>
    }, (effect, key) => recordingLoad(key.sessionId)(effect))

    const sdkStore: AgentSdk.SessionStore = {
      append: (key, entries) => settle(backlogs.append(ours(key), entries)),
      load: (key) => settle(load(key)),
      listSessions: () =>
        settle(
          guarded(bound, "listSessions", "", store.listSessions(projectKey)).pipe(
            Effect.map((all) => all.map((s) => ({ sessionId: s.sessionId, mtime: s.mtime })))
          )
        ),
      listSubkeys: (key) =>
        settle(
          guarded(bound, "listSubkeys", key.sessionId, store.listSubkeys(ours(key))).pipe(
            Effect.map((subkeys) => [...subkeys]),
            recordingLoad(key.sessionId)
          )
        ),
      delete: (key) => settle(guarded(bound, "delete", key.sessionId, store.delete(ours(key))))
    }

    // On close (after the client's CLIs, whose own close sends their last entries): what is in
    // flight lands, and what is left is sent once; a store still failing is logged.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        yield* Effect.promise(() => Promise.allSettled([...inFlight])).pipe(Effect.timeoutOption(timeout))
        for (const sessionId of backlogs.pending()) {
          yield* backlogs.flush(sessionId).pipe(Effect.catch((error) =>
            Effect.logWarning("session store: entries not stored when the client closed").pipe(
              Effect.annotateLogs({ sessionId, error: error.message })
            )
          ))
        }
      })
    )

    return {
      sdkStore,
      loadTimeoutMs: Duration.toMillis(Duration.fromInputUnsafe(timeout)) + 5_000,
      flush: backlogs.flush,
      explain: explainWith(loadFailures)
    } satisfies AgentStore
  }
)
