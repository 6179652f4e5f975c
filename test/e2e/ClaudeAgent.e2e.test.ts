import { expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { readlinkSync } from "node:fs"
import * as NodeMcpBridge from "../../src/layers/NodeMcpBridge.ts"
import * as ClaudeCodeCatalog from "../../src/registry/ClaudeCodeCatalog.ts"
import * as Registry from "../../src/registry/Registry.ts"
import * as Tool from "../../src/services/Tool.ts"
import { claudeBinary, claudeProcessesIn, listeningSockets, sandbox, socketInodesOf } from "../support/claudeCli.ts"
import { agentClient, agentSession, cmdlineRecordingLookup } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

const add = Tool.make("add", {
  description: "Adds two numbers",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.succeed(a + b)
})
const broken = Tool.make("broken", {
  description: "Always fails",
  parameters: {},
  handler: () => Effect.fail(new Error("the database is on fire"))
})

const toolNames = (req: Fake.FakeRequest) => (req.body.tools ?? []).map((t) => t.name)

describeWithClaude("ClaudeAgent with the SDK's real claude binary", () => {
  it.live("the model calls an in-process tool over the control channel; its result reaches the model", () =>
    Effect.gen(function*() {
      const seen: Array<Array<string>> = []
      const api = yield* Fake.make((req) => {
        const results = Fake.toolResults(req)
        if (results.length === 0) return { toolUses: [{ name: "mcp__gtb__add", input: { a: 2, b: 40 } }] }
        return { text: `The sum is ${results[0]!.content}.` }
      })
      const box = yield* sandbox(api.url)
      const chat = yield* agentClient(box)
      const watched = Tool.make("add", {
        description: "Adds two numbers",
        parameters: { a: Schema.Number, b: Schema.Number },
        handler: ({ a, b }) =>
          Effect.sync(() => {
            // While the CLI waits for this call: which processes run it, from which binary.
            seen.push(claudeProcessesIn(box.cwd).map((pid) => readlinkSync(`/proc/${pid}/exe`)))
            return a + b
          })
      })
      yield* chat.setTools([watched, broken])
      const answer = yield* chat.chat("What is 2 + 40? Use the add tool.")
      expect(answer).toBe("The sum is 42.")
      const calls = api.messageRequests()
      expect(calls.length).toBe(2)
      // alwaysLoad: both tools are in the very first request, each with its own JSON Schema.
      expect(toolNames(calls[0]!)).toEqual(expect.arrayContaining(["mcp__gtb__add", "mcp__gtb__broken"]))
      const served = calls[0]!.body.tools!.find((t) => t.name === "mcp__gtb__add")!
      expect(served.input_schema).toMatchObject({ type: "object", required: ["a", "b"] })
      expect(Fake.toolResults(calls[1]!)).toEqual([expect.objectContaining({ content: "42", is_error: false })])
      // The SDK's own binary ran the turn, and it is gone once the turn returned.
      expect(seen[0]!.length).toBeGreaterThan(0)
      expect(seen[0]).toContain(claudeBinary)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
      const usage = yield* chat.usage
      expect(usage.known).toBe(true)
      expect(usage.outputTokens).toBeGreaterThan(0)
    }))

  it.live("chatStream reports text, the in-process tool call, usage and the final answer", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((req) => {
        const results = Fake.toolResults(req)
        if (results.length === 0) return { toolUses: [{ name: "mcp__gtb__add", input: { a: 1, b: 2 } }] }
        return { text: `The sum is ${results[0]!.content}.` }
      })
      const box = yield* sandbox(api.url)
      const chat = yield* agentClient(box)
      yield* chat.setTools([add])
      const events = yield* Stream.runCollect(chat.chatStream("add 1 and 2"))
      const tags = events.map((e) => e._tag)
      expect(events.find((e) => e._tag === "ToolCallStart")).toMatchObject({ name: "add", arguments: { a: 1, b: 2 } })
      expect(events.find((e) => e._tag === "ToolCallEnd")).toMatchObject({ name: "add", result: "3", isError: false })
      expect(events.filter((e) => e._tag === "TextDelta").map((e) => (e._tag === "TextDelta" ? e.text : "")).join(""))
        .toContain("The sum is 3.")
      expect(tags.indexOf("ToolCallStart")).toBeLessThan(tags.indexOf("ToolCallEnd"))
      expect(tags.slice(-2)).toEqual(["Usage", "Complete"])
      expect(events.at(-1)).toMatchObject({ _tag: "Complete", text: "The sum is 3." })
    }))

  it.live("a failing handler reaches the model as is_error", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((req) => {
        const results = Fake.toolResults(req)
        if (results.length === 0) return { toolUses: [{ name: "mcp__gtb__broken", input: {} }] }
        return { text: `Tool said: ${results[0]!.content}` }
      })
      const box = yield* sandbox(api.url)
      const chat = yield* agentClient(box)
      yield* chat.setTools([add, broken])
      const answer = yield* chat.chat("Try the broken tool")
      const result = Fake.toolResults(api.messageRequests()[1]!)[0]!
      expect(result.is_error).toBe(true)
      expect(result.content).toContain("Error: the database is on fire")
      expect(answer).toContain("the database is on fire")
    }))

  it.live("a second turn resumes the session; added text is joined into the prompt", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((req) => ({
        text: `You said: ${Fake.lastUserText(req).split("\n").at(-1)}`,
        usage: { input_tokens: 1000, output_tokens: 500 }
      }))
      const box = yield* sandbox(api.url)
      // A model the CLI has prices for, so it reports a cost.
      const chat = yield* agentClient(box, { model: "claude-sonnet-4-5" })
      yield* chat.add("Remember the word: pineapple.")
      expect(yield* chat.chat("First question")).toBe("You said: First question")
      expect(Fake.lastUserText(api.messageRequests()[0]!)).toContain("Remember the word: pineapple.\n\nFirst question")
      const first = yield* chat.usage
      expect(yield* chat.chat("Second question")).toBe("You said: Second question")
      const second = api.messageRequests()[1]!
      const transcript = JSON.stringify(second.body.messages)
      expect(transcript).toContain("pineapple")
      expect(transcript).toContain("You said: First question")
      const both = yield* chat.usage
      expect(both.outputTokens).toBe(2 * first.outputTokens)
      // The CLI reports a resumed session's cost cumulatively; each turn is counted once here.
      expect(first.costUsd).toBeGreaterThan(0)
      expect(both.costUsd).toBeCloseTo(2 * first.costUsd!, 9)
    }))

  it.live("a failed turn is a typed error and keeps the added text for the next one", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((req) =>
        Fake.lastUserText(req).includes("First try")
          ? { status: 400, body: { type: "error", error: { type: "invalid_request_error", message: "bad luck" } } }
          : { text: `Got: ${Fake.lastUserText(req)}` }
      )
      const box = yield* sandbox(api.url)
      const chat = yield* agentClient(box)
      yield* chat.add("Context line.")
      const error = yield* Effect.flip(chat.chat("First try"))
      expect(error._tag).toBe("ProviderError")
      if (error._tag !== "ProviderError") return
      expect(error.message).toContain("bad luck")
      expect({ reason: error.reason._tag, status: error.status, isRetryable: error.isRetryable }).toEqual({
        reason: "InvalidRequestError",
        status: 400,
        isRetryable: false
      })
      expect(yield* chat.chat("Second try")).toMatch(/Context line\.\n\nSecond try$/)
    }))

  it.live("ask returns a value decoded with the schema, via outputFormat", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((req) =>
        toolNames(req).includes("StructuredOutput")
          ? { toolUses: [{ name: "StructuredOutput", input: { city: "Lisbon", population: 545_000 } }] }
          : { text: "no schema was offered" }
      )
      const box = yield* sandbox(api.url)
      const chat = yield* agentClient(box)
      const City = Schema.Struct({ city: Schema.String, population: Schema.Number })
      expect(yield* chat.ask("Largest city of Portugal?", City)).toEqual({ city: "Lisbon", population: 545_000 })
      const schemaSent = api.messageRequests()[0]!.body.tools!.find((t) => t.name === "StructuredOutput")!.input_schema
      expect(schemaSent).toMatchObject({ type: "object", required: ["city", "population"] })
      expect(yield* chat.chat("thanks")).toBe("no schema was offered")
    }))

  it.live("a disallowed tool is absent from the model's tool list", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(() => ({ text: "ok" }))
      const box = yield* sandbox(api.url)
      const chat = yield* agentClient(box, {
        toolPolicy: { disabledTools: ["Bash", "mcp__gtb__broken"] }
      })
      yield* chat.setTools([add, broken])
      expect(yield* chat.chat("hello")).toBe("ok")
      const names = toolNames(api.messageRequests()[0]!)
      expect(names).toContain("mcp__gtb__add")
      expect(names).toContain("Read")
      // The agent's opt-outs, their pair-group siblings, and the registry's disabled tools.
      for (const gone of ["Bash", "BashOutput", "KillShell", "mcp__gtb__broken", "WebSearch", "WebFetch"]) {
        expect(names).not.toContain(gone)
      }
    }))

  it.live("a tool the policy marks interactive is blocked on these headless turns, as on ClaudeLocal", () =>
    Effect.gen(function*() {
      let ran = 0
      const api = yield* Fake.make((req) => {
        const results = Fake.toolResults(req)
        if (results.length === 0) return { toolUses: [{ name: "mcp__gtb__confirm", input: {} }] }
        return { text: `Denied: ${results[0]!.is_error} ${results[0]!.content}` }
      })
      const box = yield* sandbox(api.url)
      const registry = yield* Registry.make([
        ...ClaudeCodeCatalog.descriptors,
        Registry.mcpTool({ server: "gtb", wireName: "confirm", category: "orchestration", interactive: true })
      ])
      const confirm = Tool.make("confirm", {
        description: "Asks the user to confirm",
        parameters: {},
        handler: () => Effect.sync(() => ++ran)
      })
      // The default permission mode needs a responder: the tool is disallowed up front (the
      // PreToolUse hook only matters when a session's mode leaves bypassPermissions mid-run).
      const chat = yield* agentClient(box, { toolPolicy: { registry } })
      yield* chat.setTools([confirm, add])
      const answer = yield* chat.chat("Confirm with the user")
      const [first, second] = api.messageRequests()
      expect(toolNames(first!)).toContain("mcp__gtb__add")
      expect(toolNames(first!)).not.toContain("mcp__gtb__confirm")
      expect(Fake.toolResults(second!)[0]!.is_error).toBe(true)
      expect(answer).toContain("Denied: true")
      expect(ran).toBe(0)
    }))

  it.live("tool calls open no TCP listener: the tools travel over the CLI's stdin/stdout", () =>
    Effect.gen(function*() {
      let during: ReadonlyArray<string> = []
      let cliSockets = new Set<string>()
      const api = yield* Fake.make((req) =>
        Fake.toolResults(req).length === 0 ? { toolUses: [{ name: "mcp__gtb__probe", input: {} }] } : { text: "done" }
      )
      const box = yield* sandbox(api.url)
      const chat = yield* agentClient(box)
      const before = listeningSockets()
      const probe = Tool.make("probe", {
        description: "Looks at the sockets",
        parameters: {},
        handler: () =>
          Effect.sync(() => {
            during = listeningSockets()
            cliSockets = new Set(claudeProcessesIn(box.cwd).flatMap(socketInodesOf))
            return "ok"
          })
      })
      yield* chat.setTools([probe])
      expect(yield* chat.chat("probe")).toBe("done")
      expect(Fake.toolResults(api.messageRequests()[1]!)[0]!.content).toBe("ok")
      // Other test files run in other processes: look only at this process's and the CLI's sockets.
      const ours = new Set(socketInodesOf(process.pid))
      const inode = (entry: string) => entry.split(" ")[1]!
      const mine = (entry: string) => ours.has(inode(entry)) || cliSockets.has(inode(entry))
      // No listener appeared for the tool call, and the only one either process holds is the fake API's.
      expect(during.filter((entry) => !before.includes(entry) && mine(entry))).toEqual([])
      const held = during.filter(mine)
      expect(held.length).toBe(1)
      expect(held[0]!.split(" ")[0]!.endsWith(`:${api.port.toString(16).toUpperCase().padStart(4, "0")}`)).toBe(true)
      expect(held.filter((entry) => cliSockets.has(inode(entry)))).toEqual([])
      expect(cliSockets.size).toBeGreaterThan(0)
    }))

  it.live("interrupting a turn kills the CLI and interrupts the running handler", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const interrupted = yield* Deferred.make<void>()
      const api = yield* Fake.make((req) =>
        Fake.toolResults(req).length === 0
          ? { toolUses: [{ name: "mcp__gtb__slow", input: {} }] }
          : { text: "too late" }
      )
      const box = yield* sandbox(api.url)
      const scope = yield* Scope.make()
      const chat = yield* agentClient(box, { killGrace: "500 millis" }).pipe(Scope.provide(scope))
      const slow = Tool.make("slow", {
        description: "Takes forever",
        parameters: {},
        handler: () =>
          Deferred.succeed(started, undefined).pipe(
            Effect.andThen(Effect.never),
            Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))
          )
      })
      yield* chat.setTools([slow])
      const fiber = yield* Effect.forkChild(chat.chat("be slow"))
      yield* Deferred.await(started)
      const pids = claudeProcessesIn(box.cwd)
      expect(pids.length).toBeGreaterThan(0)
      yield* Fiber.interrupt(fiber)
      expect(Exit.hasInterrupts(yield* Fiber.await(fiber))).toBe(true)
      expect(yield* Deferred.isDone(interrupted)).toBe(true)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
      for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow()
      yield* Scope.close(scope, Exit.void)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
    }))

  it.live("closing the client's scope during a turn ends the turn and leaves no process", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const api = yield* Fake.make((req) =>
        Fake.toolResults(req).length === 0
          ? { toolUses: [{ name: "mcp__gtb__slow", input: {} }] }
          : { text: "too late" }
      )
      const box = yield* sandbox(api.url)
      const scope = yield* Scope.make()
      const chat = yield* agentClient(box, { killGrace: "500 millis" }).pipe(Scope.provide(scope))
      const slow = Tool.make("slow", {
        description: "Takes forever",
        parameters: {},
        handler: () => Deferred.succeed(started, undefined).pipe(Effect.andThen(Effect.never))
      })
      yield* chat.setTools([slow])
      const fiber = yield* Effect.forkChild(chat.chat("be slow"))
      yield* Deferred.await(started)
      expect(claudeProcessesIn(box.cwd).length).toBeGreaterThan(0)
      yield* Scope.close(scope, Exit.void)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isFailure(exit)).toBe(true)
    }))

  it.live("a missing SDK or executable is a config ProviderError with a hint", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(() => ({ text: "unreachable" }))
      const box = yield* sandbox(api.url)
      const noSdk = yield* agentClient(box, { sdkSpecifier: "@anthropic-ai/claude-agent-sdk-not-installed" })
      const e1 = yield* Effect.flip(noSdk.chat("hi"))
      expect(e1).toMatchObject({ _tag: "ProviderError", reason: { _tag: "ConfigurationError" } })
      expect(e1.message).toContain("npm install @anthropic-ai/claude-agent-sdk")
      const noBinary = yield* agentClient(box, { pathToClaudeCodeExecutable: `${box.dir}/no-such-claude` })
      yield* noBinary.add("kept")
      const e2 = yield* Effect.flip(noBinary.chat("hi"))
      expect(e2).toMatchObject({ _tag: "ProviderError", reason: { _tag: "ConfigurationError" } })
      expect(e2.message).toContain("no-such-claude")
      expect(api.messageRequests()).toEqual([])
    }))
})

