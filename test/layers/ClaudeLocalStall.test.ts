/**
 * ClaudeLocal's `stallTimeout` against a stub `claude` (a real child process, with a grandchild in
 * its process group): a CLI that goes silent mid-answer fails the turn as a retryable `stalled`
 * error well before `requestTimeout`, its process group is gone, and the next turn resumes the last
 * successful turn's session; a CLI that is silent while a tool runs is not stopped. Fresh runs and
 * kept-alive ones.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import * as NodeSecretFile from "../../src/layers/NodeSecretFile.ts"
import * as NodeSubprocess from "../../src/layers/NodeSubprocess.ts"
import { ChatClient, ProviderError } from "../../src/services/ChatClient.ts"
import * as Tool from "../../src/services/Tool.ts"
import { claudeProcessesIn, sandbox } from "../support/claudeCli.ts"
import { localClient } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

/**
 * The stub: answers each user message on stdin (one for a fresh run, one per turn when kept
 * alive) by its prompt: `stall` prints the init line and two text deltas, then nothing (ignoring
 * SIGTERM); `tool` prints a Bash tool_use, is silent for 2.5 s, then prints its result and the
 * answer; anything else answers at once. Each spawn is recorded in spawns.jsonl (argv, pid, the
 * grandchild's pid, the session it answers in).
 */
const stubScript = (dir: string) =>
  `#!/usr/bin/env node
const fs = require("node:fs")
const { spawn } = require("node:child_process")
const args = process.argv.slice(2)
const r = args.indexOf("--resume")
const session = r >= 0 ? args[r + 1] : "session-" + process.pid
const grandchild = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" })
fs.appendFileSync(${
    JSON.stringify(join(dir, "spawns.jsonl"))
  }, JSON.stringify({ args, pid: process.pid, grandchild: grandchild.pid, session }) + "\\n")
const out = (o) => process.stdout.write(JSON.stringify(o) + "\\n")
const delta = (text) => out({ type: "stream_event", event: { type: "content_block_delta", index: 0, delta: { type: "text_delta", text } } })
const result = (text) => out({ type: "result", subtype: "success", is_error: false, result: text, session_id: session, total_cost_usd: 0, usage: { input_tokens: 1, output_tokens: 1 } })
// A fresh run's stdin ends after its one message: it exits once that is answered (a stalled one never is).
let pending = 0
let ended = false
const finish = () => {
  if (!ended || pending > 0) return
  grandchild.kill("SIGKILL")
  process.exit(0)
}
const answer = (prompt) => {
  if (prompt.includes("stall")) {
    pending++
    out({ type: "system", subtype: "init", session_id: "stalled-" + session, mcp_servers: [] })
    delta("Thinking about ")
    delta("it")
    process.on("SIGTERM", () => {})
    return
  }
  out({ type: "system", subtype: "init", session_id: session, mcp_servers: [] })
  if (prompt.includes("tool")) {
    pending++
    out({ type: "assistant", message: { content: [{ type: "tool_use", id: "toolu_1", name: "Bash", input: { command: "sleep 2.5" } }] } })
    setTimeout(() => {
      out({ type: "user", message: { content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "slept" }] } })
      delta("done")
      result("tool ran")
      pending--
      finish()
    }, 2500)
    return
  }
  delta("hello")
  result("answer to " + prompt)
}
const text = (content) => typeof content === "string" ? content : content.map((b) => b.text ?? "").join("")
let buffer = ""
process.stdin.setEncoding("utf8")
process.stdin.on("data", (chunk) => {
  buffer += chunk
  for (let i = buffer.indexOf("\\n"); i >= 0; i = buffer.indexOf("\\n")) {
    const line = buffer.slice(0, i)
    buffer = buffer.slice(i + 1)
    if (line.trim() !== "") answer(text(JSON.parse(line).message.content))
  }
})
process.stdin.on("end", () => {
  ended = true
  finish()
})
`

/**
 * A stub that asks the application's `canUseTool` through the permission prompt tool (the MCP
 * server in its --mcp-config), as the CLI does, after printing only an init line and a text
 * delta: no tool call is open meanwhile, so only the pending decision keeps the run from stalling.
 */
const permissionStub = `#!/usr/bin/env node
const fs = require("node:fs")
const { pathToFileURL } = require("node:url")
const args = process.argv.slice(2)
const cfg = JSON.parse(fs.readFileSync(args[args.indexOf("--mcp-config") + 1], "utf8"))
const [, server, name] = args[args.indexOf("--permission-prompt-tool") + 1].split("__")
const sdk = (p) => import(pathToFileURL(${
  JSON.stringify(join(process.cwd(), "node_modules/@modelcontextprotocol/sdk/dist/esm"))
} + p).href)
const out = (o) => process.stdout.write(JSON.stringify(o) + "\\n")
fs.readFileSync(0)
;(async () => {
  out({ type: "system", subtype: "init", session_id: "session-p", mcp_servers: [] })
  const { Client } = await sdk("/client/index.js")
  const { StreamableHTTPClientTransport } = await sdk("/client/streamableHttp.js")
  const entry = cfg.mcpServers[server]
  const client = new Client({ name: "stub", version: "0" })
  await client.connect(new StreamableHTTPClientTransport(new URL(entry.url), { requestInit: { headers: entry.headers } }))
  out({ type: "stream_event", event: { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "May I?" } } })
  const answer = await client.callTool({ name, arguments: { tool_name: "Bash", input: { command: "ls" }, tool_use_id: "toolu_9" } })
  await client.close()
  out({ type: "result", subtype: "success", is_error: false, result: "decided " + answer.content[0].text, session_id: "session-p", total_cost_usd: 0 })
  process.exit(0)
})()
`

