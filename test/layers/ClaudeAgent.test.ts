/**
 * ClaudeAgent over a scripted stand-in for the Agent SDK (test/support/fakeAgentSdk.ts): how the
 * provider builds the query's options and reads SDK failures. The real binary is in test/e2e.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as os from "node:os"
import * as ClaudeAgent from "../../src/layers/ClaudeAgent.ts"
import * as ToolPolicy from "../../src/registry/ToolPolicy.ts"
import { ChatClient } from "../../src/services/ChatClient.ts"
import * as Sdk from "../support/fakeAgentSdk.ts"

const init = (sessionId = "s-1") => ({ type: "system", subtype: "init", session_id: sessionId, mcp_servers: [] })
const result = (fields: Record<string, unknown> = {}) => ({
  type: "result",
  subtype: "success",
  is_error: false,
  result: "ok",
  session_id: "s-1",
  ...fields
})

const client = (options: ClaudeAgent.Options = {}) =>
  ClaudeAgent.make({ sdkSpecifier: Sdk.specifier, killGrace: "100 millis", ...options })

describe("ClaudeAgent (scripted SDK)", () => {
  it.effect("an executable older than client_composed refuses a prompt it would interpret, before any query", () =>
    Effect.gen(function*() {
      Sdk.script(async function*() {
        yield init()
        yield result()
      })
      const dir = fs.mkdtempSync(`${os.tmpdir()}/ecb-old-claude-`)
      const old = `${dir}/claude`
      fs.writeFileSync(old, "#!/bin/sh\necho '2.0.0 (Claude Code)'\n", { mode: 0o755 })
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
      const before = Sdk.calls().length
      const chat = yield* client({ pathToClaudeCodeExecutable: old })
      const error = yield* Effect.flip(chat.chat("Read @secret.txt"))
      expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "ConfigurationError" } })
      expect(error.message).toContain("2.1.248")
      expect(Sdk.calls().length).toBe(before)
      expect(yield* chat.chat("plain text")).toBe("ok")
      expect(Sdk.calls().at(-1)!.options).toMatchObject({ verbatimPrompts: true })
      const trusted = yield* client({ pathToClaudeCodeExecutable: old, trustedPrompts: true })
      expect(yield* trusted.chat("Read @secret.txt")).toBe("ok")
      expect(Sdk.calls().at(-1)!.options).toMatchObject({ verbatimPrompts: false })
    }))

  it.effect("builds the query's options from its own; resumes the session; ask sets the output format", () =>
    Effect.gen(function*() {
      Sdk.script(async function*({ options }) {
        yield init()
        yield result(
          options["outputFormat"] === undefined ? { result: "hello" } : { structured_output: { n: 3 }, result: "{}" }
        )
      })
      const cwd = fs.realpathSync(os.tmpdir())
      const chat = yield* client({
        model: "sonnet",
        systemPrompt: "be brief",
        cwd,
        pathToClaudeCodeExecutable: process.execPath,
        permissionMode: "plan",
        env: { EXTRA_FOR_CLI: "1", PATH: undefined }
      })
      expect(yield* chat.chat("hi")).toBe("hello")
      expect(yield* chat.ask("how many?", Schema.Struct({ n: Schema.Number }))).toEqual({ n: 3 })
      const [first, second] = Sdk.calls()
      expect(first!.prompt).toBe("hi")
      expect(first!.options).toMatchObject({
        model: "sonnet",
        systemPrompt: "be brief",
        cwd,
        pathToClaudeCodeExecutable: process.execPath,
        permissionMode: "plan",
        strictMcpConfig: true,
        settingSources: [],
        mcpServers: {}
      })
      expect(first!.options["resume"]).toBeUndefined()
      expect(first!.options["outputFormat"]).toBeUndefined()
      // On for every query: the stall watchdog tells a long answer from a silent run by them.
      expect(first!.options["includePartialMessages"]).toBe(true)
      const env = first!.options["env"] as Record<string, string>
      expect(env["EXTRA_FOR_CLI"]).toBe("1")
      expect(env["PATH"]).toBeUndefined()
      expect(second!.options).toMatchObject({ resume: "s-1", outputFormat: { type: "json_schema" } })
      expect(Sdk.closed()).toBe(2)
    }))

  it.effect("application MCP servers go over stdin (initialize) unless extraOptions says argv", () =>
    Effect.gen(function*() {
      Sdk.script(async function*() {
        yield init()
        yield result()
      })
      const app = { type: "http" as const, url: "http://127.0.0.1:1/mcp", headers: { authorization: "Bearer t" } }
      yield* (yield* client({ mcpServers: { app } })).chat("hi")
      yield* (yield* client({ mcpServers: { app }, extraOptions: { mcpServersDelivery: "argv" } })).chat("hi")
      const [byDefault, overridden] = Sdk.calls()
      expect(byDefault!.options).toMatchObject({ mcpServersDelivery: "initialize", mcpServers: { app } })
      expect(overridden!.options).toMatchObject({ mcpServersDelivery: "argv", mcpServers: { app } })
    }))

  it.effect("an SDK that throws before any result is a process error carrying the CLI's stderr", () =>
    Effect.gen(function*() {
      Sdk.script(async function*({ spawn }) {
        yield init()
        await spawn("process.stderr.write('fatal: disk full\\n'); process.exit(1)")
        throw new Error("Claude Code process exited with code 1")
      })
      const chat = yield* client()
      yield* chat.add("kept")
      const error = yield* Effect.flip(chat.chat("hi"))
      expect(error).toMatchObject({
        _tag: "ProviderError",
        provider: "claude-agent",
        reason: { _tag: "ProcessError" },
        isRetryable: false
      })
      expect(error.message).toBe(
        "The claude CLI failed: Claude Code process exited with code 1 (stderr: fatal: disk full)"
      )
      // A throw that is not an Error is reported too, and the added text is still pending.
      Sdk.script(async function*() {
        yield init()
        throw "plain string"
      })
      const again = yield* Effect.flip(chat.chat("again"))
      expect(again.message).toBe("The claude CLI failed: plain string")
      expect(Sdk.calls()[0]!.prompt).toBe("kept\n\nagain")
    }))

  it.effect("an SDK that throws after an error result: the result line decides (status, retryable)", () =>
    Effect.gen(function*() {
      Sdk.script(async function*() {
        yield init()
        yield result({ is_error: true, api_error_status: 529, result: "Overloaded" })
        throw new Error("Claude Code returned an error result")
      })
      const error = yield* Effect.flip((yield* client()).chat("hi"))
      expect(error).toMatchObject({
        _tag: "ProviderError",
        reason: { _tag: "InternalProviderError" },
        status: 529,
        isRetryable: true
      })
      expect(error.message).toContain("Overloaded")
    }))

  it.effect("a query that ends without a result line is a process error, with the stderr when there is some", () =>
    Effect.gen(function*() {
      Sdk.script(async function*() {
        yield init()
        yield { type: "assistant", message: { content: [] } }
      })
      const chat = yield* client()
      const bare = yield* Effect.flip(chat.chat("hi"))
      expect(bare).toMatchObject({ reason: { _tag: "ProcessError" }, message: "The claude CLI ended without a result" })

      Sdk.script(async function*({ spawn }) {
        await spawn("process.stderr.write('  session limit reached  ')")
        yield init()
      })
      const withStderr = yield* Effect.flip(chat.chat("hi"))
      expect(withStderr.message).toBe("The claude CLI ended without a result: session limit reached")
    }))

  it.live("a query that never finishes times out (retryable) and is closed", () =>
    Effect.gen(function*() {
      Sdk.script(async function*({ ended }) {
        yield init()
        await ended
      })
      const chat = yield* client({ requestTimeout: "300 millis" })
      const error = yield* Effect.flip(chat.chat("hi"))
      expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "TimeoutError" }, isRetryable: true })
      expect(error.message).toBe(
        "The claude CLI did not finish the turn within 300ms and was stopped; " +
          "raise the requestTimeout option if turns need longer"
      )
      expect(Sdk.closed()).toBe(1)
    }))

  it.effect("chatStream asks for partial messages and reports their text deltas", () =>
    Effect.gen(function*() {
      Sdk.script(async function*() {
        yield init()
        yield {
          type: "stream_event",
          event: { type: "content_block_delta", delta: { type: "text_delta", text: "Hel" } }
        }
        yield {
          type: "stream_event",
          event: { type: "content_block_delta", delta: { type: "text_delta", text: "lo" } }
        }
        yield result({ result: "Hello" })
      })
      const chat = yield* client()
      const events = yield* Stream.runCollect(chat.chatStream("hi"))
      const texts = [...events].flatMap((e) => (e._tag === "TextDelta" ? [e.text] : []))
      expect(texts).toEqual(["Hel", "lo"])
      expect([...events].at(-1)).toMatchObject({ _tag: "Complete", text: "Hello" })
      expect(Sdk.calls()[0]!.options["includePartialMessages"]).toBe(true)
    }))

  it.effect("keepAlive: turns share one streaming-input query; an error result ends it; the next resumes", () =>
    Effect.gen(function*() {
      // Answers each user message from the streaming input; "fail" gets an error result.
      Sdk.script(async function*({ prompt }) {
        yield init()
        for await (const message of prompt as AsyncIterable<{ message: { content: string } }>) {
          const text = message.message.content
          yield text === "fail"
            ? result({ is_error: true, api_error_status: 500, result: "boom" })
            : result({ result: `echo ${text}` })
        }
      })
      const chat = yield* client({ keepAlive: true })
      expect(yield* chat.chat("one")).toBe("echo one")
      expect(yield* chat.chat("two")).toBe("echo two")
      expect(Sdk.calls().length).toBe(1)
      expect(typeof Sdk.calls()[0]!.prompt).toBe("object")
      expect(Sdk.calls()[0]!.options["resume"]).toBeUndefined()
      expect(Sdk.closed()).toBe(0)
      const error = yield* Effect.flip(chat.chat("fail"))
      expect(error).toMatchObject({
        _tag: "ProviderError",
        reason: { _tag: "InternalProviderError" },
        status: 500,
        isRetryable: true
      })
      expect(Sdk.closed()).toBe(1)
      expect(yield* chat.chat("three")).toBe("echo three")
      expect(Sdk.calls().length).toBe(2)
      expect(Sdk.calls()[1]!.options).toMatchObject({ resume: "s-1", includePartialMessages: true })
    }))

  it.effect("keepAlive: a query that cannot start is a typed error, and the next turn tries again", () =>
    Effect.gen(function*() {
      Sdk.script(async function*() {
        yield result()
      })
      const chat = yield* client({ keepAlive: true, pathToClaudeCodeExecutable: "/no/such/claude" })
      const error = yield* Effect.flip(chat.chat("hi"))
      expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "ConfigurationError" } })
      expect(yield* Effect.flip(chat.chat("hi"))).toMatchObject({ reason: { _tag: "ConfigurationError" } })
      expect(Sdk.calls().length).toBe(0)
    }))
})

describe("ClaudeAgent.layerFromEnv", () => {
  it.effect("reads CLAUDE_* settings; options given in code win over the environment", () =>
    Effect.gen(function*() {
      Sdk.script(async function*() {
        yield init()
        yield result()
      })
      const cwd = fs.realpathSync(os.tmpdir())
      const config = ConfigProvider.fromUnknown({
        CLAUDE_MODEL: "opus",
        CLAUDE_SYSTEM_PROMPT: "from env",
        CLAUDE_CWD: cwd,
        CLAUDE_REQUEST_TIMEOUT: "1 minute",
        CLAUDE_PERMISSION_MODE: "acceptEdits"
      })
      const answer = yield* Effect.flatMap(ChatClient, (chat) => chat.chat("hi")).pipe(
        Effect.provide(
          ClaudeAgent.layerFromEnv({ sdkSpecifier: Sdk.specifier, systemPrompt: "from code", model: undefined }).pipe(
            Layer.provide(ConfigProvider.layer(config))
          )
        )
      )
      expect(answer).toBe("ok")
      expect(Sdk.calls()[0]!.options).toMatchObject({
        model: "opus",
        systemPrompt: "from code",
        cwd,
        permissionMode: "acceptEdits"
      })
    }))

  it.effect("an unknown permission mode is a ConfigError", () =>
    Effect.gen(function*() {
      const config = ConfigProvider.fromUnknown({ CLAUDE_PERMISSION_MODE: "yolo" })
      const error = yield* Effect.flip(
        Layer.build(ClaudeAgent.layerFromEnv({ sdkSpecifier: Sdk.specifier })).pipe(
          Effect.scoped,
          Effect.provide(ConfigProvider.layer(config))
        )
      )
      expect(error._tag).toBe("ConfigError")
      // The CLI's `manual` is no Agent SDK mode: the error names the variable and the SDK's modes.
      const manual = yield* Effect.flip(
        ClaudeAgent.configFromEnv().pipe(
          Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({ CLAUDE_PERMISSION_MODE: "manual" })))
        )
      )
      expect(String(manual)).toContain("\"dontAsk\" | \"plan\"\n  at [\"CLAUDE_PERMISSION_MODE\"]")
    }))
})

describe("ClaudeAgent.layerConfig", () => {
  it.effect("takes the caller's Config values; no CLAUDE_* variable is read", () =>
    Effect.gen(function*() {
      Sdk.script(async function*() {
        yield init()
        yield result()
      })
      const cwd = fs.realpathSync(os.tmpdir())
      const settings = ConfigProvider.fromUnknown({
        agent: { model: "haiku", workspace: cwd, mode: "plan" },
        CLAUDE_MODEL: "opus",
        CLAUDE_PERMISSION_MODE: "acceptEdits"
      })
      const live = ClaudeAgent.layerConfig({
        model: Config.String("model").pipe(Config.nested("agent")),
        cwd: Config.String("workspace").pipe(Config.nested("agent")),
        permissionMode: Config.schema(ToolPolicy.AgentSdkPermissionMode, "mode").pipe(Config.nested("agent")),
        sdkSpecifier: Config.succeed(Sdk.specifier)
      })
      const answer = yield* Effect.flatMap(ChatClient, (chat) => chat.chat("hi")).pipe(
        Effect.provide(live.pipe(Layer.provide(ConfigProvider.layer(settings))))
      )
      expect(answer).toBe("ok")
      expect(Sdk.calls()[0]!.options).toMatchObject({ model: "haiku", cwd, permissionMode: "plan" })
    }))
})
