/**
 * The tool policy compiled for Gemini CLI (`ToolPolicy.toGeminiPolicy`), read back by the real
 * `@google/gemini-cli` binary against the fake Gemini API: the `--policy` TOML parses, the denied
 * built-ins are absent from the request's `functionDeclarations`, the allowed ones present, and
 * the bridge's tools are visible in `-p` except the one the agent opted out of. And one agent's
 * settings object driving ClaudeLocal, gemini and CodexCli (its `toolPolicy` option) alike.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import * as CodexCli from "../../src/layers/CodexCli.ts"
import * as NodeMcpBridge from "../../src/layers/NodeMcpBridge.ts"
import * as NodeSubprocess from "../../src/layers/NodeSubprocess.ts"
import * as CodexCliCatalog from "../../src/registry/CodexCliCatalog.ts"
import * as CodexDriftGuard from "../../src/registry/CodexDriftGuard.ts"
import * as GeminiCliCatalog from "../../src/registry/GeminiCliCatalog.ts"
import * as ToolPolicy from "../../src/registry/ToolPolicy.ts"
import * as Tool from "../../src/services/Tool.ts"
import { sandbox } from "../support/claudeCli.ts"
import { localSession } from "../support/claudeClients.ts"
import * as FakeGemini from "../support/FakeGemini.ts"
import * as FakeMessages from "../support/FakeMessagesApi.ts"
import * as FakeResponses from "../support/FakeOpenAiResponses.ts"

const gemini = path.join(
  path.dirname(createRequire(import.meta.url).resolve("@google/gemini-cli/package.json")),
  "bundle/gemini.js"
)

const tool = (name: string) =>
  Tool.make(name, { description: name, parameters: {}, handler: () => Effect.succeed(name) })

interface Run {
  readonly exitCode: number | null
  readonly stderr: string
}

/**
 * One `gemini -p` run in its own home and working directory, with an allow-listed environment:
 * nothing of the user's settings, no telemetry, the fake API on loopback.
 */
const runGemini = (options: {
  readonly apiUrl: string
  readonly mcpServers: Record<string, unknown>
  readonly args: ReadonlyArray<string>
}) =>
  Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "gempol-e2e-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  ).pipe(Effect.flatMap((dir) =>
    Effect.callback<Run>((resume) => {
      const home = path.join(dir, "home")
      const cwd = path.join(dir, "work")
      fs.mkdirSync(path.join(home, ".gemini"), { recursive: true })
      fs.mkdirSync(cwd)
      const settings = {
        security: { auth: { selectedType: "gemini-api-key" } },
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
        general: { disableAutoUpdate: true, disableUpdateNag: true },
        mcpServers: options.mcpServers
      }
      fs.writeFileSync(path.join(home, ".gemini", "settings.json"), JSON.stringify(settings), { mode: 0o600 })
      const args = options.args.map((a) => a.replace("{dir}", dir))
      const child = execFile(
        process.execPath,
        [gemini, "-p", "hello", "-o", "json", "-m", "gemini-2.5-flash", "--skip-trust", ...args],
        {
          cwd,
          env: {
            PATH: process.env["PATH"] ?? "",
            HOME: home,
            GEMINI_CLI_HOME: home,
            TMPDIR: dir,
            GOOGLE_GEMINI_BASE_URL: options.apiUrl,
            GEMINI_API_KEY: "fake-key"
          },
          timeout: 120_000,
          encoding: "utf8"
        },
        (_error, _stdout, stderr) => resume(Effect.succeed({ exitCode: child.exitCode, stderr }))
      )
      return Effect.sync(() => child.kill("SIGKILL"))
    })
  ))

const declared = (fake: FakeGemini.FakeGemini) =>
  (fake.generateRequests().at(-1)?.body.tools ?? []).flatMap((t) => t.functionDeclarations.map((d) => d.name))

