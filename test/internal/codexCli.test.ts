/**
 * CodexCli's pure parts: the argv of a run (no prompt, no secret; the bridge pre-approved; skills
 * switched off), the JSONL events read into a turn, the skills found on disk, and what a failed
 * turn's message tells the caller.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Args from "../../src/internal/codexCli/args.ts"
import * as Events from "../../src/internal/codexCli/events.ts"
import * as Run from "../../src/internal/codexCli/run.ts"
import * as Skills from "../../src/internal/codexCli/skills.ts"
import * as CodexCli from "../../src/layers/CodexCli.ts"
import type { ChatEvent } from "../../src/services/ChatEvent.ts"

const run: Args.RunArgs = {
  serverName: "gtb",
  bridgeUrl: "http://127.0.0.1:4242/mcp",
  cwd: "/w",
  instructionsFile: undefined,
  schemaFile: "/r/schema.json",
  skillFiles: ["/h/skills/demo/SKILL.md"],
  threadId: undefined
}

describe("CodexCli internals", () => {
  it("builds an argv with no secret and the prompt read from stdin", () => {
    const args = Args.buildArgs({
      baseUrl: "http://127.0.0.1:1/v1",
      apiKey: Redacted.make("sk-secret"),
      maxRetries: 0
    }, run)
    expect(args.slice(0, 5)).toEqual([
      "exec",
      "--json",
      "--skip-git-repo-check",
      "--ignore-user-config",
      "--ignore-rules"
    ])
    expect(args.at(-1)).toBe("-")
    expect(args.join(" ")).not.toContain("sk-secret")
    expect(args).toContain(`mcp_servers.gtb.url="http://127.0.0.1:4242/mcp"`)
    expect(args).toContain(`mcp_servers.gtb.bearer_token_env_var="${Args.BridgeTokenVar}"`)
    expect(args).toContain(`mcp_servers.gtb.default_tools_approval_mode="approve"`)
    expect(args).toContain(`skills.config=[{path="/h/skills/demo/SKILL.md",enabled=false}]`)
    expect(args).toContain("project_doc_max_bytes=0")
    expect(args.slice(args.indexOf("--sandbox"), args.indexOf("--sandbox") + 2)).toEqual(["--sandbox", "read-only"])
    expect(args.slice(args.indexOf("--output-schema"), args.indexOf("--output-schema") + 2)).toEqual([
      "--output-schema",
      "/r/schema.json"
    ])
    expect(args).toContain(`model_provider="ecb"`)
    expect(args.find((a) => a.startsWith("model_providers.ecb="))).toBe(
      `model_providers.ecb={name="effect-chat-bridge",base_url="http://127.0.0.1:1/v1",wire_api="responses",` +
        `env_key="${Args.ApiKeyVar}",request_max_retries=0,stream_max_retries=0}`
    )
  })

  it("resumes a thread, loads skills on request and appends the caller's overrides last", () => {
    const args = Args.buildArgs(
      {
        loadSkills: true,
        disabledFeatures: ["shell_tool"],
        config: { web_search: `"disabled"` },
        sandbox: "workspace-write"
      },
      { ...run, bridgeUrl: undefined, threadId: "t-1" }
    )
    expect(args.slice(-3)).toEqual(["resume", "t-1", "-"])
    expect(args.join(" ")).not.toContain("skills.config")
    expect(args.join(" ")).not.toContain("mcp_servers")
    expect(args).not.toContain(`model_provider="ecb"`)
    expect(args.slice(-11)).toEqual([
      "--disable",
      "plugins",
      "--disable",
      "apps",
      "--disable",
      "shell_tool",
      "-c",
      `web_search="disabled"`,
      "resume",
      "t-1",
      "-"
    ])
    expect(Args.overrideArgs({ disabledFeatures: ["a"], config: { "x.y": "1" } })).toEqual([
      "--disable",
      "a",
      "-c",
      "x.y=1"
    ])
  })

  it.effect("reads the JSONL events into a turn and reports them as chat events", () =>
    Effect.gen(function*() {
      const seen: Array<ChatEvent> = []
      const reader = Events.makeReader((event) => Effect.sync(() => void seen.push(event)), "gtb")
      const lines = [
        { type: "thread.started", thread_id: "t-1" },
        { type: "item.completed", item: { id: "i0", type: "error", message: "Model metadata not found" } },
        { type: "turn.started" },
        {
          type: "item.started",
          item: {
            id: "i1",
            type: "mcp_tool_call",
            server: "gtb",
            tool: "add",
            arguments: { a: 2 },
            status: "in_progress"
          }
        },
        {
          type: "item.completed",
          item: {
            id: "i1",
            type: "mcp_tool_call",
            server: "gtb",
            tool: "add",
            arguments: { a: 2 },
            result: { content: [{ type: "text", text: "5" }] },
            error: null,
            status: "completed"
          }
        },
        {
          type: "item.started",
          item: { id: "i2", type: "command_execution", command: "echo hi", status: "in_progress" }
        },
        {
          type: "item.completed",
          item: { id: "i2", type: "command_execution", command: "echo hi", aggregated_output: "hi\n", exit_code: 0 }
        },
        { type: "item.completed", item: { id: "i3", type: "agent_message", text: "sum: 5" } },
        { type: "turn.completed", usage: { input_tokens: 30, cached_input_tokens: 10, output_tokens: 7 } }
      ]
      for (const line of [...lines.map((l) => JSON.stringify(l)), "not json"]) yield* reader.line(line)
      const turn = reader.turn()
      expect(turn).toMatchObject({ threadId: "t-1", text: "sum: 5", completed: true, failure: undefined })
      expect(turn.usage).toEqual({ inputTokens: 30, cachedInputTokens: 10, outputTokens: 7 })
      expect(seen.map((e) => e._tag)).toEqual([
        "ToolCallStart",
        "ToolCallEnd",
        "AgentToolStart",
        "AgentToolEnd",
        "TextDelta"
      ])
      expect(seen[0]).toMatchObject({ name: "add", arguments: { a: 2 } })
      expect(seen[1]).toMatchObject({ name: "add", result: "5", isError: false })
      expect(seen[3]).toMatchObject({ name: "shell", result: "hi\n", isError: false })
      // Only the CLI's own tools are agent activity.
      expect(turn.activity.map((e) => e.name)).toEqual(["shell", "shell"])
    }))

  it.effect("keeps turn.failed's message, or the last error when no turn completed", () =>
    Effect.gen(function*() {
      const failed = Events.makeReader(undefined, "gtb")
      yield* failed.line(JSON.stringify({ type: "error", message: "Reconnecting... 1/5" }))
      yield* failed.line(
        JSON.stringify({ type: "turn.failed", error: { message: "unexpected status 401 Unauthorized: bad key" } })
      )
      expect(failed.turn().failure).toBe("unexpected status 401 Unauthorized: bad key")
      const cut = Events.makeReader(undefined, "gtb")
      yield* cut.line(JSON.stringify({ type: "error", message: "stream disconnected" }))
      expect(cut.turn()).toMatchObject({ failure: "stream disconnected", completed: false })
    }))

  it("turns a failed turn's HTTP status into its reason", () => {
    expect(Run.failureReason("unexpected status 401 Unauthorized: bad key, url: http://x/v1/responses")._tag).toBe(
      "AuthenticationError"
    )
    expect(Run.failureReason("unexpected status 429 Too Many Requests")._tag).toBe("RateLimitError")
    expect(Run.failureReason("unexpected status 500 Internal Server Error")._tag).toBe("InternalProviderError")
    expect(Run.failureReason("something else")._tag).toBe("ProcessError")
  })

  it("finds every SKILL.md under the roots Codex reads, nested and in the working directory's parents", () => {
    const box = fs.mkdtempSync(path.join(os.tmpdir(), "ecb-codex-skills-"))
    try {
      const cwd = path.join(box, "repo", "sub")
      const files = [
        path.join(box, "codex", "skills", "a", "SKILL.md"),
        path.join(box, "codex", "skills", ".system", "b", "SKILL.md"),
        path.join(box, "repo", ".agents", "skills", "c", "SKILL.md"),
        path.join(cwd, ".codex", "skills", "group", "d", "SKILL.md")
      ]
      for (const file of files) {
        fs.mkdirSync(path.dirname(file), { recursive: true })
        fs.writeFileSync(file, "---\nname: x\ndescription: x\n---\n")
      }
      fs.mkdirSync(cwd, { recursive: true })
      const roots = Skills.roots(path.join(box, "codex"), path.join(box, "home"), cwd)
      expect(roots).toContain("/etc/codex/skills")
      expect(Skills.skillFiles(roots).filter((f) => f.startsWith(box))).toEqual([...files].sort())
    } finally {
      fs.rmSync(box, { recursive: true, force: true })
    }
  })

  it.effect("configFromEnv reads CODEX_CLI_* (the key redacted); overrides win", () =>
    Effect.gen(function*() {
      const options = yield* CodexCli.configFromEnv({ model: "gpt-given" }).pipe(
        Effect.provideService(
          ConfigProvider.ConfigProvider,
          ConfigProvider.fromEnv({
            env: {
              CODEX_CLI_MODEL: "gpt-env",
              CODEX_CLI_BASE_URL: "http://127.0.0.1:9/v1",
              CODEX_CLI_API_KEY: "sk-env",
              CODEX_CLI_REQUEST_TIMEOUT: "5 minutes"
            }
          })
        )
      )
      expect(options.model).toBe("gpt-given")
      expect(options.baseUrl).toBe("http://127.0.0.1:9/v1")
      expect(options.apiKey !== undefined && Redacted.value(options.apiKey)).toBe("sk-env")
      expect(String(options.apiKey)).not.toContain("sk-env")
      expect(options.requestTimeout).toBeDefined()
      expect(options.binary).toBeUndefined()
    }))

  it("compiles toolPolicy into the run's switches: before your own, the sandbox read-only when edits are off", () => {
    const compiled = Run.compilePolicy({ toolPolicy: { disabledTools: ["Edit", "Read"] } }, "gtb")
    assert(Result.isSuccess(compiled))
    const policy = compiled.success
    assert(policy !== undefined)
    expect(policy.sandbox).toBe("read-only")
    const args = Args.buildArgs({ sandbox: "workspace-write", disabledFeatures: ["goals"], toolPolicy: {} }, {
      ...run,
      policy
    })
    expect(args.slice(args.indexOf("--sandbox"), args.indexOf("--sandbox") + 2)).toEqual(["--sandbox", "read-only"])
    const disabled = args.flatMap((a, i) => (args[i - 1] === "--disable" ? [a] : []))
    expect(disabled.slice(0, 2)).toEqual(["plugins", "apps"])
    expect(disabled.at(-1)).toBe("goals")
    expect(disabled).toEqual(expect.arrayContaining([...policy.disabledFeatures]))
    const refused = Run.compilePolicy({ toolPolicy: { disabledTools: ["Bsh"], strict: true } }, "gtb")
    assert(Result.isFailure(refused))
    expect(refused.failure.reason._tag).toBe("ConfigurationError")
    expect(Run.compilePolicy({}, "gtb")).toEqual(Result.succeed(undefined))
  })
})
