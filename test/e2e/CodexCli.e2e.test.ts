/**
 * CodexCli on the real `codex` binary (`@openai/codex` 0.171.0) against the library's fake
 * Responses API: a tool call reaches the in-process handler once and its result reaches the model,
 * user text is data (`$skill` with a real skill on disk, `@file`, `/cmd`, `!cmd` arrive as typed;
 * the skill's body, the file and a `<stdin>` block never; the prompt is not in any process's
 * argv), `ask` sends its schema, failures are typed, a second client resumes the thread, the tool
 * policy removes built-ins, and nothing is left once the scopes close. One fake serves every case.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { connect } from "node:net"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import * as CodexCli from "../../src/layers/CodexCli.ts"
import * as NodeSubprocess from "../../src/layers/NodeSubprocess.ts"
import * as Tool from "../../src/services/Tool.ts"
import * as Fake from "../support/FakeOpenAiResponses.ts"

const binary = resolve("node_modules/.bin/codex")
const fileSecret = "TOPSECRET-CODEX-NOTES-5b1e"
const skillBody = "SKILLBODY-CODEX-DEMO-83a0"
const verbatim = "$demo then $helper /status read @notes.txt !cat notes.txt please VERBATIM-7f3c"

/** Every process's argv, read while the CLI is running (from inside the fake's answer). */
const processList = () => execFileSync("ps", ["-eo", "args="], { encoding: "utf8" })
let argvDuringVerbatim = ""

/** The fake model: calls `add` when asked to add, reports a tool result, answers JSON for `ask`, else "ok". */
const model = (req: Fake.FakeRequest): Fake.FakeReply => {
  const outputs = Fake.functionOutputs(req)
  if (outputs.length > 0) return { text: `sum: ${outputs[0]!.output}` }
  const last = Fake.lastUserText(req)
  if (last.includes("SLOW-TURN")) return { text: "too late", delayMs: 20_000 }
  if (last.includes("FAIL-401")) {
    return { status: 401, body: { error: { message: "Incorrect API key provided", type: "invalid_request_error" } } }
  }
  if (last.includes("VERBATIM-7f3c")) argvDuringVerbatim = processList()
  if (last.includes("Please add") && Fake.toolNames(req).includes("mcp__gtb.add")) {
    return { functionCalls: [{ namespace: "mcp__gtb", name: "add", arguments: { a: 2, b: 3 } }] }
  }
  if (req.body.text?.format !== undefined) return { text: JSON.stringify({ answer: "yes" }) }
  return { text: "ok" }
}

/** Whether something still accepts connections on a loopback port. */
const listening = (port: number) =>
  Effect.promise(() =>
    new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1")
      socket.once("connect", () => (socket.destroy(), resolve(true)))
      socket.once("error", () => resolve(false))
    })
  )

/** The clients' private directories, under the test's own `TMPDIR`. */
const ecbDirs = () => readdirSync(tmpdir()).filter((name) => name.startsWith("ecb-codex-"))

/**
 * `codex exec` runs of this test still running: their argv names the test's working directory
 * (`--cd`), so other suites' CLIs on the machine do not count.
 */
const children = (box: string) =>
  processList().split("\n").filter((line) => line.includes("exec --json") && line.includes(box))

