/**
 * The store step of a Claude Code run's lifecycle (prepare → start → turn → store → close), the
 * one place where a `ClaudeSessionStore` meets a conversation. Before a run that resumes a
 * session the transcript is made available where the runtime reads it; after a successful run
 * what is new is stored, bounded by `storeTimeout`; a snapshot reads it back.
 *
 * Two ways to store: `file` (ClaudeLocal) reads the CLI's session file after each turn and
 * appends the entries not stored yet, and before a resume writes the file from the store when it
 * is missing or differs from the store (the session went on on another machine); `mirror`
 * (ClaudeAgent) lets the Agent SDK send the entries itself (its `sessionStore`) and only checks,
 * after each turn, that every batch landed. The store is the reference: a store step whose
 * offset in it is unknown (a file it did not write, a call that timed out and may have landed)
 * asks the store what it holds first, so entries without a uuid, which `append` cannot
 * deduplicate, are never sent twice.
 *
 * The store's history is the truth; a local session file is only a cache of it. Entries only a
 * machine holds that no successful turn produced (an attempt that failed, stalled, was killed or
 * interrupted: the CLI wrote its prompt, the store step never ran) are never stored and never
 * become the branch the CLI continues (it follows the last entry's `parentUuid` chain, so such an
 * entry left last would hide every turn stored after it). Two rules, both applied before a run:
 * a client cuts its file back to where its last successful turn (or restore) left it when a run
 * failed since; a client that did not write the file (a new process, a restarted runner) makes
 * it exactly the store's transcript whenever the store holds one.
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import type { ClaudeSnapshot } from "../../services/ClaudeCodeOptions.ts"
import {
  type ClaudeSessionStoreService,
  EmptyTranscript,
  SessionFileFailed,
  type SessionKey,
  SessionNotFound,
  SessionStoreError,
  StoreFailed,
  type StoreOperation,
  StoreUnavailable,
  type TranscriptEntry
} from "../../services/ClaudeSessionStore.ts"
import * as SessionFile from "./sessionFile.ts"

/** The default bound on one store call. */
export const DefaultStoreTimeout = Duration.seconds(10)

/** The default project key. */
export const DefaultProjectKey = "default"

/** What the conversation shell calls around each run. */
export interface Transcripts {
  /** Before a run that resumes `sessionId`. */
  readonly beforeRun: (sessionId: string) => Effect.Effect<void, SessionStoreError>
  /** After a successful run of `sessionId`: returns once its transcript is stored. */
  readonly afterRun: (sessionId: string) => Effect.Effect<void, SessionStoreError>
  /** The session's transcript, for a snapshot. */
  readonly load: (sessionId: string) => Effect.Effect<ReadonlyArray<TranscriptEntry>, SessionStoreError>
}

/** How a client stores its transcripts. */
export interface TranscriptSetup {
  readonly store: Option.Option<ClaudeSessionStoreService>
  readonly projectKey: string | undefined
  readonly storeTimeout: Duration.Input | undefined
  /** The runtime's config dir, read at each call (the environment of now). */
  readonly configDir: () => string
  readonly cwd: string | undefined
  readonly snapshot: ClaudeSnapshot | undefined
  /** `mirror`: the runtime stores entries itself; `flush` tells whether all of them landed. */
  readonly mirror?: { readonly flush: (sessionId: string) => Effect.Effect<void, SessionStoreError> } | undefined
}

/** One store call bounded by `storeTimeout`: a store that does not answer is a retryable error. */
export const boundedCall = (
  operation: StoreOperation,
  sessionId: string | undefined,
  timeout: Duration.Input | undefined
) =>
<A>(call: Effect.Effect<A, SessionStoreError>): Effect.Effect<A, SessionStoreError> => {
  const bound = timeout ?? DefaultStoreTimeout
  return Effect.timeoutOrElse(call, {
    duration: bound,
    orElse: () =>
      Effect.fail(
        new SessionStoreError({
          operation,
          ...(sessionId === undefined ? {} : { sessionId }),
          reason: new StoreUnavailable({
            message: `The session store did not answer ${operation} within ${
              Duration.format(Duration.fromInputUnsafe(bound))
            }; check the store's database, or raise the storeTimeout option`
          })
        })
      )
  })
}

