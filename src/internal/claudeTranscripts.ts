/**
 * The store step of a Claude Code run's lifecycle (prepare → start → turn → store → close), the
 * one place where a `ClaudeSessionStore` meets a conversation. Before a run that resumes a
 * session the transcript is made available where the runtime reads it; after a successful run
 * what is new is stored, bounded by `storeTimeout`; a snapshot reads it back.
 *
 * Two ways to store: `file` (ClaudeLocal) reads the CLI's session file after each turn and
 * appends the entries not stored yet, and before a resume writes the file from the store when it
 * is missing or behind the store (the session went on on another machine); `mirror`
 * (ClaudeAgent) lets the Agent SDK send the entries itself (its `sessionStore`) and only checks,
 * after each turn, that every batch landed. The store is the reference: a store step whose
 * offset in it is unknown (a file it did not write, a call that timed out and may have landed)
 * asks the store what it holds first, so entries without a uuid, which `append` cannot
 * deduplicate, are never sent twice.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import type { ClaudeSnapshot } from "../services/ClaudeCodeOptions.ts"
import {
  type ClaudeSessionStoreService,
  type SessionKey,
  SessionStoreError,
  type StoreOperation,
  type TranscriptEntry
} from "../services/ClaudeSessionStore.ts"
import * as SessionFile from "./claudeSessionFile.ts"

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
          message: `The session store did not answer ${operation} within ${
            Duration.format(Duration.fromInputUnsafe(bound))
          }; check the store's database, or raise the storeTimeout option`,
          retryable: true
        })
      )
  })
}

const notFound = (sessionId: string, projectKey: string, where: string) =>
  new SessionStoreError({
    operation: "load",
    sessionId,
    message: `Session ${sessionId} is in neither ${where} nor the session store (project key ${
      JSON.stringify(projectKey)
    }); resume a session that exists there, check projectKey, or start a new conversation`,
    retryable: false
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

/** The session's file in the runtime's config dir: where it resumes it, or any project folder. */
const localFile = (setup: TranscriptSetup, sessionId: string) =>
  Effect.gen(function*() {
    const here = SessionFile.sessionPath(setup.configDir(), setup.cwd, sessionId)
    if (fs.existsSync(here)) return Option.some(here)
    return yield* SessionFile.findSessionFile(setup.configDir(), sessionId)
  })

/**
 * `file` mode (ClaudeLocal): the CLI's session file is the source; the store gets its new lines
 * after each turn and gives the file back before a resume that would not find it.
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
  /**
   * Makes the session file the runtime reads before a resume: from the snapshot, another project
   * folder of the config dir, or the store. A file this client did not write may lag behind what
   * another machine stored since: with a store, the store's entries win (the file's own extras,
   * never stored, are kept after them and sent by the next store step).
   */
  const restoreFile = (sessionId: string) =>
    Effect.gen(function*() {
      if (Option.isNone(setup.store) && !ctx.snapshotPending) return
      const here = SessionFile.sessionPath(setup.configDir(), setup.cwd, sessionId)
      const present = fs.existsSync(here)
      if (present && stored.has(sessionId)) return
      if (!present) {
        const snapshot = setup.snapshot
        if (snapshot !== undefined && snapshot.sessionId === sessionId && ctx.snapshotPending) {
          // Perhaps not in the store yet: the first store step sends what it lacks.
          yield* SessionFile.writeSessionFile(here, sessionId, snapshot.transcript)
          unsure.add(sessionId)
          return
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
          yield* SessionFile.writeSessionFile(here, sessionId, entries.value)
          stored.set(sessionId, entries.value.length)
          cursors.delete(sessionId)
          return
        }
      }
      unsure.add(sessionId)
      if (Option.isSome(setup.store)) yield* catchUp(here, sessionId, setup.store.value)
    })

  /** Rewrites a local session file the store is ahead of: the store's entries, then the file's extras. */
  const catchUp = (here: string, sessionId: string, store: ClaudeSessionStoreService) =>
    Effect.gen(function*() {
      const held = yield* call("load", sessionId)(store.load(key(sessionId)))
      const known = Option.getOrElse(held, (): ReadonlyArray<TranscriptEntry> => [])
      const entries = yield* SessionFile.readSessionFile(here, sessionId)
      const { extras, prefix } = notHeld(known, entries)
      if (prefix < known.length) yield* SessionFile.writeSessionFile(here, sessionId, [...known, ...extras])
      // The file now starts with exactly what the store holds: the next store step sends the rest.
      stored.set(sessionId, known.length)
      cursors.delete(sessionId)
      unsure.delete(sessionId)
    })

  /** The file's entries the store lacks. */
  const unstored = (sessionId: string, store: ClaudeSessionStoreService, entries: ReadonlyArray<TranscriptEntry>) =>
    Effect.map(
      call("load", sessionId)(store.load(key(sessionId))),
      (held) => Option.isNone(held) ? entries : notHeld(held.value, entries).extras
    )

  /** Sends the session file's entries that are not in the store yet. */
  const storeFile = (sessionId: string, store: ClaudeSessionStoreService) =>
    Effect.gen(function*() {
      const file = yield* localFile(setup, sessionId)
      if (Option.isNone(file)) {
        return yield* new SessionStoreError({
          operation: "append",
          sessionId,
          message:
            `The claude CLI left no session file for ${sessionId} under ${setup.configDir()}, so the turn could not be stored; check CLAUDE_CONFIG_DIR and that sessions are persisted`,
          retryable: false
        })
      }
      const { count, end, fresh, last } = yield* readNew(sessionId, file.value, store)
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
  const readNew = (sessionId: string, file: string, store: ClaudeSessionStoreService) =>
    Effect.gen(function*() {
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
const restoreMirror = (ctx: StepContext, sessionId: string, store: ClaudeSessionStoreService) =>
  Effect.gen(function*() {
    const snapshot = ctx.setup.snapshot
    if (snapshot === undefined || snapshot.sessionId !== sessionId || !ctx.snapshotPending) return
    yield* ctx.call("append", sessionId)(store.append(ctx.key(sessionId), snapshot.transcript))
    ctx.snapshotPending = false
  })

/** Builds the store step of a client (see the module's description). */
export const makeTranscripts = (setup: TranscriptSetup): Transcripts => {
  const projectKey = setup.projectKey ?? DefaultProjectKey
  const ctx: StepContext = {
    setup,
    projectKey,
    key: (sessionId) => ({ projectKey, sessionId }),
    call: (operation, sessionId) => boundedCall(operation, sessionId, setup.storeTimeout),
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

  const load = (sessionId: string) =>
    Effect.gen(function*() {
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
