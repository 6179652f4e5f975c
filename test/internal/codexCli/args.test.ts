/**
 * The argv of a run, option by option: the provider block with only a key or only a URL, retries
 * truncated, the sandbox chosen between the options and a policy, the instructions file, and
 * overrides with nothing to add.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Redacted from "effect/Redacted"
import * as Args from "../../../src/internal/codexCli/args.ts"

const run: Args.RunArgs = {
  serverName: "gtb",
  bridgeUrl: undefined,
  cwd: "/w",
  instructionsFile: undefined,
  schemaFile: undefined,
  skillFiles: [],
  threadId: undefined
}

/** The value after `flag`, or undefined. */
const after = (args: ReadonlyArray<string>, flag: string) => {
  const at = args.indexOf(flag)
  return at < 0 ? undefined : args[at + 1]
}

const provider = (args: ReadonlyArray<string>) => args.find((a) => a.startsWith("model_providers.ecb="))

describe("codexCli args", () => {
  it("no overrides: no switches", () => {
    expect(Args.overrideArgs({})).toEqual([])
    expect(Args.overrideArgs({ disabledFeatures: undefined, config: undefined })).toEqual([])
  })

  it("a key alone defines the provider on OpenAI's URL, with no retry settings and the key not on argv", () => {
    const args = Args.buildArgs({ apiKey: Redacted.make("sk-only") }, run)
    expect(args).toContain(`model_provider="ecb"`)
    expect(provider(args)).toBe(
      `model_providers.ecb={name="effect-chat-bridge",base_url="https://api.openai.com/v1",wire_api="responses",` +
        `env_key="${Args.ApiKeyVar}"}`
    )
    expect(args.join(" ")).not.toContain("sk-only")
  })

  it("a URL alone defines the provider too; retries are truncated to whole numbers", () => {
    const args = Args.buildArgs({ baseUrl: "http://h:1/v1?x=\"q\"", maxRetries: 2.7 }, run)
    expect(provider(args)).toBe(
      `model_providers.ecb={name="effect-chat-bridge",base_url="http://h:1/v1?x=\\"q\\"",wire_api="responses",` +
        `env_key="${Args.ApiKeyVar}",request_max_retries=2,stream_max_retries=2}`
    )
    expect(Args.buildArgs({}, run).some((a) => a.startsWith("model_provider"))).toBe(false)
  })

  it("the sandbox: read-only by default, the policy's otherwise, the options' over a writable policy", () => {
    const policy = (sandbox: Args.PolicySwitches["sandbox"]): Args.PolicySwitches => ({
      disabledFeatures: [],
      sandbox,
      config: {}
    })
    expect(after(Args.buildArgs({}, run), "--sandbox")).toBe("read-only")
    expect(after(Args.buildArgs({ sandbox: "workspace-write" }, run), "--sandbox")).toBe("workspace-write")
    expect(after(Args.buildArgs({}, { ...run, policy: policy("workspace-write") }), "--sandbox")).toBe(
      "workspace-write"
    )
    expect(
      after(
        Args.buildArgs({ sandbox: "danger-full-access" }, { ...run, policy: policy("workspace-write") }),
        "--sandbox"
      )
    ).toBe("danger-full-access")
    expect(
      after(Args.buildArgs({ sandbox: "danger-full-access" }, { ...run, policy: policy("read-only") }), "--sandbox")
    ).toBe("read-only")
  })

  it("the instructions file, the model and the policy's settings under the caller's config", () => {
    const args = Args.buildArgs(
      { model: "gpt-x", config: { "tools.web_search": "true" } },
      {
        ...run,
        instructionsFile: "/r/instr \"1\".md",
        policy: {
          disabledFeatures: ["shell_tool"],
          sandbox: "read-only",
          config: { "tools.web_search": "false", "features.x": "false" }
        }
      }
    )
    expect(after(args, "--model")).toBe("gpt-x")
    expect(args).toContain(`model_instructions_file="/r/instr \\"1\\".md"`)
    expect(args).toContain("tools.web_search=true")
    expect(args).not.toContain("tools.web_search=false")
    expect(args).toContain("features.x=false")
    expect(args.filter((_, i) => args[i - 1] === "--disable")).toEqual(["plugins", "apps", "shell_tool"])
    expect(args.some((a) => a.startsWith("--output-schema"))).toBe(false)
    expect(Args.tomlString("a\\b\n")).toBe(`"a\\\\b\\n"`)
  })

  it("app-server takes exec's settings on stdio, without the flags thread/start carries instead", () => {
    const options = { model: "gpt-x", sandbox: "workspace-write" as const, config: { "features.x": "true" } }
    const process = { ...run, bridgeUrl: "http://127.0.0.1:9/mcp", instructionsFile: "/r/i.md", skillFiles: ["/s"] }
    const args = Args.appServerArgs(options, process)
    expect(args.slice(0, 3)).toEqual(["app-server", "--listen", "stdio://"])
    for (const flag of ["--sandbox", "--model", "--cd", "--json", "-"]) expect(args).not.toContain(flag)
    // The same settings as exec's, in the same order.
    const exec = Args.buildArgs(options, process)
    expect(args.slice(3)).toEqual(exec.slice(exec.indexOf("--model") + 2, -1))
    expect(args.at(-1)).toBe("features.x=true")
  })
})
