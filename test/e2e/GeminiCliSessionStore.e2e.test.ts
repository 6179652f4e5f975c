/**
 * GeminiCli's `sessionStore` on the real `gemini` binary against the library's fake Gemini API:
 * two clients with two different homes (two machines) share one SQLite `ClaudeSessionStore`.
 * The second resumes the first's session, which it never had on disk, and the model's request
 * holds the first's turn; back in the first home, whose file lacks the second's turn and holds
 * a record the store never accepted, the next turn continues from the store's history.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import * as ClaudeSessionStoreSql from "../../src/layers/ClaudeSessionStoreSql.ts"
import * as GeminiCli from "../../src/layers/GeminiCli.ts"
import * as NodeSubprocess from "../../src/layers/NodeSubprocess.ts"
import * as Fake from "../support/FakeGemini.ts"

const binary = resolve("node_modules/.bin/gemini")

const history = (api: Fake.FakeGemini) => JSON.stringify(api.generateRequests().at(-1)!.body.contents)

/** The session files of `home` holding the session (its 8-character prefix in the name). */
const filesOf = (home: string, sessionId: string): ReadonlyArray<string> => {
  const projects = join(home, ".gemini", "tmp")
  return readdirSync(projects).flatMap((project) => {
    const chats = join(projects, project, "chats")
    try {
      return readdirSync(chats).filter((f) => f.includes(sessionId.slice(0, 8))).map((f) => join(chats, f))
    } catch {
      return []
    }
  })
}

describe("GeminiCli sessionStore on the real gemini 0.61.0", () => {
  it.live(
    "a session continues in another home through one SQLite store; the store's history wins",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(() => ({ text: "ok" }))
        const box = mkdtempSync(join(tmpdir(), "ecb-gemini-store-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(box, { recursive: true, force: true })))
        const machine = (name: string) => {
          mkdirSync(join(box, name, "project"), { recursive: true })
          return { cwd: join(box, name, "project"), home: join(box, name, "home") }
        }
        const a = machine("a")
        const b = machine("b")
        const base: GeminiCli.Options = {
          binary,
          sessionStore: true,
          projectKey: "e2e",
          env: { GOOGLE_GEMINI_BASE_URL: api.url, GEMINI_API_KEY: "test-key" }
        }
        const store = ClaudeSessionStoreSql.layerSqlite({ filename: join(box, "sessions.sqlite") })
        const clients = Layer.merge(NodeSubprocess.layer, store)
        const converse = (options: GeminiCli.Options, prompts: ReadonlyArray<string>) =>
          Effect.scoped(Effect.gen(function*() {
            const client = yield* GeminiCli.make(options)
            for (const prompt of prompts) expect(yield* client.chat(prompt)).toBe("ok")
            return Option.getOrThrow(yield* client.sessionId)
          }))

        return yield* Effect.gen(function*() {
          const session = yield* converse({ ...base, ...a }, ["The secret word is pineapple"])
          // A record the store never accepted (an attempt that failed after the CLI wrote its prompt).
          for (const file of filesOf(a.home, session)) {
            appendFileSync(
              file,
              JSON.stringify({
                id: "stray",
                timestamp: new Date().toISOString(),
                type: "user",
                content: [{ text: "stray attempt" }]
              }) + "\n"
            )
          }

          // Machine b never had the session: it is written from the store before the CLI loads it.
          expect(yield* converse({ ...base, ...b, resume: session }, ["What is the secret word?"])).toBe(session)
          expect(history(api)).toContain("The secret word is pineapple")
          expect(history(api)).not.toContain("stray attempt")

          // Back on machine a (a fresh CLI per turn, then a kept one): the store's history, b's turn included.
          expect(yield* converse({ ...base, ...a, resume: session }, ["Back on a"])).toBe(session)
          expect(history(api)).toContain("What is the secret word?")
          expect(history(api)).not.toContain("stray attempt")
          expect(yield* converse({ ...base, ...b, resume: session, keepAlive: true }, ["Kept on b", "Again on b"]))
            .toBe(session)
          expect(history(api)).toContain("Back on a")
          expect(history(api)).toContain("Kept on b")
          expect(yield* converse({ ...base, ...a, resume: session }, ["Last on a"])).toBe(session)
          expect(history(api)).toContain("Again on b")
        }).pipe(Effect.provide(clients))
      }).pipe(Effect.scoped),
    300_000
  )
})
