/**
 * Where Claude Code conversations live when they must outlive a process or a machine: the
 * transcript entries of each session (one JSON object per line of the CLI's
 * `projects/<dir>/<session id>.jsonl`), keyed by a project key the application chooses (not the
 * `cwd`) and the session id.
 *
 * **Details**
 *
 * Both Claude Code providers use it when it is provided: `ClaudeAgent` through the Agent SDK's
 * `sessionStore`, `ClaudeLocal` by storing the session file's new entries after each turn and
 * writing the file back before a `--resume` that would not find it. A turn returns only after its
 * entries are stored; a store that fails or does not answer within the client's `storeTimeout`
 * fails the turn with a {@link SessionStoreError} (its answer kept), and what was not stored is
 * sent again with the next turn.
 *
 * The operations mirror the Agent SDK's `SessionStore` contract: `append` is idempotent by an
 * entry's `uuid` (entries without one are appended as they come), `load` gives the entries in
 * append order or `None` for a session never written. Implementations: {@link layerMemory} here,
 * `ClaudeSessionStoreSql.layer` (any `effect/sql` client: the library's SQLite one, PostgreSQL
 * through `@effect/sql-pg`) in `effect-chat-bridge/session-store-sql`.
 *
 * @summary Where Claude Code transcripts live when a conversation must outlive its process or machine.
 * @group Sessions & storage
 * @since 1.0.0
 * @module
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SynchronizedRef from "effect/SynchronizedRef"

/**
 * One transcript line: a JSON object with a string `type`; most carry a `uuid` and a `timestamp`.
 *
 * @category models
 * @since 1.0.0
 */
export interface TranscriptEntry {
  readonly type: string
  readonly uuid?: string | undefined
  readonly timestamp?: string | undefined
  readonly [key: string]: unknown
}

/**
 * The schema of {@link TranscriptEntry}: the known fields checked, the rest kept as JSON.
 *
 * @category schemas
 * @since 1.0.0
 */
export const TranscriptEntry: Schema.Codec<TranscriptEntry> = Schema.StructWithRest(
  Schema.Struct({
    type: Schema.String,
    uuid: Schema.optional(Schema.String),
    timestamp: Schema.optional(Schema.String)
  }),
  [Schema.Record(Schema.String, Schema.Unknown)]
)

/**
 * Which transcript: a session of a project, or one of its subagents' files (`subpath`).
 *
 * @category models
 * @since 1.0.0
 */
export interface SessionKey {
  /** The application's scope for sessions (a tenant, a project name); never derived from `cwd` here. */
  readonly projectKey: string
  readonly sessionId: string
  /** Unset for the main transcript; a subagent file's relative path otherwise (never empty). */
  readonly subpath?: string | undefined
}

/**
 * A session of a project, with when it was last appended to (Unix epoch milliseconds).
 *
 * @category models
 * @since 1.0.0
 */
export interface StoredSession {
  readonly sessionId: string
  readonly mtime: number
}

/**
 * The store operations a failure can come from.
 *
 * @category schemas
 * @since 1.0.0
 */
export const StoreOperation = Schema.Literals(["append", "load", "listSessions", "listSubkeys", "delete"])
/**
 * The type of {@link StoreOperation}.
 *
 * @category models
 * @since 1.0.0
 */
export type StoreOperation = typeof StoreOperation.Type

/**
 * The session store did not answer in time or could not be reached (a `storeTimeout`, a lost
 * connection, a lock or statement timeout). Retryable: the same call may succeed once the store answers.
 *
 * @since 2.0.0
 * @category errors
 */
export class StoreUnavailable
  extends Schema.TaggedError<StoreUnavailable>("effect-chat-bridge/SessionStoreError/StoreUnavailable")(
    "StoreUnavailable",
    {
      /** What happened and what to do about it. */
      message: Schema.String
    }
  )
{
  /** Always retryable. */
  get isRetryable(): boolean {
    return true
  }
}

/**
 * The session store refused the call or broke (a query the database rejects, missing permissions,
 * a store that died instead of failing). Not retryable: fix the store or its database.
 *
 * @since 2.0.0
 * @category errors
 */
