import { expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import type * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import * as NodeMcpBridge from "../../src/layers/NodeMcpBridge.ts"
import * as ClaudeCodeOptions from "../../src/services/ClaudeCodeOptions.ts"
import * as Tool from "../../src/services/Tool.ts"
import { claudeProcessesIn, claudeVersions, type Sandbox, sandbox } from "../support/claudeCli.ts"
import { localSession, recordingSecretFile } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

const add = Tool.make("add", {
  description: "Adds two numbers",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.succeed(a + b)
})
const mul = Tool.make("mul", {
  description: "Multiplies two numbers",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.succeed(a * b)
})

const toolNames = (req: Fake.FakeRequest) => (req.body.tools ?? []).map((t) => t.name)
const lastLine = (req: Fake.FakeRequest) => Fake.lastUserText(req).split("\n").at(-1) ?? ""

/** Echoes the last line; `add` asks for the add tool; every model call reports the same usage. */
const echoWithAdd = (req: Fake.FakeRequest): Fake.FakeReply => {
  const usage = { input_tokens: 1000, output_tokens: 500 }
  const sum = Fake.toolResults(req).map((r) => /^\d+/.exec(r.content)?.[0]).find((n) => n !== undefined)
  if (sum !== undefined) return { text: `The sum is ${sum}.`, usage }
  const last = lastLine(req)
  if (last.includes("add")) return { toolUses: [{ name: "mcp__gtb__add", input: { a: 2, b: 40 } }], usage }
  return { text: `You said: ${last}`, usage }
}

/** A kept-alive client (unless `options` says otherwise); `alter` rewrites each config it writes. */
const sessionIn = (box: Sandbox, options: ClaudeLocal.Options = {}, alter?: (contents: string) => string) =>
  localSession(box, { keepAlive: true, ...options }, { secretFile: recordingSecretFile(box, alter).layer })

const clientIn = (...args: Parameters<typeof sessionIn>) => Effect.map(sessionIn(...args), ({ chat }) => chat)

/** The claude processes in `cwd` once exactly one is left (a replaced one may take a moment to go). */
const theOneProcess = (cwd: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 100; i++) {
      const pids = claudeProcessesIn(cwd)
      if (pids.length === 1) return pids
      yield* Effect.sleep("50 millis")
    }
    return claudeProcessesIn(cwd)
  })

/** Secret files (MCP configs) under the sandbox's secrets folder. */
const secretFiles = (box: Sandbox) =>
  readdirSync(box.secrets, { recursive: true, withFileTypes: true }).filter((e) => e.isFile())

