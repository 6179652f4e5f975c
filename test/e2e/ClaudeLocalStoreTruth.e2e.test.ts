/**
 * The session store's history is the truth, on the real `claude` binary against the fake Messages
 * API, with a real SQLite file and a real PostgreSQL server (issue 42, item 3). Two "machines"
 * are two sandboxes (their own HOME, config dir, TMPDIR and cwd) sharing one store:
 *
 * (a) a client on A chats with code word U; (b) a new client on A resumes and runs a turn whose
 * model call hangs, which fails as `stalled` (its CLI wrote the prompt to A's session file, the
 * store never got it); (c) a client on the empty machine B resumes and chats with W; (d) a new
 * client on A resumes and chats with X. The model request of (d) holds U and W once each and
 * nothing of the stalled attempt: A's never-stored entries neither come back into the store nor
 * become the branch the CLI continues.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { join } from "node:path"
import * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import * as ClaudeSessionStoreSql from "../../src/layers/ClaudeSessionStoreSql.ts"
import { ProviderError } from "../../src/services/ChatClient.ts"
import {
  ClaudeSessionStore,
  type ClaudeSessionStoreService,
  type TranscriptEntry
} from "../../src/services/ClaudeSessionStore.ts"
import { claudeBinary, type Sandbox, sandbox } from "../support/claudeCli.ts"
import { localServices, requestTimeout, sessionOf } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"
import * as Postgres from "../support/postgres.ts"

/** A shared store on a fresh SQLite file or a fresh PostgreSQL server, open until the scope closes. */
const stores: ReadonlyArray<{
  readonly name: string
  readonly open: (dir: string) => Effect.Effect<ClaudeSessionStoreService, unknown, Scope.Scope>
}> = [
  {
    name: "SQLite",
    open: (dir) =>
      Effect.map(
        Layer.build(ClaudeSessionStoreSql.layerSqlite({ filename: join(dir, "sessions.sqlite") })),
        (built) => Context.get(built, ClaudeSessionStore)
      )
  },
  {
    name: "PostgreSQL",
    open: () =>
      Effect.gen(function*() {
        const server = yield* Postgres.start()
        const built = yield* Layer.build(
          ClaudeSessionStoreSql.layer.pipe(Layer.provide(PgClient.layer({ url: server.url() })))
        )
        return Context.get(built, ClaudeSessionStore)
      })
  }
]

const code = (letter: string) => `${letter}-${Math.random().toString(36).slice(2, 10)}`

/** Prompts carrying the stall word get a stream that stops after its first delta; others are noted. */
const model = (stallWord: string) => (req: Fake.FakeRequest): Fake.FakeReply =>
  Fake.lastUserLine(req).includes(stallWord) ? { text: "Thinking it over", breakMidway: "hang" } : { text: "Noted." }

/** A client in `box` on `store`, open until the caller's scope closes. */
const clientIn = (box: Sandbox, store: ClaudeSessionStoreService, options: ClaudeLocal.Options) =>
  sessionOf(
    ClaudeLocal.layer({ binary: claudeBinary, cwd: box.cwd, env: box.env, requestTimeout, ...options }).pipe(
      Layer.provide(localServices(box)),
      Layer.provide(Layer.succeed(ClaudeSessionStore, store)),
      Layer.orDie
    )
  )

const occurrences = (haystack: string, text: string) => haystack.split(text).length - 1

/** The messages of the last model request whose prompt carries `word`. */
const requestWith = (api: Fake.FakeMessagesApi, word: string) => {
  const found = [...api.messageRequests()].reverse().find((r) =>
    r.body["max_tokens"] !== 1 && Fake.lastUserLine(r).includes(word)
  )
  expect(found, `a model request carrying ${word}`).toBeDefined()
  return JSON.stringify(found!.body.messages ?? [])
}

const stored = (store: ClaudeSessionStoreService, sessionId: string) =>
  Effect.map(
    store.load({ projectKey: "default", sessionId }),
    Option.getOrElse((): ReadonlyArray<TranscriptEntry> => [])
  )