export class StoreFailed extends Schema.TaggedError<StoreFailed>("effect-chat-bridge/SessionStoreError/StoreFailed")(
  "StoreFailed",
  {
    /** What happened and what to do about it. */
    message: Schema.String
  }
) {
  /** Never retryable. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * A stored transcript or the CLI's session file holds an entry that cannot be read (not JSON, no
 * `type`). Not retryable: check what else writes there.
 *
 * @since 2.0.0
 * @category errors
 */
export class CorruptTranscript
  extends Schema.TaggedError<CorruptTranscript>("effect-chat-bridge/SessionStoreError/CorruptTranscript")(
    "CorruptTranscript",
    {
      /** What happened and what to do about it. */
      message: Schema.String
    }
  )
{
  /** Never retryable. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The session to resume is in neither the CLI's config dir nor the session store. Not retryable:
 * resume a session that exists, check `projectKey`, or start a new conversation.
 *
 * @since 2.0.0
 * @category errors
 */
export class SessionNotFound
  extends Schema.TaggedError<SessionNotFound>("effect-chat-bridge/SessionStoreError/SessionNotFound")(
    "SessionNotFound",
    {
      /** What happened and what to do about it. */
      message: Schema.String
    }
  )
{
  /** Never retryable. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The store answered a load with no entries where a session was expected (a store must answer
 * `None` for a session it never held). Not retryable: check the store's data for the session.
 *
 * @since 2.0.0
 * @category errors
 */
export class EmptyTranscript
  extends Schema.TaggedError<EmptyTranscript>("effect-chat-bridge/SessionStoreError/EmptyTranscript")(
    "EmptyTranscript",
    {
      /** What happened and what to do about it. */
      message: Schema.String
    }
  )
{
  /** Never retryable. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * A session id that is not a plain name (letters, digits, `-`, `_`) was refused before it became
 * part of a path. Not retryable: pass the id `ClaudeSession.sessionId` gave.
 *
 * @since 2.0.0
 * @category errors
 */
export class InvalidSessionId
  extends Schema.TaggedError<InvalidSessionId>("effect-chat-bridge/SessionStoreError/InvalidSessionId")(
    "InvalidSessionId",
    {
      /** What happened and what to do about it. */
      message: Schema.String
    }
  )
{
  /** Never retryable. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The conversation has no session yet (a snapshot before the first turn). Not retryable: snapshot
 * after a turn.
 *
 * @since 2.0.0
 * @category errors
 */
export class NoSession extends Schema.TaggedError<NoSession>("effect-chat-bridge/SessionStoreError/NoSession")(
  "NoSession",
  {
    /** What happened and what to do about it. */
    message: Schema.String
  }
) {
  /** Never retryable. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The CLI's session file could not be read, written or cut, or the CLI left none. Not retryable:
 * check that the config dir is writable and sessions are persisted.
 *
 * @since 2.0.0
 * @category errors
 */
export class SessionFileFailed
  extends Schema.TaggedError<SessionFileFailed>("effect-chat-bridge/SessionStoreError/SessionFileFailed")(
    "SessionFileFailed",
    {
      /** What happened and what to do about it. */
      message: Schema.String
    }
  )
{
  /** Never retryable. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * What went wrong in a session store operation.
 *
 * @since 2.0.0
 * @category schemas
 */
export const SessionStoreErrorReason: Schema.Union<[
  typeof StoreUnavailable,
  typeof StoreFailed,
  typeof CorruptTranscript,
  typeof SessionNotFound,
  typeof EmptyTranscript,
  typeof InvalidSessionId,
  typeof NoSession,
  typeof SessionFileFailed
]> = Schema.Union([
  StoreUnavailable,
  StoreFailed,
  CorruptTranscript,
  SessionNotFound,
  EmptyTranscript,
  InvalidSessionId,
  NoSession,
  SessionFileFailed
])

/**
 * The type of {@link SessionStoreErrorReason}.
 *
 * @since 2.0.0
 * @category models
 */
export type SessionStoreErrorReason = typeof SessionStoreErrorReason.Type

/**
 * The session store failed or did not answer in time, or a session could not be found or read.
 * A turn that fails with it has run: its answer is in `answer`, and the entries that were not
 * stored are sent again with the next turn. Select a reason with
 * `Effect.catchReason("SessionStoreError", "StoreUnavailable", …)`; `isRetryable` is the reason's
 * (only `StoreUnavailable` is retryable).
 *
 * @since 2.0.0
 * @category errors
 */
export class SessionStoreError extends Schema.TaggedError<SessionStoreError>()("SessionStoreError", {
  /** What the store was asked to do. */
  operation: StoreOperation,
  /** The session concerned, when there is one. */
  sessionId: Schema.optional(Schema.String),
  /** What happened; its message says what to do about it. */
  reason: SessionStoreErrorReason,
  /** The turn's answer, when the turn ran but its transcript could not be stored. */
  answer: Schema.optional(Schema.String),
  cause: Schema.optional(Schema.Defect())
}) {
  /** The reason's message. */
  override get message(): string {
    return this.reason.message
  }

  /** Whether trying again may succeed; the reason decides. */
  get isRetryable(): boolean {
    return this.reason.isRetryable
  }
}

/**
 * The operations of a session store; see the module's description for the contract.
 *
 * @category models
 * @since 1.0.0
 */
export interface ClaudeSessionStoreService {
  /** Adds entries to the end of a transcript, skipping those whose `uuid` it already holds. */
  readonly append: (key: SessionKey, entries: ReadonlyArray<TranscriptEntry>) => Effect.Effect<void, SessionStoreError>
  /** The transcript in append order; `None` when nothing was ever appended to it. */
  readonly load: (key: SessionKey) => Effect.Effect<Option.Option<ReadonlyArray<TranscriptEntry>>, SessionStoreError>
  /** The project's sessions (main transcripts only), in no particular order. */
  readonly listSessions: (projectKey: string) => Effect.Effect<ReadonlyArray<StoredSession>, SessionStoreError>
  /** The subpaths stored under a session (subagent transcripts). */
  readonly listSubkeys: (
    key: { readonly projectKey: string; readonly sessionId: string }
  ) => Effect.Effect<ReadonlyArray<string>, SessionStoreError>
  /** Removes a transcript; for a main transcript, its subpaths too. Deleting nothing succeeds. */
  readonly delete: (key: SessionKey) => Effect.Effect<void, SessionStoreError>
}

/**
 * The session store the Claude Code providers use when it is in their context.
 *
 * @category services
 * @since 1.0.0
 */
export class ClaudeSessionStore extends Context.Service<ClaudeSessionStore, ClaudeSessionStoreService>()(
  "effect-chat-bridge/ClaudeSessionStore"
) {}

interface MemoryTranscript {
  readonly entries: ReadonlyArray<TranscriptEntry>
  readonly uuids: ReadonlySet<string>
  readonly mtime: number
}

/** The memory store's key of a transcript: the three parts, unambiguously joined. */
const memoryKey = (key: SessionKey) => JSON.stringify([key.projectKey, key.sessionId, key.subpath ?? null])

const appendTo = (before: MemoryTranscript | undefined, entries: ReadonlyArray<TranscriptEntry>, now: number) => {
  const kept = [...(before?.entries ?? [])]
  const uuids = new Set(before?.uuids ?? [])
  for (const entry of entries) {
    if (typeof entry.uuid === "string") {
      if (uuids.has(entry.uuid)) continue
      uuids.add(entry.uuid)
    }
    kept.push(entry)
  }
  return { entries: kept, uuids, mtime: Math.max(now, before?.mtime ?? 0) }
}

/**
 * Builds an empty store in memory: for tests, and for one process that only needs snapshots.
 *
 * @category constructors
 * @since 1.0.0
 */
export const makeMemory: Effect.Effect<ClaudeSessionStoreService> = Effect.gen(function*() {
  const ref = yield* SynchronizedRef.make<ReadonlyMap<string, MemoryTranscript>>(new Map())
  const parse = (stored: string) => JSON.parse(stored) as [string, string, string | null]
  return ClaudeSessionStore.of({
    append: (key, entries) =>
      SynchronizedRef.update(
        ref,
        (all) =>
          entries.length === 0
            ? all
            : new Map(all).set(memoryKey(key), appendTo(all.get(memoryKey(key)), entries, Date.now()))
      ),
    load: (key) =>
      Effect.map(
        SynchronizedRef.get(ref),
        (all) => Option.map(Option.fromUndefinedOr(all.get(memoryKey(key))), (t) => t.entries)
      ),
    listSessions: (projectKey) =>
      Effect.map(SynchronizedRef.get(ref), (all) =>
        [...all].flatMap(([k, t]) => {
          const [project, sessionId, subpath] = parse(k)
          return project === projectKey && subpath === null ? [{ sessionId, mtime: Math.floor(t.mtime) }] : []
        })),
    listSubkeys: (key) =>
      Effect.map(SynchronizedRef.get(ref), (all) =>
        [...all.keys()].flatMap((k) => {
          const [project, sessionId, subpath] = parse(k)
          return project === key.projectKey && sessionId === key.sessionId && subpath !== null ? [subpath] : []
        })),
    delete: (key) =>
      SynchronizedRef.update(ref, (all) =>
        new Map(
          [...all].filter(([k]) => {
            const [project, sessionId, subpath] = parse(k)
            if (project !== key.projectKey || sessionId !== key.sessionId) return true
            return key.subpath === undefined ? false : subpath !== key.subpath
          })
        ))
  })
})

/**
 * A store in memory, empty when the layer is built (see {@link makeMemory}).
 *
 * @category layers
 * @since 1.0.0
 */
export const layerMemory: Layer.Layer<ClaudeSessionStore> = Layer.effect(ClaudeSessionStore, makeMemory)
