/**
 * CodexCli with `keepAlive` on the real `codex` binary (`@openai/codex` 0.171.0, `codex
 * app-server`) against the library's fake Responses API: turns share one process (one thread, a
 * `turn/start` each), a tool call reaches the in-process handler once, `chatStream` streams the
 * message's deltas, `ask` sends its schema as the turn's output schema, an interrupted turn is
 * stopped with `turn/interrupt` and the process kept, a killed process is replaced by the next turn
 * (which resumes the thread, history included), a new client resumes the thread, a bridge the CLI
 * cannot reach fails the turn, and nothing is left once the scopes close.
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
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs"
import { connect } from "node:net"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import * as CodexCli from "../../src/layers/CodexCli.ts"
import * as NodeSubprocess from "../../src/layers/NodeSubprocess.ts"
import * as Tool from "../../src/services/Tool.ts"
import * as Fake from "../support/FakeOpenAiResponses.ts"

const binary = resolve("node_modules/.bin/codex")

/** The fake model: calls `add` when asked to add, reports a tool result, answers JSON for `ask`, else "ok". */
const model = (req: Fake.FakeRequest): Fake.FakeReply => {
  const outputs = Fake.functionOutputs(req)
  if (outputs.length > 0) return { text: `sum: ${outputs[0]!.output}` }
  const last = Fake.lastUserText(req)
  if (last.includes("Take your time")) return { text: "too late", delayMs: 20_000 }
  if (last.includes("Please add") && Fake.toolNames(req).includes("mcp__gtb.add")) {
    return { functionCalls: [{ namespace: "mcp__gtb", name: "add", arguments: { a: 2, b: 3 } }] }
  }
  if (req.body.text?.format !== undefined) return { text: JSON.stringify({ answer: "yes" }) }
  if (last.includes("Stream this")) return { text: "a streamed answer" }
  return { text: "ok" }
}

/** `codex app-server` processes working in `cwd` (the launcher and the binary it runs). */
const codexIn = (cwd: string): Array<{ readonly pid: number; readonly pgid: number }> =>
  execFileSync("ps", ["-eo", "pid=,pgid=,args="], { encoding: "utf8" })
    .split("\n")
    .filter((line) => line.includes("app-server") && !line.includes("ps -eo"))
    .flatMap((line) => {
      const [pid, pgid] = line.trim().split(/\s+/).map(Number)
      try {
        return readlinkSync(`/proc/${pid}/cwd`) === cwd ? [{ pid: pid!, pgid: pgid! }] : []
      } catch {
        return []
      }
    })

/** Whether something still accepts connections on a loopback port. */
const listening = (port: number) =>
  Effect.promise(() =>
    new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1")
      socket.once("connect", () => (socket.destroy(), resolve(true)))
      socket.once("error", () => resolve(false))
    })
  )

const history = (api: Fake.FakeResponses) => Fake.userTexts(api.responseRequests().at(-1)!).join("\n")

