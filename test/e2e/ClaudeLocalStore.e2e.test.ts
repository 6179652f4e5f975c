/**
 * A conversation that moves between machines, on the real `claude` binary: client A (its own
 * HOME, config dir and cwd) runs turn 1; client B, under another, empty HOME/config dir and
 * another cwd, resumes A's session from a shared `ClaudeSessionStore` (or from A's snapshot) and
 * answers turn 2 with turn 1 in its history. It also pins the CLI's undocumented session file
 * layout (`projects/<encoded cwd>/<id>.jsonl`): a CLI that moves it fails here.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { existsSync, readdirSync } from "node:fs"
import { join } from "node:path"
import * as SessionFile from "../../src/internal/claude/sessionFile.ts"
import * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import type { ClaudeSnapshot } from "../../src/services/ClaudeCodeOptions.ts"
import {
  ClaudeSessionStore,
  type ClaudeSessionStoreService,
  makeMemory,
  type TranscriptEntry
} from "../../src/services/ClaudeSessionStore.ts"
import { claudeVersions, type Sandbox, sandbox } from "../support/claudeCli.ts"
import { localServices, requestTimeout, sessionOf } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

const recall = "What was the marker I gave you?"

const lastSaid = "What did you answer last time?"

/**
 * Turn 1 is acknowledged; turn 2 answers whether turn 1's marker is in the history it was sent;
 * turn 3 whether turn 2's answer is.
 */
const model = (marker: string) => (req: Fake.FakeRequest): Fake.FakeReply => {
  const history = JSON.stringify(req.body.messages ?? [])
  if (Fake.lastUserLine(req).includes(lastSaid)) {
    return { text: history.includes(`It was ${marker}.`) ? "I named the marker." : "I do not know." }
  }
  if (!Fake.lastUserLine(req).includes(recall)) return { text: "Noted." }
  return { text: JSON.stringify(req.body.messages ?? []).includes(marker) ? `It was ${marker}.` : "I have no marker." }
}

/** How many times `marker` occurs in the messages of the request that answered turn 2. */
const markerCount = (api: Fake.FakeMessagesApi, marker: string) => {
  const turn2 = api.messageRequests().filter((r) => r.body["max_tokens"] !== 1 && Fake.lastUserLine(r).includes(recall))
  expect(turn2.length).toBe(1)
  return JSON.stringify(turn2[0]!.body.messages ?? []).split(marker).length - 1
}

/** A client in `box`, with `store` when given (one service shared by every client of a test). */
const clientIn = (
  box: Sandbox,
  binary: string,
  options: ClaudeLocal.Options,
  store: ClaudeSessionStoreService | undefined
) => {
  const layer = ClaudeLocal.layer({ binary, cwd: box.cwd, env: box.env, requestTimeout, ...options }).pipe(
    Layer.provide(localServices(box)),
    Layer.orDie
  )
  return sessionOf(store === undefined ? layer : layer.pipe(Layer.provide(Layer.succeed(ClaudeSessionStore, store))))
}

/** The sandbox's config dir. */
const configOf = (box: Sandbox): string => join(box.dir, "config")

/** The CLI's own file of `sessionId` in `box`, where this library expects it (the layout pinned here). */
const localEntries = (box: Sandbox, sessionId: string) =>
  Effect.gen(function*() {
    const file = SessionFile.sessionPath(configOf(box), box.cwd, sessionId)
    expect(existsSync(file), `the CLI's session file at ${file}`).toBe(true)
    expect(SessionFile.projectDirName(box.cwd)).toMatch(/^-tmp-ecb-claude-[A-Za-z0-9]+-work$/)
    return yield* SessionFile.readSessionFile(file, sessionId)
  })

const uuids = (entries: ReadonlyArray<TranscriptEntry>) =>
  entries.flatMap((e) => (e.uuid === undefined ? [] : [e.uuid]))

const storedEntries = (store: ClaudeSessionStoreService, sessionId: string) =>
  Effect.map(
    store.load({ projectKey: "default", sessionId }),
    Option.getOrElse((): ReadonlyArray<TranscriptEntry> => [])
  )

/**
 * What the store holds equals the local file, uuid for uuid. A kept-alive CLI may add an entry
 * after it printed its result: those are stored with the next turn, so the store may lag by them.
 */
const expectStoreMatches = (
  stored: ReadonlyArray<TranscriptEntry>,
  local: ReadonlyArray<TranscriptEntry>,
  keepAlive: boolean
) => {
  const held = uuids(stored)
  expect(new Set(held).size).toBe(held.length)
  expect(held.length).toBeGreaterThan(0)
  expect(uuids(local).slice(0, held.length)).toEqual(held)
  // A fresh CLI has exited when its turn is stored: the store holds its file exactly.
  if (!keepAlive) expect(stored).toEqual(local)
}

