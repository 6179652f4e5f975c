/**
 * The shared Claude Code options against the real `claude` binary and the fake Messages API, on
 * both providers: isolation from user settings, resume and fork, maxTurns, maxBudgetUsd (kept-alive
 * or not), appendSystemPrompt,
 * canUseTool, an application MCP server next to the bridge, agent tool events, `ask` with a UUID.
 */
import { expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { existsSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import type * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import * as NodeMcpBridge from "../../src/layers/NodeMcpBridge.ts"
import * as ClaudeCodeOptions from "../../src/services/ClaudeCodeOptions.ts"
import * as Tool from "../../src/services/Tool.ts"
import { claudeProcessesIn, loggingBinary, type Sandbox, sandbox } from "../support/claudeCli.ts"
import { agentSession, cmdlineRecordingLookup, localSession } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

const add = Tool.make("add", {
  description: "Adds two numbers",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

type Kind = "local" | "agent"

type ClientOptions = ClaudeCodeOptions.ClaudeCodeOptions & {
  readonly toolPolicy?: ClaudeLocal.ToolPolicyInput
  readonly keepAlive?: boolean
  /** The claude executable to start (a `loggingBinary`); default: the pinned binary. */
  readonly executable?: string
}

/** A client on `kind` in `box`, with its session. */
const clientIn = (kind: Kind, box: Sandbox, { executable, ...options }: ClientOptions = {}) =>
  kind === "local"
    // The version is given, so that the only starts of `executable` are runs.
    ? localSession(box, executable === undefined ? options : { ...options, binary: executable, cliVersion: "2.1.335" })
    : agentSession(box, executable === undefined ? options : { ...options, pathToClaudeCodeExecutable: executable })

/** The `--max-budget-usd` a CLI was started with (`=value` from ClaudeLocal, a separate argument from the SDK). */
const budgetOf = (start: string) => {
  const value = /--max-budget-usd[= ](\S+)/.exec(start)?.[1]
  return value === undefined ? undefined : Number(value)
}

const systemText = (req: Fake.FakeRequest) => JSON.stringify(req.body.system ?? "")
const allUserText = (req: Fake.FakeRequest) => JSON.stringify(req.body.messages ?? [])

for (const kind of ["local", "agent"] as const) {
  describeWithClaude(`Claude Code options on ${kind === "local" ? "ClaudeLocal" : "ClaudeAgent"} (real binary)`, () => {
    it.live("user settings (a hook) are not applied by default; settingSources: ['user'] applies them", () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(() => ({ text: "hi" }))
        const box = yield* sandbox(api.url)
        const marker = join(box.dir, "hook-ran")
        const hook = { type: "command", command: `touch ${marker}` }
        writeFileSync(
          join(box.env["CLAUDE_CONFIG_DIR"]!, "settings.json"),
          JSON.stringify({ hooks: { UserPromptSubmit: [{ hooks: [hook] }] } })
        )
        const isolated = yield* clientIn(kind, box)
        expect(yield* isolated.chat.chat("hello")).toBe("hi")
        expect(existsSync(marker)).toBe(false)
        const opted = yield* clientIn(kind, box, { settingSources: ["user"] })
        expect(yield* opted.chat.chat("hello")).toBe("hi")
        expect(existsSync(marker)).toBe(true)
      }))

    it.live("resume by id continues the history; forkSession gives a new id with the old history", () =>
      Effect.gen(function*() {
        const api = yield* Fake.make((req) => ({ text: `echo ${Fake.lastUserText(req).split("\n").at(-1)}` }))
        const box = yield* sandbox(api.url)
        const first = yield* clientIn(kind, box)
        expect(yield* first.session.sessionId).toEqual(Option.none())
        yield* first.chat.chat("remember the word PELICAN")
        const id = Option.getOrThrow(yield* first.session.sessionId)

        const resumed = yield* clientIn(kind, box, { resume: id })
        expect(yield* resumed.session.sessionId).toEqual(Option.some(id))
        yield* resumed.chat.chat("which word?")
        expect(allUserText(api.messageRequests().at(-1)!)).toContain("PELICAN")
        expect(yield* resumed.session.sessionId).toEqual(Option.some(id))

        const forked = yield* clientIn(kind, box, { resume: id, forkSession: true })
        yield* forked.chat.chat("and now?")
        expect(allUserText(api.messageRequests().at(-1)!)).toContain("PELICAN")
        const forkId = Option.getOrThrow(yield* forked.session.sessionId)
        expect(forkId).not.toBe(id)
        // The fork continues in its own session from then on.
        yield* forked.chat.chat("still there?")
        expect(yield* forked.session.sessionId).toEqual(Option.some(forkId))
      }))

    it.live("maxTurns: a run that wants more turns fails with RunLimitError carrying the usage", () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(() => ({
          text: "Looking…",
          toolUses: [{ name: "Bash", input: { command: "echo again", description: "loop" } }]
        }))
        const box = yield* sandbox(api.url)
        const { chat } = yield* clientIn(kind, box, { maxTurns: 1 })
        const error = yield* Effect.flip(chat.chat("loop forever"))
        expect(error).toMatchObject({ _tag: "RunLimitError", limit: "maxTurns" })
        if (error._tag === "RunLimitError") {
          expect(error.usage.known).toBe(true)
          expect(error.usage.outputTokens).toBeGreaterThan(0)
          expect(error.answer).toContain("Looking")
        }
        expect((yield* chat.usage).outputTokens).toBeGreaterThan(0)
      }))

    // The CLI counts only its own process's spend: a kept CLI used to run on over turns (its
    // total) and a fresh one per turn started from 0 each time. Both must bound the conversation.
    for (const keepAlive of [false, true]) {
      it.live(`maxBudgetUsd bounds the conversation's total cost (keepAlive: ${keepAlive})`, () =>
        Effect.gen(function*() {
          const api = yield* Fake.make((req) => ({
            text: `You said: ${Fake.lastUserText(req).split("\n").at(-1)}`,
            usage: { input_tokens: 1000, output_tokens: 500 }
          }))
          const box = yield* sandbox(api.url)
          // One plain turn's cost, as a client without a budget counts it.
          const probeScope = yield* Scope.make()
          const probe = yield* clientIn(kind, box, { keepAlive }).pipe(Scope.provide(probeScope))
          expect(yield* probe.chat.chat("measure")).toBe("You said: measure")
          const turnCost = (yield* probe.chat.usage).costUsd!
          expect(turnCost).toBeGreaterThan(0)
          yield* Scope.close(probeScope, Exit.void)

          const cli = loggingBinary(box)
          const { chat } = yield* clientIn(kind, box, {
            keepAlive,
            maxBudgetUsd: 2.5 * turnCost,
            executable: cli.path
          })
          expect(yield* chat.chat("one")).toBe("You said: one")
          expect(yield* chat.chat("two")).toBe("You said: two")
          const third = yield* Effect.flip(chat.chat("three"))
          expect(third).toMatchObject({ _tag: "RunLimitError", limit: "maxBudgetUsd" })
          expect((yield* chat.usage).costUsd).toBeCloseTo(3 * turnCost, 9)
          // The budget each CLI got: a kept one the whole budget once (not restarted as it shrank),
          // fresh ones what was left at each turn.
          // Runs, not the one `--version` probe of a ClaudeAgent given its own executable.
          const runs = () => cli.starts().filter((start) => start !== "--version")
          const budgets = runs().map(budgetOf)
          expect(budgets.length).toBe(keepAlive ? 1 : 3)
          for (const [i, budget] of budgets.entries()) expect(budget).toBeCloseTo((2.5 - i) * turnCost, 9)

          const requests = api.messageRequests().length
          const fourth = yield* Effect.flip(chat.chat("four"))
          expect(fourth).toMatchObject({ _tag: "RunLimitError", limit: "maxBudgetUsd", answer: "" })
          if (fourth._tag === "RunLimitError") expect(fourth.usage.known).toBe(false)
          // Refused before running: no CLI started, no model request, nothing more spent.
          expect(runs().length).toBe(budgets.length)
          expect(api.messageRequests().length).toBe(requests)
          expect(claudeProcessesIn(box.cwd)).toEqual([])
          expect((yield* chat.usage).costUsd).toBeCloseTo(3 * turnCost, 9)
        }))
    }

    it.live("appendSystemPrompt reaches the request, after Claude Code's own prompt", () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(() => ({ text: "ok" }))
        const box = yield* sandbox(api.url)
        const { chat } = yield* clientIn(kind, box, {
          appendSystemPrompt: "Always answer in Latin."
        })
        yield* chat.chat("hi")
        const system = systemText(api.messageRequests()[0]!)
        expect(system).toContain("Always answer in Latin.")
        expect(system).toContain("Claude")
      }))

    it.live("canUseTool: a deny reaches the model as the tool's error; an allow with changed input runs that input", () =>
      Effect.gen(function*() {
        const api = yield* Fake.make((req) => {
          const results = Fake.toolResults(req)
          if (results.length === 0) {
            const command = Fake.lastUserText(req).includes("deny")
              ? "mkdir denied && echo no"
              : "mkdir one && echo original"
            return { toolUses: [{ name: "Bash", input: { command, description: "make a dir" } }] }
          }
          return { text: `Tool said: ${results[0]!.content}` }
        })
        const box = yield* sandbox(api.url)
        const asked: Array<ClaudeCodeOptions.PermissionRequest> = []
        const { chat } = yield* clientIn(kind, box, {
          canUseTool: (request) =>
            Effect.sync(() => {
              asked.push(request)
              const command = String(request.input["command"])
              return command.includes("denied")
                ? ClaudeCodeOptions.deny("Not in this workspace")
                : ClaudeCodeOptions.allow({ ...request.input, command: "mkdir changed && echo changed" })
            })
        })
        expect(yield* chat.chat("please deny")).toContain("Not in this workspace")
        expect(existsSync(join(box.cwd, "denied"))).toBe(false)
        expect(yield* chat.chat("please allow")).toBe("Tool said: changed")
        expect(existsSync(join(box.cwd, "changed"))).toBe(true)
        expect(existsSync(join(box.cwd, "one"))).toBe(false)
        expect(asked.map((r) => r.toolName)).toEqual(["Bash", "Bash"])
        // The permission tool is not the model's to call.
        for (const req of api.messageRequests()) {
          expect((req.body.tools ?? []).map((t) => t.name).filter((n) => n.includes("permission"))).toEqual([])
        }
      }))

    it.live("an application MCP server is mounted and called next to the bridge; the policy can unmount it", () =>
      Effect.gen(function*() {
        const warnings: Array<string> = []
        const onWarning = (warning: Error & { code?: string }) => warnings.push(warning.code ?? warning.name)
        process.on("warning", onWarning)
        yield* Effect.addFinalizer(() => Effect.sync(() => process.off("warning", onWarning)))
        // What the CLI's command line says while it calls the application's server.
        const { cmdlines, tool: lookup } = cmdlineRecordingLookup(() => box.cwd, (city) => `${city}: 545000 people`)
        const app = yield* NodeMcpBridge.make({ serverName: "app", tools: [lookup] })
        const appServer = {
          type: "http" as const,
          url: app.url,
          headers: app.mcpConfig.mcpServers["app"]!.headers,
          alwaysLoad: true
        }
        const api = yield* Fake.make((req) => {
          const results = Fake.toolResults(req)
          if (results.length === 0 && (req.body.tools ?? []).some((t) => t.name === "mcp__app__lookup")) {
            return {
              toolUses: [
                { name: "mcp__app__lookup", input: { city: "Lisbon" } },
                { name: "mcp__gtb__add", input: { a: 2, b: 40 } }
              ]
            }
          }
          return { text: results.length === 0 ? "no tools" : results.map((r) => r.content).join(" | ") }
        })
        const box = yield* sandbox(api.url)
        const { chat } = yield* clientIn(kind, box, { mcpServers: { app: appServer } })
        yield* chat.setTools([add])
        expect(yield* chat.chat("Lisbon and 2+40")).toBe("Lisbon: 545000 people | 42")
        // The server's bearer token never was on the CLI's command line, where other users can read it.
        expect(cmdlines.length).toBeGreaterThan(0)
        for (const cmdline of cmdlines) expect(cmdline).not.toContain(Redacted.value(app.token))
        // The Agent SDK does not warn about a deprecated way of passing the servers.
        yield* Effect.sleep("10 millis")
        expect(warnings.filter((code) => code.startsWith("CLAUDE_SDK_"))).toEqual([])
        const off = yield* clientIn(kind, box, {
          mcpServers: { app: appServer },
          toolPolicy: { disabledTools: ["mcp__app__*"] }
        })
        expect(yield* off.chat.chat("Lisbon?")).toBe("no tools")
      }))

    it.live("chatStream reports built-in tool activity as AgentTool events, apart from your tools' events; chat too", () =>
      Effect.gen(function*() {
        const api = yield* Fake.make((req) => {
          const results = Fake.toolResults(req)
          if (results.length === 0) {
            return {
              toolUses: [
                { name: "Bash", input: { command: "echo from-bash", description: "echo" } },
                { name: "mcp__gtb__add", input: { a: 1, b: 2 } }
              ]
            }
          }
          return { text: "done" }
        })
        const box = yield* sandbox(api.url)
        // Bash asks before each call, so a headless run offers it only when something approves it.
        const { chat, session } = yield* clientIn(kind, box, { toolPolicy: { allowedTools: ["Bash"] } })
        yield* chat.setTools([add])
        const events = yield* Stream.runCollect(chat.chatStream("run both"))
        const streamed = events.filter((e) => e._tag === "AgentToolStart" || e._tag === "AgentToolEnd")
        expect(yield* session.lastActivity).toEqual(streamed)
        // The non-streaming result reports the same activity.
        expect(yield* chat.chat("once more")).toBe("done")
        expect((yield* session.lastActivity).map((e) => `${e._tag}:${e.name}`)).toEqual([
          "AgentToolStart:Bash",
          "AgentToolEnd:Bash"
        ])
        const agentStart = events.find((e) => e._tag === "AgentToolStart")
        expect(agentStart).toMatchObject({ name: "Bash", input: { command: "echo from-bash" } })
        expect(events.find((e) => e._tag === "AgentToolEnd")).toMatchObject({
          name: "Bash",
          result: "from-bash",
          isError: false
        })
        expect(events.filter((e) => e._tag === "ToolCallStart").map((e) => e._tag === "ToolCallStart" && e.name))
          .toEqual(["add"])
        expect(events.find((e) => e._tag === "ToolCallEnd")).toMatchObject({ name: "add", result: "3" })
        expect(events.at(-1)).toMatchObject({ _tag: "Complete", text: "done" })
      }))

    it.live("ask with a Schema.UUID field and a date: the format keywords survive the CLI", () =>
      Effect.gen(function*() {
        // Effect 4 spells Effect 3's Schema.UUID and (string-encoded) Schema.Date this way.
        const Ticket = Schema.Struct({
          id: Schema.String.check(Schema.isUUID()),
          opened: Schema.DateFromString,
          title: Schema.String
        })
        const id = "123e4567-e89b-12d3-a456-426614174000"
        const api = yield* Fake.make((req) =>
          (req.body.tools ?? []).some((t) => t.name === "StructuredOutput")
            ? {
              toolUses: [{
                name: "StructuredOutput",
                input: { id, opened: "2024-05-01T10:00:00.000Z", title: "Broken build" }
              }]
            }
            : { text: "no schema" }
        )
        const box = yield* sandbox(api.url)
        const { chat } = yield* clientIn(kind, box)
        const ticket = yield* chat.ask("The latest ticket?", Ticket)
        expect(ticket.id).toBe(id)
        expect(ticket.opened.toISOString()).toBe("2024-05-01T10:00:00.000Z")
        const schemaSent = api.messageRequests()[0]!.body.tools!.find((t) => t.name === "StructuredOutput")!
        expect(JSON.stringify(schemaSent.input_schema)).toContain("\"format\":\"uuid\"")
      }))
  })
}