describeWithClaude("ClaudeLocal keepAlive: one real claude CLI per conversation", () => {
  it.live("several turns on one process; turn 2 sees turn 1 and streams a tool call; usage is per turn", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(echoWithAdd)
      const box = yield* sandbox(api.url)
      const scope = yield* Scope.make()
      const chat = yield* clientIn(box, { model: "claude-sonnet-4-5" }).pipe(Scope.provide(scope))
      yield* chat.setTools([add])
      expect(yield* chat.chat("Remember the word: pineapple.")).toBe("You said: Remember the word: pineapple.")
      const first = yield* chat.usage
      const pids = claudeProcessesIn(box.cwd)
      expect(pids.length).toBe(1)
      // The MCP config file lives as long as the process, with the token inside only.
      expect(secretFiles(box).length).toBe(1)
      const cmdline = readFileSync(`/proc/${pids[0]}/cmdline`, "utf8").split("\0")
      expect(cmdline).toEqual(expect.arrayContaining(["--input-format", "stream-json", "--mcp-config"]))
      const events = yield* Stream.runCollect(chat.chatStream("Please add 2 and 40"))
      expect(events.find((e) => e._tag === "ToolCallEnd")).toMatchObject({ name: "add", result: "42", isError: false })
      expect(events.at(-1)).toMatchObject({ _tag: "Complete", text: "The sum is 42." })
      const turn2 = api.messageRequests().find((r) => Fake.lastUserText(r).includes("Please add"))!
      expect(JSON.stringify(turn2.body.messages)).toContain("You said: Remember the word: pineapple.")
      expect(yield* chat.chat("Third")).toBe("You said: Third")
      expect(yield* chat.chat("Fourth")).toBe("You said: Fourth")
      expect(claudeProcessesIn(box.cwd)).toEqual(pids)
      expect(api.messageRequests().length).toBe(5)
      // The CLI's cost runs on over the process; the client counts each turn's share once.
      const all = yield* chat.usage
      expect(first.costUsd).toBeGreaterThan(0)
      expect(all.outputTokens).toBe(5 * first.outputTokens)
      expect(all.costUsd).toBeCloseTo(5 * first.costUsd!, 9)
      yield* Scope.close(scope, Exit.void)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
      expect(secretFiles(box)).toEqual([])
    }))

  it.live("a killed process is replaced by one resuming the session", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(echoWithAdd)
      const box = yield* sandbox(api.url)
      const scope = yield* Scope.make()
      const chat = yield* clientIn(box).pipe(Scope.provide(scope))
      expect(yield* chat.chat("Remember the word: pineapple.")).toBe("You said: Remember the word: pineapple.")
      const [pid] = claudeProcessesIn(box.cwd)
      process.kill(pid!, "SIGKILL")
      while (claudeProcessesIn(box.cwd).length > 0) yield* Effect.sleep("20 millis")
      // Let the client's reader see the closed pipe, as it would between two real turns.
      yield* Effect.sleep("300 millis")
      expect(yield* chat.chat("What was the word?")).toBe("You said: What was the word?")
      expect(JSON.stringify(api.messageRequests().at(-1)!.body.messages)).toContain("pineapple")
      const now = claudeProcessesIn(box.cwd)
      expect(now.length).toBe(1)
      expect(now).not.toContain(pid)
      const cmdline = readFileSync(`/proc/${now[0]}/cmdline`, "utf8").split("\0")
      expect(cmdline).toContain("--resume")
      yield* Scope.close(scope, Exit.void)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
    }))

  it.live("a process killed during a turn fails that turn with a typed error; the next turn is clean", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const api = yield* Fake.make((req) => {
        if (Fake.toolResults(req).length > 0) return { text: "too late" }
        const last = lastLine(req)
        return last.includes("slow") ? { toolUses: [{ name: "mcp__gtb__slow", input: {} }] } : echoWithAdd(req)
      })
      const box = yield* sandbox(api.url)
      const scope = yield* Scope.make()
      const chat = yield* clientIn(box).pipe(Scope.provide(scope))
      const slow = Tool.make("slow", {
        description: "Takes forever",
        parameters: {},
        handler: () => Effect.andThen(Deferred.succeed(started, undefined), Effect.never)
      })
      yield* chat.setTools([slow])
      expect(yield* chat.chat("Remember the word: pineapple.")).toBe("You said: Remember the word: pineapple.")
      const fiber = yield* Effect.forkChild(chat.chat("be slow"))
      yield* Deferred.await(started)
      for (const pid of claudeProcessesIn(box.cwd)) process.kill(pid, "SIGKILL")
      const failed = yield* Fiber.join(fiber).pipe(Effect.flip)
      expect(failed).toMatchObject({ _tag: "ProviderError", reason: { _tag: "ProcessError" } })
      expect(failed.message).toContain("ended before the turn's result")
      expect(yield* chat.chat("What was the word?")).toBe("You said: What was the word?")
      expect(JSON.stringify(api.messageRequests().at(-1)!.body.messages)).toContain("pineapple")
      yield* Scope.close(scope, Exit.void)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
    }))

  it.live("interrupting a turn stops it politely and keeps the process; the next turn reads only its own answer", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const interrupted = yield* Deferred.make<void>()
      const api = yield* Fake.make((req) => {
        const last = lastLine(req)
        // The next turn's message carries the interrupted call's (rejected) result too.
        if (Fake.toolResults(req).length > 0 && !last.includes("word")) return { text: "the slow answer, too late" }
        return last.includes("slow") ? { toolUses: [{ name: "mcp__gtb__slow", input: {} }] } : echoWithAdd(req)
      })
      const box = yield* sandbox(api.url)
      const scope = yield* Scope.make()
      const chat = yield* clientIn(box, { killGrace: "500 millis" }).pipe(Scope.provide(scope))
      const slow = Tool.make("slow", {
        description: "Takes a while",
        parameters: {},
        handler: () =>
          Deferred.succeed(started, undefined).pipe(
            Effect.andThen(Effect.sleep("3 seconds")),
            Effect.as("done"),
            Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))
          )
      })
      yield* chat.setTools([slow])
      expect(yield* chat.chat("Remember the word: pineapple.")).toBe("You said: Remember the word: pineapple.")
      const pids = claudeProcessesIn(box.cwd)
      expect(pids.length).toBe(1)
      const fiber = yield* Effect.forkChild(chat.chat("be slow"))
      yield* Deferred.await(started)
      yield* Fiber.interrupt(fiber)
      expect(Exit.hasInterrupts(yield* Fiber.await(fiber))).toBe(true)
      // The CLI stopped the turn when asked (ClaudeLive): the process stays, the handler is interrupted.
      expect(claudeProcessesIn(box.cwd)).toEqual(pids)
      yield* Deferred.await(interrupted).pipe(Effect.timeout("20 seconds"))
      // Had the interrupted turn's late lines been left unread, they would be read as this turn's.
      yield* Effect.sleep("3500 millis")
      expect(yield* chat.chat("What was the word?")).toBe("You said: What was the word?")
      expect(JSON.stringify(api.messageRequests().at(-1)!.body.messages)).toContain("pineapple")
      expect(claudeProcessesIn(box.cwd)).toEqual(pids)
      yield* Scope.close(scope, Exit.void)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
      expect(secretFiles(box)).toEqual([])
    }))

  it.live("setTools restarts the process only when the tools change", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((req) => {
        const results = Fake.toolResults(req)
        if (results.length > 0) return { text: `Result ${results[0]!.content}.` }
        const last = lastLine(req)
        if (last.includes("multiply")) return { toolUses: [{ name: "mcp__gtb__mul", input: { a: 6, b: 7 } }] }
        return echoWithAdd(req)
      })
      const box = yield* sandbox(api.url)
      const scope = yield* Scope.make()
      const chat = yield* clientIn(box).pipe(Scope.provide(scope))
      yield* chat.setTools([add])
      expect(yield* chat.chat("Please add 2 and 40")).toBe("Result 42.")
      const a = claudeProcessesIn(box.cwd)
      expect(a.length).toBe(1)
      yield* chat.setTools([add])
      expect(yield* chat.chat("hello")).toBe("You said: hello")
      expect(claudeProcessesIn(box.cwd)).toEqual(a)
      yield* chat.setTools([add, mul])
      expect(yield* chat.chat("now multiply 6 by 7")).toBe("Result 42.")
      expect(toolNames(api.messageRequests().at(-2)!)).toContain("mcp__gtb__mul")
      const b = yield* theOneProcess(box.cwd)
      expect(b.length).toBe(1)
      expect(b).not.toEqual(a)
      // Unmounting every tool restarts it without the bridge. (The resumed CLI still lists the
      // tools its history used to the model, as a fresh `--resume` does: CLI behaviour.)
      yield* chat.setTools([])
      expect(yield* chat.chat("Still there?")).toBe("You said: Still there?")
      expect(JSON.stringify(api.messageRequests().at(-1)!.body.messages)).toContain("Result 42.")
      const c = yield* theOneProcess(box.cwd)
      expect(readFileSync(`/proc/${c[0]}/cmdline`, "utf8").split("\0")).not.toContain("--mcp-config")
      yield* Effect.sleep("100 millis")
      expect(secretFiles(box)).toEqual([])
      yield* Scope.close(scope, Exit.void)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
    }))

  it.live("ask between chats runs with its --json-schema; the conversation carries on", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((req) =>
        toolNames(req).includes("StructuredOutput") && Fake.toolResults(req).length === 0
          ? { toolUses: [{ name: "StructuredOutput", input: { city: "Lisbon", population: 545_000 } }] }
          : Fake.toolResults(req).length > 0
          ? { text: "done" }
          : echoWithAdd(req)
      )
      const box = yield* sandbox(api.url)
      const scope = yield* Scope.make()
      const chat = yield* clientIn(box).pipe(Scope.provide(scope))
      expect(yield* chat.chat("First")).toBe("You said: First")
      const City = Schema.Struct({ city: Schema.String, population: Schema.Number })
      expect(yield* chat.ask("Largest city of Portugal?", City)).toEqual({ city: "Lisbon", population: 545_000 })
      const asking = yield* theOneProcess(box.cwd)
      expect(readFileSync(`/proc/${asking[0]}/cmdline`, "utf8").split("\0")).toContain("--json-schema")
      expect(yield* chat.ask("And again?", City)).toEqual({ city: "Lisbon", population: 545_000 })
      expect(claudeProcessesIn(box.cwd)).toEqual(asking)
      expect(yield* chat.chat("thanks")).toBe("You said: thanks")
      const after = JSON.stringify(api.messageRequests().at(-1)!.body.messages)
      expect(after).toContain("You said: First")
      expect(after).toContain("Largest city of Portugal?")
      const chatting = yield* theOneProcess(box.cwd)
      expect(readFileSync(`/proc/${chatting[0]}/cmdline`, "utf8").split("\0")).not.toContain("--json-schema")
      yield* Scope.close(scope, Exit.void)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
    }))

  it.live("prewarm starts the CLI with the layer; setTools swaps it before the first turn; the scope owns it", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(echoWithAdd)
      const box = yield* sandbox(api.url)
      const scope = yield* Scope.make()
      const chat = yield* clientIn(box, { keepAlive: false, prewarm: true }).pipe(Scope.provide(scope))
      const warm = yield* theOneProcess(box.cwd)
      expect(warm.length).toBe(1)
      expect(api.messageRequests()).toEqual([])
      yield* chat.setTools([add])
      const rewarmed = yield* theOneProcess(box.cwd)
      expect(rewarmed).not.toEqual(warm)
      expect(readFileSync(`/proc/${rewarmed[0]}/cmdline`, "utf8").split("\0")).toContain("--mcp-config")
      expect(yield* chat.chat("Please add 2 and 40")).toBe("The sum is 42.")
      expect(claudeProcessesIn(box.cwd)).toEqual(rewarmed)
      yield* Scope.close(scope, Exit.void)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
      expect(secretFiles(box)).toEqual([])
    }))

  it.live("a turn over requestTimeout is a timeout error and stops the process; a tool server the CLI cannot reach is refused", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((req) =>
        lastLine(req).includes("slow")
          ? { text: "too late", delayMs: 120_000 }
          : { text: `You said: ${lastLine(req)}` }
      )
      const box = yield* sandbox(api.url)
      const scope = yield* Scope.make()
      const chat = yield* clientIn(box, { requestTimeout: "20 seconds", killGrace: "500 millis" }).pipe(
        Scope.provide(scope)
      )
      expect(yield* chat.chat("hello")).toBe("You said: hello")
      const error = yield* Effect.flip(chat.chat("be slow"))
      expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "TimeoutError" }, isRetryable: true })
      expect(error.message).toMatch(
        /did not finish the turn within 20s and was stopped; raise the requestTimeout option/
      )
      expect(claudeProcessesIn(box.cwd)).toEqual([])
      yield* Scope.close(scope, Exit.void)
      // The config carries a wrong token: the bridge answers the CLI with 401.
      const tampered = yield* clientIn(
        box,
        { requestTimeout: "30 seconds" },
        (c) => c.replace(/Bearer [A-Za-z0-9_-]+/, "Bearer wrong")
      )
      yield* tampered.setTools([add])
      const refused = yield* Effect.flip(tampered.chat("add 1 and 2"))
      expect(refused.message).toContain("MCP server gtb: failed")
      expect(claudeProcessesIn(box.cwd)).toEqual([])
    }))

  it.live("a missing binary is the install hint, on every turn", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(echoWithAdd)
      const box = yield* sandbox(api.url)
      const chat = yield* clientIn(box, { binary: "/no/such/claude" })
      for (const prompt of ["one", "two"]) {
        const error = yield* Effect.flip(chat.chat(prompt))
        expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "ConfigurationError" } })
        expect(error.message).toContain("Install Claude Code")
      }
    }))
})