describeWithClaude("ClaudeLocal with a ClaudeSessionStore, across machines (real claude)", () => {
  describe.each(claudeVersions)("claude $version", ({ binary }) => {
    describe.each([false, true])("keepAlive %s", (keepAlive) => {
      it.live(
        "B, in an empty HOME and another cwd, resumes A's session from the shared store; then A catches up from it",
        () =>
          Effect.gen(function*() {
            const marker = `MARKER-${Math.random().toString(36).slice(2, 10)}`
            const api = yield* Fake.make(model(marker))
            const [boxA, boxB] = [yield* sandbox(api.url), yield* sandbox(api.url)]
            const store = yield* makeMemory

            const a = yield* clientIn(boxA, binary, { keepAlive }, store)
            expect(yield* a.chat.chat(`Remember this marker: ${marker}`)).toBe("Noted.")
            const id = Option.getOrThrow(yield* a.session.sessionId)
            const afterTurn1 = yield* storedEntries(store, id)
            expectStoreMatches(afterTurn1, yield* localEntries(boxA, id), keepAlive)
            expect(JSON.stringify(afterTurn1)).toContain(marker)

            expect(readdirSync(configOf(boxB))).toEqual([])
            const b = yield* clientIn(boxB, binary, { keepAlive, resume: id }, store)
            expect(yield* b.chat.chat(recall)).toBe(`It was ${marker}.`)
            expect(markerCount(api, marker)).toBe(1)
            const idB = Option.getOrThrow(yield* b.session.sessionId)
            expect(idB).toBe(id)
            const afterTurn2 = yield* storedEntries(store, id)
            expect(afterTurn2.length).toBeGreaterThan(afterTurn1.length)
            expectStoreMatches(afterTurn2, yield* localEntries(boxB, id), keepAlive)
            // B's copy starts with what A stored: the store gave it the whole of turn 1.
            expect(uuids(afterTurn2).slice(0, uuids(afterTurn1).length)).toEqual(uuids(afterTurn1))

            // Back on A (a new process), whose own file stops at turn 1: the store's turn 2 is in the history.
            const again = yield* clientIn(boxA, binary, { keepAlive, resume: id }, store)
            expect(yield* again.chat.chat(lastSaid)).toBe("I named the marker.")
            expect(Option.getOrThrow(yield* again.session.sessionId)).toBe(id)
            const afterTurn3 = yield* storedEntries(store, id)
            expect(afterTurn3.length).toBeGreaterThan(afterTurn2.length)
            expectStoreMatches(afterTurn3, yield* localEntries(boxA, id), keepAlive)
          }),
        { timeout: 180_000 }
      )

      it.live("B, in an empty HOME and another cwd, continues A's snapshot (no store)", () =>
        Effect.gen(function*() {
          const marker = `MARKER-${Math.random().toString(36).slice(2, 10)}`
          const api = yield* Fake.make(model(marker))
          const [boxA, boxB] = [yield* sandbox(api.url), yield* sandbox(api.url)]

          const a = yield* clientIn(boxA, binary, { keepAlive }, undefined)
          expect(yield* a.chat.chat(`Remember this marker: ${marker}`)).toBe("Noted.")
          const snapshot: ClaudeSnapshot = yield* a.session.snapshot
          const id = Option.getOrThrow(yield* a.session.sessionId)
          expect(snapshot.sessionId).toBe(id)
          expect(uuids(snapshot.transcript)).toEqual(uuids(yield* localEntries(boxA, id)))
          expect((yield* a.chat.usage).outputTokens).toBeGreaterThan(0)
          expect(snapshot.usage).toEqual(yield* a.chat.usage)

          const b = yield* clientIn(boxB, binary, { keepAlive, snapshot }, undefined)
          expect(yield* b.chat.chat(recall)).toBe(`It was ${marker}.`)
          expect(markerCount(api, marker)).toBe(1)
          expect(Option.getOrThrow(yield* b.session.sessionId)).toBe(id)
          const local = yield* localEntries(boxB, id)
          expect(uuids(local).slice(0, uuids(snapshot.transcript).length)).toEqual(uuids(snapshot.transcript))
          expect(local.length).toBeGreaterThan(snapshot.transcript.length)
          // The imported usage is carried on: B's total counts A's turn too.
          expect((yield* b.chat.usage).outputTokens).toBeGreaterThan(snapshot.usage.outputTokens)
          expect(readdirSync(join(configOf(boxB), "projects"))).toEqual([
            SessionFile.projectDirName(boxB.cwd)
          ])
        }), { timeout: 180_000 })
    })
  })
})
