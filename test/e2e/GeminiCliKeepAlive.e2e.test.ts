/**
 * GeminiCli with `keepAlive` on the real `gemini` binary against the library's fake Gemini API:
 * turns share one `gemini --acp` (one ACP session, a `session/prompt` each), a later turn calls an
 * in-process tool on that process, an interrupted turn is cancelled and the process kept, a killed
 * process is replaced by the next turn (which loads the session, history included), a client
 * closed right after an answer leaves a session a new client resumes with that answer, a new tool
 * set gets a new process on the same session, and nothing is left once the scopes close. With a
 * short `idleTimeout` the kept CLI stops on its own after its answer, its session file written,
 * and the next turn continues the conversation on a new process.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import * as GeminiCli from "../../src/layers/GeminiCli.ts"
import * as NodeSubprocess from "../../src/layers/NodeSubprocess.ts"
import * as Tool from "../../src/services/Tool.ts"
import * as Fake from "../support/FakeGemini.ts"

const binary = resolve("node_modules/.bin/gemini")

/** The fake model: calls `add` when asked to add, reports a tool result, else answers "ok". */
const model = (req: Fake.FakeRequest): Fake.FakeReply => {
  const answers = Fake.functionResponses(req)
  if (answers.length > 0) return { text: `sum: ${JSON.stringify(answers[0]!.response)}` }
  const tool = (req.body.tools ?? []).flatMap((t) => t.functionDeclarations ?? []).find((d) => /add$/.test(d.name))
  if (Fake.lastUserText(req).includes("Please add") && tool !== undefined) {
    return { functionCalls: [{ name: tool.name, args: { a: 2, b: 3 } }] }
  }
  // Streams its first chunk, then nothing: only a cancel (or the end of the process) ends it.
  if (Fake.lastUserText(req).includes("Take your time")) return { text: "late answer", breakMidway: "hang" }
  return { text: "ok" }
}

/** Gemini CLI processes (the CLI relaunches itself as a child) working in `cwd`. */
const geminiIn = (cwd: string): Array<{ readonly pid: number; readonly pgid: number }> =>
  execFileSync("ps", ["-eo", "pid=,pgid=,args="], { encoding: "utf8" })
    .split("\n")
    .filter((line) => line.includes("gemini") && line.includes("--acp") && !line.includes("ps -eo"))
    .flatMap((line) => {
      const [pid, pgid] = line.trim().split(/\s+/).map(Number)
      try {
        return readlinkSync(`/proc/${pid}/cwd`) === cwd ? [{ pid: pid!, pgid: pgid! }] : []
      } catch {
        return []
      }
    })

const history = (api: Fake.FakeGemini) => JSON.stringify(api.generateRequests().at(-1)!.body.contents)

/** The text of the session files under `home` (the CLI's `tmp/<project>/chats/session-*.jsonl`). */
const sessionFiles = (home: string): string => {
  const projects = join(home, ".gemini", "tmp")
  return readdirSync(projects).flatMap((project) => {
    const chats = join(projects, project, "chats")
    try {
      return readdirSync(chats).filter((f) => f.startsWith("session-")).map((f) => readFileSync(join(chats, f), "utf8"))
    } catch {
      return []
    }
  }).join("\n")
}

/**
 * A box with `work` and `home`. The clients' private directories go under the box's own TMPDIR:
 * other suites' and other checkouts' GeminiCli tests may run at the same time.
 */
