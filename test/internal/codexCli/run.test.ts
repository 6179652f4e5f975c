/**
 * A run's pieces outside the CLI: every subprocess failure as a typed reason, the child's
 * environment (allow-listed, private directories, the key, `env` last), private files, and the
 * refusal of a fork before anything runs.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Args from "../../../src/internal/codexCli/args.ts"
import * as Run from "../../../src/internal/codexCli/run.ts"
import { Usage } from "../../../src/services/ChatClient.ts"
import {
  Exited,
  NotFound,
  OutputTooLarge,
  SpawnFailed,
  SubprocessError,
  type SubprocessService,
  TimedOut
} from "../../../src/services/Subprocess.ts"
import * as Tool from "../../../src/services/Tool.ts"

const error = (reason: SubprocessError["reason"]) => new SubprocessError({ command: "codex", reason })

/** A Subprocess that records that it was asked: a refused run must not start the CLI. */
const recording = () => {
  const started: Array<string> = []
  const service: SubprocessService = {
    run: (options) => Effect.die(`unexpected run of ${options.command}`),
    stream: (options) => Stream.fromEffect(Effect.sync(() => void started.push(options.command))).pipe(Stream.drain)
  }
  return { service, started }
}

const envOf = (options: Run.CodexEnv["options"], subprocess: SubprocessService): Run.CodexEnv => ({
  options,
  subprocess,
  serverName: "gtb",
  dir: "/nonexistent/ecb-codex-x",
  codexHome: "/nonexistent/ecb-codex-x/codex",
  home: "/nonexistent/ecb-codex-x/home",
  cwd: "/nonexistent/ecb-codex-x/work",
  bridge: () => Option.none(),
  tools: () => Tool.empty,
  seen: new Map()
})

describe("codexCli run", () => {
  it("each subprocess failure becomes a typed reason saying what to do", () => {
    const missing = Run.fromSubprocess(error(new NotFound({ message: "codex not found" })))
    expect(missing.reason._tag).toBe("ConfigurationError")
    expect(missing.reason.message).toContain("or set `binary`")
    const slow = Run.fromSubprocess(error(new TimedOut({ timeoutMillis: 5, stderrTail: "", message: "after 5ms" })))
    expect(slow.reason._tag).toBe("TimeoutError")
    expect(slow.reason.message).toBe("Codex CLI run timed out: after 5ms; raise `requestTimeout`")
    const spawn = Run.fromSubprocess(error(new SpawnFailed({ message: "EACCES: permission denied" })))
    expect(spawn.reason._tag).toBe("ProcessError")
    expect(spawn.reason.message).toBe("EACCES: permission denied")
    const big = Run.fromSubprocess(
      error(new OutputTooLarge({ stream: "stdout", maxBytes: 10, message: "stdout over 10 bytes" }))
    )
    expect(big.reason._tag).toBe("ProcessError")
    expect(big.provider).toBe("codex-cli")
    // Only stderr's last five lines, at most 1000 characters.
    const stderrTail = ["l1", "l2", "l3", "l4", "l5", "l6", "x".repeat(2_000)].join("\n")
    const exited = Run.fromSubprocess(error(new Exited({ exitCode: 9, stdoutTail: "", stderrTail, message: "" })))
    expect(exited.reason.message.startsWith("Codex CLI exited with code 9: l3\nl4\nl5\nl6\nxxx")).toBe(true)
    expect(exited.reason.message.length).toBe("Codex CLI exited with code 9: ".length + 1_000)
  })

  it("the child's environment: only allowed variables, the private directories, the key, then `env`", () => {
    const saved = { ...process.env }
    try {
      process.env["ECB_TEST_SECRET_X"] = "leak"
      process.env["OPENAI_API_KEY"] = "sk-from-env"
      process.env["LANG"] = "C.UTF-8"
      const bare = Run.runEnv(envOf({}, recording().service), { [Args.BridgeTokenVar]: "bearer" })
      expect(bare["ECB_TEST_SECRET_X"]).toBeUndefined()
      expect("ECB_TEST_SECRET_X" in bare).toBe(true)
      expect(bare["LANG"]).toBe("C.UTF-8")
      expect(bare[Args.ApiKeyVar]).toBe("sk-from-env")
      expect(bare[Args.BridgeTokenVar]).toBe("bearer")
      expect(bare).toMatchObject({
        HOME: "/nonexistent/ecb-codex-x/home",
        CODEX_HOME: "/nonexistent/ecb-codex-x/codex",
        TMPDIR: "/nonexistent/ecb-codex-x/tmp"
      })
      const keyed = Run.runEnv(
        envOf(
          { apiKey: Redacted.make("sk-option"), env: { LANG: "de_DE.UTF-8", HOME: "/custom" } },
          recording().service
        ),
        {}
      )
      expect(keyed).toMatchObject({ [Args.ApiKeyVar]: "sk-option", LANG: "de_DE.UTF-8", HOME: "/custom" })
      delete process.env["OPENAI_API_KEY"]
      expect(Args.ApiKeyVar in Run.runEnv(envOf({}, recording().service), {})).toBe(false)
    } finally {
      for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name]
      Object.assign(process.env, saved)
    }
  })

  it.effect("writes private files with mode 0600", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ecb-codex-run-"))
      try {
        const file = path.join(dir, "secret.txt")
        yield* Run.writePrivate(file, "body")
        expect(fs.readFileSync(file, "utf8")).toBe("body")
        expect(fs.statSync(file).mode & 0o777).toBe(0o600)
      } finally {
        fs.rmSync(dir, { recursive: true, force: true })
      }
    }))

  it.effect("a fork is refused as NotSupportedError before the CLI starts", () =>
    Effect.gen(function*() {
      const { service, started } = recording()
      const refused = yield* Effect.flip(
        Run.freshRun(envOf({}, service))({
          prompt: "hi",
          responseFormat: undefined,
          sessionId: Option.some("t-1"),
          fork: true,
          emit: undefined,
          budgetUsd: undefined,
          recordResult: () => Effect.succeed(Usage.empty)
        })
      )
      expect(refused.reason._tag === "NotSupportedError" && refused.reason.feature).toBe("forkSession")
      expect(started).toEqual([])
    }))
})
