import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as CliVersion from "../../src/internal/claude/cliVersion.ts"
import * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import * as NodeSecretFile from "../../src/layers/NodeSecretFile.ts"
import * as NodeSubprocess from "../../src/layers/NodeSubprocess.ts"
import * as TestSubprocess from "../../src/layers/TestSubprocess.ts"
import { ChatClient } from "../../src/services/ChatClient.ts"
import { NotFound, type RunOptions, SubprocessError } from "../../src/services/Subprocess.ts"
import { stdinPrompt } from "../support/stdinPrompt.ts"

const ok = (answer = "ok"): TestSubprocess.Scripted => ({
  stdout: [
    JSON.stringify({ type: "system", subtype: "init", session_id: "s", mcp_servers: [] }),
    JSON.stringify({ type: "result", subtype: "success", is_error: false, result: answer, session_id: "s" })
  ].join("\n") + "\n"
})
const version = (v: string): TestSubprocess.Scripted => ({ stdout: `${v} (Claude Code)\n` })

/** A client on the scripted Subprocess, without `cliVersion`: the version is read with `--version`. */
const withClient = <A, E>(
  script: ReadonlyArray<TestSubprocess.Scripted>,
  options: ClaudeLocal.Options,
  body: (chat: ChatClient["Service"], calls: Effect.Effect<ReadonlyArray<RunOptions>>) => Effect.Effect<A, E>
) =>
  Effect.gen(function*() {
    const ctx = yield* Layer.build(
      ClaudeLocal.layer(options).pipe(
        Layer.provideMerge(Layer.merge(TestSubprocess.layer(script), NodeSecretFile.layer()))
      )
    )
    return yield* body(Context.get(ctx, ChatClient), Context.get(ctx, TestSubprocess.TestSubprocess).calls)
  }).pipe(Effect.scoped)

