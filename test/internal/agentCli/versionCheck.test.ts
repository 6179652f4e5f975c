import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import * as VersionCheck from "../../../src/internal/agentCli/versionCheck.ts"
import * as CodexCli from "../../../src/layers/CodexCli.ts"
import * as GeminiCli from "../../../src/layers/GeminiCli.ts"
import * as NodeSubprocess from "../../../src/layers/NodeSubprocess.ts"
import { Subprocess } from "../../../src/services/Subprocess.ts"

const requirement: VersionCheck.Requirement = {
  provider: "codex-cli",
  name: "Codex CLI",
  minimum: "0.171.0",
  upgrade: "npm install -g @openai/codex@latest"
}

const tempDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "ecb-version-test-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

/** An executable shell script printing `output` to `--version` and counting its runs in `<file>.runs`. */
const script = (dir: string, name: string, output: string) => {
  const file = join(dir, name)
  writeFileSync(file, `#!/bin/sh\necho run >> "${file}.runs"\necho '${output}'\n`)
  chmodSync(file, 0o755)
  return file
}

const runs = (file: string) => {
  try {
    return readFileSync(`${file}.runs`, "utf8").split("\n").filter((line) => line !== "").length
  } catch {
    return 0
  }
}

/** A package laid out as npm installs it: the bin a symlink into the package's own folder. */
const fakePackage = (dir: string, name: string, version: string) => {
  const pkg = join(dir, "node_modules", ...name.split("/"))
  mkdirSync(join(pkg, "bundle"), { recursive: true })
  writeFileSync(join(pkg, "package.json"), JSON.stringify({ name, version }))
  writeFileSync(join(pkg, "bundle", "cli.js"), "#!/bin/sh\nexit 3\n")
  chmodSync(join(pkg, "bundle", "cli.js"), 0o755)
  mkdirSync(join(dir, "bin"), { recursive: true })
  symlinkSync(join(pkg, "bundle", "cli.js"), join(dir, "bin", "cli"))
  return join(dir, "bin")
}

describe("agent CLI version check", () => {
  it("compares what --version printed with the minimum", () => {
    assert.deepStrictEqual(VersionCheck.isOlder(requirement, "codex-cli 0.170.9\n"), Option.some("0.170.9"))
    assert.deepStrictEqual(VersionCheck.isOlder(requirement, "codex-cli 0.171.0"), Option.none())
    assert.deepStrictEqual(VersionCheck.isOlder(requirement, "1.0.0"), Option.none())
    assert.deepStrictEqual(VersionCheck.isOlder(requirement, "no version here"), Option.none())
  })

  it.effect("reads the version from the package the command belongs to, by PATH or by path", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const bin = fakePackage(dir, "@google/gemini-cli", "0.50.2")
      assert.deepStrictEqual(
        VersionCheck.packageVersion("cli", "@google/gemini-cli", `/nowhere:${bin}`),
        Option.some("0.50.2")
      )
      assert.deepStrictEqual(
        VersionCheck.packageVersion(join(bin, "cli"), "@google/gemini-cli", ""),
        Option.some("0.50.2")
      )
      // Another package's bin, a wrapper script, a command nowhere: no version from a package.
      assert.deepStrictEqual(VersionCheck.packageVersion("cli", "@openai/codex", bin), Option.none())
      const wrapper = script(dir, "wrapper", "0.61.0")
      assert.deepStrictEqual(VersionCheck.packageVersion(wrapper, "@google/gemini-cli", ""), Option.none())
      assert.deepStrictEqual(VersionCheck.packageVersion("absent", "@google/gemini-cli", bin), Option.none())
      // The installed devDependencies, as the e2e suites run them.
      assert.deepStrictEqual(
        VersionCheck.packageVersion(resolve("node_modules/.bin/gemini"), "@google/gemini-cli", ""),
        Option.some(GeminiCli.MinimumCliVersion)
      )
      assert.deepStrictEqual(
        VersionCheck.packageVersion(resolve("node_modules/.bin/codex"), "@openai/codex", ""),
        Option.some(CodexCli.MinimumCliVersion)
      )
    }).pipe(Effect.scoped))

  it.effect("an older CLI fails the first turn, naming both versions and the upgrade; a passed check is not run again", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const subprocess = yield* Subprocess
      const check = (file: string) =>
        VersionCheck.make(requirement, subprocess, () => ({ command: file, env: {}, cwd: dir }), () => {
          throw new Error("no subprocess failure expected")
        })
      const old = script(dir, "old", "codex-cli 0.100.3")
      const refused = yield* Effect.flip(Effect.flatten(check(old)))
      assert.strictEqual(refused.reason._tag, "ConfigurationError")
      assert.include(refused.message, "0.100.3")
      assert.include(refused.message, "0.171.0")
      assert.include(refused.message, "npm install -g @openai/codex@latest")

      const current = script(dir, "current", "codex-cli 0.171.0")
      const passing = yield* check(current)
      yield* passing
      yield* passing
      assert.strictEqual(runs(current), 1)
      // A wrapper that prints no version is run as a supported release.
      yield* Effect.flatten(check(script(dir, "wrapper", "hello")))
    }).pipe(Effect.scoped, Effect.provide(NodeSubprocess.layer)))

  it.effect("GeminiCli and CodexCli refuse an older CLI before any run, with a typed error", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const gemini = yield* GeminiCli.make({ binary: join(fakePackage(dir, "@google/gemini-cli", "0.60.0"), "cli") })
      const geminiError = yield* Effect.flip(gemini.chat("hello"))
      assert.strictEqual(geminiError._tag === "ProviderError" && geminiError.reason._tag, "ConfigurationError")
      assert.include(geminiError.message, "Gemini CLI is 0.60.0")
      const codexFile = script(dir, "codex", "codex-cli 0.160.0")
      const codex = yield* CodexCli.make({ binary: codexFile })
      const codexError = yield* Effect.flip(codex.chat("hello"))
      assert.strictEqual(codexError._tag === "ProviderError" && codexError.reason._tag, "ConfigurationError")
      assert.include(codexError.message, "Codex CLI is 0.160.0")
      // Only `--version` ran: the turn never started the CLI.
      assert.strictEqual(runs(codexFile), 1)
      // An npm-installed Codex CLI: its package says the version, no process runs.
      const codexPackage = yield* CodexCli.make({
        binary: join(fakePackage(join(dir, "codex-package"), "@openai/codex", "0.99.0"), "cli")
      })
      const packageError = yield* Effect.flip(codexPackage.chat("hello"))
      assert.include(packageError.message, "Codex CLI is 0.99.0")
    }).pipe(Effect.scoped, Effect.provide(NodeSubprocess.layer)))
})
