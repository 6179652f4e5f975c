/**
 * A wrong `claude` binary, through the real Node subprocess layer: each failure is a `config`
 * ProviderError naming the path, where it came from and the variable that fixes it (issue 34).
 */
import { describe, expect, it } from "@effect/vitest"
import * as AiLanguageModel from "effect/ai/LanguageModel"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as ChatLanguageModel from "../../src/ai/ChatLanguageModel.ts"
import * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import { ChatClient } from "../../src/services/ChatClient.ts"

const folder = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "ecb-binary-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const chatWith = (binary: string) =>
  Effect.flip(
    Effect.flatMap(ChatClient, (chat) => chat.chat("hello")).pipe(
      Effect.provide(ClaudeLocal.layerNode({ binary, cwd: os.tmpdir() }))
    )
  )

describe("ClaudeLocal with a wrong binary", () => {
  it.live("a path that does not exist names the path and CLAUDE_BINARY", () =>
    Effect.gen(function*() {
      const missing = path.join(yield* folder, "no-such-claude")
      const error = yield* chatWith(missing)
      expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "ConfigurationError" }, isRetryable: false })
      expect(error.message).toContain(JSON.stringify(missing))
      expect(error.message).toContain("CLAUDE_BINARY")
      expect(error.message).toContain("Install Claude Code")
    }).pipe(Effect.scoped))

  it.live("the default name says it looked on PATH", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Effect.flatMap(ChatClient, (chat) => chat.chat("hello")).pipe(
          Effect.provide(ClaudeLocal.layerNode({ cwd: os.tmpdir(), env: { PATH: yield* folder } }))
        )
      )
      // With a PATH holding no claude, the default binary is not found: the message says where it looked.
      expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "ConfigurationError" } })
      expect(error.message).toContain("looked for `claude` on PATH")
    }).pipe(Effect.scoped))

  it.live("a directory, or a file that is not executable, is a config error saying so", () =>
    Effect.gen(function*() {
      const dir = yield* folder
      const plain = path.join(dir, "claude.txt")
      fs.writeFileSync(plain, "not a program", { mode: 0o644 })
      for (const binary of [dir, plain]) {
        const error = yield* chatWith(binary)
        expect(error, binary).toMatchObject({
          _tag: "ProviderError",
          reason: { _tag: "ConfigurationError" },
          isRetryable: false
        })
        expect(error.message).toContain("directory or not an executable file")
        expect(error.message).toContain(JSON.stringify(binary))
        expect(error.message).toContain("CLAUDE_BINARY")
      }
    }).pipe(Effect.scoped))

  it.live("ChatLanguageModel.layerClaudeLocalNode reads CLAUDE_BINARY", () =>
    Effect.gen(function*() {
      const missing = path.join(yield* folder, "from-the-variable")
      const error = yield* Effect.flip(
        AiLanguageModel.generateText({ prompt: "hello" }).pipe(
          Effect.provide(ChatLanguageModel.layerClaudeLocalNode({ cwd: os.tmpdir() })),
          Effect.provideService(
            ConfigProvider.ConfigProvider,
            ConfigProvider.fromEnv({ env: { CLAUDE_BINARY: missing } })
          )
        )
      )
      expect(JSON.stringify(error)).toContain("from-the-variable")
    }).pipe(Effect.scoped))
})
