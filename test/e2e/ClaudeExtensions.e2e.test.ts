/**
 * Claude Code's extension points as typed options against the real `claude` binary and the fake
 * Messages API, on both providers: `thinking`, the `tools` list, `skills`, `plugins` and `sandbox`
 * as the CLI received them (its argv, its settings, the model requests); a plugin's MCP server
 * started only when the plugin asks for it; a subagent that never gets a tool the policy denies.
 */
import { expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { cpSync, existsSync } from "node:fs"
import { join, resolve } from "node:path"
import type * as ClaudeCodeOptions from "../../src/services/ClaudeCodeOptions.ts"
import { loggingBinary, type Sandbox, sandbox } from "../support/claudeCli.ts"
import { agentSession, localSession, recordingSecretFile } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

type Kind = "local" | "agent"

/** A model that takes a fixed thinking budget (the CLI's default model thinks adaptively). */
const budgetModel = "claude-sonnet-4-5-20250929"

/** The fixture plugin, copied into the sandbox: its MCP server leaves `mounted` there when started. */
const pluginIn = (box: Sandbox) => {
  const path = join(box.dir, "plugin")
  cpSync(resolve("test/e2e/fixtures/plugin"), path, { recursive: true })
  return { path, mounted: join(path, "mounted") }
}

/** A client on `kind` started through a logging wrapper, and the settings files it wrote (ClaudeLocal). */
const clientIn = (
  kind: Kind,
  box: Sandbox,
  options: ClaudeCodeOptions.ClaudeCodeOptions & {
    readonly model?: string
    readonly toolPolicy?: { readonly disabledTools?: ReadonlyArray<string> }
  }
) => {
  const cli = loggingBinary(box)
  const files = recordingSecretFile(box)
  const session = kind === "local"
    ? localSession(box, { ...options, binary: cli.path, cliVersion: "2.1.332" }, { secretFile: files.layer })
    : agentSession(box, { ...options, pathToClaudeCodeExecutable: cli.path })
  return Effect.map(session, (client) => ({
    ...client,
    // The runs, not a `--version` probe.
    starts: () => cli.starts().filter((start) => start !== "--version"),
    written: files.written
  }))
}

const toolNames = (req: Fake.FakeRequest) => (req.body.tools ?? []).map((t) => t.name)

/** Waits a little for a file a child process creates (the CLI starts MCP servers beside the turn). */
const appears = (path: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 50 && !existsSync(path); i++) yield* Effect.sleep("100 millis")
    return existsSync(path)
  })

for (const kind of ["local", "agent"] as const) {
  describeWithClaude(`Claude Code extension options on ${kind === "local" ? "ClaudeLocal" : "ClaudeAgent"}`, () => {
    it.live("thinking, the tools list, skills, a plugin and the sandbox reach the CLI; denied tools stay out", () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(() => ({ text: "ok" }))
        const box = yield* sandbox(api.url)
        const plugin = pluginIn(box)
        const client = yield* clientIn(kind, box, {
          model: budgetModel,
          thinking: { type: "enabled", budgetTokens: 2048 },
          tools: ["Read", "Grep", "Bash"],
          toolPolicy: { disabledTools: ["Bash"] },
          skills: ["fixture-plugin:greet"],
          plugins: [{ path: plugin.path }],
          sandbox: {
            enabled: true,
            // This machine may lack bubblewrap; the settings are what is checked here.
            failIfUnavailable: false,
            network: { allowedDomains: ["example.com"] },
            filesystem: { denyRead: ["/secret"] }
          }
        })
        expect(yield* client.chat.chat("hello")).toBe("ok")
        const request = api.messageRequests()[0]!
        expect(request.body["thinking"]).toMatchObject({ type: "enabled", budget_tokens: 2048 })
        expect(toolNames(request)).toEqual(expect.arrayContaining(["Read", "Grep"]))
        for (const absent of ["Bash", "Edit", "Write"]) expect(toolNames(request)).not.toContain(absent)
        const [start] = client.starts()
        expect(start).toContain(`--plugin-dir-no-mcp=${plugin.path}`)
        expect(start).toContain("Skill(fixture-plugin:greet)")
        expect(start).toContain("--strict-mcp-config")
        // ClaudeLocal writes the sandbox into its 0600 settings file; the SDK inlines its settings.
        const settings = kind === "local" ? client.written.find((w) => w.includes("\"sandbox\"")) ?? "" : start!
        expect(settings).toContain("\"allowedDomains\":[\"example.com\"]")
        expect(settings).toContain("\"denyRead\":[\"/secret\"]")
        // The plugin's MCP server was never started.
        expect(yield* appears(plugin.mounted).pipe(Effect.timeout("1 second"), Effect.orElseSucceed(() => false)))
          .toBe(false)
        // The policy's verdict on the tools list is reported like an opt-out.
        const policy = yield* client.session.toolPolicy
        expect(policy.ignored).toEqual([expect.objectContaining({ kind: "denied", entry: "tools: Bash" })])
        expect(policy.allowedTools).toContain("Skill(fixture-plugin:greet)")
      }))

    it.live("a plugin's MCP server starts only with skipMcpDiscovery: false", () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(() => ({ text: "ok" }))
        const box = yield* sandbox(api.url)
        const plugin = pluginIn(box)
        const client = yield* clientIn(kind, box, { plugins: [{ path: plugin.path, skipMcpDiscovery: false }] })
        expect(yield* client.chat.chat("hello")).toBe("ok")
        expect(client.starts()[0]).toContain(`--plugin-dir=${plugin.path}`)
        expect(yield* appears(plugin.mounted)).toBe(true)
      }))

    it.live("a subagent's definition reaches the model, and its denied tool is not offered to it", () =>
      Effect.gen(function*() {
        const subagentPrompt = "You are the reviewer subagent."
        const isSubagent = (req: Fake.FakeRequest) => JSON.stringify(req.body.system ?? "").includes(subagentPrompt)
        const api = yield* Fake.make((req) => {
          if (isSubagent(req)) return { text: "looks fine" }
          // The subagent runs in the background: its result comes later, as a task notification.
          if (JSON.stringify(req.body.messages ?? []).includes("looks fine")) return { text: "reviewed" }
          if (Fake.toolResults(req).length > 0) return { text: "waiting for the reviewer" }
          return {
            toolUses: [{
              name: "Agent",
              input: { subagent_type: "reviewer", description: "Review", prompt: "Review the code" }
            }]
          }
        })
        const box = yield* sandbox(api.url)
        const client = yield* clientIn(kind, box, {
          toolPolicy: { disabledTools: ["Bash"] },
          agents: {
            reviewer: { description: "Reviews code for bugs", prompt: subagentPrompt, tools: ["Read", "Grep", "Bash"] }
          }
        })
        yield* client.chat.chat("review please")
        const main = api.messageRequests()[0]!
        // The main agent is told about the subagent (its name and description).
        expect(JSON.stringify(main.body)).toContain("Reviews code for bugs")
        const sub = api.messageRequests().find(isSubagent)
        expect(sub).toBeDefined()
        expect(toolNames(sub!)).toEqual(expect.arrayContaining(["Read", "Grep"]))
        expect(toolNames(sub!)).not.toContain("Bash")
        const policy = yield* client.session.toolPolicy
        expect(policy.ignored).toEqual([
          expect.objectContaining({ kind: "denied", entry: "agents.reviewer.tools: Bash" })
        ])
      }))
  })
}
