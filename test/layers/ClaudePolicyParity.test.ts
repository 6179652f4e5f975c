/**
 * ClaudeLocal (the CLI's argv) and ClaudeAgent (the Agent SDK's options) apply one tool policy:
 * the same interactive-tool rule for every permission mode, conditions detected from the working
 * directory unless given, and long opt-out lists moved to a settings file on both.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as ClaudeAgent from "../../src/layers/ClaudeAgent.ts"
import * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import * as NodeSecretFile from "../../src/layers/NodeSecretFile.ts"
import * as TestSubprocess from "../../src/layers/TestSubprocess.ts"
import * as ClaudeCodeCatalog from "../../src/registry/ClaudeCodeCatalog.ts"
import type * as ToolPolicy from "../../src/registry/ToolPolicy.ts"
import { ChatClient } from "../../src/services/ChatClient.ts"
import * as Sdk from "../support/fakeAgentSdk.ts"

const initLine = JSON.stringify({ type: "system", subtype: "init", session_id: "s-1", mcp_servers: [] })
const resultLine = JSON.stringify({
  type: "result",
  subtype: "success",
  is_error: false,
  result: "ok",
  session_id: "s-1"
})

/** `--disallowedTools` values of an argv (the flag may repeat), plus a `--settings` file's deny list. */
const cliDisallowed = (args: ReadonlyArray<string>, settings: ReadonlyArray<string> = []): Array<string> => {
  const out = [...settings]
  args.forEach((a, i) => {
    if (a === "--disallowedTools") out.push(...args[i + 1]!.split(","))
  })
  return out.sort()
}

/** Runs one ClaudeLocal turn; returns its argv and the settings file's contents read while it ran. */
const localTurn = (options: ClaudeLocal.Options) =>
  Effect.gen(function*() {
    let settings: string | undefined
    const ctx = yield* Layer.build(
      ClaudeLocal.layer({ cliVersion: "2.1.332", ...options }).pipe(
        Layer.provideMerge(Layer.merge(
          TestSubprocess.layer((run) =>
            Effect.sync(() => {
              const i = run.args.indexOf("--settings")
              if (i >= 0) settings = fs.readFileSync(run.args[i + 1]!, "utf8")
              return { exitCode: 0, stdout: `${initLine}\n${resultLine}\n`, stderr: "" }
            })
          ),
          NodeSecretFile.layer()
        ))
      )
    )
    yield* Context.get(ctx, ChatClient).chat("hi")
    const [call] = yield* Context.get(ctx, TestSubprocess.TestSubprocess).calls
    return { args: call!.args, settings }
  }).pipe(Effect.scoped)

/** Runs one ClaudeAgent turn on the scripted SDK; returns the query's options and the settings file read while it ran. */
const agentTurn = (options: ClaudeAgent.Options) =>
  Effect.gen(function*() {
    let settings: string | undefined
    Sdk.script(async function*({ options }) {
      if (typeof options["settings"] === "string") settings = fs.readFileSync(options["settings"], "utf8")
      yield JSON.parse(initLine)
      yield JSON.parse(resultLine)
    })
    const chat = yield* ClaudeAgent.make({ sdkSpecifier: Sdk.specifier, killGrace: "100 millis", ...options })
    yield* chat.chat("hi")
    return { options: Sdk.calls()[0]!.options, settings }
  }).pipe(Effect.scoped)

const tempDir = (git: boolean) => {
  const dir = fs.mkdtempSync(path.join(fs.realpathSync(os.tmpdir()), "ecb-parity-"))
  if (git) fs.mkdirSync(path.join(dir, ".git"))
  return dir
}

const modes = ["default", "acceptEdits", "bypassPermissions", "plan", "dontAsk", "auto"] as const
const interactive = ClaudeCodeCatalog.descriptors.filter((d) => "interactive" in d && d.interactive).map((d) => d.name)

