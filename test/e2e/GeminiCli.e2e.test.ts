/**
 * GeminiCli on the real `gemini` binary (`@google/gemini-cli`) against the library's fake Gemini
 * API: a tool call reaches the in-process handler and its result reaches the model, user text is
 * data (`@file`, `x@file`, `/cmd` arrive as text, the file is never read), a second client
 * resumes the session, and nothing is left once the scopes close. One fake serves every case.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import * as GeminiCli from "../../src/layers/GeminiCli.ts"
import * as NodeSubprocess from "../../src/layers/NodeSubprocess.ts"
import * as Tool from "../../src/services/Tool.ts"
import * as Fake from "../support/FakeGemini.ts"

const binary = resolve("node_modules/.bin/gemini")
const secret = "TOPSECRET-GEMINI-41d7"
const expanded = "EXPANDED-CUSTOM-COMMAND-9c2e"

/** The declared function whose name ends with `add` (the CLI names MCP tools its own way). */
const addTool = (req: Fake.FakeRequest) =>
  (req.body.tools ?? []).flatMap((t) => t.functionDeclarations ?? []).find((d) => /add$/.test(d.name))?.name

/** The fake model: calls `add` when asked to add, reports a tool result, else answers "ok". */
const model = (req: Fake.FakeRequest): Fake.FakeReply => {
  const answers = Fake.functionResponses(req)
  if (answers.length > 0) return { text: `sum: ${JSON.stringify(answers[0]!.response)}` }
  const tool = addTool(req)
  if (Fake.lastUserText(req).includes("Please add") && tool !== undefined) {
    return { functionCalls: [{ name: tool, args: { a: 2, b: 3 } }] }
  }
  return { text: "ok" }
}

/** The clients' private directories: under this test's own `TMPDIR`, so other runs on the machine do not count. */
const ecbDirs = () => readdirSync(tmpdir()).filter((name) => name.startsWith("ecb-gemini-"))

const cwdOf = (pid: string): string => {
  try {
    return readlinkSync(`/proc/${pid}/cwd`)
  } catch {
    return ""
  }
}

/**
 * This test's `gemini --acp` processes still running (the CLI relaunches itself as a child: ask
 * every process, and keep those working in the test's folder).
 */
const children = (box: string) =>
  execFileSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" })
    .split("\n")
    .filter((line) => line.includes("gemini") && line.includes("--acp") && !line.includes("ps -eo"))
    .filter((line) => cwdOf(line.trim().split(/\s+/)[0]!).startsWith(box))