/**
 * A store failure of any kind as the typed error naming the session: a defect (a store that
 * threw, a driver bug) becomes a `SessionStoreError` that keeps it as its `cause`, so a turn
 * never fails with a raw defect and its answer is kept. Interruption passes through.
 */
export const storeFailure =
  (operation: StoreOperation, sessionId: string) =>
  <A>(call: Effect.Effect<A, SessionStoreError>): Effect.Effect<A, SessionStoreError> =>
    Effect.catchCause(call, (cause) => {
      if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
      const typed = Cause.findErrorOption(cause)
      if (Option.isSome(typed)) {
        const error = typed.value
        if (error.sessionId !== undefined || sessionId === "") return Effect.fail(error)
        return Effect.fail(
          new SessionStoreError({
            operation: error.operation,
            sessionId,
            reason: error.reason,
            ...(error.cause === undefined ? {} : { cause: error.cause })
          })
        )
      }
      const defect = Cause.squash(cause)
      return Effect.fail(
        new SessionStoreError({
          operation,
          ...(sessionId === "" ? {} : { sessionId }),
          reason: new StoreFailed({
            message:
              `The session store died on ${operation} (${
                defect instanceof Error ? defect.message : String(defect)
              }) instead of answering or failing: a bug in the store or its database driver; the cause holds the defect. ` +
              "Fix the store; the turn may be retried once it answers"
          }),
          cause: defect
        })
      )
    })

const notFound = (sessionId: string, projectKey: string, where: string) =>
  new SessionStoreError({
    operation: "load",
    sessionId,
    reason: new SessionNotFound({
      message: `Session ${sessionId} is in neither ${where} nor the session store (project key ${
        JSON.stringify(projectKey)
      }); resume a session that exists there, check projectKey, or start a new conversation`
    })
  })

/** A load that found the session but no entry in it: nothing to resume from. */
const emptyLoad = (sessionId: string, projectKey: string, where: string) =>
  new SessionStoreError({
    operation: "load",
    sessionId,
    reason: new EmptyTranscript({
      message:
        `The session store returned no entries for session ${sessionId} (project key ${
          JSON.stringify(projectKey)
        }), and it is not in ${where}, so there is nothing to resume; check the store's data for this session ` +
        "(a store must answer None for a session it never held), or start a new conversation"
    })
  })

/** Whether two entries are the same JSON, whatever the order of their keys (a store may reorder them). */
const sameEntry = (a: TranscriptEntry, b: TranscriptEntry): boolean => canonical(a) === canonical(b)