describeWithClaude("ClaudeAgent with keepAlive: one real claude CLI across turns", () => {
  /** Echoes the last line; `add` asks for the add tool; every model call reports the same usage. */
  const echoWithAdd = (req: Fake.FakeRequest): Fake.FakeReply => {
    const usage = { input_tokens: 1000, output_tokens: 500 }
    // The kept-alive CLI appends a <system-reminder> to tool results; an ask's StructuredOutput
    // result shares the next turn's user message.
    const sum = Fake.toolResults(req).map((r) => /^\d+/.exec(r.content)?.[0]).find((n) => n !== undefined)
    if (sum !== undefined) return { text: `The sum is ${sum}.`, usage }
    const last = Fake.lastUserText(req).split("\n").at(-1) ?? ""
    if (last.includes("add")) return { toolUses: [{ name: "mcp__gtb__add", input: { a: 2, b: 40 } }], usage }
    return { text: `You said: ${last}`, usage }
  }

  it.live("three turns share one CLI; turn 2 sees turn 1 and streams a tool call; usage is per turn", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(echoWithAdd)
      const box = yield* sandbox(api.url)
      const scope = yield* Scope.make()
      const chat = yield* agentClient(box, { keepAlive: true, model: "claude-sonnet-4-5" }).pipe(Scope.provide(scope))
      yield* chat.setTools([add])
      expect(yield* chat.chat("Remember the word: pineapple.")).toBe("You said: Remember the word: pineapple.")
      const first = yield* chat.usage
      // The CLI outlives the turn.
      const pids = claudeProcessesIn(box.cwd)
      expect(pids.length).toBeGreaterThan(0)
      const events = yield* Stream.runCollect(chat.chatStream("Please add 2 and 40"))
      expect(events.find((e) => e._tag === "ToolCallEnd")).toMatchObject({ name: "add", result: "42", isError: false })
      expect(events.map((e) => e._tag).slice(-2)).toEqual(["Usage", "Complete"])
      expect(events.at(-1)).toMatchObject({ _tag: "Complete", text: "The sum is 42." })
      // Turn 2's first model call carried turn 1.
      const turn2 = api.messageRequests().find((r) => Fake.lastUserText(r).includes("Please add"))!
      expect(JSON.stringify(turn2.body.messages)).toContain("You said: Remember the word: pineapple.")
      expect(claudeProcessesIn(box.cwd)).toEqual(pids)
      expect(yield* chat.chat("Third")).toBe("You said: Third")
      expect(claudeProcessesIn(box.cwd)).toEqual(pids)
      expect(api.messageRequests().length).toBe(4)
      // Usage and cost are per turn although the CLI's totals run on: four model calls, four shares.
      const all = yield* chat.usage
      expect(first.costUsd).toBeGreaterThan(0)
      expect(all.outputTokens).toBe(4 * first.outputTokens)
      expect(all.costUsd).toBeCloseTo(4 * first.costUsd!, 9)
      yield* Scope.close(scope, Exit.void)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
      for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow()
    }))

  it.live("interrupting a kept-alive turn interrupts the handler and keeps the CLI; the next turn continues", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const interrupted = yield* Deferred.make<void>()
      const api = yield* Fake.make((req) => {
        if (Fake.toolResults(req).length > 0) return { text: "too late" }
        const last = Fake.lastUserText(req).split("\n").at(-1) ?? ""
        return last.includes("slow")
          ? { toolUses: [{ name: "mcp__gtb__slow", input: {} }] }
          : { text: `You said: ${last}` }
      })
      const box = yield* sandbox(api.url)
      const scope = yield* Scope.make()
      const chat = yield* agentClient(box, { keepAlive: true, killGrace: "500 millis" }).pipe(Scope.provide(scope))
      const slow = Tool.make("slow", {
        description: "Takes forever",
        parameters: {},
        handler: () =>
          Deferred.succeed(started, undefined).pipe(
            Effect.andThen(Effect.never),
            Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))
          )
      })
      yield* chat.setTools([slow])
      expect(yield* chat.chat("Remember the word: pineapple.")).toBe("You said: Remember the word: pineapple.")
      const pids = claudeProcessesIn(box.cwd)
      expect(pids.length).toBeGreaterThan(0)
      const fiber = yield* Effect.forkChild(chat.chat("be slow"))
      yield* Deferred.await(started)
      expect(claudeProcessesIn(box.cwd)).toEqual(pids)
      yield* Fiber.interrupt(fiber)
      expect(Exit.hasInterrupts(yield* Fiber.await(fiber))).toBe(true)
      // The CLI was stopped politely (ClaudeLive's polite stop): it cancelled the tool call.
      yield* Deferred.await(interrupted).pipe(Effect.timeout("20 seconds"))
      expect(claudeProcessesIn(box.cwd)).toEqual(pids)
      // The next message carries the stopped call's (rejected) result, so the fake answers it.
      expect(yield* chat.chat("What was the word?")).toBe("too late")
      const history = JSON.stringify(api.messageRequests().at(-1)!.body.messages)
      expect(history).toContain("pineapple")
      expect(history).toContain("[Request interrupted by user for tool use]")
      expect(claudeProcessesIn(box.cwd)).toEqual(pids)
      yield* Scope.close(scope, Exit.void)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
    }))

  it.live("a kept-alive turn stopped at maxTurns is a RunLimitError carrying the model's last text", () =>
    Effect.gen(function*() {
      // "loop" keeps calling add with a new text each model call, until maxTurns stops the run; the
      // model moves on once the test has seen the error (the resumed session ends in a tool result).
      const texts: Array<string> = []
      let stopped = false
      const api = yield* Fake.make((req) => {
        const looping = !stopped &&
          (Fake.toolResults(req).length > 0 || Fake.lastUserText(req).split("\n").at(-1) === "loop")
        if (!looping) return { text: `You said: ${Fake.lastUserText(req).split("\n").at(-1)}` }
        texts.push(`Looking, step ${texts.length + 1}…`)
        return { text: texts.at(-1)!, toolUses: [{ name: "mcp__gtb__add", input: { a: 1, b: 2 } }] }
      })
      const box = yield* sandbox(api.url)
      const scope = yield* Scope.make()
      const chat = yield* agentClient(box, { keepAlive: true, maxTurns: 2 }).pipe(Scope.provide(scope))
      yield* chat.setTools([add])
      expect(yield* chat.chat("First")).toBe("You said: First")
      const error = yield* Effect.flip(chat.chat("loop"))
      stopped = true
      expect(error).toMatchObject({ _tag: "RunLimitError", limit: "maxTurns" })
      expect(texts.length).toBeGreaterThan(1)
      if (error._tag === "RunLimitError") {
        expect(error.answer).toBe(texts.at(-1))
        expect(error.usage.outputTokens).toBeGreaterThan(0)
      }
      // The failed turn ended the kept-alive CLI; the next turn resumes the session on a new one.
      expect(yield* chat.chat("Again")).toBe("You said: Again")
      expect(JSON.stringify(api.messageRequests().at(-1)!.body.messages)).toContain("You said: First")
      yield* Scope.close(scope, Exit.void)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
    }))

  it.live("kept-alive turns report the agent's tool activity, with chat and with chatStream", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((req) => {
        if (Fake.toolResults(req).length > 0) return { text: "done" }
        const last = Fake.lastUserText(req).split("\n").at(-1) ?? ""
        return last.startsWith("run")
          ? { toolUses: [{ name: "Bash", input: { command: `echo ${last.slice(4)}`, description: "echo" } }] }
          : { text: `You said: ${last}` }
      })
      const box = yield* sandbox(api.url)
      const scope = yield* Scope.make()
      // Bash asks before each call, so a headless run offers it only when something approves it.
      const { chat, session } = yield* agentSession(box, { keepAlive: true, toolPolicy: { allowedTools: ["Bash"] } })
        .pipe(Scope.provide(scope))
      expect(yield* chat.chat("run from-chat")).toBe("done")
      const pids = claudeProcessesIn(box.cwd)
      expect(pids.length).toBeGreaterThan(0)
      const first = yield* session.lastActivity
      expect(first.map((e) => `${e._tag}:${e.name}`)).toEqual(["AgentToolStart:Bash", "AgentToolEnd:Bash"])
      expect(first[0]).toMatchObject({ input: { command: "echo from-chat" } })
      expect(first[1]).toMatchObject({ result: "from-chat", isError: false })
      const events = yield* Stream.runCollect(chat.chatStream("run from-stream"))
      const streamed = events.filter((e) => e._tag === "AgentToolStart" || e._tag === "AgentToolEnd")
      expect(streamed.map((e) => e._tag)).toEqual(["AgentToolStart", "AgentToolEnd"])
      expect(yield* session.lastActivity).toEqual(streamed)
      expect(streamed[1]).toMatchObject({ name: "Bash", result: "from-stream" })
      // Both turns ran on the one kept-alive CLI; a turn without tools reports none.
      expect(claudeProcessesIn(box.cwd)).toEqual(pids)
      expect(yield* chat.chat("Quiet")).toBe("You said: Quiet")
      expect(yield* session.lastActivity).toEqual([])
      yield* Scope.close(scope, Exit.void)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
    }))

  it.live("an application MCP server, sent over stdin, serves every kept-alive turn and the restarted CLI", () =>
    Effect.gen(function*() {
      const { cmdlines, tool: lookup } = cmdlineRecordingLookup(() => box.cwd, (city) => `${city}: found`)
      const app = yield* NodeMcpBridge.make({ serverName: "app", tools: [lookup] })
      const api = yield* Fake.make((req) => {
        const results = Fake.toolResults(req)
        if (results.length > 0) return { text: results.map((r) => r.content.split("\n")[0]).join(" | ") }
        const last = Fake.lastUserText(req).split("\n").at(-1) ?? ""
        return { toolUses: [{ name: "mcp__app__lookup", input: { city: last } }] }
      })
      const box = yield* sandbox(api.url)
      const scope = yield* Scope.make()
      const chat = yield* agentClient(box, {
        keepAlive: true,
        mcpServers: {
          app: { type: "http", url: app.url, headers: app.mcpConfig.mcpServers["app"]!.headers, alwaysLoad: true }
        }
      }).pipe(Scope.provide(scope))
      expect(yield* chat.chat("Lisbon")).toBe("Lisbon: found")
      const pids = claudeProcessesIn(box.cwd)
      expect(yield* chat.chat("Porto")).toBe("Porto: found")
      expect(claudeProcessesIn(box.cwd)).toEqual(pids)
      // setTools ends the kept-alive CLI: the next one gets the server again.
      yield* chat.setTools([add])
      expect(yield* chat.chat("Faro")).toBe("Faro: found")
      expect(claudeProcessesIn(box.cwd).filter((pid) => pids.includes(pid))).toEqual([])
      expect(cmdlines.length).toBeGreaterThanOrEqual(3)
      for (const cmdline of cmdlines) expect(cmdline).not.toContain(Redacted.value(app.token))
      yield* Scope.close(scope, Exit.void)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
    }))

  it.live("ask and setTools run on a fresh CLI; the kept-alive one restarts on the next turn", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((req) =>
        toolNames(req).includes("StructuredOutput")
          ? { toolUses: [{ name: "StructuredOutput", input: { city: "Lisbon", population: 545_000 } }] }
          : echoWithAdd(req)
      )
      const box = yield* sandbox(api.url)
      const scope = yield* Scope.make()
      const chat = yield* agentClient(box, { keepAlive: true }).pipe(Scope.provide(scope))
      expect(yield* chat.chat("First")).toBe("You said: First")
      const a = claudeProcessesIn(box.cwd)
      expect(a.length).toBeGreaterThan(0)
      const City = Schema.Struct({ city: Schema.String, population: Schema.Number })
      expect(yield* chat.ask("Largest city of Portugal?", City)).toEqual({ city: "Lisbon", population: 545_000 })
      // The ask ran on its own CLI, which is gone; the kept-alive one ended before it.
      expect(claudeProcessesIn(box.cwd)).toEqual([])
      expect(yield* chat.chat("thanks")).toBe("You said: thanks")
      const afterAsk = JSON.stringify(api.messageRequests().at(-1)!.body.messages)
      expect(afterAsk).toContain("You said: First")
      expect(afterAsk).toContain("Lisbon")
      const b = claudeProcessesIn(box.cwd)
      expect(b.length).toBeGreaterThan(0)
      expect(b.filter((pid) => a.includes(pid))).toEqual([])
      yield* chat.setTools([add])
      expect(claudeProcessesIn(box.cwd)).toEqual([])
      expect(yield* chat.chat("now add 2 and 40")).toBe("The sum is 42.")
      expect(toolNames(api.messageRequests().at(-2)!)).toContain("mcp__gtb__add")
      yield* Scope.close(scope, Exit.void)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
    }))
})