describe("GeminiCli on the real gemini 0.61.0", () => {
  it.live(
    "tool calls, verbatim text, resume in a second process and a clean close",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const box = mkdtempSync(join(tmpdir(), "ecb-gemini-test-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(box, { recursive: true, force: true })))
        const savedTmp = process.env["TMPDIR"]
        process.env["TMPDIR"] = join(box, "tmp")
        mkdirSync(process.env["TMPDIR"])
        yield* Effect.addFinalizer(() =>
          Effect.sync(() => {
            if (savedTmp === undefined) delete process.env["TMPDIR"]
            else process.env["TMPDIR"] = savedTmp
          })
        )
        const cwd = join(box, "work")
        const home = join(box, "home")
        mkdirSync(join(cwd, ".gemini", "commands"), { recursive: true })
        writeFileSync(join(cwd, "notes.txt"), secret)
        writeFileSync(join(cwd, ".gemini", "commands", "cmd.toml"), `prompt = "${expanded}"\n`)
        const options: GeminiCli.Options = {
          binary,
          cwd,
          home,
          env: { GOOGLE_GEMINI_BASE_URL: api.url, GEMINI_API_KEY: "test-key" }
        }
        const dirsBefore = ecbDirs()

        let calls = 0
        const add = Tool.make("add", {
          description: "Adds two numbers",
          parameters: { a: Schema.Number, b: Schema.Number },
          handler: ({ a, b }) => Effect.sync(() => (calls++, a + b))
        })

        const first = yield* Scope.make()
        // Closed here too when an assertion fails first (closing twice is a no-op).
        yield* Effect.addFinalizer(() => Scope.close(first, Exit.void))
        const client = yield* GeminiCli.make(options).pipe(
          Scope.provide(first),
          Effect.provide(NodeSubprocess.layer)
        )
        yield* client.setTools([add])
        const answer = yield* client.chat("Please add 2 and 3")
        expect(calls).toBe(1)
        expect(answer).toContain("5")
        const toolRequest = api.generateRequests().find((r) => Fake.functionResponses(r).length > 0)!
        expect(JSON.stringify(Fake.functionResponses(toolRequest)[0]!.response)).toContain("5")
        expect((yield* client.usage).outputTokens).toBeGreaterThan(0)

        // User text is data: no file read, no custom command expanded.
        const mention = "/cmd read @notes.txt and x@notes.txt"
        expect(yield* client.chat(mention)).toBe("ok")
        const parts = api.generateRequests().at(-1)!.body.contents!.filter((c) => c.role === "user").at(-1)!.parts
        expect(parts.map((p) => p.text)).toContain(mention)
        const sent = JSON.stringify(api.generateRequests().map((r) => r.body))
        expect(sent).not.toContain(secret)
        expect(sent).not.toContain(expanded)
        // ACP's own commands would run instead of reaching the model: refused, typed.
        const refused = yield* Effect.flip(client.chat("/memory show"))
        expect(refused._tag === "ProviderError" && refused.reason._tag).toBe("NotSupportedError")

        const session = Option.getOrThrow(yield* client.sessionId)
        const events = Array.from(yield* Stream.runCollect(client.chatStream("stream this")))
        const text = events.flatMap((e) => (e._tag === "TextDelta" ? [e.text] : [])).join("")
        expect(text).toBe("ok")
        expect(events.at(-1)?._tag).toBe("Complete")
        yield* Scope.close(first, Exit.void)

        // A second client (a new CLI process, as after a restart) continues the session.
        const second = yield* Scope.make()
        yield* Effect.addFinalizer(() => Scope.close(second, Exit.void))
        const resumed = yield* GeminiCli.make({ ...options, resume: session }).pipe(
          Scope.provide(second),
          Effect.provide(NodeSubprocess.layer)
        )
        expect(yield* resumed.chat("And now?")).toBe("ok")
        const history = JSON.stringify(api.generateRequests().at(-1)!.body.contents)
        expect(history).toContain("Please add 2 and 3")
        expect(history).toContain("And now?")
        yield* Scope.close(second, Exit.void)

        // A tool policy turns read_file off; the app's tool stays on.
        const declared = (r: Fake.FakeRequest) =>
          (r.body.tools ?? []).flatMap((t) => t.functionDeclarations ?? []).map((d) => d.name)
        expect(declared(toolRequest)).toContain("read_file")
        const third = yield* Scope.make()
        yield* Effect.addFinalizer(() => Scope.close(third, Exit.void))
        const limited = yield* GeminiCli.make({ ...options, toolPolicy: { disabledTools: ["read_file"] } }).pipe(
          Scope.provide(third),
          Effect.provide(NodeSubprocess.layer)
        )
        yield* limited.setTools([add])
        expect(yield* limited.chat("Please add 2 and 3")).toContain("5")
        expect(calls).toBe(2)
        const offered = declared(api.generateRequests().at(-1)!)
        expect(offered).not.toContain("read_file")
        expect(offered.some((name) => name.endsWith("add"))).toBe(true)
        yield* Scope.close(third, Exit.void)

        expect(ecbDirs().filter((name) => !dirsBefore.includes(name))).toEqual([])
        expect(children(box)).toEqual([])
      }),
    240_000
  )
})