describe("CodexCli keepAlive on the real codex 0.171.0", () => {
  it.live(
    "turns share one app-server; an interrupted turn keeps it, a killed one is replaced with the thread; resume; nothing left after close",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const box = mkdtempSync(join(tmpdir(), "ecb-codex-live-test-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(box, { recursive: true, force: true })))
        const cwd = join(box, "work")
        mkdirSync(cwd)
        // The clients' private directories go under this test's own TMPDIR: other suites' CodexCli
        // runs may run at the same time.
        const savedTmp = process.env["TMPDIR"]
        process.env["TMPDIR"] = join(box, "tmp")
        mkdirSync(process.env["TMPDIR"])
        yield* Effect.addFinalizer(() =>
          Effect.sync(() => {
            if (savedTmp === undefined) delete process.env["TMPDIR"]
            else process.env["TMPDIR"] = savedTmp
          })
        )
        const ecbDirs = () => readdirSync(tmpdir()).filter((name) => name.startsWith("ecb-codex-"))
        const dirsBefore = ecbDirs()

        let calls = 0
        const add = Tool.make("add", {
          description: "Adds two numbers",
          parameters: { a: Schema.Number, b: Schema.Number },
          handler: ({ a, b }) => Effect.sync(() => (calls++, a + b))
        })
        const options: CodexCli.Options = {
          binary,
          cwd,
          home: join(box, "codex-home"),
          model: "gpt-fake",
          baseUrl: api.url,
          apiKey: Redacted.make("test-key"),
          maxRetries: 0,
          keepAlive: true
        }
        const scope = yield* Scope.make()
        yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
        const client = yield* CodexCli.make(options).pipe(Scope.provide(scope), Effect.provide(NodeSubprocess.layer))
        yield* client.setTools([add])

        expect(yield* client.chat("Say hello")).toBe("ok")
        const first = codexIn(cwd)
        expect(first.length).toBeGreaterThan(0)
        // The prompt travels in `turn/start`, never on argv.
        expect(execFileSync("ps", ["-eo", "args="], { encoding: "utf8" })).not.toContain("Say hello")

        // The second turn: the same process, the first turn's history, a tool call run once.
        expect(yield* client.chat("Please add 2 and 3")).toContain("5")
        expect(calls).toBe(1)
        expect(codexIn(cwd)).toEqual(first)
        expect(history(api)).toContain("Say hello")
        const toolRequest = api.responseRequests().find((r) => Fake.functionOutputs(r).length > 0)!
        expect(Fake.functionOutputs(toolRequest)[0]!.output).toContain("5")
        // Each turn's usage is its own share of the thread's totals: 3 model requests of 10 + 5.
        const usage = yield* client.usage
        expect([usage.inputTokens, usage.outputTokens]).toEqual([30, 15])

        // chatStream: the message's deltas as they come (the fake sends two), on the same process.
        const events = Array.from(yield* Stream.runCollect(client.chatStream("Stream this")))
        const deltas = events.flatMap((e) => (e._tag === "TextDelta" ? [e.text] : []))
        expect(deltas.join("")).toBe("a streamed answer")
        expect(deltas.length).toBeGreaterThan(1)
        expect(events.at(-1)?._tag).toBe("Complete")

        // ask: the schema is the turn's output schema.
        const decided = yield* client.ask("Decide", Schema.Struct({ answer: Schema.String }))
        expect(decided.answer).toBe("yes")
        expect(JSON.stringify(api.responseRequests().at(-1)!.body.text)).toContain("answer")
        expect(codexIn(cwd)).toEqual(first)

        // An interrupted turn is stopped with `turn/interrupt` (the CLI tells the model the user
        // aborted it): the process stays, and the next turn continues the thread on it.
        const slow = yield* Effect.exit(client.chat("Take your time").pipe(Effect.timeout("2 seconds")))
        expect(Exit.isFailure(slow)).toBe(true)
        expect(yield* client.chat("Still there?")).toBe("ok")
        expect(history(api)).toContain("Take your time")
        expect(history(api)).toContain("<turn_aborted>")
        expect(codexIn(cwd)).toEqual(first)

        // Killed while idle: the next turn answers on a new process that resumed the thread.
        process.kill(-first[0]!.pgid, "SIGKILL")
        while (codexIn(cwd).some((p) => first.some((f) => f.pid === p.pid))) yield* Effect.sleep("50 millis")
        expect(yield* client.chat("And now?")).toBe("ok")
        const second = codexIn(cwd)
        expect(second.length).toBeGreaterThan(0)
        expect(second.some((p) => first.some((f) => f.pid === p.pid))).toBe(false)
        for (const earlier of ["Say hello", "Please add 2 and 3", "Still there?", "And now?"]) {
          expect(history(api)).toContain(earlier)
        }
        // The new process keeps the tool.
        expect(yield* client.chat("Please add 2 and 3 again")).toContain("5")
        expect(calls).toBe(2)
        expect(codexIn(cwd)).toEqual(second)

        const thread = Option.getOrThrow(yield* client.sessionId)
        // The bridge's URL is on the kept process's argv (not a secret); its port closes with the client.
        const argv = second.flatMap((p) => readFileSync(`/proc/${p.pid}/cmdline`, "utf8").split("\0")).join("\n")
        const bridgePort = Number(/mcp_servers\.gtb\.url="http:\/\/127\.0\.0\.1:(\d+)\//.exec(argv)?.[1])
        expect(yield* listening(bridgePort)).toBe(true)
        yield* Scope.close(scope, Exit.void)
        expect(codexIn(cwd)).toEqual([])
        expect(yield* listening(bridgePort)).toBe(false)

        // A new client resumes the thread (thread/resume), its history included.
        const again = yield* Scope.make()
        yield* Effect.addFinalizer(() => Scope.close(again, Exit.void))
        const resumed = yield* CodexCli.make({ ...options, resume: thread }).pipe(
          Scope.provide(again),
          Effect.provide(NodeSubprocess.layer)
        )
        expect(yield* resumed.chat("Resumed?")).toBe("ok")
        expect(history(api)).toContain("Please add 2 and 3 again")
        expect(yield* resumed.sessionId).toEqual(Option.some(thread))
        yield* Scope.close(again, Exit.void)
        expect(codexIn(cwd)).toEqual([])

        // A CLI that cannot reach the bridge (a wrong bearer) fails instead of answering without tools.
        const cutOff = yield* CodexCli.make({ ...options, env: { CODEX_ECB_BRIDGE_TOKEN: "wrong" } }).pipe(
          Effect.tap((c) => c.setTools([add])),
          Effect.flatMap((c) => Effect.flip(c.chat("Please add 2 and 3"))),
          Effect.scoped,
          Effect.provide(NodeSubprocess.layer)
        )
        expect(cutOff._tag === "ProviderError" && cutOff.reason._tag).toBe("ConfigurationError")
        expect(cutOff.message).toContain("could not use the tool server")
        expect(calls).toBe(2)
        expect(codexIn(cwd)).toEqual([])
        expect(ecbDirs().filter((name) => !dirsBefore.includes(name))).toEqual([])
      }),
    240_000
  )
})