describeWithClaude("ClaudeAgent with prewarm: the CLI starts with the layer", () => {
  it.live("the first turn runs on the CLI started at build; setTools swaps it at once; the scope owns it", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((req) => {
        const sum = Fake.toolResults(req).map((r) => /^\d+/.exec(r.content)?.[0]).find((n) => n !== undefined)
        if (sum !== undefined) return { text: `The sum is ${sum}.` }
        const last = Fake.lastUserText(req).split("\n").at(-1) ?? ""
        if (last.includes("add")) return { toolUses: [{ name: "mcp__gtb__add", input: { a: 2, b: 40 } }] }
        return { text: `You said: ${last}` }
      })
      const box = yield* sandbox(api.url)
      const scope = yield* Scope.make()
      const chat = yield* agentClient(box, { prewarm: true }).pipe(Scope.provide(scope))
      let warm = claudeProcessesIn(box.cwd)
      for (let i = 0; i < 100 && warm.length === 0; i++) {
        yield* Effect.sleep("50 millis")
        warm = claudeProcessesIn(box.cwd)
      }
      expect(warm.length).toBeGreaterThan(0)
      expect(api.messageRequests()).toEqual([])
      expect(yield* chat.chat("Remember the word: pineapple.")).toBe("You said: Remember the word: pineapple.")
      expect(claudeProcessesIn(box.cwd)).toEqual(warm)
      yield* chat.setTools([add])
      let rewarmed = claudeProcessesIn(box.cwd)
      for (let i = 0; i < 100 && rewarmed.length === 0; i++) {
        yield* Effect.sleep("50 millis")
        rewarmed = claudeProcessesIn(box.cwd)
      }
      expect(rewarmed.length).toBeGreaterThan(0)
      expect(rewarmed.filter((pid) => warm.includes(pid))).toEqual([])
      expect(yield* chat.chat("Please add 2 and 40")).toBe("The sum is 42.")
      expect(JSON.stringify(api.messageRequests().at(-1)!.body.messages)).toContain("pineapple")
      expect(claudeProcessesIn(box.cwd)).toEqual(rewarmed)
      yield* Scope.close(scope, Exit.void)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
    }))
  it.live("prewarm with resume and forkSession: the warm CLI forks the session; later turns stay on it", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((req) => ({ text: `echo ${Fake.lastUserText(req).split("\n").at(-1)}` }))
      const box = yield* sandbox(api.url)
      const firstScope = yield* Scope.make()
      const first = yield* agentSession(box).pipe(Scope.provide(firstScope))
      yield* first.chat.chat("remember the word PELICAN")
      const id = Option.getOrThrow(yield* first.session.sessionId)
      yield* Scope.close(firstScope, Exit.void)

      const scope = yield* Scope.make()
      const forked = yield* agentSession(box, { prewarm: true, resume: id, forkSession: true }).pipe(
        Scope.provide(scope)
      )
      let warm = claudeProcessesIn(box.cwd)
      for (let i = 0; i < 100 && warm.length === 0; i++) {
        yield* Effect.sleep("50 millis")
        warm = claudeProcessesIn(box.cwd)
      }
      expect(warm.length).toBeGreaterThan(0)
      expect(yield* forked.chat.chat("which word?")).toBe("echo which word?")
      expect(JSON.stringify(api.messageRequests().at(-1)!.body.messages)).toContain("PELICAN")
      const forkId = Option.getOrThrow(yield* forked.session.sessionId)
      expect(forkId).not.toBe(id)
      yield* forked.chat.chat("still there?")
      expect(yield* forked.session.sessionId).toEqual(Option.some(forkId))
      // The warm CLI answered both turns: it was started forking, and is not replaced after.
      expect(claudeProcessesIn(box.cwd)).toEqual(warm)
      yield* Scope.close(scope, Exit.void)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
    }))
})
