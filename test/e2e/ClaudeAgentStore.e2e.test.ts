import { expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { sessionPath } from "../../src/internal/claude/sessionFile.ts"
import * as ClaudeAgent from "../../src/layers/ClaudeAgent.ts"
import type { ClaudeSnapshot } from "../../src/services/ClaudeCodeOptions.ts"
import {
  ClaudeSessionStore,
  type ClaudeSessionStoreService,
  makeMemory,
  type TranscriptEntry
} from "../../src/services/ClaudeSessionStore.ts"
import { claudeProcessesIn, type Sandbox, sandbox } from "../support/claudeCli.ts"
import { type ClaudeClient, requestTimeout, sessionOf } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

/** A memory store that records when each append came and how many entries it carried. */
const recordingStore = Effect.gen(function*() {
  const inner = yield* makeMemory
  const appends: Array<{ readonly at: number; readonly sessionId: string; readonly count: number }> = []
  const store: ClaudeSessionStoreService = {
    ...inner,
    append: (key, entries) =>
      Effect.tap(inner.append(key, entries), () =>
        Effect.sync(() => {
          appends.push({ at: Date.now(), sessionId: key.sessionId, count: entries.length })
        }))
  }
  const entries = (sessionId: string) =>
    Effect.map(
      inner.load({ projectKey: "default", sessionId }),
      Option.getOrElse((): ReadonlyArray<TranscriptEntry> => [])
    )
  return { store, appends, entries }
})

/** A ClaudeAgent client in `box`, on `store` when one is given, open until `scope` closes. */
const client = (
  box: Sandbox,
  scope: Scope.Scope,
  store: ClaudeSessionStoreService | undefined,
  options: ClaudeAgent.Options = {}
): Effect.Effect<ClaudeClient> => {
  const layer = Layer.orDie(ClaudeAgent.layer({ cwd: box.cwd, env: box.env, requestTimeout, ...options }))
  return sessionOf(store === undefined ? layer : layer.pipe(Layer.provide(Layer.succeed(ClaudeSessionStore, store))))
    .pipe(Scope.provide(scope))
}

/** How many times `text` occurs in `haystack`. */
const occurrences = (haystack: string, text: string) => haystack.split(text).length - 1

/** The model request of the turn whose prompt is `prompt` (the last one carrying it). */
const requestOf = (api: Fake.FakeMessagesApi, prompt: string) =>
  [...api.messageRequests()].reverse().find((r) => Fake.lastUserLine(r) === prompt)!

const localEntries = (box: Sandbox, sessionId: string): Array<TranscriptEntry> => {
  const file = sessionPath(box.env["CLAUDE_CONFIG_DIR"]!, box.cwd, sessionId)
  return readFileSync(file, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as TranscriptEntry)
}

/**
 * The SDK materializes a loaded transcript in a folder of this process's TMPDIR: the test points
 * it into a sandbox, to see it gone once the client closed.
 */
const parentTmpdir = (dir: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const before = process.env["TMPDIR"]
      process.env["TMPDIR"] = dir
      return before
    }),
    (before) =>
      Effect.sync(() => {
        if (before === undefined) delete process.env["TMPDIR"]
        else process.env["TMPDIR"] = before
      })
  )

/** The answer to `prompt`: it does not repeat the prompt, so a marker in it occurs once per copy of the history. */
const answer = (prompt: string) => `Noted: ${prompt.length} characters`
/** Sessions the SDK materialized in a sandbox's TMPDIR (the CLI's own folders there are not ours). */
const materialized = (box: Sandbox) =>
  readdirSync(box.env["TMPDIR"]!).filter((name) => name.startsWith("claude-resume-"))

const echo = (req: Fake.FakeRequest) => ({ text: answer(Fake.lastUserLine(req)) })

/** The CLI keeps its API request records local: it never mirrors them. */
const mirrored = (entry: TranscriptEntry) => !entry.type.startsWith("api-request")

/** Turn 1 in `first` says a unique marker; returns the session id and the marker. */
const firstTurn = (box: Sandbox, store: ClaudeSessionStoreService | undefined, options: ClaudeAgent.Options = {}) =>
  Effect.gen(function*() {
    const marker = `marker-${Math.random().toString(36).slice(2)}`
    const scope = yield* Scope.make()
    const a = yield* client(box, scope, store, options)
    expect(yield* a.chat.chat(`Remember ${marker}`)).toBe(answer(`Remember ${marker}`))
    const sessionId = Option.getOrThrow(yield* a.session.sessionId)
    const snapshot: ClaudeSnapshot | undefined = store === undefined ? yield* a.session.snapshot : undefined
    return { marker, sessionId, scope, snapshot }
  })