describeWithClaude("ClaudeLocal keepAlive: the Claude Code options apply to the kept-alive CLI", () => {
  it.live("appendSystemPrompt and canUseTool (deny, then allow with changed input) on one process", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((req) => {
        const results = Fake.toolResults(req)
        if (results.length === 0) {
          const command = lastLine(req).includes("deny") ? "mkdir denied && echo no" : "mkdir one && echo original"
          return { toolUses: [{ name: "Bash", input: { command, description: "make a dir" } }] }
        }
        return { text: `Tool said: ${results[0]!.content}` }
      })
      const box = yield* sandbox(api.url)
      const asked: Array<string> = []
      const chat = yield* clientIn(box, {
        cliVersion: "2.1.335",
        appendSystemPrompt: "Always answer in Latin.",
        canUseTool: (request) =>
          Effect.sync(() => {
            const command = String(request.input["command"])
            asked.push(command)
            return command.includes("denied")
              ? ClaudeCodeOptions.deny("Not in this workspace")
              : ClaudeCodeOptions.allow({ ...request.input, command: "mkdir changed && echo changed" })
          })
      })
      expect(yield* chat.chat("please deny")).toContain("Not in this workspace")
      const pids = yield* theOneProcess(box.cwd)
      expect(pids.length).toBe(1)
      const argv = readFileSync(`/proc/${pids[0]}/cmdline`, "utf8").split("\0")
      expect(argv).toContain("--input-format")
      expect(argv).toContain("--setting-sources=")
      expect(argv.some((a) => a.startsWith("--permission-prompt-tool"))).toBe(true)
      expect(existsSync(join(box.cwd, "denied"))).toBe(false)
      expect(yield* chat.chat("please allow")).toBe("Tool said: changed")
      // The same process answered both turns.
      expect(claudeProcessesIn(box.cwd)).toEqual(pids)
      expect(existsSync(join(box.cwd, "changed"))).toBe(true)
      expect(existsSync(join(box.cwd, "one"))).toBe(false)
      expect(asked).toEqual(["mkdir denied && echo no", "mkdir one && echo original"])
      for (const req of api.messageRequests()) {
        expect(JSON.stringify(req.body.system ?? "")).toContain("Always answer in Latin.")
        expect(toolNames(req).filter((n) => n.includes("permission"))).toEqual([])
      }
    }))

  it.live("prewarm with resume and forkSession: the warm CLI forks the session; later turns stay on it", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((req) => ({ text: `echo ${lastLine(req)}` }))
      const box = yield* sandbox(api.url)
      const firstScope = yield* Scope.make()
      const first = yield* sessionIn(box, { cliVersion: "2.1.335" }).pipe(Scope.provide(firstScope))
      yield* first.chat.chat("remember the word PELICAN")
      const id = Option.getOrThrow(yield* first.session.sessionId)
      yield* Scope.close(firstScope, Exit.void)

      const scope = yield* Scope.make()
      const forked = yield* sessionIn(box, {
        cliVersion: "2.1.335",
        prewarm: true,
        resume: id,
        forkSession: true
      }).pipe(Scope.provide(scope))
      const warm = (yield* theOneProcess(box.cwd)).filter((pid) =>
        readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").includes("--fork-session")
      )
      expect(warm.length).toBe(1)
      const chat = forked.chat
      expect(yield* chat.chat("which word?")).toBe("echo which word?")
      expect(JSON.stringify(api.messageRequests().at(-1)!.body.messages)).toContain("PELICAN")
      const forkId = Option.getOrThrow(yield* forked.session.sessionId)
      expect(forkId).not.toBe(id)
      yield* chat.chat("still there?")
      expect(yield* forked.session.sessionId).toEqual(Option.some(forkId))
      // The warm process answered both turns: the fork is not redone.
      expect(claudeProcessesIn(box.cwd)).toEqual(warm)
      yield* Scope.close(scope, Exit.void)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
    }))

  // --max-turns is fixed in a kept process's argv: it must bound each turn, not the process's life
  // (2.0.0 reports num_turns summed over the process, yet still limits each turn on its own).
  for (const cli of claudeVersions) {
    it.live(`maxTurns bounds each turn of a kept CLI, not its life (claude ${cli.version})`, () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(echoWithAdd)
        const box = yield* sandbox(api.url)
        const chat = yield* clientIn(box, { binary: cli.binary, cliVersion: cli.version, maxTurns: 2 })
        yield* chat.setTools([add])
        // Each tool-using turn takes two model turns: three of them are six on one process.
        for (let i = 0; i < 3; i++) expect(yield* chat.chat(`Please add, round ${i}`)).toBe("The sum is 42.")
        expect(yield* chat.chat("and now just talk")).toBe("You said: and now just talk")
        expect(claudeProcessesIn(box.cwd).length).toBe(1)
        // Three tool results went back to the model, one per tool-using turn (2.0.0 adds calls of its own).
        expect(api.messageRequests().filter((req) => Fake.toolResults(req).length > 0).length).toBe(3)
      }))
  }

  it.live("maxTurns fails the turn with RunLimitError; an app MCP server and the bridge serve the next one", () =>
    Effect.gen(function*() {
      const lookup = Tool.make("lookup", {
        description: "Looks a city up",
        parameters: { city: Schema.String },
        handler: ({ city }) => Effect.succeed(`${city}: 545000 people`)
      })
      const app = yield* NodeMcpBridge.make({ serverName: "app", tools: [lookup] })
      const api = yield* Fake.make((req) => {
        const results = Fake.toolResults(req)
        // "loop" keeps calling add(1, 2) (its result is 3) until maxTurns stops the run.
        if (
          (results.length === 0 && lastLine(req).includes("loop")) || results.some((r) => r.content.startsWith("3"))
        ) {
          return { text: "Looking…", toolUses: [{ name: "mcp__gtb__add", input: { a: 1, b: 2 } }] }
        }
        if (results.length === 0 && toolNames(req).includes("mcp__app__lookup")) {
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
      const scope = yield* Scope.make()
      const chat = yield* clientIn(box, {
        cliVersion: "2.1.335",
        maxTurns: 2,
        mcpServers: {
          app: { type: "http", url: app.url, headers: app.mcpConfig.mcpServers["app"]!.headers, alwaysLoad: true }
        }
      }).pipe(Scope.provide(scope))
      yield* chat.setTools([add])
      const error = yield* Effect.flip(chat.chat("loop forever"))
      expect(error).toMatchObject({ _tag: "RunLimitError", limit: "maxTurns" })
      if (error._tag === "RunLimitError") expect(error.answer).toContain("Looking")
      expect(claudeProcessesIn(box.cwd)).toEqual([])
      expect(yield* chat.chat("Lisbon and 2+40")).toBe("Lisbon: 545000 people | 42")
      const pids = yield* theOneProcess(box.cwd)
      const config = secretFiles(box).map((e) => readFileSync(join(e.parentPath, e.name), "utf8")).join("\n")
      expect(config).toContain("\"app\"")
      expect(config).toContain("\"gtb\"")
      expect(pids.length).toBe(1)
      yield* Scope.close(scope, Exit.void)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
      expect(secretFiles(box)).toEqual([])
    }))
})
