import { describe, expect, it } from "@effect/vitest"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as References from "effect/References"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync
} from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import * as NodeSecretFile from "../../src/layers/NodeSecretFile.ts"
import * as NodeSubprocess from "../../src/layers/NodeSubprocess.ts"
import * as TestSubprocess from "../../src/layers/TestSubprocess.ts"
import * as ClaudeCodeCatalog from "../../src/registry/ClaudeCodeCatalog.ts"
import * as Registry from "../../src/registry/Registry.ts"
import * as ToolPolicy from "../../src/registry/ToolPolicy.ts"
import { ChatClient } from "../../src/services/ChatClient.ts"
import { SecretFile, SecretFileError, Write } from "../../src/services/SecretFile.ts"
import {
  NotFound,
  type RunOptions,
  type RunResult,
  SpawnFailed,
  SubprocessError,
  TimedOut
} from "../../src/services/Subprocess.ts"
import * as Tool from "../../src/services/Tool.ts"
import { stdinMessage, stdinPrompt } from "../support/stdinPrompt.ts"

const add = Tool.make("add", {
  description: "Adds",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

const init = (servers: ReadonlyArray<{ name: string; status: string }> = []) =>
  JSON.stringify({ type: "system", subtype: "init", session_id: "s", mcp_servers: servers })

const result = (fields: Record<string, unknown> = {}) =>
  JSON.stringify({
    type: "result",
    subtype: "success",
    is_error: false,
    result: "ok",
    session_id: "session-1",
    usage: { input_tokens: 3, output_tokens: 2, cache_read_input_tokens: 5, cache_creation_input_tokens: 1 },
    total_cost_usd: 0.25,
    permission_denials: [],
    ...fields
  })

const stdout = (lines: ReadonlyArray<string>) => lines.join("\n") + "\n"
const connected = [{ name: "gtb", status: "connected" }]

type Script = (options: RunOptions, index: number) => Effect.Effect<RunResult, never>

/**
 * A client on the scripted Subprocess and the real (temp-dir) SecretFile. The CLI version is given
 * (no `--version` call in the scripts) unless the test sets `cliVersion` itself.
 */
const withClient = <A, E>(
  script: Script | ReadonlyArray<TestSubprocess.Scripted>,
  options: ClaudeLocal.Options,
  body: (chat: ChatClient["Service"], calls: Effect.Effect<ReadonlyArray<RunOptions>>) => Effect.Effect<A, E>
) =>
  Effect.gen(function*() {
    const ctx = yield* Layer.build(
      ClaudeLocal.layer({ cliVersion: "2.1.332", ...options }).pipe(
        Layer.provideMerge(Layer.merge(TestSubprocess.layer(script), NodeSecretFile.layer()))
      )
    )
    const test = Context.get(ctx, TestSubprocess.TestSubprocess)
    return yield* body(Context.get(ctx, ChatClient), test.calls)
  }).pipe(Effect.scoped)

const ok = (lines: ReadonlyArray<string>): TestSubprocess.Scripted => ({ stdout: stdout(lines) })

describe("ClaudeLocal (scripted subprocess)", () => {
  it.live("a gated tool of an application server is never on the CLI's allow-list (issue 29.2)", () =>
    withClient([ok([init([{ name: "skills", status: "connected" }]), result()])], {
      mcpServers: { skills: { type: "http", url: "http://127.0.0.1:9/mcp" } },
      toolPolicy: {
        registry: Registry.unsafeMake([
          ...ClaudeCodeCatalog.descriptors,
          Registry.mcpTool({ server: "skills", wireName: "search_skills", category: "context", exposure: "internal" }),
          Registry.mcpTool({ server: "skills", wireName: "install_skill", category: "context", exposure: "gated" })
        ])
      }
    }, (chat, calls) =>
      Effect.gen(function*() {
        yield* chat.chat("hi")
        const [call] = yield* calls
        const allowed = call!.args[call!.args.indexOf("--allowedTools") + 1]!.split(",")
        expect(allowed).toEqual(["mcp__skills__search_skills"])
      })))

  it.live("no tools: strict MCP config, the policy's disallow-list, prompt on stdin", () =>
    withClient([ok([init(), result()])], { binary: "/opt/claude" }, (chat, calls) =>
      Effect.gen(function*() {
        expect(yield* chat.chat("-rf looks like a flag")).toBe("ok")
        const [call] = yield* calls
        expect(call!.command).toBe("/opt/claude")
        expect(stdinMessage(call!.stdin)).toEqual({ text: "-rf looks like a flag", verbatim: true })
        expect(call!.args.slice(0, 6)).toEqual([
          "-p",
          "--output-format",
          "stream-json",
          "--verbose",
          "--setting-sources=",
          "--strict-mcp-config"
        ])
        expect(call!.args).not.toContain("--mcp-config")
        expect(call!.args).not.toContain("--allowedTools")
        const disallowed = call!.args[call!.args.indexOf("--disallowedTools") + 1]!.split(",")
        // disabled tools and, headless, the interactive ones
        expect(disallowed).toEqual(
          expect.arrayContaining(["WebSearch", "WebFetch", "AskUserQuestion", "EnterPlanMode"])
        )
        // conditional worktree tools without a git workspace
        expect(disallowed).toEqual(expect.arrayContaining(["EnterWorktree", "ExitWorktree"]))
        expect(disallowed).not.toContain("Read")
      })))

  it.live("system prompt, model, permission mode and the agent's opt-outs become flags", () =>
    withClient([ok([init(), result()])], {
      systemPrompt: "Be brief.",
      model: "claude-sonnet-5",
      permissionMode: "acceptEdits",
      toolPolicy: { disabledTools: ["Bash", "mcp__docs__*"], conditions: { "workspace-has-git": true } }
    }, (chat, calls) =>
      Effect.gen(function*() {
        yield* chat.chat("hi")
        const args = (yield* calls)[0]!.args
        expect(args[args.indexOf("--system-prompt") + 1]).toBe("Be brief.")
        expect(args[args.indexOf("--model") + 1]).toBe("claude-sonnet-5")
        expect(args[args.indexOf("--permission-mode") + 1]).toBe("acceptEdits")
        const disallowed = args[args.indexOf("--disallowedTools") + 1]!.split(",")
        expect(disallowed).toEqual(expect.arrayContaining(["Bash", "BashOutput", "mcp__docs__*"]))
        // EnterWorktree needs a responder: a git workspace does not make it usable headless, and
        // its pair group takes ExitWorktree with it.
        expect(disallowed).toEqual(expect.arrayContaining(["EnterWorktree", "ExitWorktree"]))
      })))

  it.live("tools: a 0600 MCP config exists only while the CLI runs; tool flags on every call; --resume", () => {
    const seen: Array<{ path: string; mode: number; contents: string }> = []
    const script: Script = (options) =>
      Effect.sync(() => {
        const path = options.args[options.args.indexOf("--mcp-config") + 1]!
        seen.push({ path, mode: statSync(path).mode & 0o777, contents: readFileSync(path, "utf8") })
        return {
          exitCode: 0,
          stderr: "",
          stdout: stdout([init(connected), result({ session_id: `session-${seen.length}` })])
        }
      })
    return withClient(script, {}, (chat, calls) =>
      Effect.gen(function*() {
        yield* chat.setTools([add])
        yield* chat.chat("one")
        yield* chat.chat("two")
        const [first, second] = yield* calls
        for (const call of [first!, second!]) {
          expect(call.args).toContain("--strict-mcp-config")
          // The server form: claude 2.0.x does not match the wildcard `mcp__gtb__*`.
          expect(call.args[call.args.indexOf("--allowedTools") + 1]).toBe("mcp__gtb")
          expect(call.args.join(" ")).not.toMatch(/Bearer/)
        }
        expect(first!.args).not.toContain("--resume")
        expect(second!.args[second!.args.indexOf("--resume") + 1]).toBe("session-1")
        expect(seen.map((s) => s.mode)).toEqual([0o600, 0o600])
        for (const s of seen) {
          expect(existsSync(s.path)).toBe(false)
          const config = JSON.parse(s.contents)
          expect(config.mcpServers.gtb).toMatchObject({ type: "http", alwaysLoad: true })
          expect(config.mcpServers.gtb.headers.Authorization).toMatch(/^Bearer [A-Za-z0-9_-]{43}$/)
        }
        // Same bridge (URL) on both runs, each with a token of its own (revoked when the run ends).
        const [one, two] = seen.map((s) => JSON.parse(s.contents).mcpServers.gtb)
        expect(one.url).toBe(two.url)
        expect(one.headers.Authorization).not.toBe(two.headers.Authorization)
      }))
  })

  it.live("setTools([]) stops passing the bridge", () =>
    withClient([ok([init(connected), result()]), ok([init(), result()])], {}, (chat, calls) =>
      Effect.gen(function*() {
        yield* chat.setTools([add])
        yield* chat.chat("with")
        yield* chat.setTools([])
        yield* chat.chat("without")
        const [, second] = yield* calls
        expect(second!.args).not.toContain("--mcp-config")
        expect(second!.args).not.toContain("--allowedTools")
      })))

  it.live("an agent that disabled the bridge's server gets no bridge and a disallow entry", () =>
    withClient(
      [ok([init(), result()])],
      { toolPolicy: { disabledTools: ["mcp__gtb__*"] } },
      (chat, calls) =>
        Effect.gen(function*() {
          yield* chat.setTools([add])
          yield* chat.chat("hi")
          const args = (yield* calls)[0]!.args
          expect(args).not.toContain("--mcp-config")
          expect(args[args.indexOf("--disallowedTools") + 1]!.split(",")).toContain("mcp__gtb__*")
        })
    ))

  it.live("ask passes --json-schema and decodes structured_output (or the result text)", () =>
    withClient(
      [
        ok([init(), result({ structured_output: { n: 7 }, result: "{\"n\":7}" })]),
        ok([init(), result({ result: "{\"n\":8}" })]),
        ok([init(), result({ structured_output: { n: "x" } })])
      ],
      {},
      (chat, calls) =>
        Effect.gen(function*() {
          const N = Schema.Struct({ n: Schema.Number })
          expect(yield* chat.ask("n?", N)).toEqual({ n: 7 })
          expect(yield* chat.ask("n?", N)).toEqual({ n: 8 })
          expect((yield* Effect.flip(chat.ask("n?", N)))._tag).toBe("StructuredOutputError")
          const args = (yield* calls)[0]!.args
          expect(JSON.parse(args[args.indexOf("--json-schema") + 1]!)).toMatchObject({
            type: "object",
            required: ["n"]
          })
        })
    ))

  it.live("added text joins the next prompt and survives a failed run", () =>
    withClient(
      [
        { exitCode: 1, stderr: "boom" },
        ok([init(), result()])
      ],
      {},
      (chat, calls) =>
        Effect.gen(function*() {
          yield* chat.add("context")
          const error = yield* Effect.flip(chat.chat("first"))
          expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "ProcessError" } })
          expect(error.message).toContain("boom")
          yield* chat.chat("second")
          const [a, b] = yield* calls
          expect(stdinPrompt(a!.stdin)).toBe("context\n\nfirst")
          expect(stdinPrompt(b!.stdin)).toBe("context\n\nsecond")
          expect(b!.args).not.toContain("--resume")
        })
    ))

  it.live("usage is summed per run; the CLI's cumulative session cost is counted once", () =>
    withClient(
      [ok([init(), result()]), ok([init(), result({ total_cost_usd: 0.5 })])],
      {},
      (chat) =>
        Effect.gen(function*() {
          yield* chat.chat("a")
          yield* chat.chat("b")
          expect(yield* chat.usage).toMatchObject({
            inputTokens: 18,
            outputTokens: 4,
            cachedTokens: 10,
            costUsd: 0.5,
            known: true
          })
        })
    ))

  describe("error mapping", () => {
    const flipChat = (script: ReadonlyArray<TestSubprocess.Scripted>, options: ClaudeLocal.Options = {}) =>
      withClient(script, options, (chat) => Effect.flip(chat.chat("hi")))

    it.live("binary not found → config error that says how to install and log in", () =>
      Effect.gen(function*() {
        const e = yield* flipChat([
          new SubprocessError({ command: "claude", reason: new NotFound({ message: "not found" }) })
        ])
        expect(e).toMatchObject({ _tag: "ProviderError", reason: { _tag: "ConfigurationError" }, isRetryable: false })
        expect(e.message).toMatch(/Install Claude Code.*log in/)
      }))

    it.live("timeout → retryable timeout error naming requestTimeout, as for a kept-alive turn", () =>
      Effect.gen(function*() {
        const e = yield* flipChat([
          new SubprocessError({
            command: "claude",
            reason: new TimedOut({ timeoutMillis: 5, stderrTail: "", message: "timed out" })
          })
        ], { requestTimeout: "90 seconds" })
        expect(e).toMatchObject({ _tag: "ProviderError", reason: { _tag: "TimeoutError" }, isRetryable: true })
        expect(e.message).toBe(
          "The claude CLI did not finish the turn within 1m 30s and was stopped; " +
            "raise the requestTimeout option if turns need longer"
        )
      }))

    it.live("is_error result → error carrying the message and api_error_status", () =>
      Effect.gen(function*() {
        const e = yield* flipChat([
          ok([
            init(),
            result({
              is_error: true,
              subtype: "error_during_execution",
              result: "API Error: 529 overloaded",
              api_error_status: 529
            })
          ])
        ])
        expect(e).toMatchObject({
          _tag: "ProviderError",
          reason: { _tag: "InternalProviderError" },
          status: 529,
          isRetryable: true
        })
        expect(e.message).toContain("API Error: 529 overloaded")
        const auth = yield* flipChat([
          ok([init(), result({ is_error: true, result: "Invalid API key", api_error_status: 401 })])
        ])
        expect(auth).toMatchObject({ reason: { _tag: "AuthenticationError" }, status: 401, isRetryable: false })
        expect(auth.message).toContain("ANTHROPIC_API_KEY")
      }))

    it.live("permission denials → PermissionDeniedError keeping the answer, or the answer when allowed", () =>
      Effect.gen(function*() {
        const denied = ok([
          init(),
          result({ result: "I could not run it", permission_denials: [{ tool_name: "Bash", tool_use_id: "t1" }] })
        ])
        const e = yield* flipChat([denied])
        expect(e).toMatchObject({ _tag: "PermissionDeniedError", tools: ["Bash"], answer: "I could not run it" })
        // The allowed denial's warning is expected: kept off the test output.
        const answer = yield* withClient([denied], { allowPermissionDenials: true }, (chat) => chat.chat("hi")).pipe(
          Effect.provide(Logger.layer([]))
        )
        expect(answer).toBe("I could not run it")
      }))

    it.live("output without a result line, or not JSON → decode error", () =>
      Effect.gen(function*() {
        const e = yield* flipChat([ok(["this is not json", init()])])
        expect(e).toMatchObject({ _tag: "ProviderError", reason: { _tag: "InvalidResponseError" } })
        expect(e.message).toContain("this is not json")
      }))

    it.live("the bridge not connected in the init line → typed error, even with an answer", () =>
      Effect.gen(function*() {
        const e = yield* withClient(
          [ok([init([{ name: "gtb", status: "failed" }]), result()])],
          {},
          (chat) => Effect.andThen(chat.setTools([add]), Effect.flip(chat.chat("hi")))
        )
        expect(e._tag).toBe("ProviderError")
        expect(e.message).toContain("MCP server gtb: failed")
        const missing = yield* withClient(
          [ok([result()])],
          {},
          (chat) => Effect.andThen(chat.setTools([add]), Effect.flip(chat.chat("hi")))
        )
        expect(missing.message).toContain("not reported")
      }))

    it.live("empty prompt → EmptyPromptError without running anything", () =>
      withClient([], {}, (chat, calls) =>
        Effect.gen(function*() {
          expect((yield* Effect.flip(chat.chat(" ")))._tag).toBe("EmptyPromptError")
          expect(yield* calls).toEqual([])
        })))
  })
})