describeWithClaude("ClaudeAgent on a ClaudeSessionStore (the SDK's sessionStore, real binary)", () => {
  for (const keepAlive of [false, true]) {
    it.live(
      `a client under another empty HOME and cwd resumes from the store (keepAlive: ${keepAlive})`,
      () =>
        Effect.gen(function*() {
          const api = yield* Fake.make(echo)
          const boxA = yield* sandbox(api.url)
          const boxB = yield* sandbox(api.url)
          yield* parentTmpdir(boxB.env["TMPDIR"]!)
          const { appends, entries, store } = yield* recordingStore
          const { marker, scope, sessionId } = yield* firstTurn(boxA, store, { keepAlive })
          // A turn returns only after its transcript is stored: the prompt and the answer are there.
          const afterTurn = (yield* entries(sessionId)).length
          const stored = JSON.stringify(yield* entries(sessionId))
          expect(occurrences(stored, `Remember ${marker}`)).toBeGreaterThan(0)
          expect(occurrences(stored, answer(`Remember ${marker}`))).toBeGreaterThan(0)
          const resultAt = Date.now()
          yield* Scope.close(scope, Exit.void)
          const afterClose = (yield* entries(sessionId)).length
          // Everything the CLI mirrors is in the store, in order (what came after the result too).
          expect(yield* entries(sessionId)).toEqual(localEntries(boxA, sessionId).filter(mirrored))
          console.log(
            `keepAlive ${keepAlive}: turn 1: ${afterTurn} entries stored when chat returned, ${afterClose} after close; appends ${
              JSON.stringify(appends.map((a) => ({ count: a.count, msFromReturn: a.at - resultAt })))
            }`
          )

          const appendsBeforeB = appends.length
          const scopeB = yield* Scope.make()
          const b = yield* client(boxB, scopeB, store, { resume: sessionId, keepAlive })
          expect(yield* b.chat.chat("What did I say?")).toBe(answer("What did I say?"))
          // The history came from the store: the marker once in turn 2's request, same session.
          expect(occurrences(JSON.stringify(requestOf(api, "What did I say?").body.messages), marker)).toBe(1)
          expect(yield* b.session.sessionId).toEqual(Option.some(sessionId))
          const turn2At = Date.now()
          const afterTurn2 = (yield* entries(sessionId)).length
          expect(afterTurn2).toBeGreaterThan(afterClose)
          expect(occurrences(JSON.stringify(yield* entries(sessionId)), answer("What did I say?"))).toBeGreaterThan(0)
          // A third turn continues both.
          expect(yield* b.chat.chat("And then?")).toBe(answer("And then?"))
          const third = JSON.stringify(requestOf(api, "And then?").body.messages)
          expect(occurrences(third, marker)).toBe(1)
          expect(occurrences(third, "What did I say?")).toBeGreaterThan(0)
          yield* Scope.close(scopeB, Exit.void)
          const stored2 = yield* entries(sessionId)
          // The entry the CLI writes as it exits (its cost totals) is there: nothing was cut at close.
          expect(stored2.at(-1)?.type).toBe("cost-state")
          // Stored once each, whatever turns and processes the entries came from.
          const uuids = stored2.flatMap((e) => (e.uuid === undefined ? [] : [e.uuid]))
          expect(new Set(uuids).size).toBe(uuids.length)
          console.log(
            `keepAlive ${keepAlive}: turn 2 stored ${
              afterTurn2 - afterClose
            } when chat returned, ${stored2.length} in all after turn 3 and close; appends ${
              JSON.stringify(
                appends.slice(appendsBeforeB).map((a) => ({ count: a.count, msFromTurn2Return: a.at - turn2At }))
              )
            }`
          )
          // Nothing left behind: no CLI, no materialized transcript in either TMPDIR, no session
          // file written under B's config dir for a session it read from the store.
          expect(claudeProcessesIn(boxB.cwd)).toEqual([])
          expect(existsSync(sessionPath(boxB.env["CLAUDE_CONFIG_DIR"]!, boxB.cwd, sessionId))).toBe(false)
          expect(materialized(boxB)).toEqual([])
          expect(materialized(boxA)).toEqual([])
        }),
      120_000
    )
  }

  it.live(
    "a snapshot continues under another empty HOME and cwd: without a store (fresh and prewarmed), and on a store with prewarm",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(echo)
        const boxA = yield* sandbox(api.url)
        const { marker, scope, sessionId, snapshot } = yield* firstTurn(boxA, undefined)
        yield* Scope.close(scope, Exit.void)
        expect(snapshot!.sessionId).toBe(sessionId)

        // No store: the snapshot is written as B's local session file before the first turn (before
        // the warm start with prewarm, whose CLI resumes it at once).
        for (const prewarm of [false, true]) {
          const boxB = yield* sandbox(api.url)
          const scopeB = yield* Scope.make()
          const b = yield* client(boxB, scopeB, undefined, { snapshot, prewarm })
          const prompt = `Snapshot, no store, prewarm ${prewarm}?`
          expect(yield* b.chat.chat(prompt)).toBe(answer(prompt))
          expect(occurrences(JSON.stringify(requestOf(api, prompt).body.messages), marker)).toBe(1)
          expect(yield* b.session.sessionId).toEqual(Option.some(sessionId))
          yield* Scope.close(scopeB, Exit.void)
          expect(existsSync(sessionPath(boxB.env["CLAUDE_CONFIG_DIR"]!, boxB.cwd, sessionId))).toBe(true)
        }

        // A store and prewarm: the snapshot is in the store before the warm CLI loads it.
        const boxC = yield* sandbox(api.url)
        yield* parentTmpdir(boxC.env["TMPDIR"]!)
        const { entries, store } = yield* recordingStore
        const scopeC = yield* Scope.make()
        const c = yield* client(boxC, scopeC, store, { snapshot, prewarm: true })
        expect((yield* entries(sessionId)).length).toBe(snapshot!.transcript.length)
        expect(yield* c.chat.chat("Snapshot, warm?")).toBe(answer("Snapshot, warm?"))
        expect(occurrences(JSON.stringify(requestOf(api, "Snapshot, warm?").body.messages), marker)).toBe(1)
        expect(yield* c.session.sessionId).toEqual(Option.some(sessionId))
        expect((yield* entries(sessionId)).length).toBeGreaterThan(snapshot!.transcript.length)
        yield* Scope.close(scopeC, Exit.void)
        expect(claudeProcessesIn(boxC.cwd)).toEqual([])
        expect(materialized(boxC)).toEqual([])
      }),
    120_000
  )
})