describeWithClaude("ClaudeLocal: a machine's never-stored entries never come back (real claude, SQL stores)", () => {
  describe.each(stores)("$name store", ({ open }) => {
    describe.each([false, true])("keepAlive %s", (keepAlive) => {
      it.live(
        "a stalled attempt on A, a turn on B, then A again: the last request holds every code word once",
        () =>
          Effect.gen(function*() {
            const [u, v, w, x] = [code("U"), code("V"), code("W"), code("X")]
            const api = yield* Fake.make(model(v))
            const [boxA, boxB] = [yield* sandbox(api.url), yield* sandbox(api.url)]
            const store = yield* open(boxA.dir)

            // (a) A chats with U.
            const a1 = yield* clientIn(boxA, store, { keepAlive })
            expect(yield* a1.chat.chat(`Code word ${u}.`)).toBe("Noted.")
            const id = Option.getOrThrow(yield* a1.session.sessionId)

            // (b) A new client on A resumes; its turn stalls and is stopped, never stored.
            const a2 = yield* clientIn(boxA, store, { keepAlive, resume: id, stallTimeout: "6 seconds" })
            const stalled = yield* Effect.flip(a2.chat.chat(`Code word ${v}.`))
            expect(stalled).toBeInstanceOf(ProviderError)
            expect(stalled).toMatchObject({ reason: { _tag: "StalledError" } })
            expect(occurrences(JSON.stringify(yield* stored(store, id)), v)).toBe(0)

            // (c) The empty machine B resumes from the store and chats with W.
            const b = yield* clientIn(boxB, store, { keepAlive, resume: id })
            expect(yield* b.chat.chat(`Code word ${w}.`)).toBe("Noted.")
            const onB = requestWith(api, w)
            expect({ u: occurrences(onB, u), v: occurrences(onB, v) }).toEqual({ u: 1, v: 0 })

            // (d) A new client on A resumes and chats with X: the history is the store's (kept
            // alive, its CLI starts at once, before the first turn).
            const a3 = yield* clientIn(boxA, store, { keepAlive, prewarm: keepAlive, resume: id })
            expect(yield* a3.chat.chat(`Code word ${x}.`)).toBe("Noted.")
            const last = requestWith(api, x)
            expect({
              u: occurrences(last, u),
              v: occurrences(last, v),
              w: occurrences(last, w),
              x: occurrences(last, x)
            })
              .toEqual({ u: 1, v: 0, w: 1, x: 1 })
            // The store took nothing of the stalled attempt, and holds every turn once.
            const held = JSON.stringify(yield* stored(store, id))
            expect(occurrences(held, v)).toBe(0)
            for (const word of [u, w, x]) expect(occurrences(held, `Code word ${word}.`)).toBeGreaterThan(0)
            const uuids = (yield* stored(store, id)).flatMap((e) => (e.uuid === undefined ? [] : [e.uuid]))
            expect(new Set(uuids).size).toBe(uuids.length)
          }),
        { timeout: 180_000 }
      )

      it.live(
        "the client whose turn stalled goes on from its last stored turn, not from the stalled prompt",
        () =>
          Effect.gen(function*() {
            const [u, v, y] = [code("U"), code("V"), code("Y")]
            const api = yield* Fake.make(model(v))
            const box = yield* sandbox(api.url)
            const store = yield* open(box.dir)
            const client = yield* clientIn(box, store, { keepAlive, stallTimeout: "6 seconds" })
            expect(yield* client.chat.chat(`Code word ${u}.`)).toBe("Noted.")
            const id = Option.getOrThrow(yield* client.session.sessionId)
            expect(yield* Effect.flip(client.chat.chat(`Code word ${v}.`))).toMatchObject({
              reason: { _tag: "StalledError" }
            })
            expect(yield* client.chat.chat(`Code word ${y}.`)).toBe("Noted.")
            expect(Option.getOrThrow(yield* client.session.sessionId)).toBe(id)
            const next = requestWith(api, y)
            expect({ u: occurrences(next, u), v: occurrences(next, v), y: occurrences(next, y) })
              .toEqual({ u: 1, v: 0, y: 1 })
            const held = JSON.stringify(yield* stored(store, id))
            expect({
              u: occurrences(held, `Code word ${u}.`) > 0,
              v: occurrences(held, v),
              y: occurrences(held, `Code word ${y}.`) > 0
            })
              .toEqual({ u: true, v: 0, y: true })
          }),
        { timeout: 120_000 }
      )
    })
  })
})