const canonical = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`
  if (typeof value === "object" && value !== null) {
    const record = value as Readonly<Record<string, unknown>>
    return `{${
      Object.keys(record).filter((k) => record[k] !== undefined).sort().map((k) =>
        `${JSON.stringify(k)}:${canonical(record[k])}`
      ).join(",")
    }}`
  }
  return JSON.stringify(value) ?? "null"
}

/**
 * What of `entries` a store holding `held` lacks: after their longest common prefix (`prefix`
 * entries), the entries whose uuid it does not hold (and those without one).
 */
const notHeld = (held: ReadonlyArray<TranscriptEntry>, entries: ReadonlyArray<TranscriptEntry>) => {
  let prefix = 0
  while (prefix < entries.length && prefix < held.length && sameEntry(entries[prefix]!, held[prefix]!)) prefix++
  const uuids = new Set(held.flatMap((e) => (typeof e.uuid === "string" ? [e.uuid] : [])))
  return { prefix, extras: entries.slice(prefix).filter((e) => typeof e.uuid !== "string" || !uuids.has(e.uuid)) }
}

/**
 * The entries of `entries` a store holding `held` lacks, wherever they are in it: those whose
 * uuid it does not hold, and those without one that equal none of its own (for a batch that may
 * have landed whole or in part, as a call that timed out).
 */
export const notLanded = (held: ReadonlyArray<TranscriptEntry>, entries: ReadonlyArray<TranscriptEntry>) => {
  const uuids = new Set<string>()
  const plain = new Set<string>()
  for (const entry of held) {
    if (typeof entry.uuid === "string") uuids.add(entry.uuid)
    else plain.add(canonical(entry))
  }
  return entries.filter((e) => typeof e.uuid === "string" ? !uuids.has(e.uuid) : !plain.has(canonical(e)))
}

/** What both ways of storing share: the setup, the store's key and bound, the snapshot's state. */
interface StepContext {
  readonly setup: TranscriptSetup
  readonly projectKey: string
  readonly key: (sessionId: string) => SessionKey
  readonly call: (
    operation: StoreOperation,
    sessionId: string
  ) => <A>(effect: Effect.Effect<A, SessionStoreError>) => Effect.Effect<A, SessionStoreError>
  /** Whether an imported snapshot is still to be put in place; cleared by the first store step. */
  snapshotPending: boolean
}

/** The file's size in bytes and its inode; both 0 when it is gone. */
const fileStat = (file: string): { readonly size: number; readonly ino: number } => {
  try {
    const stat = fs.statSync(file)
    return { size: stat.size, ino: stat.ino }
  } catch {
    return { size: 0, ino: 0 }
  }
}

/** The session's file in the runtime's config dir: where it resumes it, or any project folder. */
const localFile = Effect.fnUntraced(function*(setup: TranscriptSetup, sessionId: string) {
  const here = SessionFile.sessionPath(setup.configDir(), setup.cwd, sessionId)
  if (fs.existsSync(here)) return Option.some(here)
  return yield* SessionFile.findSessionFile(setup.configDir(), sessionId)
})

/**
 * `file` mode (ClaudeLocal): the CLI's session file is the source of each turn's new entries; the
 * store gets them after each successful turn and gives the file back before a resume that would
 * not find it or that would continue something else than what the store holds.
 */
const makeFileStep = (ctx: StepContext) => {
  const { call, key, projectKey, setup } = ctx
  // The session file's entries known to be in the store, by session: later turns send the rest.
  const stored = new Map<string, number>()
  // Sessions whose offset in the store is unknown (a snapshot's file, a call that timed out): the
  // next store step asks the store what it holds.
  const unsure = new Set<string>()
  // Where the complete lines of each session's file ended at its last store step.
  const cursors = new Map<string, { readonly file: string; readonly end: number; readonly last: Uint8Array }>()
  // How many bytes of each session's file hold only entries of successful turns or of a restore:
  // what a failed run appended after them is cut before the next run.
  // The inode tells a file the CLI appended to (the same one) from one rewritten by another writer.
  const settled = new Map<string, { readonly file: string; readonly size: number; readonly ino: number }>()
  // Sessions with a run started (restored for) and not stored since: when the next run comes
  // first, that run failed.
  const attempts = new Set<string>()

  const settle = (sessionId: string, file: string, size?: number) =>
    Effect.sync(() => {
      const now = fileStat(file)
      settled.set(sessionId, { file, size: size ?? now.size, ino: now.ino })
    })

  /**
   * Makes the session file the runtime reads before a resume: from the snapshot, another project
   * folder of the config dir, or the store; with a store, never with entries no successful turn
   * produced (see the module's description).
   */
  const restoreFile = Effect.fnUntraced(
    function*(sessionId: string) {
      if (Option.isNone(setup.store) && !ctx.snapshotPending) return
      const here = SessionFile.sessionPath(setup.configDir(), setup.cwd, sessionId)
      const present = fs.existsSync(here)
      if (present && Option.isSome(setup.store) && attempts.has(sessionId) && !(yield* rewind(here, sessionId))) {
        // Rewritten by another writer since: this client no longer knows the file.
        stored.delete(sessionId)
      }
      if (present && stored.has(sessionId)) return
      if (!present) {
        const snapshot = setup.snapshot
        if (snapshot !== undefined && snapshot.sessionId === sessionId && ctx.snapshotPending) {
          // Perhaps not in the store yet: the first store step sends what it lacks.
          yield* SessionFile.writeSessionFile(here, sessionId, snapshot.transcript)
          unsure.add(sessionId)
          return yield* settle(sessionId, here)
        }
        const elsewhere = yield* SessionFile.findSessionFile(setup.configDir(), sessionId)
        if (Option.isSome(elsewhere)) {
          yield* SessionFile.writeSessionFile(
            here,
            sessionId,
            yield* SessionFile.readSessionFile(elsewhere.value, sessionId)
          )
        } else {
          if (Option.isNone(setup.store)) return
          const entries = yield* call("load", sessionId)(setup.store.value.load(key(sessionId)))
          if (Option.isNone(entries)) return yield* notFound(sessionId, projectKey, setup.configDir())
          // An empty transcript would only make the CLI fail with "No conversation found".
          if (entries.value.length === 0) return yield* emptyLoad(sessionId, projectKey, setup.configDir())
          yield* SessionFile.writeSessionFile(here, sessionId, entries.value)
          stored.set(sessionId, entries.value.length)
          cursors.delete(sessionId)
          return yield* settle(sessionId, here)
        }
      }
      unsure.add(sessionId)
      if (Option.isSome(setup.store)) yield* reconcile(here, sessionId, setup.store.value)
    },
    // A run starts now: until its store step, what the CLI appends is not known to be a turn.
    (effect, sessionId) => Effect.tap(effect, () => Effect.sync(() => attempts.add(sessionId)))
  )

  /**
   * Cuts what a failed run appended to the file (its prompt, a partial answer): back to the bytes
   * this client's last successful turn or restore left, so the CLI continues the last turn the
   * store accepted, and the next store step never sees those entries. The CLI of that run is gone
   * (a failed turn stops a kept-alive one), so nothing appends meanwhile. `false` when the file
   * is not the one this client left (another writer replaced it): the caller treats it as unknown.
   */
  const rewind = Effect.fnUntraced(function*(here: string, sessionId: string) {
    const mark = settled.get(sessionId)
    if (mark === undefined || mark.file !== here) return true
    const { ino, size } = fileStat(here)
    if (ino !== mark.ino || size < mark.size) return false
    if (size === mark.size) return true
    yield* Effect.try({
      try: () => fs.truncateSync(here, mark.size),
      catch: (cause) =>
        new SessionStoreError({
          operation: "load",
          sessionId,
          reason: new SessionFileFailed({
            message: `Could not cut a failed run's entries from the session file ${here}: ${
              String(cause)
            }; check that the config dir is writable`
          }),
          cause
        })
    })
    yield* Effect.logInfo("session file: dropped what a failed run appended").pipe(
      Effect.annotateLogs({ sessionId, bytes: size - mark.size })
    )
    return true
  })

  /**
   * A file this client did not write may hold entries no successful turn produced (a run of an
   * earlier process that failed or was killed) and lag behind what another machine stored since:
   * when the store holds the session, the file becomes exactly its transcript. A store that holds
   * nothing of it leaves the file as it is (the next store step sends it).
   */
  const reconcile = Effect.fnUntraced(function*(here: string, sessionId: string, store: ClaudeSessionStoreService) {
    const held = yield* call("load", sessionId)(store.load(key(sessionId)))
    const known = Option.getOrElse(held, (): ReadonlyArray<TranscriptEntry> => [])
    if (known.length > 0) {
      const entries = yield* SessionFile.readSessionFile(here, sessionId)
      const same = entries.length === known.length && entries.every((e, i) => sameEntry(e, known[i]!))
      if (!same) {
        const { extras } = notHeld(known, entries)
        yield* SessionFile.writeSessionFile(here, sessionId, known)
        if (extras.length > 0) {
          yield* Effect.logInfo("session file: entries the store never accepted dropped").pipe(
            Effect.annotateLogs({ sessionId, dropped: extras.length })
          )
        }
      }
    }
    // The file now starts with exactly what the store holds: the next store step sends the rest.
    stored.set(sessionId, known.length)
    cursors.delete(sessionId)
    unsure.delete(sessionId)
    yield* settle(sessionId, here)
  })

  /** The file's entries the store lacks. */
  const unstored = (sessionId: string, store: ClaudeSessionStoreService, entries: ReadonlyArray<TranscriptEntry>) =>
    Effect.map(
      call("load", sessionId)(store.load(key(sessionId))),
      (held) => Option.isNone(held) ? entries : notHeld(held.value, entries).extras
    )

  /** Sends the session file's entries that are not in the store yet. */
  const storeFile = Effect.fnUntraced(function*(sessionId: string, store: ClaudeSessionStoreService) {
    const file = yield* localFile(setup, sessionId)
    if (Option.isNone(file)) {
      return yield* new SessionStoreError({
        operation: "append",
        sessionId,
        reason: new SessionFileFailed({
          message:
            `The claude CLI left no session file for ${sessionId} under ${setup.configDir()}, so the turn could not be stored; check CLAUDE_CONFIG_DIR and that sessions are persisted`
        })
      })
    }
    // The run succeeded: what its CLI wrote is a turn, to be stored even if this call fails.
    attempts.delete(sessionId)
    const { count, end, fresh, last } = yield* readNew(sessionId, file.value, store)
    yield* settle(sessionId, file.value, end)
    if (fresh.length > 0) {
      yield* call("append", sessionId)(store.append(key(sessionId), fresh)).pipe(
        // A call that timed out may still have landed: ask the store next time.
        Effect.tapError(() => Effect.sync(() => unsure.add(sessionId)))
      )
    }
    stored.set(sessionId, count)
    cursors.set(sessionId, { file: file.value, end, last })
    unsure.delete(sessionId)
    ctx.snapshotPending = false
  })

  /**
   * The entries to store, the file's entry count and where its complete lines end. After the
   * first store step of a session only the bytes the CLI appended since are read (a turn's cost
   * does not grow with the conversation); a file rewritten since (it no longer holds the last line
   * read where it was) is read whole and compared with the store.
   */
  const readNew = Effect.fnUntraced(function*(sessionId: string, file: string, store: ClaudeSessionStoreService) {
    const cursor = cursors.get(sessionId)
    const known = stored.get(sessionId)
    if (cursor !== undefined && cursor.file === file && known !== undefined && !unsure.has(sessionId)) {
      const tail = yield* SessionFile.readSessionFileFrom(file, sessionId, cursor.end, cursor.last)
      if (tail !== undefined) {
        return { fresh: tail.entries, count: known + tail.entries.length, end: tail.end, last: tail.last }
      }
    }
    const whole = (yield* SessionFile.readSessionFileFrom(file, sessionId, 0)) ??
      { entries: [], end: 0, last: new Uint8Array() }
    const fresh = unsure.has(sessionId) || cursor !== undefined
      ? yield* unstored(sessionId, store, whole.entries)
      : whole.entries.slice(known ?? 0)
    return { fresh, count: whole.entries.length, end: whole.end, last: whole.last }
  })

  return { restoreFile, storeFile }
}

/** `mirror` mode (ClaudeAgent): a snapshot imported with a store goes to the store before the runtime loads it. */
const restoreMirror = Effect.fnUntraced(
  function*(ctx: StepContext, sessionId: string, store: ClaudeSessionStoreService) {
    const snapshot = ctx.setup.snapshot
    if (snapshot === undefined || snapshot.sessionId !== sessionId || !ctx.snapshotPending) return
    yield* ctx.call("append", sessionId)(store.append(ctx.key(sessionId), snapshot.transcript))
    ctx.snapshotPending = false
  }
)

/** Builds the store step of a client (see the module's description). */
export const makeTranscripts = (setup: TranscriptSetup): Transcripts => {
  const projectKey = setup.projectKey ?? DefaultProjectKey
  const ctx: StepContext = {
    setup,
    projectKey,
    key: (sessionId) => ({ projectKey, sessionId }),
    call: (operation, sessionId) => (effect) =>
      storeFailure(operation, sessionId)(boundedCall(operation, sessionId, setup.storeTimeout)(effect)),
    snapshotPending: setup.snapshot !== undefined
  }
  const { call, key } = ctx
  const file = makeFileStep(ctx)

  const beforeRun = (sessionId: string) =>
    Effect.andThen(
      SessionFile.requireSessionId("load", sessionId),
      Option.isSome(setup.store) && setup.mirror !== undefined
        ? restoreMirror(ctx, sessionId, setup.store.value)
        : file.restoreFile(sessionId)
    )

  const afterRun = (sessionId: string) => {
    if (Option.isNone(setup.store)) return Effect.void
    return Effect.andThen(
      SessionFile.requireSessionId("append", sessionId),
      setup.mirror !== undefined ? setup.mirror.flush(sessionId) : file.storeFile(sessionId, setup.store.value)
    )
  }

  const load = Effect.fnUntraced(function*(sessionId: string) {
    yield* SessionFile.requireSessionId("load", sessionId)
    if (Option.isSome(setup.store)) {
      const entries = yield* call("load", sessionId)(setup.store.value.load(key(sessionId)))
      if (Option.isSome(entries)) return entries.value
    }
    const file = yield* localFile(setup, sessionId)
    if (Option.isNone(file)) return yield* notFound(sessionId, projectKey, setup.configDir())
    return yield* SessionFile.readSessionFile(file.value, sessionId)
  })

  return { beforeRun, afterRun, load }
}
