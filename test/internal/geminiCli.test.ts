/**
 * GeminiCli's pure parts: the `--policy` file it writes, which prompt text ACP would run as a
 * command, what each exit code of Gemini CLI tells the caller, and what keys a kept-alive process.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { guardedContent, mcpContent } from "../../src/internal/agentCli/mediaMcp.ts"
import type { RunInput } from "../../src/internal/claude/session.ts"
import * as Policy from "../../src/internal/geminiCli/policy.ts"
import * as Run from "../../src/internal/geminiCli/run.ts"
import { Usage } from "../../src/services/ChatClient.ts"
import type { SubprocessService } from "../../src/services/Subprocess.ts"
import * as Tool from "../../src/services/Tool.ts"

const tool = (name: string, description = "A tool") =>
  Tool.make(name, { description, parameters: { a: Schema.Number }, handler: ({ a }) => Effect.succeed(a) })

/** A client's environment with `tools` set (no bridge: the plan only reads the tool list). */
const envWith = (tools: ReadonlyArray<Tool.Tool>): Run.GeminiEnv => ({
  options: {},
  subprocess: {} as SubprocessService,
  serverName: "gtb",
  dir: "/nonexistent",
  home: "/nonexistent/home",
  cwd: "/nonexistent/work",
  bridge: () => Option.none(),
  tools: () => ({ tools, byName: new Map(tools.map((t) => [t.name, t])) })
})

const input = (prompt: string): RunInput => ({
  prompt,
  responseFormat: undefined,
  sessionId: Option.none(),
  fork: false,
  emit: undefined,
  budgetUsd: undefined,
  recordResult: () => Effect.succeed(Usage.empty)
})