interface Spawn {
  readonly args: ReadonlyArray<string>
  readonly pid: number
  readonly grandchild: number
  readonly session: string
}

/** A stub in a temp dir of its own, removed (with every process it left, if any) at the end. */
const stub = Effect.acquireRelease(
  Effect.sync(() => {
    const dir = mkdtempSync(join(tmpdir(), "ecb-stall-"))
    const binary = join(dir, "claude")
    writeFileSync(binary, stubScript(dir))
    chmodSync(binary, 0o755)
    const spawns = (): ReadonlyArray<Spawn> => {
      const file = join(dir, "spawns.jsonl")
      if (!existsSync(file)) return []
      return readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l) as Spawn)
    }
    return { dir, binary, spawns }
  }),
  ({ dir, spawns }) =>
    Effect.sync(() => {
      for (const s of spawns()) {
        for (const pid of [s.pid, s.grandchild]) {
          try {
            process.kill(pid, "SIGKILL")
          } catch {
            // Gone, as it should be.
          }
        }
      }
      rmSync(dir, { recursive: true, force: true })
    })
)

/** Whether `pid` is a live process (a zombie waiting for its reaper counts as gone). */
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"))
  } catch {
    return false
  }
}

const client = (binary: string, dir: string, options: ClaudeLocal.Options) =>
  ClaudeLocal.layer({
    binary,
    cwd: dir,
    cliVersion: "2.1.332",
    stallTimeout: "1 second",
    requestTimeout: "60 seconds",
    killGrace: "300 millis",
    ...options
  }).pipe(Layer.provide(NodeSubprocess.layer), Layer.provide(NodeSecretFile.layer({ directory: dir })))

const stalledThenResumed = (keepAlive: boolean) =>
  Effect.gen(function*() {
    const { binary, dir, spawns } = yield* stub
    yield* Effect.gen(function*() {
      const chat = yield* ChatClient
      expect(yield* chat.chat("first")).toBe("answer to first")
      const firstSession = spawns()[0]!.session
      const started = Date.now()
      const error = yield* Effect.flip(chat.chat("please stall"))
      const took = Date.now() - started
      expect(error).toBeInstanceOf(ProviderError)
      const failure = error as ProviderError
      expect(failure.reason._tag).toBe("StalledError")
      expect(failure.isRetryable).toBe(true)
      expect(failure.message).toContain("stallTimeout")
      expect(failure.message).toContain("next turn resumes the session")
      // stallTimeout 1 s: well within the slack, and far from requestTimeout (60 s).
      expect(took).toBeGreaterThanOrEqual(900)
      expect(took).toBeLessThan(10_000)
      const stalled = spawns()[keepAlive ? 0 : 1]!
      // The stalled CLI and the rest of its process group are gone when the turn fails.
      expect(alive(stalled.pid)).toBe(false)
      expect(alive(stalled.grandchild)).toBe(false)
      expect(yield* chat.chat("again")).toBe("answer to again")
      const next = spawns().at(-1)!
      expect(next.pid).not.toBe(stalled.pid)
      const r = next.args.indexOf("--resume")
      expect(r).toBeGreaterThanOrEqual(0)
      expect(next.args[r + 1]).toBe(firstSession)
      expect(spawns()).toHaveLength(keepAlive ? 2 : 3)
    }).pipe(Effect.provide(client(binary, dir, { keepAlive })))
  }).pipe(Effect.scoped)

const silentTool = (keepAlive: boolean) =>
  Effect.gen(function*() {
    const { binary, dir, spawns } = yield* stub
    const answer = yield* Effect.gen(function*() {
      const chat = yield* ChatClient
      return yield* chat.chat("run a tool")
    }).pipe(Effect.provide(client(binary, dir, { keepAlive })))
    expect(answer).toBe("tool ran")
    expect(spawns()).toHaveLength(1)
  }).pipe(Effect.scoped)