describe("ClaudeLocal with a stub claude script (real processes)", () => {
  it.live("debug logs show argv without the token or the prompt; the run sees the config file", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "ecb-stub-"))
      const stub = join(dir, "claude")
      // Echoes what it was given: the prompt from stdin, and whether the config file is readable.
      writeFileSync(
        stub,
        `#!/usr/bin/env node
const fs = require("node:fs")
const args = process.argv.slice(2)
const prompt = JSON.parse(fs.readFileSync(0, "utf8")).message.content
const i = args.indexOf("--mcp-config")
const cfg = i >= 0 ? JSON.parse(fs.readFileSync(args[i + 1], "utf8")) : null
console.log(JSON.stringify({ type: "system", subtype: "init", mcp_servers: cfg ? [{ name: "gtb", status: "connected" }] : [] }))
console.log(JSON.stringify({ type: "result", is_error: false, result: "prompt=" + prompt + " cfg=" + (cfg ? Object.keys(cfg.mcpServers) : "none"), session_id: "x" }))
`
      )
      chmodSync(stub, 0o755)
      const lines: Array<string> = []
      const capture = Logger.layer([
        Logger.make(({ message }) => {
          lines.push(Array.isArray(message) ? message.join(" ") : String(message))
        })
      ])
      const secret = "a very private prompt"
      const answer = yield* Effect.gen(function*() {
        const chat = yield* ChatClient
        yield* chat.setTools([add])
        return yield* chat.chat(secret)
      }).pipe(
        Effect.provide(
          ClaudeLocal.layer({ binary: stub, cwd: dir }).pipe(
            Layer.provide(NodeSubprocess.layer),
            Layer.provide(NodeSecretFile.layer({ directory: dir }))
          )
        ),
        Effect.provide(capture),
        Effect.provideService(References.MinimumLogLevel, "Debug")
      )
      rmSync(dir, { recursive: true, force: true })
      expect(answer).toBe(`prompt=${secret} cfg=gtb`)
      const argvLog = lines.find((l) => l.includes("--mcp-config"))
      expect(argvLog).toBeDefined()
      // The server form of the allow-list: claude 2.0.x does not match `mcp__gtb__*`.
      expect(argvLog).toContain(`"--allowedTools","mcp__gtb"`)
      for (const line of lines) {
        expect(line).not.toContain("Bearer")
        expect(line).not.toContain(secret)
      }
    }))
})