describe("GeminiCli internals", () => {
  it.effect("keys a kept-alive process by its tool set: the same tools reuse it, any change replaces it", () =>
    Effect.gen(function*() {
      const key = (tools: ReadonlyArray<Tool.Tool>) =>
        Effect.map(Run.planTurn(envWith(tools), input("hi")), (plan) => plan.key)
      const base = yield* key([tool("add")])
      expect(yield* key([tool("add")])).toBe(base)
      expect(yield* key([tool("add"), tool("mul")])).not.toBe(base)
      expect(yield* key([tool("add", "Adds, differently")])).not.toBe(base)
      expect(yield* key([])).not.toBe(base)
      // A prompt ACP would run as a command is refused before any process is chosen.
      const refused = yield* Effect.flip(Run.planTurn(envWith([tool("add")]), input("/memory show")))
      expect(refused._tag === "ProviderError" && refused.reason._tag).toBe("NotSupportedError")
    }))

  it("compiles toolPolicy into the policy file and the mounted servers, the app's tools kept", () => {
    const planned = Run.runPolicy(
      { toolPolicy: { disabledTools: ["read_file"] }, policyRules: [{ toolName: "glob", decision: "deny" }] },
      "gtb",
      ["lookup"],
      true
    )
    assert(Result.isSuccess(planned))
    const text = planned.success.policyText ?? ""
    expect(text).toMatch(/toolName = \[[^\]]*"read_file"[^\]]*\]\ndecision = "deny"/)
    expect(text).toContain(`mcpName = "gtb"\ntoolName = "lookup"\ndecision = "allow"\npriority = 100`)
    expect(text.trimEnd().endsWith(`toolName = "glob"\ndecision = "deny"`)).toBe(true)
    expect(text).not.toMatch(/^toolName = "\*"\ndecision = "deny"/m)
    expect(planned.success.allowedMcpServerNames).toEqual(["gtb"])
    const args = Run.buildArgs({}, {
      policy: "/p.toml",
      mounted: true,
      allowedMcpServerNames: planned.success.allowedMcpServerNames
    }, "gtb")
    expect(args.slice(-4)).toEqual(["--policy", "/p.toml", "--allowed-mcp-server-names", "gtb"])
  })

  it("keeps the allow rules without toolPolicy and fails a strict refusal as a config error", () => {
    const plain = Run.runPolicy({}, "gtb", ["lookup"], true)
    assert(Result.isSuccess(plain))
    expect(plain.success.policyText).toBe(`[[rule]]\nmcpName = "gtb"\ntoolName = "lookup"\ndecision = "allow"\n`)
    expect(plain.success.allowedMcpServerNames).toBeUndefined()
    const refused = Run.runPolicy({ toolPolicy: { disabledTools: ["Bsh"], strict: true } }, "gtb", [], false)
    assert(Result.isFailure(refused))
    expect(refused.failure.reason._tag).toBe("ConfigurationError")
    expect(refused.failure.message).toContain("Bsh")
  })

  it("renders one allow rule per bridge tool, then the caller's rules", () => {
    const text = Policy.render([
      ...Policy.allowBridgeTools("gtb", ["add", "say \"hi\""]),
      { toolName: "run_shell_command", decision: "deny", priority: 10 }
    ])
    expect(text).toBe(
      "[[rule]]\nmcpName = \"gtb\"\ntoolName = \"add\"\ndecision = \"allow\"\n\n" +
        "[[rule]]\nmcpName = \"gtb\"\ntoolName = \"say \\\"hi\\\"\"\ndecision = \"allow\"\n\n" +
        "[[rule]]\ntoolName = \"run_shell_command\"\ndecision = \"deny\"\npriority = 10\n"
    )
  })

  it("refuses only the text ACP would run as one of its commands", () => {
    expect(Run.interpretedCommand("/memory show")).toBe("/memory")
    expect(Run.interpretedCommand("  $init")).toBe("$init")
    expect(Run.interpretedCommand("/ help me")).toBe("/help")
    expect(Run.interpretedCommand("/cmd @notes.txt")).toBeUndefined()
    expect(Run.interpretedCommand("please /memory")).toBeUndefined()
    expect(Run.interpretedCommand("x@notes.txt")).toBeUndefined()
  })

  it("maps Gemini CLI's exit codes to reasons that say what to do", () => {
    expect(Run.exitReason(41, "bad key")._tag).toBe("AuthenticationError")
    expect(Run.exitReason(41, "").message).toContain("GEMINI_API_KEY")
    expect(Run.exitReason(42, "")._tag).toBe("InvalidRequestError")
    expect(Run.exitReason(52, "")._tag).toBe("ConfigurationError")
    expect(Run.exitReason(55, "")._tag).toBe("ConfigurationError")
    const other = Run.exitReason(1, "boom")
    expect(other._tag).toBe("ProcessError")
    expect(other.message).toContain("boom")
  })

  it("passes only allow-listed variables, the private directories and the caller's changes", () => {
    process.env["ECB_GEMINI_TEST_SECRET"] = "s"
    try {
      const env = Run.runEnv({
        options: { env: { EXTRA: "1" } },
        dir: "/d",
        home: "/d/home"
      } as unknown as Run.GeminiEnv, {})
      expect(env["ECB_GEMINI_TEST_SECRET"]).toBeUndefined()
      expect("ECB_GEMINI_TEST_SECRET" in env).toBe(true)
      expect(env["GEMINI_CLI_HOME"]).toBe("/d/home")
      expect(env["TMPDIR"]).toBe("/d/tmp")
      expect(env["EXTRA"]).toBe("1")
      expect(env["PATH"]).toBe(process.env["PATH"])
    } finally {
      delete process.env["ECB_GEMINI_TEST_SECRET"]
    }
  })

  it("leads a tool result whose text is JSON but not an object with an empty text item", () => {
    const result = (content: string) => ({ name: "t", callId: "c", content, isError: false })
    expect(guardedContent(result("5"))).toEqual([{ type: "text", text: "" }, { type: "text", text: "5" }])
    expect(guardedContent(result("[1]"))).toEqual([{ type: "text", text: "" }, { type: "text", text: "[1]" }])
    expect(guardedContent(result("{\"a\":1}"))).toEqual(mcpContent(result("{\"a\":1}")))
    expect(guardedContent(result("hello"))).toEqual(mcpContent(result("hello")))
  })
})
