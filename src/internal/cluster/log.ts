/**
 * What a cluster conversation records about itself, next to its transcript in the session store:
 * which runner hosted it (to count failovers), which turns started and finished (to count
 * redelivered turns, and to know the CLI session and usage a new runner continues from), and the
 * results of idempotent tools. One transcript per conversation under `<projectKey>:conversations`,
 * its entries keyed by `uuid` so a record written twice is stored once.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Usage } from "../../services/ChatClient.ts"
import type {
  ClaudeSessionStoreService,
  SessionKey,
  SessionStoreError,
  TranscriptEntry
} from "../../services/ClaudeSessionStore.ts"

const Prefix = "effect-chat-bridge/"
const toolResultsSubpath = "effect-chat-bridge/tool-results"

/** Where a conversation run by `ClaudeConversationRunner` keeps its records. */
export const logKey = (projectKey: string, conversationId: string, subpath?: string): SessionKey => ({
  projectKey: `${projectKey}:conversations`,
  sessionId: conversationId,
  ...(subpath === undefined ? {} : { subpath })
})

const encodeUsage = Schema.encodeSync(Schema.toCodecJson(Usage))
const decodeUsage = Schema.decodeUnknownOption(Schema.toCodecJson(Usage))

/** What a runner continues from when it activates a conversation. */
export interface LogState {
  /** The CLI session of the last finished turn. */
  readonly sessionId: string | undefined
  /** The conversation's usage after its last finished turn. */
  readonly usage: Usage
  /** The previous activation did not end cleanly (its runner died or lost the shard). */
  readonly failedOver: boolean
  /** Turn ids that started and never finished. */
  readonly unfinished: ReadonlySet<string>
  /** The answers of finished turns, by turn id (as stored: JSON). */
  readonly replies: ReadonlyMap<string, unknown>
}

/**
 * Reads a conversation's records into the state a runner continues from. `self` is the reading
 * activation: its own unended record (a setup that failed and is tried again) is no failover.
 */
export const stateOf = (entries: ReadonlyArray<TranscriptEntry>, self?: string): LogState => {
  let sessionId: string | undefined
  let usage = Usage.empty
  let lastActivation: string | undefined
  const ended = new Set<string>()
  const started = new Set<string>()
  const finished = new Set<string>()
  const replies = new Map<string, unknown>()
  for (const entry of entries) {
    switch (entry.type) {
      case `${Prefix}activated`:
        lastActivation = String(entry["activation"])
        break
      case `${Prefix}passivated`:
        ended.add(String(entry["activation"]))
        break
      case `${Prefix}turn-started`:
        started.add(String(entry["turnId"]))
        break
      case `${Prefix}turn-done`: {
        finished.add(String(entry["turnId"]))
        if ("reply" in entry) replies.set(String(entry["turnId"]), entry["reply"])
        if (typeof entry["sessionId"] === "string") sessionId = entry["sessionId"]
        usage = Option.getOrElse(decodeUsage(entry["usage"]), () => usage)
        break
      }
    }
  }
  return {
    sessionId,
    usage,
    failedOver: lastActivation !== undefined && lastActivation !== self && !ended.has(lastActivation),
    unfinished: new Set([...started].filter((id) => !finished.has(id))),
    replies
  }
}

/** The records of one conversation, written by the runner hosting it. */
export const make = (store: ClaudeSessionStoreService, projectKey: string, conversationId: string, runner: string) => {
  const key = logKey(projectKey, conversationId)
  const activation = crypto.randomUUID()
  const append = (entry: TranscriptEntry) => store.append(key, [{ timestamp: new Date().toISOString(), ...entry }])
  return {
    load: Effect.map(store.load(key), (entries) => stateOf(Option.getOrElse(entries, () => []), activation)),
    activated: append({ type: `${Prefix}activated`, uuid: `activated:${activation}`, activation, runner }),
    passivated: append({ type: `${Prefix}passivated`, uuid: `passivated:${activation}`, activation, runner }),
    turnStarted: (turnId: string) =>
      append({ type: `${Prefix}turn-started`, uuid: `started:${turnId}:${activation}`, turnId, runner }),
    turnDone: (
      turnId: string,
      sessionId: string | undefined,
      usage: Usage,
      reply: unknown
    ): Effect.Effect<void, SessionStoreError> =>
      append({
        type: `${Prefix}turn-done`,
        uuid: `done:${turnId}`,
        turnId,
        runner,
        ...(sessionId === undefined ? {} : { sessionId }),
        usage: encodeUsage(usage),
        reply
      })
  }
}

/** A conversation's log, as {@link make} builds it. */
export type ConversationLog = ReturnType<typeof make>

/**
 * Stored results of idempotent tools, keyed by the call's key. Built once per activation: the
 * stored results are read on the first lookup only and kept with what this activation records,
 * since the runner hosting a conversation is the only one writing them (a lookup per call used to
 * read every result the conversation ever stored). A failed read is not kept: the next lookup
 * reads again.
 */
export const toolResults = (store: ClaudeSessionStoreService, projectKey: string, conversationId: string) => {
  const key = logKey(projectKey, conversationId, toolResultsSubpath)
  let stored: ReadonlyMap<string | undefined, unknown> | undefined
  const recorded = new Map<string, unknown>()
  const readStored = Effect.suspend(() =>
    stored !== undefined ? Effect.succeed(stored) : Effect.map(store.load(key), (entries) => {
      stored = new Map(Option.getOrElse(entries, () => []).map((entry) => [entry.uuid, entry["result"]]))
      return stored
    })
  )
  return {
    find: (callKey: string): Effect.Effect<Option.Option<unknown>, SessionStoreError> =>
      recorded.has(callKey)
        ? Effect.succeed(Option.some(recorded.get(callKey)))
        : Effect.map(readStored, (results) => results.has(callKey) ? Option.some(results.get(callKey)) : Option.none()),
    record: (callKey: string, tool: string, result: unknown): Effect.Effect<void, SessionStoreError> =>
      Effect.tap(
        store.append(key, [{
          type: `${Prefix}tool-result`,
          uuid: callKey,
          tool,
          timestamp: new Date().toISOString(),
          result
        }]),
        // The first stored result under a key wins, as in the store (it skips a uuid it holds).
        () =>
          Effect.sync(() => {
            if (!recorded.has(callKey) && stored?.has(callKey) !== true) recorded.set(callKey, result)
          })
      )
  }
}