describe("ClaudeLocal: more failure paths", () => {
  it.live("any other subprocess failure (here a spawn error) is a process error with its message", () =>
    Effect.gen(function*() {
      const e = yield* withClient(
        [
          new SubprocessError({
            command: "claude",
            reason: new SpawnFailed({ message: "Cannot run claude: EMFILE: too many open files" })
          })
        ],
        {},
        (chat) => Effect.flip(chat.chat("hi"))
      )
      expect(e).toMatchObject({
        _tag: "ProviderError",
        reason: { _tag: "ProcessError" },
        message: "Cannot run claude: EMFILE: too many open files",
        isRetryable: false
      })
    }))

  it.live("chatStream: a bridge the CLI could not connect stops the run at the init line, before any text", () =>
    Effect.gen(function*() {
      const delta = JSON.stringify({
        type: "stream_event",
        event: { type: "content_block_delta", delta: { type: "text_delta", text: "answer without tools" } }
      })
      const { error, seen } = yield* withClient(
        [ok([init([{ name: "gtb", status: "failed" }]), delta, result()])],
        {},
        (chat) =>
          Effect.gen(function*() {
            yield* chat.setTools([add])
            const seen: Array<string> = []
            const error = yield* Effect.flip(
              Stream.runForEach(chat.chatStream("hi"), (e) => Effect.sync(() => seen.push(e._tag)))
            )
            return { error, seen }
          })
      )
      expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "ConfigurationError" } })
      expect(error.message).toContain("MCP server gtb: failed")
      expect(seen).toEqual([])
    }))

  it.live("a secret file that cannot be written (for the bridge's MCP config) is a config error; the CLI never runs", () =>
    Effect.gen(function*() {
      const failingSecrets = Layer.succeed(
        SecretFile,
        SecretFile.of({
          writeScoped: () =>
            Effect.fail(new SecretFileError({ reason: new Write({ path: "/tmp/secret", message: "disk full" }) }))
        })
      )
      const e = yield* Effect.gen(function*() {
        const ctx = yield* Layer.build(
          ClaudeLocal.layer({ cliVersion: "2.1.332" }).pipe(
            Layer.provideMerge(Layer.merge(TestSubprocess.layer([ok([init(connected), result()])]), failingSecrets))
          )
        )
        const chat = Context.get(ctx, ChatClient)
        yield* chat.setTools([add])
        const error = yield* Effect.flip(chat.chat("hi"))
        expect(yield* Context.get(ctx, TestSubprocess.TestSubprocess).calls).toEqual([])
        return error
      }).pipe(Effect.scoped)
      expect(e).toMatchObject({
        _tag: "ProviderError",
        reason: { _tag: "ConfigurationError" },
        message: "disk full",
        isRetryable: false
      })
    }))
})