describe("ToolPolicy.toGeminiPolicy with the real gemini binary", () => {
  it.live(
    "the policy file is read back: denied built-ins absent, allowed ones present, the bridge visible but the opted-out tool",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const fake = yield* FakeGemini.make(() => ({ text: "ok" }))
        const bridge = yield* NodeMcpBridge.make()
        yield* bridge.setTools([tool("lookup"), tool("secret")])
        const entry = {
          httpUrl: bridge.url,
          headers: { Authorization: `Bearer ${Redacted.value(bridge.token)}` },
          timeout: 30_000
        }
        // Baseline: no policy. The CLI's defaults: read-only built-ins and web search offered, the
        // shell and the bridge's (unconfirmed) tools removed in -p.
        const plain = yield* runGemini({ apiUrl: fake.url, mcpServers: { gtb: entry }, args: [] })
        expect(plain.exitCode, plain.stderr).toBe(0)
        const before = declared(fake)
        expect(before).toEqual(expect.arrayContaining(["read_file", "glob", "google_web_search"]))
        expect(before).not.toContain("run_shell_command")
        expect(before.filter((n) => n.includes("lookup"))).toEqual([])

        const compiled = ToolPolicy.toGeminiPolicy(
          { disabledTools: ["Read", "mcp__gtb__secret"], allowedTools: ["Bash"] },
          { mcpServers: [bridge.serverName] }
        )
        if (compiled._tag === "Failure") return yield* Effect.die(compiled.failure)
        const policy = compiled.success
        expect(policy.ignored).toEqual([])
        const policyFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "gempol-policy-")), "policy.toml")
        yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(path.dirname(policyFile), { recursive: true })))
        fs.writeFileSync(policyFile, policy.policyToml, { mode: 0o600 })
        const run = yield* runGemini({
          apiUrl: fake.url,
          mcpServers: { gtb: { ...entry, ...policy.mcpServers["gtb"] } },
          args: ["--policy", policyFile, "--allowed-mcp-server-names", policy.allowedMcpServerNames.join(",")]
        })
        expect(run.exitCode, run.stderr).toBe(0)
        expect(run.stderr).not.toMatch(/TOML parsing failed|Schema validation failed|Unrecognized tool name/)
        const after = declared(fake)
        // Opted out (Read → read_file, read_many_files), the catalog's disabled web tools, and the
        // interactive plan-mode tools of a headless run: absent.
        for (const absent of ["read_file", "read_many_files", "google_web_search", "web_fetch", "enter_plan_mode"]) {
          expect(after, absent).not.toContain(absent)
        }
        // Allowed: the shell (auto-approved through Bash, which -p otherwise removes) and the defaults left on.
        expect(after).toEqual(expect.arrayContaining(["run_shell_command", "glob", "grep_search", "list_directory"]))
        // The bridge: visible in -p through the allow rule, without the opted-out tool.
        expect(after.filter((n) => n.includes("lookup"))).toHaveLength(1)
        expect(after.filter((n) => n.includes("secret"))).toEqual([])
      })),
    { timeout: 300_000 }
  )

  it.live(
    "one agent's settings drive ClaudeLocal, gemini and CodexCli: each CLI gets the equivalent restriction",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const settings = { disabledTools: ["Read", "Grep", "mcp__gtb__secret"], allowedTools: ["Bash"] }
        const tools = [tool("lookup"), tool("secret")]

        // Claude Code, through ClaudeLocal and the real claude binary.
        const messages = yield* FakeMessages.make(() => ({ text: "ok" }))
        const box = yield* sandbox(messages.url)
        const { chat, session } = yield* localSession(box, {
          requestTimeout: "120 seconds",
          allowPermissionDenials: true,
          toolPolicy: settings
        })
        yield* chat.setTools(tools)
        expect(yield* chat.chat("hi")).toBe("ok")
        // claude 2.1.335 defers most built-ins behind ToolSearch: what it may use is what the run
        // did not disallow; what the first request shows up front is checked too.
        const claudeDenied = new Set((yield* session.toolPolicy).disallowedTools)
        const claude = (messages.messageRequests()[0]!.body.tools ?? []).map((t) => t.name)

        // Gemini CLI, with the same settings compiled by toGeminiPolicy.
        const fake = yield* FakeGemini.make(() => ({ text: "ok" }))
        const bridge = yield* NodeMcpBridge.make()
        yield* bridge.setTools(tools)
        const compiled = ToolPolicy.toGeminiPolicy(settings, { mcpServers: [bridge.serverName] })
        if (compiled._tag === "Failure") return yield* Effect.die(compiled.failure)
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gempol-policy-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true })))
        fs.writeFileSync(path.join(dir, "policy.toml"), compiled.success.policyToml, { mode: 0o600 })
        const run = yield* runGemini({
          apiUrl: fake.url,
          mcpServers: {
            gtb: {
              httpUrl: bridge.url,
              headers: { Authorization: `Bearer ${Redacted.value(bridge.token)}` },
              ...compiled.success.mcpServers["gtb"]
            }
          },
          args: ["--policy", path.join(dir, "policy.toml"), "--allowed-mcp-server-names", "gtb"]
        })
        expect(run.exitCode, run.stderr).toBe(0)
        const gemini = declared(fake)

        // The same restriction on both: opted out, auto-approved, the bridge minus its opted-out tool.
        for (const name of ["Read", "Grep", "Bash", "Glob", "Edit"]) {
          const equivalents = GeminiCliCatalog.equivalentsOf(name)
          expect(equivalents.length, name).toBeGreaterThan(0)
          const onClaude = !claudeDenied.has(name)
          for (const g of equivalents) expect(gemini.includes(g), `${name} → ${g}`).toBe(onClaude)
        }
        expect([...claudeDenied]).toEqual(expect.arrayContaining(["Read", "Grep", "Edit", "mcp__gtb__secret"]))
        expect(claude).not.toContain("Read")
        expect(claude).toContain("Bash")
        expect(claude).toContain("mcp__gtb__lookup")
        expect(claude).not.toContain("mcp__gtb__secret")
        expect(gemini.filter((n) => n.includes("lookup"))).toHaveLength(1)
        expect(gemini.filter((n) => n.includes("secret"))).toEqual([])

        // Codex CLI, through CodexCli and the real codex binary: the same object as its toolPolicy
        // (each turn compiles it with toCodexPolicy; compiled here too, to read what it decided).
        const responses = yield* FakeResponses.make(() => ({ text: "ok" }))
        const codexPolicy = ToolPolicy.toCodexPolicy(settings, { mcpServers: ["gtb"] })
        if (codexPolicy._tag === "Failure") return yield* Effect.die(codexPolicy.failure)
        expect(codexPolicy.success.ignored).toEqual([])
        const codexClient = yield* CodexCli.make({
          binary: path.resolve("node_modules/.bin/codex"),
          model: "gpt-fake",
          baseUrl: responses.url,
          apiKey: Redacted.make("test-key"),
          maxRetries: 0,
          toolPolicy: settings
        }).pipe(Effect.provide(NodeSubprocess.layer))
        yield* codexClient.setTools(tools)
        expect(yield* codexClient.chat("hi")).toBe("ok")
        const codexRequest = responses.responseRequests().at(-1)!
        const codex = CodexDriftGuard.toolNamesOfRequest(codexRequest.body)
        // Read → view_image off, Bash → exec_command on, as on Claude Code; Edit (withheld there)
        // → apply_patch, which no switch removes: the read-only sandbox refuses its writes.
        for (const name of ["Read", "Bash"]) {
          const equivalents = CodexCliCatalog.equivalentsOf(name)
          expect(equivalents.length, name).toBeGreaterThan(0)
          for (const c of equivalents) expect(codex.includes(c), `${name} → ${c}`).toBe(!claudeDenied.has(name))
        }
        expect(codex).not.toContain("view_image")
        expect(codex).toContain("exec_command")
        expect(CodexCliCatalog.equivalentsOf("Edit")).toEqual(["apply_patch"])
        expect(codexPolicy.success.sandboxMode).toBe("read-only")
        // Grep has no Codex counterpart: nothing to turn off.
        expect(CodexCliCatalog.equivalentsOf("Grep")).toEqual([])
        const codexBridge = FakeResponses.toolNames(codexRequest).filter((n) => n.startsWith("mcp__gtb."))
        expect(codexBridge).toEqual(["mcp__gtb.lookup"])
      })),
    { timeout: 300_000 }
  )
})
