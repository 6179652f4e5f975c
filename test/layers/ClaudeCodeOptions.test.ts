/**
 * The shared Claude Code options without the real binary: a stub CLI script (real processes) for
 * the environment, the scripted Subprocess for the flags, the scripted Agent SDK for the query's
 * options, and the helpers that turn options into a run.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { chmodSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  asChanges,
  cliEnvironment,
  decide,
  extraFlags,
  permissionAnswer,
  permissionTool,
  sdkOptions
} from "../../src/internal/claude/codeRun.ts"
import * as ClaudeAgent from "../../src/layers/ClaudeAgent.ts"
import * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import * as NodeSecretFile from "../../src/layers/NodeSecretFile.ts"
import * as NodeSubprocess from "../../src/layers/NodeSubprocess.ts"
import * as TestSubprocess from "../../src/layers/TestSubprocess.ts"
import { ChatClient } from "../../src/services/ChatClient.ts"
import * as ClaudeCodeOptions from "../../src/services/ClaudeCodeOptions.ts"
import * as Tool from "../../src/services/Tool.ts"
import * as Sdk from "../support/fakeAgentSdk.ts"

const init = { type: "system", subtype: "init", session_id: "s-1", mcp_servers: [] }
const resultLine = (fields: Record<string, unknown> = {}) => ({
  type: "result",
  subtype: "success",
  is_error: false,
  result: "ok",
  session_id: "s-1",
  usage: { input_tokens: 10, output_tokens: 4 },
  total_cost_usd: 0.02,
  ...fields
})
const stdout = (lines: ReadonlyArray<unknown>) => lines.map((l) => JSON.stringify(l)).join("\n") + "\n"

describe("ClaudeLocal isolation (stub claude script, real processes)", () => {
  it.live("MY_APP_SECRET stays out of the CLI's environment unless inheritEnv; env adds and removes", () =>
    Effect.gen(function*() {
      const dir = realpathSync(mkdtempSync(join(tmpdir(), "ecb-env-")))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const stub = join(dir, "claude")
      // Answers with the environment and argv it was started with.
      writeFileSync(
        stub,
        `#!/usr/bin/env node
const env = { secret: process.env.MY_APP_SECRET ?? null, added: process.env.ADDED ?? null, anthropic: process.env.ANTHROPIC_BASE_URL ?? null, lang: process.env.LANG ?? null, path: process.env.PATH !== undefined }
console.log(JSON.stringify({ type: "system", subtype: "init", mcp_servers: [] }))
console.log(JSON.stringify({ type: "result", result: JSON.stringify({ env, args: process.argv.slice(2) }) }))
`
      )
      chmodSync(stub, 0o755)
      const saved = {
        MY_APP_SECRET: process.env["MY_APP_SECRET"],
        ANTHROPIC_BASE_URL: process.env["ANTHROPIC_BASE_URL"]
      }
      process.env["MY_APP_SECRET"] = "hunter2"
      process.env["ANTHROPIC_BASE_URL"] = "http://127.0.0.1:9"
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          for (const [k, v] of Object.entries(saved)) {
            if (v === undefined) delete process.env[k]
            else process.env[k] = v
          }
        })
      )
      const ask = (options: ClaudeLocal.Options) =>
        Effect.gen(function*() {
          const chat = yield* ChatClient
          return JSON.parse(yield* chat.chat("env?")) as {
            env: Record<string, unknown>
            args: ReadonlyArray<string>
          }
        }).pipe(
          Effect.provide(
            ClaudeLocal.layer({ binary: stub, cwd: dir, ...options }).pipe(
              Layer.provide(NodeSubprocess.layer),
              Layer.provide(NodeSecretFile.layer({ directory: dir }))
            )
          )
        )
      const isolated = yield* ask({ env: { ADDED: "yes", LANG: undefined } })
      expect(isolated.env).toEqual({
        secret: null,
        added: "yes",
        anthropic: "http://127.0.0.1:9",
        lang: null,
        path: true
      })
      // No settings file of the user, project or local scope is loaded.
      expect(isolated.args).toContain("--setting-sources=")
      const inherited = yield* ask({ inheritEnv: true, settingSources: ["user", "project"] })
      expect(inherited.env["secret"]).toBe("hunter2")
      expect(inherited.args).toContain("--setting-sources=user,project")
    }))
})

const scripted = (lines: ReadonlyArray<unknown>, options: ClaudeLocal.Options) =>
  Effect.gen(function*() {
    const ctx = yield* Layer.build(
      ClaudeLocal.layer({ cliVersion: "2.1.332", ...options }).pipe(
        Layer.provideMerge(Layer.merge(
          TestSubprocess.layer(() =>
            Effect.succeed({
              exitCode: 0,
              stdout: stdout(lines),
              stderr: ""
            })
          ),
          NodeSecretFile.layer()
        ))
      )
    )
    return {
      chat: Context.get(ctx, ChatClient),
      session: Context.get(ctx, ClaudeCodeOptions.ClaudeSession),
      calls: Context.get(ctx, TestSubprocess.TestSubprocess).calls
    }
  })

describe("ClaudeLocal flags for the shared options (scripted subprocess)", () => {
  it.effect("bounds, prompts, directories, effort, agents, fork and extraArgs become flags", () =>
    Effect.gen(function*() {
      const { calls, chat, session } = yield* scripted([init, resultLine({ session_id: "s-2" })], {
        resume: "s-1",
        forkSession: true,
        maxTurns: 3,
        maxBudgetUsd: 0.5,
        appendSystemPrompt: "-starts with a dash",
        fallbackModel: "haiku",
        addDirs: ["/data/a", "/data/b"],
        effort: "high",
        agents: { reviewer: { description: "Reviews diffs", prompt: "Review", tools: ["Read"] } },
        extraArgs: { "include-hook-events": null, betas: "x-beta" }
      })
      expect(yield* session.sessionId).toEqual(Option.some("s-1"))
      yield* chat.chat("hi")
      yield* chat.chat("again")
      const [first, second] = yield* calls
      expect(first!.args).toEqual(expect.arrayContaining([
        "--resume",
        "s-1",
        "--fork-session",
        "--max-turns=3",
        "--max-budget-usd=0.5",
        "--append-system-prompt=-starts with a dash",
        "--fallback-model=haiku",
        "--add-dir=/data/a",
        "--add-dir=/data/b",
        "--effort=high",
        `--agents=${JSON.stringify({ reviewer: { description: "Reviews diffs", prompt: "Review", tools: ["Read"] } })}`,
        "--include-hook-events",
        "--betas=x-beta"
      ]))
      // The fork happened on the first turn; the next one continues the new session.
      expect(second!.args).not.toContain("--fork-session")
      // The budget bounds the conversation: the second run may spend what the first one left.
      expect(second!.args).toContain("--max-budget-usd=0.48")
      expect(second!.args[second!.args.indexOf("--resume") + 1]).toBe("s-2")
      expect(yield* session.sessionId).toEqual(Option.some("s-2"))
    }))

  it.effect("a run stopped at maxBudgetUsd is a RunLimitError with the partial answer and the usage", () =>
    Effect.gen(function*() {
      const { chat } = yield* scripted([
        init,
        { type: "assistant", message: { content: [{ type: "text", text: "Half of the answer" }] } },
        resultLine({ subtype: "error_max_budget_usd", is_error: true, result: undefined })
      ], { maxBudgetUsd: 0.01 })
      const error = yield* Effect.flip(chat.chat("expensive"))
      expect(error).toMatchObject({ _tag: "RunLimitError", limit: "maxBudgetUsd", answer: "Half of the answer" })
      if (error._tag === "RunLimitError") {
        expect(error.usage).toMatchObject({ inputTokens: 10, outputTokens: 4, costUsd: 0.02 })
        expect(error.message).toContain("raise maxBudgetUsd")
      }
    }))

  it.effect("canUseTool: a permission-prompt tool on its own bridge, hidden from the model, in the 0600 config", () =>
    Effect.gen(function*() {
      const { calls, chat } = yield* scripted([init, resultLine()], {
        canUseTool: () => Effect.succeed(ClaudeCodeOptions.allow()),
        mcpServers: {
          files: { command: "files-server", args: ["--root", "/srv"], env: { TOKEN: "t" } },
          off: { type: "http", url: "http://127.0.0.1:1/mcp" }
        },
        toolPolicy: { disabledTools: ["mcp__off__*"] }
      })
      yield* chat.chat("hi")
      const [call] = yield* calls
      const args = call!.args
      expect(args[args.indexOf("--permission-prompt-tool") + 1]).toBe("mcp__gtb_permission__decide")
      expect(args[args.indexOf("--disallowedTools") + 1]!.split(",")).toContain("mcp__gtb_permission__decide")
      expect(args[args.indexOf("--allowedTools") + 1]!.split(",")).toContain("mcp__files")
      // The application's env stays out of argv.
      expect(args.join(" ")).not.toContain("TOKEN")
    }))
})

describe("ClaudeAgent options for the shared options (scripted SDK)", () => {
  it.effect("sdk options, inheritEnv, extraOptions, fork on the first turn, canUseTool wired to the SDK callback", () =>
    Effect.gen(function*() {
      const decisions: Array<unknown> = []
      Sdk.script(async function*({ options }) {
        const canUseTool = options["canUseTool"] as (
          name: string,
          input: Record<string, unknown>,
          extra: { signal: AbortSignal; toolUseID: string }
        ) => Promise<unknown>
        const signal = new AbortController().signal
        decisions.push(await canUseTool("Bash", { command: "rm -rf /" }, { signal, toolUseID: "t1" }))
        decisions.push(await canUseTool("Read", { file_path: "a" }, { signal, toolUseID: "t2" }))
        yield init
        yield resultLine({ permission_denials: [{ tool_name: "Bash", tool_use_id: "t1" }] })
      })
      process.env["MY_APP_SECRET"] = "hunter2"
      yield* Effect.addFinalizer(() => Effect.sync(() => delete process.env["MY_APP_SECRET"]))
      const chat = yield* ClaudeAgent.make({
        sdkSpecifier: Sdk.specifier,
        killGrace: "100 millis",
        resume: "s-0",
        forkSession: true,
        inheritEnv: true,
        settingSources: ["project"],
        appendSystemPrompt: "Be kind.",
        maxTurns: 2,
        extraOptions: { maxThinkingTokens: 1024, settingSources: ["user"] },
        canUseTool: (request) =>
          Effect.succeed(
            request.toolName === "Bash"
              ? ClaudeCodeOptions.deny("no")
              : ClaudeCodeOptions.allow({ file_path: "b" })
          )
      })
      // The application's own deny is not a PermissionDeniedError.
      expect(yield* chat.chat("hi")).toBe("ok")
      yield* chat.chat("again")
      const [first, second] = Sdk.calls()
      expect(first!.options).toMatchObject({
        resume: "s-0",
        forkSession: true,
        settingSources: ["project"],
        systemPrompt: { type: "preset", preset: "claude_code", append: "Be kind." },
        maxTurns: 2,
        maxThinkingTokens: 1024
      })
      expect((first!.options["env"] as Record<string, string>)["MY_APP_SECRET"]).toBe("hunter2")
      expect(second!.options["forkSession"]).toBeUndefined()
      // Two per query; the first query's pair:
      expect(decisions.slice(0, 2)).toEqual([
        { behavior: "deny", message: "no" },
        { behavior: "allow", updatedInput: { file_path: "b" } }
      ])
    }))
})

/** The `--max-budget-usd` of a run's argv, as a number. */
const budgetFlag = (args: ReadonlyArray<string>) => {
  const flag = args.find((a) => a.startsWith("--max-budget-usd="))
  return flag === undefined ? undefined : Number(flag.slice("--max-budget-usd=".length))
}