describe("ClaudeLocal and ClaudeAgent apply the same tool policy", () => {
  for (const mode of modes) {
    it.live(
      `permission mode ${mode}: identical disallow-lists; interactive tools ${
        mode === "bypassPermissions" ? "allowed" : "blocked"
      }`,
      () =>
        Effect.gen(function*() {
          const cwd = tempDir(true)
          const toolPolicy = { disabledTools: ["Bash", "mcp__docs__*"] }
          const local = yield* localTurn({ cwd, permissionMode: mode, toolPolicy })
          const agent = yield* agentTurn({ cwd, permissionMode: mode, toolPolicy })
          const fromCli = cliDisallowed(local.args)
          expect([...(agent.options["disallowedTools"] as Array<string>)].sort()).toEqual(fromCli)
          for (const name of interactive) expect(fromCli.includes(name)).toBe(mode !== "bypassPermissions")
          // A git workspace was detected: the non-interactive worktree tool is on when its pair is.
          expect(fromCli.includes("ExitWorktree")).toBe(mode !== "bypassPermissions")
          expect(fromCli).toEqual(expect.arrayContaining(["Bash", "BashOutput", "mcp__docs__*"]))
          // On bypassPermissions the SDK hook lets interactive tools through, as the CLI does.
          const hooks = agent.options["hooks"] as ToolPolicy.AgentSdkOptions<never>["hooks"]
          if (mode === "bypassPermissions") {
            const hook = hooks!.PreToolUse[0]!.hooks[0]!
            const answer = yield* Effect.promise(() =>
              hook({ hook_event_name: "PreToolUse", tool_name: "AskUserQuestion", permission_mode: mode }, "t", {
                signal: new AbortController().signal
              })
            )
            expect(answer).toEqual({})
          } else {
            expect(hooks).toBeUndefined()
          }
          fs.rmSync(cwd, { recursive: true, force: true })
        })
    )
  }

  it.live("conditions: detected from cwd unless given; given values win; agent-has-channel comes from the app", () =>
    Effect.gen(function*() {
      const git = tempDir(true)
      const plain = tempDir(false)
      const registry = yield* ClaudeCodeCatalog.makeRegistry([{
        name: "mcp__chan__notify",
        category: "context",
        exposure: "conditional",
        condition: "agent-has-channel",
        kind: "mcp",
        mcpServer: "chan",
        mcpWireName: "notify",
        labelKey: "x",
        descriptionKey: "y"
      }])
      const disallowed = (cwd: string, conditions?: Record<string, boolean>) =>
        Effect.map(
          localTurn({
            cwd,
            permissionMode: "bypassPermissions",
            toolPolicy: { registry, ...(conditions === undefined ? {} : { conditions }) }
          }),
          (t) => cliDisallowed(t.args)
        )
      expect(yield* disallowed(git)).not.toContain("ExitWorktree")
      expect(yield* disallowed(plain)).toContain("ExitWorktree")
      expect(yield* disallowed(git, { "workspace-has-git": false })).toContain("ExitWorktree")
      expect(yield* disallowed(plain, { "workspace-has-git": true })).not.toContain("ExitWorktree")
      expect(yield* disallowed(git)).toContain("mcp__chan__notify")
      expect(yield* disallowed(git, { "agent-has-channel": true })).not.toContain("mcp__chan__notify")
      const agent = yield* agentTurn({ cwd: git, permissionMode: "bypassPermissions" })
      expect(agent.options["disallowedTools"]).not.toContain("ExitWorktree")
      fs.rmSync(git, { recursive: true, force: true })
      fs.rmSync(plain, { recursive: true, force: true })
    }))

  it.live("the largest opt-out list: both put it in a settings file and keep every argument small", () =>
    Effect.gen(function*() {
      // 1,000 names of 256 characters (the bounds): 256 KB, more than one 96 KiB argument.
      const many = Array.from({ length: 999 }, (_, i) => `mcp__optout__tool_${i}_`.padEnd(256, "x"))
      const toolPolicy = { disabledTools: [...many, "Write"] }
      const local = yield* localTurn({ toolPolicy })
      const agent = yield* agentTurn({ toolPolicy })
      const localDeny = (JSON.parse(local.settings!) as { permissions: { deny: Array<string> } }).permissions.deny
      const agentDeny = (JSON.parse(agent.settings!) as { permissions: { deny: Array<string> } }).permissions.deny
      const expected = [...many, "Write"]
      const localAll = new Set(cliDisallowed(local.args, localDeny))
      const agentAll = new Set([...agentDeny, ...(agent.options["disallowedTools"] as Array<string>)])
      expect(expected.filter((n) => !localAll.has(n))).toEqual([])
      expect(expected.filter((n) => !agentAll.has(n))).toEqual([])
      expect(localDeny.length).toBeGreaterThan(0)
      expect(agentDeny.length).toBeGreaterThan(0)
      for (const a of local.args) expect(Buffer.byteLength(a)).toBeLessThanOrEqual(96 * 1024)
      expect(Buffer.byteLength((agent.options["disallowedTools"] as Array<string>).join(","))).toBeLessThanOrEqual(
        96 * 1024
      )
      // The files are gone with the turn.
      expect(fs.existsSync(agent.options["settings"] as string)).toBe(false)
      expect(fs.existsSync(local.args[local.args.indexOf("--settings") + 1]!)).toBe(false)
    }))
})
