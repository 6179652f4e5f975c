/**
 * How the Claude Code providers report a CLI that fails before it starts, and missing or refused
 * credentials: real processes (a stub `claude` script) for ClaudeLocal and for ClaudeAgent on the
 * real Agent SDK, and the scripted SDK for the "Not logged in" result.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as ClaudeAgent from "../../src/layers/ClaudeAgent.ts"
import * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import * as NodeSecretFile from "../../src/layers/NodeSecretFile.ts"
import * as NodeSubprocess from "../../src/layers/NodeSubprocess.ts"
import { ChatClient, type ChatClientService } from "../../src/services/ChatClient.ts"
import * as Tool from "../../src/services/Tool.ts"
import * as Sdk from "../support/fakeAgentSdk.ts"

const add = Tool.make("add", {
  description: "Adds two numbers",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

/** A `claude` stand-in that prints `stderr` and exits with `code` before any output. */
const stubCli = (stderr: string, code: number) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const dir = mkdtempSync(join(tmpdir(), "ecb-early-exit-"))
      const path = join(dir, "claude")
      writeFileSync(path, `#!/bin/sh\nprintf '%s\\n' ${JSON.stringify(stderr)} >&2\nexit ${code}\n`)
      chmodSync(path, 0o755)
      return { dir, path }
    }),
    ({ dir }) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )

const localClient = (binary: string, dir: string) =>
  Layer.build(
    ClaudeLocal.layer({ binary, cwd: dir }).pipe(
      Layer.provide(NodeSubprocess.layer),
      Layer.provide(NodeSecretFile.layer({ directory: dir }))
    )
  ).pipe(Effect.map((ctx): ChatClientService => Context.get(ctx, ChatClient)))

const failures = (chat: ChatClientService) =>
  Effect.gen(function*() {
    yield* chat.setTools([add])
    const viaChat = yield* Effect.flip(chat.chat("hi"))
    const viaStream = yield* Effect.flip(Stream.runDrain(chat.chatStream("hi")))
    return [viaChat, viaStream] as const
  }).pipe(
    // The stub fails `claude --version` too: ClaudeLocal's warning about it is expected here.
    Effect.provide(Logger.layer([]))
  )

describe("a CLI that exits before its init line, with tools set", () => {
  it.live("ClaudeLocal: a process error with the exit code and stderr, not a tool-server error", () =>
    Effect.gen(function*() {
      const stub = yield* stubCli("Error: cannot write to /nope: read-only file system", 3)
      for (const error of yield* failures(yield* localClient(stub.path, stub.dir))) {
        expect(error).toMatchObject({
          _tag: "ProviderError",
          provider: "claude-local",
          reason: { _tag: "ProcessError" }
        })
        expect(error.message).toContain("exited with code 3")
        expect(error.message).toContain("cannot write to /nope: read-only file system")
        expect(error.message).not.toContain("tool server")
      }
    }))

  it.live("ClaudeAgent (real Agent SDK): a process error with the exit code and stderr", () =>
    Effect.gen(function*() {
      const stub = yield* stubCli("Error: cannot write to /nope: read-only file system", 1)
      const chat = yield* ClaudeAgent.make({ pathToClaudeCodeExecutable: stub.path, killGrace: "100 millis" })
      for (const error of yield* failures(chat)) {
        expect(error).toMatchObject({
          _tag: "ProviderError",
          provider: "claude-agent",
          reason: { _tag: "ProcessError" }
        })
        expect(error.message).toContain("exited with code 1")
        expect(error.message).toContain("cannot write to /nope: read-only file system")
      }
    }))

  it.live("an invalid key on stderr is an auth error on both, saying how to log in", () =>
    Effect.gen(function*() {
      const stub = yield* stubCli("Invalid API key · Please run /login", 1)
      const local = yield* failures(yield* localClient(stub.path, stub.dir))
      const agent = yield* failures(
        yield* ClaudeAgent.make({ pathToClaudeCodeExecutable: stub.path, killGrace: "100 millis" })
      )
      for (const error of [...local, ...agent]) {
        expect(error).toMatchObject({
          _tag: "ProviderError",
          reason: { _tag: "AuthenticationError" },
          isRetryable: false
        })
        expect(error.message).toContain("Invalid API key")
        expect(error.message).toContain("log in by running `claude`")
        expect(error.message).toContain("ANTHROPIC_API_KEY")
      }
    }))
})

describe("ClaudeAgent: a CLI that is not logged in", () => {
  it.effect("its error result is an auth error naming `claude` login and ANTHROPIC_API_KEY", () =>
    Effect.gen(function*() {
      Sdk.script(async function*() {
        yield { type: "system", subtype: "init", session_id: "s-1", mcp_servers: [] }
        yield {
          type: "result",
          subtype: "success",
          is_error: true,
          result: "Not logged in · Please run /login",
          session_id: "s-1"
        }
      })
      const chat = yield* ClaudeAgent.make({ sdkSpecifier: Sdk.specifier, killGrace: "100 millis" })
      const error = yield* Effect.flip(chat.chat("hi"))
      expect(error).toMatchObject({
        _tag: "ProviderError",
        reason: { _tag: "AuthenticationError" },
        isRetryable: false
      })
      expect(error.message).toContain("Not logged in")
      expect(error.message).toMatch(/log in by running `claude`.*or set ANTHROPIC_API_KEY/)
    }))
})