describe("ClaudeLocal.layerFromEnv (stub claude script)", () => {
  it.live("reads CLAUDE_* settings into flags, runs in CLAUDE_CWD; options in code win", () =>
    Effect.gen(function*() {
      const dir = realpathSync(mkdtempSync(join(tmpdir(), "ecb-config-")))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const stub = join(dir, "claude")
      writeFileSync(
        stub,
        `#!/usr/bin/env node
console.log(JSON.stringify({ type: "system", subtype: "init", mcp_servers: [] }))
console.log(JSON.stringify({ type: "result", result: JSON.stringify({ args: process.argv.slice(2), cwd: process.cwd() }) }))
`
      )
      chmodSync(stub, 0o755)
      const config = ConfigProvider.fromEnv({
        env: {
          CLAUDE_BINARY: stub,
          CLAUDE_MODEL: "opus",
          CLAUDE_SYSTEM_PROMPT: "from env",
          CLAUDE_CWD: dir,
          CLAUDE_REQUEST_TIMEOUT: "30 seconds",
          CLAUDE_PERMISSION_MODE: "plan"
        }
      })
      const answer = yield* Effect.flatMap(ChatClient, (chat) => chat.chat("hi")).pipe(
        Effect.provide(
          ClaudeLocal.layerFromEnv({ systemPrompt: "from code", model: undefined }).pipe(
            Layer.provide(ConfigProvider.layer(config))
          )
        ),
        // The stub answers `--version` with no version: the warning that causes is expected.
        Effect.provide(Logger.layer([]))
      )
      const seen = JSON.parse(answer) as { args: Array<string>; cwd: string }
      expect(seen.cwd).toBe(dir)
      const flag = (name: string) => seen.args[seen.args.indexOf(name) + 1]
      expect(flag("--model")).toBe("opus")
      expect(flag("--system-prompt")).toBe("from code")
      expect(flag("--permission-mode")).toBe("plan")
    }).pipe(Effect.scoped))

  it.effect("a malformed CLAUDE_REQUEST_TIMEOUT is a ConfigError", () =>
    Effect.gen(function*() {
      const config = ConfigProvider.fromEnv({ env: { CLAUDE_REQUEST_TIMEOUT: "soon" } })
      const error = yield* Effect.flip(
        Layer.build(ClaudeLocal.layerFromEnv()).pipe(
          Effect.scoped,
          Effect.provideService(ConfigProvider.ConfigProvider, config)
        )
      )
      expect(error._tag).toBe("ConfigError")
      expect(String(error)).toContain("at [\"CLAUDE_REQUEST_TIMEOUT\"]")
    }))

  it.effect("CLAUDE_PERMISSION_MODE takes ToolPolicy.PermissionMode (manual included); another is a ConfigError naming the variable and the modes", () =>
    Effect.gen(function*() {
      const read = (mode: string) =>
        ClaudeLocal.configFromEnv().pipe(
          Effect.provideService(
            ConfigProvider.ConfigProvider,
            ConfigProvider.fromEnv({ env: { CLAUDE_PERMISSION_MODE: mode } })
          )
        )
      expect((yield* read("manual")).permissionMode).toBe("manual")
      const error = yield* Effect.flip(read("yolo"))
      expect(String(error)).toContain("\"plan\" | \"manual\"\n  at [\"CLAUDE_PERMISSION_MODE\"]")
    }))
})

