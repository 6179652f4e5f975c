import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { ChildProcessWithoutNullStreams } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import { agentEnvironment } from "../../../src/internal/claude/environment.ts"
import {
  AlwaysLoadMeta,
  loadAgentSdk,
  makeToolServer,
  reap,
  type SpawnedCli,
  spawner
} from "../../../src/internal/claudeAgent/sdk.ts"
import * as Tool from "../../../src/services/Tool.ts"

describe("agentEnvironment", () => {
  it("keeps what the CLI needs, drops the rest, then applies the caller's changes", () => {
    const env = agentEnvironment(
      {
        PATH: "/bin",
        HOME: "/home/me",
        LC_ALL: "C",
        ANTHROPIC_API_KEY: "k",
        CLAUDE_CONFIG_DIR: "/cfg",
        HTTPS_PROXY: "http://proxy",
        DATABASE_URL: "postgres://secret",
        GITHUB_TOKEN: "ghp_secret",
        CLAUDECODE: "1",
        AWS_REGION: undefined
      },
      { HOME: "/tmp/home", EXTRA: "yes", CLAUDE_CONFIG_DIR: undefined }
    )
    expect(env).toEqual({
      PATH: "/bin",
      HOME: "/tmp/home",
      LC_ALL: "C",
      ANTHROPIC_API_KEY: "k",
      HTTPS_PROXY: "http://proxy",
      EXTRA: "yes"
    })
  })
})

describe("loadAgentSdk", () => {
  it.effect("loads the installed SDK", () =>
    Effect.gen(function*() {
      const sdk = yield* loadAgentSdk()
      expect(typeof sdk.query).toBe("function")
    }))

  it.effect("a missing package is a config ProviderError with an install hint", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(loadAgentSdk("@anthropic-ai/no-such-agent-sdk"))
      expect(error).toMatchObject({
        _tag: "ProviderError",
        reason: { _tag: "ConfigurationError" },
        provider: "claude-agent",
        isRetryable: false
      })
      expect(error.message).toContain("npm install @anthropic-ai/claude-agent-sdk")
    }))

  it.effect("a module without `query` is rejected the same way", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(loadAgentSdk("node:path"))
      expect(error.reason._tag).toBe("ConfigurationError")
      expect(error.message).toContain("no `query` export")
    }))
})

describe("agentEnvironment without changes", () => {
  it("is just the allowed part of the base environment", () => {
    expect(agentEnvironment({ PATH: "/bin", XDG_CONFIG_HOME: "/x", SECRET: "s", MCP_TIMEOUT: "5" }, undefined)).toEqual(
      {
        PATH: "/bin",
        XDG_CONFIG_HOME: "/x",
        MCP_TIMEOUT: "5"
      }
    )
  })
})

const ping = Tool.make("ping", {
  description: "Answers pong",
  parameters: {},
  handler: () => Effect.succeed("pong")
})

/** A tool that signals it started, then never finishes (until interrupted). */
const hang = (started: Deferred.Deferred<void>) =>
  Tool.make("hang", {
    description: "Never answers",
    parameters: { n: Schema.Number },
    handler: () => Effect.andThen(Deferred.succeed(started, undefined), Effect.never)
  })

/** The tool server of `tools`, with an MCP client connected to it in memory. */
const connected = (tools: ReadonlyArray<Tool.Tool>, abort: AbortSignal) =>
  Effect.gen(function*() {
    const set = yield* Effect.orDie(Tool.capture(tools))
    const config = yield* makeToolServer("gtb", set, abort)
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
    yield* Effect.promise(() => config.instance.connect(serverSide))
    const client = new Client({ name: "test", version: "0.0.0" })
    yield* Effect.acquireRelease(
      Effect.promise(() => client.connect(clientSide)),
      () => Effect.promise(() => client.close())
    )
    return { config, client }
  })