describe("claude CLI versions", () => {
  it("parses `claude --version`, compares, and knows which version has which feature", () => {
    const v = (text: string) => Option.getOrThrow(CliVersion.parse(text))
    expect(v("2.1.332 (Claude Code)")).toEqual({ major: 2, minor: 1, patch: 332 })
    expect(Option.isNone(CliVersion.parse("Claude Code, latest"))).toBe(true)
    expect(CliVersion.compare(v("2.0.10"), v("2.0.9"))).toBeGreaterThan(0)
    expect(CliVersion.compare(v("1.9.9"), v("2.0.0"))).toBeLessThan(0)
    expect(CliVersion.format(v("2.0.45"))).toBe("2.0.45")
    expect(CliVersion.supports(v("2.0.44"), "jsonSchema")).toBe(false)
    expect(CliVersion.supports(v("2.0.45"), "jsonSchema")).toBe(true)
    expect(CliVersion.supports(v("2.1.85"), "alwaysLoad")).toBe(false)
    expect(CliVersion.supports(v("2.1.86"), "alwaysLoad")).toBe(true)
    expect(CliVersion.supports(v("2.0.0"), "settingSources")).toBe(true)
    // Every feature exists in the pinned CLI.
    for (const feature of Object.keys(CliVersion.Features) as Array<CliVersion.Feature>) {
      expect(CliVersion.supports(v(CliVersion.PinnedVersion), feature)).toBe(true)
    }
    expect(ClaudeLocal.MinimumCliVersion).toBe("2.0.0")
  })

  it.live("the version is read once per layer with the run's env and cwd; --version is not repeated", () =>
    withClient(
      [version("2.1.332"), ok("one"), ok("two")],
      { env: { HOME: "/tmp/h" }, cwd: "/tmp" },
      (chat, calls) =>
        Effect.gen(function*() {
          expect(yield* chat.chat("one")).toBe("one")
          expect(yield* chat.chat("two")).toBe("two")
          const [probe, ...runs] = yield* calls
          expect(probe).toMatchObject({ command: "claude", args: ["--version"], env: { HOME: "/tmp/h" }, cwd: "/tmp" })
          expect(runs.map((r) => r.args[0])).toEqual(["-p", "-p"])
        })
    ))

  it.live("a CLI older than 2.0.0 fails the first turn with a config error; after an upgrade the next turn runs", () =>
    withClient([version("1.0.128"), version("2.0.0"), ok("upgraded")], {}, (chat, calls) =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(chat.chat("hi"))
        expect(error).toMatchObject({
          _tag: "ProviderError",
          reason: { _tag: "ConfigurationError" },
          isRetryable: false
        })
        expect(error.message).toContain("The installed claude CLI is 1.0.128")
        expect(error.message).toContain("needs 2.0.0 or newer")
        expect(error.message).toContain("npm install -g @anthropic-ai/claude-code@latest")
        expect((yield* calls).length).toBe(1)
        expect(yield* chat.chat("hi")).toBe("upgraded")
      })))

  it.live("ask on a CLI without --json-schema (2.0.44): the schema goes in the prompt, the text is decoded", () =>
    withClient([version("2.0.44"), ok("```json\n{\"n\": 7}\n```")], {}, (chat, calls) =>
      Effect.gen(function*() {
        expect(yield* chat.ask("Seven?", Schema.Struct({ n: Schema.Number }))).toEqual({ n: 7 })
        const run = (yield* calls)[1]!
        expect(run.args).not.toContain("--json-schema")
        expect(stdinPrompt(run.stdin)).toMatch(/^Seven\?\n\nAnswer with only a JSON object/)
        expect(JSON.parse(stdinPrompt(run.stdin).slice(stdinPrompt(run.stdin).indexOf("{")))).toMatchObject({
          required: ["n"]
        })
      })))

  it.live("ask on 2.0.45 passes --json-schema and leaves the prompt alone", () =>
    withClient(
      [{
        stdout: [
          JSON.stringify({ type: "system", subtype: "init", session_id: "s", mcp_servers: [] }),
          JSON.stringify({ type: "result", is_error: false, result: "", structured_output: { n: 7 }, session_id: "s" })
        ].join("\n")
      }],
      { cliVersion: "2.0.45" },
      (chat, calls) =>
        Effect.gen(function*() {
          expect(yield* chat.ask("Seven?", Schema.Struct({ n: Schema.Number }))).toEqual({ n: 7 })
          const [run] = yield* calls
          expect(JSON.parse(run!.args[run!.args.indexOf("--json-schema") + 1]!)).toMatchObject({ required: ["n"] })
          expect(stdinPrompt(run!.stdin)).toBe("Seven?")
        })
    ))

  // Each option that needs a newer CLI: refused on the release before, with both versions named and
  // only the version probe run; passed on the first release that has it.
  const gated = [
    {
      what: "--permission-mode dontAsk",
      since: "2.0.44",
      before: "2.0.42",
      options: { permissionMode: "dontAsk" },
      arg: "dontAsk"
    },
    {
      what: "--max-budget-usd (the maxBudgetUsd option)",
      since: "2.0.30",
      before: "2.0.29",
      options: { maxBudgetUsd: 1 },
      arg: "--max-budget-usd=1"
    },
    {
      what: "--effort (the effort option)",
      since: "2.1.38",
      before: "2.1.37",
      options: { effort: "high" },
      arg: "--effort=high"
    }
  ] as const
  for (const gate of gated) {
    it.live(`${gate.what}: a config error on ${gate.before}, passed on ${gate.since}`, () =>
      Effect.gen(function*() {
        yield* withClient([version(gate.before)], gate.options, (chat, calls) =>
          Effect.gen(function*() {
            const error = yield* Effect.flip(chat.chat("hi"))
            expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "ConfigurationError" } })
            expect(error.message).toBe(
              `${gate.what} needs claude ${gate.since} or newer; the installed claude is ${gate.before}. Upgrade it with ` +
                "`npm install -g @anthropic-ai/claude-code@latest` (or `claude update`)."
            )
            expect((yield* calls).length).toBe(1)
          }))
        yield* withClient([version(gate.since), ok()], gate.options, (chat, calls) =>
          Effect.gen(function*() {
            expect(yield* chat.chat("hi")).toBe("ok")
            expect((yield* calls)[1]!.args).toContain(gate.arg)
          }))
      }))
  }

  it.live("an unreadable --version output logs a warning and runs with the newest features", () => {
    const warnings: Array<string> = []
    const capture = Logger.layer([
      Logger.make(({ logLevel, message }) => {
        if (logLevel === "Warn") warnings.push(String(Array.isArray(message) ? message[0] : message))
      })
    ])
    return withClient(
      [{ stdout: "my-claude-wrapper\n" }, ok("{\"n\":1}")],
      {},
      (chat, calls) =>
        Effect.gen(function*() {
          yield* chat.ask("One?", Schema.Struct({ n: Schema.Number }))
          expect((yield* calls)[1]!.args).toContain("--json-schema")
          expect(warnings).toEqual(["claude --version printed no version; assuming the newest features"])
        })
    ).pipe(Effect.provide(capture))
  })

  it.live("cliVersion is checked like a read version: too old or malformed is a config error, no process runs", () =>
    Effect.gen(function*() {
      const tooOld = yield* withClient([], { cliVersion: "1.0.0" }, (chat) => Effect.flip(chat.chat("hi")))
      expect(tooOld).toMatchObject({
        reason: { _tag: "ConfigurationError" },
        message: expect.stringContaining("is 1.0.0; effect-chat-bridge")
      })
      const malformed = yield* withClient([], { cliVersion: "latest" }, (chat) => Effect.flip(chat.chat("hi")))
      expect(malformed).toMatchObject({
        reason: { _tag: "ConfigurationError" },
        message: expect.stringContaining(`cliVersion "latest"`)
      })
    }))

  it.live("a missing binary is found out by --version: the install hint", () =>
    withClient(
      [new SubprocessError({ command: "claude", reason: new NotFound({ message: "not found" }) })],
      {},
      (chat) =>
        Effect.gen(function*() {
          const error = yield* Effect.flip(chat.chat("hi"))
          expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "ConfigurationError" } })
          expect(error.message).toContain("npm install -g @anthropic-ai/claude-code")
        })
    ))

  it.live("a real too-old binary (a script printing 1.0.128) fails the first turn; no run is started", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "ecb-old-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const stub = join(dir, "claude")
      const marker = join(dir, "ran")
      // Prints its version like claude 1.0.x; any other call leaves a marker file.
      writeFileSync(
        stub,
        `#!/usr/bin/env node
if (process.argv[2] === "--version") console.log("1.0.128 (Claude Code)")
else require("node:fs").writeFileSync(${JSON.stringify(marker)}, "")
`
      )
      chmodSync(stub, 0o755)
      const error = yield* Effect.flip(
        Effect.flatMap(ChatClient, (chat) => chat.chat("hi")).pipe(
          Effect.provide(
            ClaudeLocal.layer({ binary: stub }).pipe(
              Layer.provide(NodeSubprocess.layer),
              Layer.provide(NodeSecretFile.layer({ directory: dir }))
            )
          )
        )
      )
      expect(error).toMatchObject({
        _tag: "ProviderError",
        reason: { _tag: "ConfigurationError" },
        provider: "claude-local"
      })
      expect(error.message).toBe(
        "The installed claude CLI is 1.0.128; effect-chat-bridge needs 2.0.0 or newer. Upgrade it with " +
          "`npm install -g @anthropic-ai/claude-code@latest` (or `claude update`)."
      )
      expect(existsSync(marker)).toBe(false)
    }).pipe(Effect.scoped))
})
