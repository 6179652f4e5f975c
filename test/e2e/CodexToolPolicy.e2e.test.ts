/**
 * The tool policy compiled for Codex CLI (`ToolPolicy.toCodexPolicy`), read back by the real
 * `@openai/codex` binary against the fake Responses API: the switches parse, the denied
 * built-ins are absent from the request's `tools`, the allowed ones present, the bridge's tools
 * offered except the one the agent opted out of, and an allowed bridge tool runs under
 * `codex exec` (approval policy `never`) once, its result reaching the model.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import * as NodeMcpBridge from "../../src/layers/NodeMcpBridge.ts"
import * as CodexDriftGuard from "../../src/registry/CodexDriftGuard.ts"
import * as ToolPolicy from "../../src/registry/ToolPolicy.ts"
import * as Tool from "../../src/services/Tool.ts"
import * as FakeResponses from "../support/FakeOpenAiResponses.ts"

const codex = path.join(
  path.dirname(createRequire(import.meta.url).resolve("@openai/codex/package.json")),
  "bin/codex.js"
)

interface Run {
  readonly exitCode: number | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * One `codex exec` run in its own `CODEX_HOME` and working directory, with an allow-listed
 * environment (no user config, rules or keys), stdin closed, the fake API as the model provider
 * and the bridge mounted with its bearer in the environment.
 */
const runCodex = (options: {
  readonly apiUrl: string
  readonly bridgeUrl: string
  readonly token: string
  readonly args: ReadonlyArray<string>
  readonly prompt: string
}) =>
  Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "codexpol-e2e-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  ).pipe(Effect.flatMap((dir) =>
    Effect.callback<Run>((resume) => {
      const home = path.join(dir, "home")
      const cwd = path.join(dir, "work")
      fs.mkdirSync(home)
      fs.mkdirSync(cwd)
      const child = execFile(
        process.execPath,
        [
          codex,
          "exec",
          "--json",
          "--skip-git-repo-check",
          "--ignore-user-config",
          "--ignore-rules",
          "--ephemeral",
          "-c",
          "model=\"gpt-fake\"",
          "-c",
          "model_provider=\"fake\"",
          "-c",
          `model_providers.fake={name="fake",base_url="${options.apiUrl}",wire_api="responses",env_key="FAKE_KEY"}`,
          "-c",
          `mcp_servers.gtb.url="${options.bridgeUrl}"`,
          "-c",
          "mcp_servers.gtb.bearer_token_env_var=\"GTB_TOKEN\"",
          ...options.args,
          options.prompt
        ],
        {
          cwd,
          env: {
            PATH: process.env["PATH"] ?? "",
            HOME: home,
            CODEX_HOME: home,
            TMPDIR: dir,
            FAKE_KEY: "fake-key",
            GTB_TOKEN: options.token
          },
          timeout: 120_000,
          encoding: "utf8"
        },
        (_error, stdout, stderr) => resume(Effect.succeed({ exitCode: child.exitCode, stdout, stderr }))
      )
      // `codex exec` waits on an open stdin; closed, it reads nothing.
      child.stdin?.end()
      return Effect.sync(() => child.kill("SIGKILL"))
    })
  ))

/** The tools of the fake's last request: built-ins by name, the bridge's as `mcp__gtb.<tool>`. */
const offered = (fake: FakeResponses.FakeResponses) => {
  const last = fake.responseRequests().at(-1)!
  return {
    builtins: CodexDriftGuard.toolNamesOfRequest(last.body),
    bridge: FakeResponses.toolNames(last).filter((n) => n.startsWith("mcp__gtb.")).sort()
  }
}

describe("ToolPolicy.toCodexPolicy with the real codex binary", () => {
  it.live(
    "the switches are read back: denied built-ins absent, allowed ones present, the bridge minus its opted-out tool, an allowed tool runs once",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const calls: Array<string> = []
        const tool = (name: string) =>
          Tool.make(name, {
            description: name,
            parameters: {},
            handler: () => Effect.sync(() => calls.push(name)).pipe(Effect.as(`${name}-result-7f3a`))
          })
        const fake = yield* FakeResponses.make((req) => {
          const outputs = FakeResponses.functionOutputs(req)
          if (outputs.length > 0) return { text: `done: ${outputs.map((o) => o.output).join(" ")}` }
          return FakeResponses.lastUserText(req).includes("call lookup")
            ? { functionCalls: [{ namespace: "mcp__gtb", name: "lookup", arguments: {} }] }
            : { text: "ok" }
        })
        const bridge = yield* NodeMcpBridge.make()
        yield* bridge.setTools([tool("lookup"), tool("secret")])
        const base = { apiUrl: fake.url, bridgeUrl: bridge.url, token: Redacted.value(bridge.token) }

        // Baseline: no policy. The CLI's defaults offer the shell, images, web search, subagents, goals.
        const plain = yield* runCodex({ ...base, args: [], prompt: "hello" })
        expect(plain.exitCode, plain.stderr).toBe(0)
        const before = offered(fake)
        expect(before.builtins).toEqual(
          expect.arrayContaining(["exec_command", "view_image", "web_search", "spawn_agent", "create_goal"])
        )
        expect(before.bridge).toEqual(["mcp__gtb.lookup", "mcp__gtb.secret"])

        // The agent's settings, in Claude Code names: Read off (→ view_image), the shell allowed,
        // one bridge tool off.
        const compiled = ToolPolicy.toCodexPolicy(
          { disabledTools: ["Read", "mcp__gtb__secret"], allowedTools: ["Bash"] },
          { mcpServers: [bridge.serverName] }
        )
        if (compiled._tag === "Failure") return yield* Effect.die(compiled.failure)
        const policy = compiled.success
        expect(policy.ignored).toEqual([])
        const run = yield* runCodex({ ...base, args: policy.args, prompt: "hello" })
        expect(run.exitCode, run.stderr).toBe(0)
        const after = offered(fake)
        for (const absent of ["view_image", "web_search", "request_permissions", "send_message_to_user_async"]) {
          expect(after.builtins, absent).not.toContain(absent)
        }
        expect(after.builtins).toEqual(
          expect.arrayContaining(["exec_command", "write_stdin", "request_user_input", "list_mcp_resources"])
        )
        expect(after.bridge).toEqual(["mcp__gtb.lookup"])

        // The default headless policy withholds the shell too: nothing but what cannot be removed.
        const bare = ToolPolicy.toCodexPolicy({}, { mcpServers: [bridge.serverName] })
        if (bare._tag === "Failure") return yield* Effect.die(bare.failure)
        const quiet = yield* runCodex({ ...base, args: bare.success.args, prompt: "hello" })
        expect(quiet.exitCode, quiet.stderr).toBe(0)
        const minimal = offered(fake)
        expect(minimal.builtins).not.toContain("exec_command")
        expect(minimal.builtins).not.toContain("write_stdin")
        expect(minimal.builtins.filter((n) => !bare.success.offeredTools.includes(n))).toEqual([])

        // An allowed bridge tool runs under `codex exec` (approval policy never): once, its result reaching the model.
        const turn = yield* runCodex({ ...base, args: policy.args, prompt: "call lookup" })
        expect(turn.exitCode, turn.stderr).toBe(0)
        expect(calls).toEqual(["lookup"])
        const answer = fake.responseRequests().at(-1)!
        expect(FakeResponses.functionOutputs(answer).map((o) => o.output).join("\n")).toContain("lookup-result-7f3a")
        expect(turn.stdout).toContain("done: ")
      })),
    { timeout: 300_000 }
  )
})
