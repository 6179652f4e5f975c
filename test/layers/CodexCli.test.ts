/**
 * CodexCli's layers and turns on a stand-in `codex`: a real child process (a shell script) that
 * answers `--version` with a chosen release, records its argv, stdin and environment, prints a
 * chosen JSONL event stream and stderr, and exits with a chosen code. What the client makes of each
 * outcome (a typed reason, the thread's own usage, the private files on argv) is checked here; the
 * real CLI's behaviour is `test/e2e/CodexCli.e2e.test.ts`'s.
 */
import { describe, expect, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as CodexCli from "../../src/layers/CodexCli.ts"
import * as NodeSubprocess from "../../src/layers/NodeSubprocess.ts"
import { ChatClient, type ChatError } from "../../src/services/ChatClient.ts"
import * as Tool from "../../src/services/Tool.ts"

const script = `#!/bin/sh
if [ "$1" = "--version" ]; then echo "codex-cli \${FAKE_VERSION:-0.171.0}"; exit 0; fi
printf '%s\\n' "$@" > "$FAKE_LOG/argv"
cat > "$FAKE_LOG/stdin"
env > "$FAKE_LOG/env"
if [ -n "$FAKE_SLEEP" ]; then sleep "$FAKE_SLEEP"; fi
if [ -n "$FAKE_EVENTS" ]; then cat "$FAKE_EVENTS"; fi
if [ -n "$FAKE_STDERR" ]; then printf '%s\\n' "$FAKE_STDERR" >&2; fi
exit \${FAKE_EXIT:-0}
`

interface Scenario {
  readonly events?: ReadonlyArray<unknown>
  readonly version?: string
  readonly exit?: number
  readonly stderr?: string
  readonly sleep?: string
}

/** A box holding the stand-in binary and its logs; removed with the test's scope. */
const fakeCodex = Effect.acquireRelease(
  Effect.sync(() => {
    const box = fs.mkdtempSync(path.join(os.tmpdir(), "ecb-codex-fake-"))
    const binary = path.join(box, "codex")
    fs.writeFileSync(binary, script, { mode: 0o755 })
    fs.mkdirSync(path.join(box, "log"))
    const env = (scenario: Scenario): Record<string, string> => {
      const events = path.join(box, `events-${Math.random().toString(36).slice(2)}.jsonl`)
      fs.writeFileSync(events, (scenario.events ?? []).map((e) => JSON.stringify(e)).join("\n") + "\n")
      return {
        FAKE_LOG: path.join(box, "log"),
        FAKE_EVENTS: events,
        ...(scenario.version === undefined ? {} : { FAKE_VERSION: scenario.version }),
        ...(scenario.exit === undefined ? {} : { FAKE_EXIT: String(scenario.exit) }),
        ...(scenario.stderr === undefined ? {} : { FAKE_STDERR: scenario.stderr }),
        ...(scenario.sleep === undefined ? {} : { FAKE_SLEEP: scenario.sleep })
      }
    }
    const read = (name: "argv" | "stdin" | "env") => fs.readFileSync(path.join(box, "log", name), "utf8")
    return {
      box,
      binary,
      env,
      argv: () => read("argv").split("\n").slice(0, -1),
      stdin: () => read("stdin"),
      childEnv: () => read("env")
    }
  }),
  ({ box }) => Effect.sync(() => fs.rmSync(box, { recursive: true, force: true }))
)

const completed = (threadId: string, text: string, usage: Record<string, number>) => [
  { type: "thread.started", thread_id: threadId },
  { type: "turn.started" },
  { type: "item.completed", item: { id: "i0", type: "agent_message", text } },
  { type: "turn.completed", usage }
]

const usage = { input_tokens: 100, cached_input_tokens: 40, output_tokens: 9 }

/** A client on the stand-in, in the test's scope. */
const client = (options: CodexCli.Options) => CodexCli.make(options).pipe(Effect.provide(NodeSubprocess.layer))

const reasonOf = (error: ChatError) => (error._tag === "ProviderError" ? error.reason : undefined)

describe("CodexCli on a stand-in binary", () => {
  it.live("answers from the last agent message; argv, stdin and environment carry what they should", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const codex = yield* client({
        binary: fake.binary,
        model: "gpt-test",
        apiKey: Redacted.make("sk-hidden-7e1"),
        systemPrompt: "Be brief.",
        env: fake.env({ events: completed("t-new", "hello there", usage) })
      })
      expect(yield* codex.sessionId).toEqual(Option.none())
      expect(yield* codex.chat("Say $demo hi")).toBe("hello there")
      expect(yield* codex.sessionId).toEqual(Option.some("t-new"))
      const argv = fake.argv()
      expect(argv.slice(0, 2)).toEqual(["exec", "--json"])
      expect(argv.slice(argv.indexOf("--model"), argv.indexOf("--model") + 2)).toEqual(["--model", "gpt-test"])
      expect(argv.find((a) => a.startsWith("model_instructions_file="))).toMatch(/instructions\.md"$/)
      expect(argv.at(-1)).toBe("-")
      expect(argv.join("\n")).not.toContain("sk-hidden-7e1")
      expect(fake.stdin()).toContain("Say $demo hi")
      const childEnv = fake.childEnv()
      expect(childEnv).toContain("CODEX_ECB_API_KEY=sk-hidden-7e1")
      expect(childEnv).toMatch(/^CODEX_HOME=.*ecb-codex-.*\/codex$/m)
      const used = yield* codex.usage
      expect(used).toMatchObject({ inputTokens: 100, cachedTokens: 40, outputTokens: 9 })
    }))

  it.live("resumes a thread and counts only its own turn, from the rollout's last recorded totals", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const home = path.join(fake.box, "codex-home")
      const day = path.join(home, "sessions", "2026", "12", "04")
      fs.mkdirSync(day, { recursive: true })
      fs.writeFileSync(
        path.join(day, "rollout-2026-12-04T10-00-00-t-old.jsonl"),
        [
          JSON.stringify({
            type: "event_msg",
            payload: {
              type: "token_count",
              info: { total_token_usage: { input_tokens: 60, cached_input_tokens: 20, output_tokens: 5 } }
            }
          }),
          `{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tok` // cut short
        ].join("\n")
      )
      const codex = yield* client({
        binary: fake.binary,
        home,
        resume: "t-old",
        env: fake.env({ events: completed("t-old", "again", usage) })
      })
      expect(yield* codex.sessionId).toEqual(Option.some("t-old"))
      expect(yield* codex.chat("And now?")).toBe("again")
      expect(fake.argv().slice(-3)).toEqual(["resume", "t-old", "-"])
      expect(yield* codex.usage).toMatchObject({ inputTokens: 40, cachedTokens: 20, outputTokens: 4 })
    }))

  it.live("ask sends its schema as --output-schema and decodes the JSON answer", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const codex = yield* client({
        binary: fake.binary,
        env: fake.env({ events: completed("t-ask", `{"answer":"yes"}`, usage) })
      })
      expect(yield* codex.ask("Decide", Schema.Struct({ answer: Schema.String }))).toEqual({ answer: "yes" })
      const argv = fake.argv()
      expect(argv[argv.indexOf("--output-schema") + 1]).toMatch(/schema\.json$/)
    }))

  it.live("a CLI older than the minimum fails the turn before any run, naming the upgrade", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const codex = yield* client({ binary: fake.binary, env: fake.env({ version: "0.100.0" }) })
      const error = yield* Effect.flip(codex.chat("hi"))
      const reason = reasonOf(error)
      expect(reason?._tag).toBe("ConfigurationError")
      expect(reason?.message).toContain("0.100.0")
      expect(reason?.message).toContain(CodexCli.MinimumCliVersion)
      expect(reason?.message).toContain("npm install -g @openai/codex@latest")
      expect(fs.existsSync(path.join(fake.box, "log", "argv"))).toBe(false)
    }))

  it.live("a missing binary is a ConfigurationError with the install hint", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const codex = yield* client({ binary: path.join(fake.box, "no-such-codex") })
      const reason = reasonOf(yield* Effect.flip(codex.chat("hi")))
      expect(reason?._tag).toBe("ConfigurationError")
      expect(reason?.message).toContain("npm install -g @openai/codex")
    }))

  it.live("a failed turn's HTTP status wins over the exit code", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const codex = yield* client({
        binary: fake.binary,
        env: fake.env({
          exit: 1,
          events: [
            { type: "thread.started", thread_id: "t-f" },
            { type: "error", message: "Reconnecting... 1/5" },
            { type: "turn.failed", error: { message: "unexpected status 401 Unauthorized: bad key" } }
          ]
        })
      })
      const reason = reasonOf(yield* Effect.flip(codex.chat("hi")))
      expect(reason?._tag).toBe("AuthenticationError")
      expect(reason?.message).toContain("401")
    }))

  it.live("a non-zero exit without a failed turn is a ProcessError with the exit code and stderr's tail", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const codex = yield* client({
        binary: fake.binary,
        env: fake.env({ exit: 3, stderr: "fatal: config broken" })
      })
      const reason = reasonOf(yield* Effect.flip(codex.chat("hi")))
      expect(reason?._tag).toBe("ProcessError")
      expect(reason?.message).toBe("Codex CLI exited with code 3: fatal: config broken")
      expect(reason?._tag === "ProcessError" && reason.exitCode).toBe(3)
    }))

  it.live("a clean exit without turn.completed is an InvalidResponseError", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const codex = yield* client({
        binary: fake.binary,
        env: fake.env({ events: [{ type: "thread.started", thread_id: "t-x" }, { type: "turn.started" }] })
      })
      const reason = reasonOf(yield* Effect.flip(codex.chat("hi")))
      expect(reason?._tag).toBe("InvalidResponseError")
      expect(reason?.message).toBe("Codex CLI exited without completing the turn")
    }))

  it.live("a run past requestTimeout is a TimeoutError", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const codex = yield* client({
        binary: fake.binary,
        requestTimeout: "300 millis",
        killGrace: "100 millis",
        env: fake.env({ sleep: "30", events: completed("t-s", "late", usage) })
      })
      const reason = reasonOf(yield* Effect.flip(codex.chat("hi")))
      expect(reason?._tag).toBe("TimeoutError")
      expect(reason?.message).toContain("requestTimeout")
    }))

  it.live("with tools set, an answer given without ever reaching the bridge is refused", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const add = Tool.make("add", {
        description: "Adds two numbers",
        parameters: { a: Schema.Number, b: Schema.Number },
        handler: ({ a, b }) => Effect.succeed(a + b)
      })
      const codex = yield* client({
        binary: fake.binary,
        serverName: "mine",
        env: fake.env({ events: completed("t-b", "no tools used", usage) })
      })
      yield* codex.setTools([add])
      const reason = reasonOf(yield* Effect.flip(codex.chat("Please add")))
      expect(reason?._tag).toBe("ConfigurationError")
      expect(reason?.message).toContain("MCP server mine")
      const argv = fake.argv()
      expect(argv.find((a) => a.startsWith("mcp_servers.mine.url="))).toMatch(/^mcp_servers\.mine\.url="http:\/\//)
      expect(fake.childEnv()).toMatch(/^CODEX_ECB_BRIDGE_TOKEN=.+$/m)
      // Tools removed again: the running bridge is kept, the next run mounts nothing and may answer.
      yield* codex.setTools([])
      expect(yield* codex.chat("plain")).toBe("no tools used")
      expect(fake.argv().some((a) => a.startsWith("mcp_servers."))).toBe(false)
    }))

  it.live("a reported call of the bridge's tool counts as reaching it", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const add = Tool.make("add", {
        description: "Adds two numbers",
        parameters: { a: Schema.Number, b: Schema.Number },
        handler: ({ a, b }) => Effect.succeed(a + b)
      })
      const call = { id: "c1", type: "mcp_tool_call", server: "gtb", tool: "add", arguments: { a: 2, b: 3 } }
      const codex = yield* client({
        binary: fake.binary,
        env: fake.env({
          events: [
            { type: "thread.started", thread_id: "t-c" },
            { type: "item.started", item: { ...call, status: "in_progress" } },
            {
              type: "item.completed",
              item: { ...call, status: "completed", result: { content: [{ type: "text", text: "5" }] } }
            },
            { type: "item.completed", item: { id: "i1", type: "agent_message", text: "sum: 5" } },
            { type: "turn.completed", usage }
          ]
        })
      })
      yield* codex.setTools([add])
      expect(yield* codex.chat("Please add")).toBe("sum: 5")
    }))

  it.live("without binary it runs `codex` from the PATH it is given; loadSkills leaves skills alone", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const codex = yield* client({
        loadSkills: true,
        env: {
          ...fake.env({ events: completed("t-p", "found on PATH", usage) }),
          PATH: `${fake.box}:${process.env["PATH"] ?? ""}`
        }
      })
      // An empty tool set before any bridge starts none.
      yield* codex.setTools([])
      expect(yield* codex.chat("hi")).toBe("found on PATH")
      const argv = fake.argv().join("\n")
      expect(argv).not.toContain("skills.config")
      expect(argv).not.toContain("mcp_servers.")
    }))

  it.live("a turn without a thread id counts its totals as they are and leaves the session unset", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const codex = yield* client({
        binary: fake.binary,
        env: fake.env({ events: completed("t-z", "x", usage).filter((e) => e.type !== "thread.started") })
      })
      expect(yield* codex.chat("hi")).toBe("x")
      expect(yield* codex.sessionId).toEqual(Option.none())
      expect(yield* codex.usage).toMatchObject({ inputTokens: 100, cachedTokens: 40, outputTokens: 9 })
    }))

  it.live("resuming a thread with no rollout on disk counts the reported totals whole, then the difference", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const first = fake.env({ events: completed("t-far", "one", usage) })
      const codex = yield* client({ binary: fake.binary, resume: "t-far", env: first })
      expect(yield* codex.chat("hi")).toBe("one")
      expect(yield* codex.usage).toMatchObject({ inputTokens: 100, cachedTokens: 40, outputTokens: 9 })
      // The second turn of the same client: the stand-in reports the grown thread totals.
      fs.writeFileSync(
        first["FAKE_EVENTS"]!,
        completed("t-far", "two", { input_tokens: 130, cached_input_tokens: 50, output_tokens: 12 })
          .map((e) => JSON.stringify(e))
          .join("\n")
      )
      expect(yield* codex.chat("again")).toBe("two")
      expect(yield* codex.usage).toMatchObject({ inputTokens: 130, cachedTokens: 50, outputTokens: 12 })
    }))

  it.live("a non-zero exit with nothing on stderr names only the code", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const codex = yield* client({ binary: fake.binary, env: fake.env({ exit: 2 }) })
      const reason = reasonOf(yield* Effect.flip(codex.chat("hi")))
      expect(reason?.message).toBe("Codex CLI exited with code 2")
    }))

  it.live("a bridge that cannot start (a bad serverName) fails setTools with a ConfigurationError", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const codex = yield* client({ binary: fake.binary, serverName: "not a name!", env: fake.env({}) })
      const add = Tool.make("add", {
        description: "Adds two numbers",
        parameters: { a: Schema.Number, b: Schema.Number },
        handler: ({ a, b }) => Effect.succeed(a + b)
      })
      const error = yield* Effect.flip(codex.setTools([add]))
      const reason = reasonOf(error)
      expect(reason?._tag).toBe("ConfigurationError")
      expect(reason?.message).toContain("serverName")
    }))
})

describe("CodexCli.layerConfig", () => {
  const withEnv = (env: Record<string, string>) => ConfigProvider.layer(ConfigProvider.fromEnv({ env }))
  const chatHi = Effect.gen(function*() {
    const chat = yield* ChatClient
    return yield* chat.chat("hi")
  })

  it.live("builds a working client from Config values", () =>
    Effect.gen(function*() {
      const fake = yield* fakeCodex
      const answer = yield* chatHi.pipe(
        Effect.provide(
          CodexCli.layerFromEnv({ env: fake.env({ events: completed("t-l", "from env", usage) }) }).pipe(
            Layer.provide(withEnv({ CODEX_CLI_BINARY: fake.binary, CODEX_CLI_MODEL: "gpt-env" }))
          )
        )
      )
      expect(answer).toBe("from env")
      expect(fake.argv()).toContain("gpt-env")
    }))

  it.effect("fails building the layer with a ConfigError on a bad duration", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        chatHi.pipe(
          Effect.provide(
            CodexCli.layerFromEnv().pipe(Layer.provide(withEnv({ CODEX_CLI_REQUEST_TIMEOUT: "soonish" })))
          )
        )
      )
      expect(error._tag).toBe("ConfigError")
    }))
})