describe("maxBudgetUsd bounds the conversation (scripted)", () => {
  it.effect("ClaudeLocal: each fresh run may spend what is left; a turn with nothing left starts no CLI", () =>
    Effect.gen(function*() {
      // Like the real CLI on a resumed session: the total runs on, 0.02 a run.
      const ctx = yield* Layer.build(
        ClaudeLocal.layer({ cliVersion: "2.1.332", maxBudgetUsd: 0.05 }).pipe(
          Layer.provideMerge(Layer.merge(
            TestSubprocess.layer((_, index) =>
              Effect.succeed({
                exitCode: 0,
                stdout: stdout([init, resultLine({ total_cost_usd: 0.02 * (index + 1) })]),
                stderr: ""
              })
            ),
            NodeSecretFile.layer()
          ))
        )
      )
      const chat = Context.get(ctx, ChatClient)
      for (const prompt of ["one", "two", "three"]) expect(yield* chat.chat(prompt)).toBe("ok")
      const error = yield* Effect.flip(chat.chat("four"))
      expect(error).toMatchObject({ _tag: "RunLimitError", limit: "maxBudgetUsd", answer: "" })
      const calls = yield* Context.get(ctx, TestSubprocess.TestSubprocess).calls
      expect(calls.map((c) => budgetFlag(c.args))).toEqual([0.05, 0.03, 0.01])
    }))

  it.effect("ClaudeAgent: each fresh query may spend what is left; a turn with nothing left starts no query", () =>
    Effect.gen(function*() {
      let total = 0
      Sdk.script(async function*() {
        total += 0.02
        yield init
        yield resultLine({ total_cost_usd: total })
      })
      const chat = yield* ClaudeAgent.make({ sdkSpecifier: Sdk.specifier, killGrace: "100 millis", maxBudgetUsd: 0.05 })
      for (const prompt of ["one", "two", "three"]) expect(yield* chat.chat(prompt)).toBe("ok")
      const error = yield* Effect.flip(chat.chat("four"))
      expect(error).toMatchObject({ _tag: "RunLimitError", limit: "maxBudgetUsd", answer: "" })
      expect(Sdk.calls().map((c) => c.options["maxBudgetUsd"])).toEqual([0.05, 0.03, 0.01])
    }))

  it.effect("ClaudeAgent keepAlive: one query with the whole budget; after it stops at the bound, no new one starts", () =>
    Effect.gen(function*() {
      // Like the real CLI: the total runs on over the query, which stops once it reaches its budget.
      Sdk.script(async function*({ options, prompt }) {
        let total = 0
        yield init
        for await (const _ of prompt as AsyncIterable<unknown>) {
          total += 0.02
          yield total >= (options["maxBudgetUsd"] as number)
            ? resultLine({ subtype: "error_max_budget_usd", is_error: true, result: "", total_cost_usd: total })
            : resultLine({ total_cost_usd: total })
        }
      })
      const chat = yield* ClaudeAgent.make({
        sdkSpecifier: Sdk.specifier,
        killGrace: "100 millis",
        keepAlive: true,
        maxBudgetUsd: 0.05
      })
      expect(yield* chat.chat("one")).toBe("ok")
      expect(yield* chat.chat("two")).toBe("ok")
      expect(yield* Effect.flip(chat.chat("three"))).toMatchObject({ _tag: "RunLimitError", limit: "maxBudgetUsd" })
      expect(Sdk.closed()).toBe(1)
      const error = yield* Effect.flip(chat.chat("four"))
      expect(error).toMatchObject({ _tag: "RunLimitError", limit: "maxBudgetUsd", answer: "" })
      expect(Sdk.calls().map((c) => c.options["maxBudgetUsd"])).toEqual([0.05])
    }))
  it.effect("ClaudeAgent prewarm: the warm query gets the budget, and one restarted by setTools what is left", () =>
    Effect.gen(function*() {
      Sdk.script(async function*({ prompt }) {
        let total = 0
        yield init
        for await (const _ of prompt as AsyncIterable<unknown>) {
          total += 0.02
          yield resultLine({ total_cost_usd: total })
        }
      })
      const chat = yield* ClaudeAgent.make({
        sdkSpecifier: Sdk.specifier,
        killGrace: "100 millis",
        prewarm: true,
        maxBudgetUsd: 0.05
      })
      expect(yield* chat.chat("one")).toBe("ok")
      yield* chat.setTools([])
      expect(yield* chat.chat("two")).toBe("ok")
      expect(Sdk.calls().map((c) => c.options["maxBudgetUsd"])).toEqual([0.05, 0.03])
    }))
})