describe("CodexCli on the real codex 0.171.0", () => {
  it.live(
    "tool calls, verbatim text, ask, typed failures, resume in a second process, toolPolicy and a clean close",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const box = mkdtempSync(join(tmpdir(), "ecb-codex-test-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(box, { recursive: true, force: true })))
        // The clients' private directories go under this test's own TMPDIR: other suites'
        // CodexCli runs (the three-CLI policy test) may run at the same time.
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
        const home = join(box, "codex-home")
        // A project skill and a user skill, where Codex loads them (two names: a name both
        // define would be ambiguous, and Codex expands neither).
        const skills: ReadonlyArray<readonly [string, string]> = [
          [join(cwd, ".codex", "skills", "demo"), "demo"],
          [join(home, "skills", "helper"), "helper"]
        ]
        for (const [dir, name] of skills) {
          mkdirSync(dir, { recursive: true })
          writeFileSync(
            join(dir, "SKILL.md"),
            `---\nname: ${name}\ndescription: A ${name} skill\n---\n${skillBody}-${name}\n`
          )
        }
        writeFileSync(join(cwd, "notes.txt"), fileSecret)
        const options: CodexCli.Options = {
          binary,
          cwd,
          home,
          model: "gpt-fake",
          baseUrl: api.url,
          apiKey: Redacted.make("test-key"),
          maxRetries: 0
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
        const client = yield* CodexCli.make(options).pipe(Scope.provide(first), Effect.provide(NodeSubprocess.layer))
        yield* client.setTools([add])
        const answer = yield* client.chat("Please add 2 and 3")
        expect(calls).toBe(1)
        expect(answer).toContain("5")
        const toolRequest = api.responseRequests().find((r) => Fake.functionOutputs(r).length > 0)!
        expect(Fake.functionOutputs(toolRequest)[0]!.output).toContain("5")
        expect(toolRequest.headers["authorization"]).toBe("Bearer test-key")
        expect((yield* client.usage).outputTokens).toBeGreaterThan(0)

        // User text is data: no skill expanded, no file read, no command run, no <stdin> block.
        expect(yield* client.chat(verbatim)).toBe("ok")
        const sent = api.responseRequests().at(-1)!
        expect(Fake.lastUserText(sent)).toBe(verbatim)
        const everything = JSON.stringify(api.responseRequests().map((r) => r.body))
        expect(everything).not.toContain(skillBody)
        expect(everything).not.toContain(fileSecret)
        expect(everything).not.toContain("<stdin>")
        // The list was read while this test's CLI ran: its line is there, without the text.
        expect(argvDuringVerbatim.split("\n").some((line) => line.includes("exec --json") && line.includes(box)))
          .toBe(true)
        expect(argvDuringVerbatim).not.toContain("VERBATIM-7f3c")
        // The bridge's URL is on argv (not a secret); its port must be closed once the client is.
        const bridgePort = Number(/mcp_servers\.gtb\.url="http:\/\/127\.0\.0\.1:(\d+)\//.exec(argvDuringVerbatim)?.[1])
        expect(yield* listening(bridgePort)).toBe(true)

        // ask: the schema travels as --output-schema, the JSON answer decodes.
        const decided = yield* client.ask("Decide", Schema.Struct({ answer: Schema.String }))
        expect(decided.answer).toBe("yes")
        expect(JSON.stringify(api.responseRequests().at(-1)!.body.text)).toContain("answer")

        const thread = Option.getOrThrow(yield* client.sessionId)
        // chatStream: your tool's call and result as ToolCallStart/End, the answer, then Complete.
        const events = Array.from(yield* Stream.runCollect(client.chatStream("Please add 2 and 3, streaming")))
        const text = events.flatMap((e) => (e._tag === "TextDelta" ? [e.text] : [])).join("")
        expect(text).toContain("5")
        expect(events.find((e) => e._tag === "ToolCallStart")).toMatchObject({ name: "add", arguments: { a: 2, b: 3 } })
        expect(events.find((e) => e._tag === "ToolCallEnd")).toMatchObject({ name: "add", result: "5", isError: false })
        expect(events.at(-1)?._tag).toBe("Complete")
        expect(calls).toBe(2)

        // A refused key fails the turn with a typed reason that says what to do.
        const refused = yield* Effect.flip(client.chat("FAIL-401 please"))
        expect(refused._tag === "ProviderError" && refused.reason._tag).toBe("AuthenticationError")
        expect(refused.message).toContain("401")
        const missing = yield* CodexCli.make({ ...options, binary: join(box, "no-such-codex") }).pipe(
          Effect.flatMap((c) => Effect.flip(c.chat("hi"))),
          Effect.scoped,
          Effect.provide(NodeSubprocess.layer)
        )
        expect(missing._tag === "ProviderError" && missing.reason._tag).toBe("ConfigurationError")
        expect(missing.message).toContain("npm install -g @openai/codex")
        // A turn past requestTimeout is stopped (its process group killed) and fails, retryable.
        const slow = yield* CodexCli.make({ ...options, requestTimeout: "2 seconds" }).pipe(
          Effect.flatMap((c) => Effect.flip(c.chat("SLOW-TURN please"))),
          Effect.scoped,
          Effect.provide(NodeSubprocess.layer)
        )
        expect(slow._tag === "ProviderError" && slow.reason._tag).toBe("TimeoutError")
        expect(slow._tag === "ProviderError" && slow.isRetryable).toBe(true)
        expect(children(box)).toEqual([])
        // A CLI that cannot reach the bridge (here: a wrong bearer) fails instead of answering without tools.
        const cutOff = yield* CodexCli.make({ ...options, env: { CODEX_ECB_BRIDGE_TOKEN: "wrong" } }).pipe(
          Effect.tap((c) => c.setTools([add])),
          Effect.flatMap((c) => Effect.flip(c.chat("Please add 2 and 3"))),
          Effect.scoped,
          Effect.provide(NodeSubprocess.layer)
        )
        expect(cutOff._tag === "ProviderError" && cutOff.reason._tag).toBe("ConfigurationError")
        expect(cutOff.message).toContain("could not use the tool server")
        expect(calls).toBe(2)
        yield* Scope.close(first, Exit.void)

        // A second client (a new CLI process, as after a restart) continues the thread.
        const second = yield* Scope.make()
        yield* Effect.addFinalizer(() => Scope.close(second, Exit.void))
        const resumed = yield* CodexCli.make({ ...options, resume: thread, systemPrompt: "SYSTEM-PROMPT-e41d" }).pipe(
          Scope.provide(second),
          Effect.provide(NodeSubprocess.layer)
        )
        expect(yield* resumed.chat("And now?")).toBe("ok")
        const history = Fake.userTexts(api.responseRequests().at(-1)!)
        expect(history).toContain("Please add 2 and 3")
        expect(history).toContain("And now?")
        expect(Option.getOrThrow(yield* resumed.sessionId)).toBe(thread)
        // systemPrompt replaces Codex's base instructions (read from a private file).
        const instructed = api.responseRequests().at(-1)!.body
        expect(JSON.stringify([instructed.instructions, instructed.input])).toContain("SYSTEM-PROMPT-e41d")
        expect(JSON.stringify(instructed)).not.toContain("You are a coding agent running in the Codex CLI")
        // Codex reports thread totals; the resumed client counts only its own turn (one request).
        const resumedUsage = yield* resumed.usage
        expect([resumedUsage.inputTokens, resumedUsage.outputTokens]).toEqual([10, 5])
        yield* Scope.close(second, Exit.void)

        // toolPolicy: the agent's opt-outs (Claude Code's names work) become Codex's switches; the
        // app's tool stays offered and runs. A strict refusal fails before any CLI starts.
        const offered = (r: Fake.FakeRequest) => Fake.toolNames(r)
        expect(offered(toolRequest)).toEqual(expect.arrayContaining(["exec_command", "view_image"]))
        const third = yield* Scope.make()
        yield* Effect.addFinalizer(() => Scope.close(third, Exit.void))
        const limited = yield* CodexCli.make({ ...options, toolPolicy: { disabledTools: ["Read"] } }).pipe(
          Scope.provide(third),
          Effect.provide(NodeSubprocess.layer)
        )
        yield* limited.setTools([add])
        expect(yield* limited.chat("Please add 2 and 3")).toContain("5")
        expect(calls).toBe(3)
        const limitedTools = offered(api.responseRequests().at(-1)!)
        expect(limitedTools).not.toContain("view_image")
        expect(limitedTools).toContain("mcp__gtb.add")
        expect(limitedTools).not.toContain("exec_command")
        const strict = yield* Effect.flip(
          CodexCli.make({ ...options, toolPolicy: { disabledTools: ["Bsh"], strict: true } }).pipe(
            Effect.flatMap((c) => c.chat("hi")),
            Effect.scoped,
            Effect.provide(NodeSubprocess.layer)
          )
        )
        expect(strict._tag === "ProviderError" && strict.reason._tag).toBe("ConfigurationError")
        expect(strict.message).toContain("Bsh")
        yield* Scope.close(third, Exit.void)

        expect(yield* listening(bridgePort)).toBe(false)
        expect(ecbDirs().filter((name) => !dirsBefore.includes(name))).toEqual([])
        expect(children(box)).toEqual([])
      }),
    240_000
  )
})