describe("makeToolServer", () => {
  it.effect("lists each tool with its own schema, always loaded; a call without arguments runs with {}", () =>
    Effect.gen(function*() {
      const { client, config } = yield* connected([ping], new AbortController().signal)
      expect(config).toMatchObject({ type: "sdk", name: "gtb" })
      const { tools } = yield* Effect.promise(() => client.listTools())
      expect(tools).toHaveLength(1)
      expect(tools[0]).toMatchObject({
        name: "ping",
        inputSchema: { type: "object" },
        _meta: { [AlwaysLoadMeta]: true }
      })
      const result = yield* Effect.promise(() => client.callTool({ name: "ping" }))
      expect(result).toMatchObject({ content: [{ type: "text", text: "pong" }], isError: false })
      const unknown = yield* Effect.promise(() => client.callTool({ name: "nope", arguments: {} }))
      expect(unknown).toMatchObject({ isError: true, content: [{ text: "Tool nope not found" }] })
    }))

  it.effect("a query already aborted cancels a call at once; aborting later interrupts a running handler", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const aborted = new AbortController()
      aborted.abort()
      const early = yield* connected([hang(started)], aborted.signal)
      const first = yield* Effect.promise(() =>
        early.client.callTool({ name: "hang", arguments: { n: 1 } }).then(() => "answered", (e: Error) => e.message)
      )
      expect(first).toContain("Tool call hang was cancelled")

      const later = new AbortController()
      const { client } = yield* connected([hang(started)], later.signal)
      const call = client.callTool({ name: "hang", arguments: { n: 2 } }).then(
        () => "answered",
        (e: Error) => e.message
      )
      yield* Deferred.await(started)
      later.abort()
      expect(yield* Effect.promise(() => call)).toContain("Tool call hang was cancelled")
    }))
})

/** Spawns `script` under node through the SDK-facing spawner, as the SDK would. */
const spawnNode = (script: string, cwd?: string) =>
  Effect.sync(() => {
    let cli: SpawnedCli | undefined
    const controller = new AbortController()
    const child = spawner((c) => {
      cli = c
    })({
      command: process.execPath,
      args: ["-e", script],
      env: { PATH: process.env["PATH"], UNSET: undefined },
      signal: controller.signal,
      ...(cwd === undefined ? {} : { cwd })
    }) as ChildProcessWithoutNullStreams
    return { cli: cli!, child, controller }
  })

const exited = (child: ChildProcessWithoutNullStreams) => child.exitCode !== null || child.signalCode !== null

describe("spawner and reap", () => {
  it.live("the spawned CLI gets only the given environment and cwd, and its stderr tail is kept", () =>
    Effect.gen(function*() {
      const cwd = fs.realpathSync(os.tmpdir())
      const { child, cli } = yield* spawnNode(
        "process.stderr.write(JSON.stringify({ keys: Object.keys(process.env), cwd: process.cwd() }))",
        cwd
      )
      yield* Effect.promise(() => new Promise((resolve) => child.once("close", resolve)))
      expect(cli.child).toBe(child)
      const seen = JSON.parse(cli.stderr()) as { keys: Array<string>; cwd: string }
      expect(seen.cwd).toBe(cwd)
      expect(seen.keys).toContain("PATH")
      expect(seen.keys).not.toContain("UNSET")
      expect(seen.keys).not.toContain("HOME")
      yield* reap(cli, 50)
      expect(exited(child)).toBe(true)
    }))

  it.live("reap escalates to SIGTERM, then SIGKILL, for a CLI that ignores its closed stdin and SIGTERM", () =>
    Effect.gen(function*() {
      const { child, cli } = yield* spawnNode(
        "process.on('SIGTERM', () => {}); process.stderr.write('ready'); setInterval(() => {}, 1000)"
      )
      yield* Effect.promise(() => new Promise((resolve) => child.stderr.once("data", resolve)))
      const started = Date.now()
      yield* reap(cli, 200)
      expect(exited(child)).toBe(true)
      expect(child.signalCode).toBe("SIGKILL")
      expect(Date.now() - started).toBeLessThan(5_000)
    }))

  it.live("the SDK's abort signal terminates the process group", () =>
    Effect.gen(function*() {
      const { child, controller } = yield* spawnNode("process.stderr.write('ready'); setInterval(() => {}, 1000)")
      yield* Effect.promise(() => new Promise((resolve) => child.stderr.once("data", resolve)))
      controller.abort()
      yield* Effect.promise(() =>
        new Promise((resolve) => (exited(child) ? resolve(null) : child.once("exit", resolve)))
      )
      expect(child.signalCode).toBe("SIGTERM")
    }))
})