const testBox = Effect.gen(function*() {
  const box = mkdtempSync(join(tmpdir(), "ecb-gemini-test-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(box, { recursive: true, force: true })))
  const cwd = join(box, "work")
  mkdirSync(cwd)
  const savedTmp = process.env["TMPDIR"]
  process.env["TMPDIR"] = join(box, "tmp")
  mkdirSync(process.env["TMPDIR"])
  yield* Effect.addFinalizer(() =>
    Effect.sync(() => {
      if (savedTmp === undefined) delete process.env["TMPDIR"]
      else process.env["TMPDIR"] = savedTmp
    })
  )
  return { cwd, home: join(box, "home") }
})

describe("GeminiCli keepAlive on the real gemini 0.61.0", () => {
  it.live(
    "an idle kept CLI stops after idleTimeout with its session written; the next turn continues on a new one",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const { cwd, home } = yield* testBox
        const client = yield* GeminiCli.make({
          binary,
          cwd,
          home,
          keepAlive: true,
          idleTimeout: "1 second",
          env: { GOOGLE_GEMINI_BASE_URL: api.url, GEMINI_API_KEY: "test-key" }
        }).pipe(Effect.provide(NodeSubprocess.layer))

        expect(yield* client.chat("Say hello before the pause")).toBe("ok")
        const first = geminiIn(cwd)
        expect(first.length).toBeGreaterThan(0)
        // Idle: it stops on its own (polled, bounded), with the turn in its session file.
        for (let i = 0; i < 300 && geminiIn(cwd).length > 0; i++) yield* Effect.sleep("100 millis")
        expect(geminiIn(cwd)).toEqual([])
        expect(sessionFiles(home)).toContain("Say hello before the pause")

        expect(yield* client.chat("And after the pause?")).toBe("ok")
        const second = geminiIn(cwd)
        expect(second.length).toBeGreaterThan(0)
        expect(second.some((p) => first.some((f) => f.pid === p.pid))).toBe(false)
        expect(history(api)).toContain("Say hello before the pause")
        expect(history(api)).toContain("And after the pause?")
      }).pipe(Effect.scoped),
    180_000
  )

  it.live(
    "turns share one process; a cancelled turn keeps it, a killed one or a new tool set replaces it with the history; nothing left after close",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const { cwd, home } = yield* testBox
        const dirsBefore = readdirSync(tmpdir()).filter((name) => name.startsWith("ecb-gemini-"))

        let calls = 0
        const add = Tool.make("add", {
          description: "Adds two numbers",
          parameters: { a: Schema.Number, b: Schema.Number },
          handler: ({ a, b }) => Effect.sync(() => (calls++, a + b))
        })
        const scope = yield* Scope.make()
        yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
        const options: GeminiCli.Options = {
          binary,
          cwd,
          home,
          keepAlive: true,
          env: { GOOGLE_GEMINI_BASE_URL: api.url, GEMINI_API_KEY: "test-key" }
        }
        const client = yield* GeminiCli.make(options).pipe(Scope.provide(scope), Effect.provide(NodeSubprocess.layer))
        yield* client.setTools([add])

        expect(yield* client.chat("Say hello")).toBe("ok")
        const first = geminiIn(cwd)
        expect(first.length).toBeGreaterThan(0)

        // The second turn: the same process, the first turn's history, a tool call.
        expect(yield* client.chat("Please add 2 and 3")).toContain("5")
        expect(calls).toBe(1)
        expect(geminiIn(cwd)).toEqual(first)
        expect(history(api)).toContain("Say hello")
        // Each prompt's usage is its own (three model requests of 10 + 5 tokens), not the session's so far.
        const usage = yield* client.usage
        expect([usage.inputTokens, usage.outputTokens]).toEqual([30, 15])

        // Streaming on the kept process.
        const events = Array.from(yield* Stream.runCollect(client.chatStream("stream this")))
        expect(events.flatMap((e) => (e._tag === "TextDelta" ? [e.text] : [])).join("")).toBe("ok")
        expect(geminiIn(cwd)).toEqual(first)

        // An interrupted turn is cancelled over ACP (`session/cancel`): the process stays.
        const slow = yield* Effect.exit(client.chat("Take your time").pipe(Effect.timeout("2 seconds")))
        expect(Exit.isFailure(slow)).toBe(true)
        // The cancel reached the CLI, which aborted its model request (before any other turn).
        const hung = api.requests.findIndex((r) => Fake.lastUserText(r).includes("Take your time"))
        for (let i = 0; i < 40 && !api.abandoned.includes(hung); i++) yield* Effect.sleep("50 millis")
        expect(api.abandoned).toContain(hung)
        expect(yield* client.chat("Still there?")).toBe("ok")
        expect(geminiIn(cwd)).toEqual(first)

        // Killed while idle: the next turn answers on a new process that loaded the session.
        process.kill(-first[0]!.pgid, "SIGKILL")
        while (geminiIn(cwd).some((p) => first.some((f) => f.pid === p.pid))) yield* Effect.sleep("50 millis")
        expect(yield* client.chat("And now?")).toBe("ok")
        const second = geminiIn(cwd)
        expect(second.length).toBeGreaterThan(0)
        expect(second.some((p) => first.some((f) => f.pid === p.pid))).toBe(false)
        expect(history(api)).toContain("Say hello")
        expect(history(api)).toContain("Please add 2 and 3")
        expect(history(api)).toContain("And now?")
        // And the new process keeps the tool.
        expect(yield* client.chat("Please add 2 and 3 again")).toContain("5")
        expect(calls).toBe(2)
        expect(geminiIn(cwd)).toEqual(second)

        const session = Option.getOrThrow(yield* client.sessionId)
        yield* Scope.close(scope, Exit.void)
        expect(geminiIn(cwd)).toEqual([])

        // Closed right after its answer, the kept CLI still wrote it: a new client resumes with it.
        const again = yield* Scope.make()
        yield* Effect.addFinalizer(() => Scope.close(again, Exit.void))
        const resumed = yield* GeminiCli.make({ ...options, resume: session }).pipe(
          Scope.provide(again),
          Effect.provide(NodeSubprocess.layer)
        )
        expect(yield* resumed.chat("Resumed?")).toBe("ok")
        expect(history(api)).toContain("Please add 2 and 3 again")
        // The CLI lists a server's tools when it connects: a new tool set gets a new process.
        const before = geminiIn(cwd)
        yield* resumed.setTools([add])
        expect(yield* resumed.chat("Please add 2 and 3 once more")).toContain("5")
        expect(calls).toBe(3)
        expect(geminiIn(cwd).some((p) => before.some((b) => b.pid === p.pid))).toBe(false)
        expect(history(api)).toContain("Resumed?")
        yield* Scope.close(again, Exit.void)
        expect(geminiIn(cwd)).toEqual([])
        const dirsAfter = readdirSync(tmpdir()).filter((name) => name.startsWith("ecb-gemini-"))
        expect(dirsAfter.filter((name) => !dirsBefore.includes(name))).toEqual([])
      }),
    240_000
  )
})