describe("ClaudeLocal stallTimeout (stub CLI, real processes)", () => {
  // 3 s, not 1 s: loading the MCP SDK and connecting is silence too, and takes over 1 s on a loaded machine.
  it.live("a pending canUseTool decision (6 s, stallTimeout 3 s) is not a stall", () =>
    Effect.gen(function*() {
      const { binary, dir } = yield* stub
      writeFileSync(binary, permissionStub)
      let asked = 0
      const answer = yield* Effect.gen(function*() {
        const chat = yield* ChatClient
        return yield* chat.chat("may it?")
      }).pipe(Effect.provide(client(binary, dir, {
        stallTimeout: "3 seconds",
        canUseTool: () =>
          Effect.sync(() => asked++).pipe(
            Effect.andThen(Effect.sleep("6 seconds")),
            Effect.as({ _tag: "Allow" } as const)
          )
      })))
      expect(asked).toBe(1)
      expect(answer).toContain("\"behavior\":\"allow\"")
    }).pipe(Effect.scoped), 30_000)

  it.live(
    "fresh run: a CLI silent mid-answer is stopped as stalled; the next turn resumes",
    () => stalledThenResumed(false),
    30_000
  )

  it.live(
    "keepAlive: a CLI silent mid-turn is stopped as stalled; the next turn restarts it resuming",
    () => stalledThenResumed(true),
    30_000
  )

  it.live(
    "fresh run: silence while a tool runs (2.5 s, stallTimeout 1 s) is not a stall",
    () => silentTool(false),
    30_000
  )

  it.live("keepAlive: silence while a tool runs is not a stall", () => silentTool(true), 30_000)
})

describeWithClaude("ClaudeLocal stallTimeout (real claude binary, fake API)", () => {
  const stalledMidStream = (keepAlive: boolean) =>
    Effect.gen(function*() {
      // "hang": the API sends the first text delta, then nothing, keeping the connection open.
      const api = yield* Fake.make((req) =>
        Fake.lastUserLine(req) === "hang"
          ? { text: "A long answer that never ends", breakMidway: "hang" }
          : { text: `fine: ${Fake.lastUserLine(req)}` }
      )
      const box = yield* sandbox(api.url)
      const chat = yield* localClient(box, { stallTimeout: "5 seconds", keepAlive })
      expect(yield* chat.chat("hello")).toBe("fine: hello")
      const started = Date.now()
      const error = yield* Effect.flip(chat.chat("hang"))
      const took = Date.now() - started
      expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "StalledError" }, isRetryable: true })
      // Well before requestTimeout (60 s).
      expect(took).toBeLessThan(30_000)
      expect(claudeProcessesIn(box.cwd)).toEqual([])
      expect(yield* chat.chat("after")).toBe("fine: after")
      // The next turn resumed the first one's session: the model sees the earlier exchange.
      const last = api.messageRequests().filter((r) => Fake.lastUserLine(r) === "after").at(-1)!
      expect(JSON.stringify(last.body.messages)).toContain("fine: hello")
    }).pipe(Effect.scoped)

  it.live(
    "fresh run: an API stream that hangs mid-answer is a stalled turn; the next one resumes",
    () => stalledMidStream(false),
    60_000
  )

  it.live(
    "keepAlive: an API stream that hangs mid-answer is a stalled turn; the next one resumes",
    () => stalledMidStream(true),
    60_000
  )

  it.live("a canUseTool decision taking 8 s (stallTimeout 5 s) is not a stall", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((req) => {
        const results = Fake.toolResults(req)
        if (results.length === 0) {
          return {
            toolUses: [{ name: "Bash", input: { command: "mkdir made && echo decided", description: "make a dir" } }]
          }
        }
        return { text: `Tool said: ${results[0]!.content.trim()}` }
      })
      const box = yield* sandbox(api.url)
      let asked = 0
      const chat = yield* localClient(box, {
        stallTimeout: "5 seconds",
        canUseTool: (request) =>
          Effect.sync(() => asked++).pipe(
            Effect.andThen(Effect.sleep("8 seconds")),
            Effect.as({ _tag: "Allow", updatedInput: request.input } as const)
          )
      })
      expect(yield* chat.chat("run it")).toBe("Tool said: decided")
      expect(asked).toBe(1)
    }).pipe(Effect.scoped), 60_000)

  it.live(
    "a bridge tool running 8 s (stallTimeout 5 s) is not a stall: the CLI printed its tool_use first",
    () =>
      Effect.gen(function*() {
        const slow = Tool.make("slow", {
          description: "Takes a while",
          parameters: { n: Schema.Number },
          handler: ({ n }) => Effect.as(Effect.sleep("8 seconds"), n * 2)
        })
        const api = yield* Fake.make((req) => {
          const results = Fake.toolResults(req)
          if (results.length === 0) return { toolUses: [{ name: "mcp__gtb__slow", input: { n: 21 } }] }
          return { text: `got ${results[0]!.content}` }
        })
        const box = yield* sandbox(api.url)
        const chat = yield* localClient(box, { stallTimeout: "5 seconds" })
        yield* chat.setTools([slow])
        expect(yield* chat.chat("call slow")).toBe("got 42")
      }).pipe(Effect.scoped),
    60_000
  )
})