describe("ClaudeLocal.layerConfig (stub claude script)", () => {
  it.live("takes the caller's Config values from any ConfigProvider; no CLAUDE_* variable is read", () =>
    Effect.gen(function*() {
      const dir = realpathSync(mkdtempSync(join(tmpdir(), "ecb-config-")))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const stub = join(dir, "claude")
      writeFileSync(
        stub,
        `#!/usr/bin/env node
console.log(JSON.stringify({ type: "system", subtype: "init", mcp_servers: [] }))
console.log(JSON.stringify({ type: "result", result: JSON.stringify({ args: process.argv.slice(2), cwd: process.cwd() }) }))
`
      )
      chmodSync(stub, 0o755)
      const settings = ConfigProvider.fromUnknown({
        agent: { binary: stub, model: "haiku", mode: "acceptEdits", workspace: dir },
        CLAUDE_MODEL: "opus",
        CLAUDE_PERMISSION_MODE: "plan"
      })
      const live = ClaudeLocal.layerConfig({
        binary: Config.String("binary").pipe(Config.nested("agent")),
        model: Config.String("model").pipe(Config.nested("agent")),
        permissionMode: Config.schema(ToolPolicy.PermissionMode, "mode").pipe(Config.nested("agent")),
        cwd: Config.String("workspace").pipe(Config.nested("agent")),
        cliVersion: Config.succeed("2.1.332")
      })
      const answer = yield* Effect.flatMap(ChatClient, (chat) => chat.chat("hi")).pipe(
        Effect.provide(live.pipe(Layer.provide(ConfigProvider.layer(settings))))
      )
      const seen = JSON.parse(answer) as { args: Array<string>; cwd: string }
      expect(seen.cwd).toBe(dir)
      const flag = (name: string) => seen.args[seen.args.indexOf(name) + 1]
      expect(flag("--model")).toBe("haiku")
      expect(flag("--permission-mode")).toBe("acceptEdits")
      const bad = ConfigProvider.fromUnknown({ agent: { mode: "yolo" } })
      const error = yield* Effect.flip(
        Layer.build(
          ClaudeLocal.layerConfig({
            permissionMode: Config.schema(ToolPolicy.PermissionMode, "mode").pipe(Config.nested("agent"))
          })
        ).pipe(Effect.scoped, Effect.provideService(ConfigProvider.ConfigProvider, bad))
      )
      expect(String(error)).toContain("at [\"agent\"][\"mode\"]")
    }).pipe(Effect.scoped))
})