describe("claudeCodeRun helpers", () => {
  it("the environment is an allow-list, changes apply last, and asChanges removes the rest", () => {
    const base = { PATH: "/bin", HOME: "/h", MY_APP_SECRET: "s", AWS_REGION: "eu", CLAUDECODE: "1", LC_ALL: "C" }
    const env = cliEnvironment(base, { env: { EXTRA: "1", HOME: undefined } })
    expect(env).toEqual({ PATH: "/bin", AWS_REGION: "eu", LC_ALL: "C", EXTRA: "1" })
    expect(cliEnvironment(base, { inheritEnv: true })).toMatchObject({ MY_APP_SECRET: "s" })
    expect(cliEnvironment(base, { inheritEnv: true })["CLAUDECODE"]).toBeUndefined()
    expect(asChanges(base, env)).toEqual({
      PATH: "/bin",
      HOME: undefined,
      MY_APP_SECRET: undefined,
      AWS_REGION: "eu",
      CLAUDECODE: undefined,
      LC_ALL: "C",
      EXTRA: "1"
    })
  })

  it("extraFlags, sdkOptions and permission answers", () => {
    expect(extraFlags(undefined)).toEqual([])
    expect(extraFlags({ verbose: null, "max-x": "2" })).toEqual(["--verbose", "--max-x=2"])
    expect(sdkOptions({}, undefined)).toEqual({ settingSources: [] })
    expect(sdkOptions({ systemPrompt: "Mine", appendSystemPrompt: "More" }, undefined)).toMatchObject({
      systemPrompt: "Mine\n\nMore"
    })
    expect(sdkOptions({ systemPrompt: "Mine" }, undefined)).toMatchObject({ systemPrompt: "Mine" })
    // The query's budget is what the conversation has left, not the option.
    expect(sdkOptions({ maxBudgetUsd: 1 }, undefined)).toEqual({ settingSources: [] })
    expect(sdkOptions({
      fallbackModel: "haiku",
      maxBudgetUsd: 1,
      addDirs: ["/d"],
      effort: "low",
      agents: { a: { description: "d", prompt: "p", disallowedTools: ["Bash"], model: "haiku" } }
    }, 0.25)).toMatchObject({
      fallbackModel: "haiku",
      maxBudgetUsd: 0.25,
      additionalDirectories: ["/d"],
      effort: "low",
      agents: { a: { description: "d", prompt: "p", disallowedTools: ["Bash"], model: "haiku" } }
    })
    const request = { toolName: "Read", input: { file_path: "x" }, toolUseId: undefined }
    expect(permissionAnswer(request, ClaudeCodeOptions.allow())).toEqual({
      behavior: "allow",
      updatedInput: { file_path: "x" }
    })
  })

  it.effect("a failing or dying canUseTool denies the call", () =>
    Effect.gen(function*() {
      const request = { toolName: "Bash", input: {}, toolUseId: "t" }
      expect(yield* decide(() => Effect.die("boom"), request)).toMatchObject({ _tag: "Deny" })
      expect(
        yield* decide(() => {
          throw new Error("sync throw")
        }, request)
      ).toMatchObject({ _tag: "Deny" })
    }))

  it.effect("the permission tool answers in the CLI's format and records denials by tool use id", () =>
    Effect.gen(function*() {
      const denied: Array<string> = []
      const tool = permissionTool(
        (r) => Effect.succeed(r.toolName === "Bash" ? ClaudeCodeOptions.deny("nope") : ClaudeCodeOptions.allow()),
        (id) => denied.push(id)
      )
      const set = yield* Tool.validate([tool])
      const call = (args: unknown) =>
        Tool.executeTool(set, new Tool.ToolCall({ id: "1", name: "decide", arguments: args }, { disableChecks: true }))
      const deny = yield* call({ tool_name: "Bash", input: { command: "rm" }, tool_use_id: "t9" })
      expect(JSON.parse(deny.content)).toEqual({ behavior: "deny", message: "nope" })
      const allow = yield* call({ tool_name: "Read", input: { file_path: "f" } })
      expect(JSON.parse(allow.content)).toEqual({ behavior: "allow", updatedInput: { file_path: "f" } })
      const odd = yield* call({ tool_name: "Read", input: "not an object" })
      expect(JSON.parse(odd.content)).toEqual({ behavior: "allow", updatedInput: {} })
      expect(denied).toEqual(["t9"])
    }))
})
