import { HttpAgent } from "@ag-ui/client"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import { type ChildProcess, execFile, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { claudeBinary, claudeProcessesIn, sandbox } from "../support/claudeCli.ts"
import * as Fake from "../support/FakeMessagesApi.ts"
import { readSnippets, runnable, snippetDir, writeSnippets } from "../support/readmeSnippets.ts"
import { runTsx, withoutCredentials } from "../support/runTsx.ts"

// The guides' programs (docs/*.md, shipped with the package), copied out and run as a user would:
// each one here, the README's in readme.test.ts (which also type-checks all of them).
const dir = `${snippetDir}-guides`
// By path: the programs run in a sandbox folder, from where `--import tsx` would not resolve.
const tsx = path.resolve(import.meta.dirname, "../../node_modules/tsx/dist/loader.mjs")
const snippets = readSnippets().filter((s) => s.source.startsWith("docs/"))
beforeAll(() => writeSnippets(snippets, dir))
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

/** A port nobody listens on now. */
const freePort = Effect.callback<number>((resume) => {
  const server = net.createServer()
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as net.AddressInfo
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** Succeeds once something accepts connections on `port`. */
const listening = (port: number) =>
  Effect.callback<void, Error>((resume) => {
    const socket = net.connect(port, "127.0.0.1")
    socket.once("connect", () => (socket.destroy(), resume(Effect.void)))
    socket.once("error", (error) => resume(Effect.fail(error)))
  })

interface Finished {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs a snippet to its end in `cwd`. */
const runIn = (name: string, cwd: string, env: Record<string, string | undefined>) =>
  Effect.callback<Finished>((resume) => {
    const child = execFile(
      process.execPath,
      ["--import", tsx, runnable(name, dir)],
      { cwd, env, timeout: 120_000 },
      (error, stdout, stderr) => resume(Effect.succeed({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }))
    )
    return Effect.sync(() => child.kill())
  })

const exited = (child: ChildProcess) =>
  Effect.callback<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    child.once("exit", () => resume(Effect.void))
  })

/** A snippet that runs until Ctrl-C, in its own process group; the scope's end sends SIGINT. */
const startIn = (name: string, cwd: string, env: Record<string, string | undefined>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawn(process.execPath, ["--import", tsx, runnable(name, dir)], {
        cwd,
        env,
        detached: true,
        stdio: ["ignore", "pipe", "pipe"]
      })
      let output = ""
      child.stdout.on("data", (chunk: Buffer) => output += chunk.toString())
      child.stderr.on("data", (chunk: Buffer) => output += chunk.toString())
      return { child, output: () => output }
    }),
    ({ child }) =>
      Effect.gen(function*() {
        child.kill("SIGINT")
        yield* exited(child).pipe(
          Effect.timeout("20 seconds"),
          Effect.catch(() => Effect.sync(() => process.kill(-child.pid!, "SIGKILL")))
        )
      })
  ) satisfies Effect.Effect<unknown, never, Scope.Scope>

describe("the shipped guides' programs", () => {
  it("every snippet of docs/*.md is run below", () => {
    expect(snippets.map((s) => `${s.source}: ${s.name}`).sort()).toEqual([
      "docs/ag-ui.md: ag-ui",
      "docs/cluster.md: cluster-client",
      "docs/cluster.md: cluster-runner",
      "docs/effect-ai.md: effect-ai",
      "docs/providers.md: config",
      "docs/providers.md: fallback"
    ])
  })

  it("the cluster examples the guide names load @effect/sql-pg only for PostgreSQL", () => {
    for (const example of ["examples/cluster-runner.ts", "examples/cluster-client.ts"]) {
      const source = fs.readFileSync(example, "utf8")
      expect(source, example).not.toMatch(/^import[^;]*from "@effect\/sql-pg"/m)
      expect(source, example).toContain(`import("@effect/sql-pg")`)
    }
  })

  it.live("providers.md's fallback chain loads and builds nothing until provided", () =>
    Effect.gen(function*() {
      const out = yield* runTsx(runnable("fallback", dir))
      expect(out.stderr).toBe("")
      expect(out.code).toBe(0)
    }), 120_000)

  it.live("providers.md's configuration layers load and build nothing until provided", () =>
    Effect.gen(function*() {
      const out = yield* runTsx(runnable("config", dir))
      expect(out.stderr).toBe("")
      expect(out.code).toBe(0)
    }), 120_000)

  it.live(
    "effect-ai.md: a plain effect/ai program on the real claude calls the toolkit's tool",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(
          Fake.callsThenAnswers(
            { name: "mcp__gtb__get_weather", input: { city: "Lisbon" } },
            (results) => `Lisbon: ${results[0]!.content}`
          )
        )
        const box = yield* sandbox(api.url)
        const out = yield* runTsx(runnable("effect-ai", dir), { ...box.env, CLAUDE_BINARY: claudeBinary })
        expect(out.stderr).toBe("")
        expect(out.code).toBe(0)
        expect(out.stdout.trim()).toBe(`Lisbon: {"celsius":24}`)
      }),
    120_000
  )

  it.live(
    "cluster.md: the SQLite runner hosts the conversation the client sends turns to; the re-sent turn id orders once",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make((req) => {
          const [result] = Fake.toolResults(req)
          if (result !== undefined) return { text: `Done: ${result.content}.` }
          if (Fake.lastUserLine(req).includes("Order")) {
            return { toolUses: [{ name: "mcp__gtb__place_order", input: { item: "flat white" } }] }
          }
          return { text: "Hello." }
        })
        const box = yield* sandbox(api.url)
        // The runner's ClaudeLocal finds `claude` on the PATH, as the guide says.
        const bin = path.join(box.dir, "bin")
        fs.mkdirSync(bin)
        fs.symlinkSync(claudeBinary, path.join(bin, "claude"))
        const port = yield* freePort
        const env = {
          ...withoutCredentials(),
          ...box.env,
          PATH: `${bin}${path.delimiter}${process.env["PATH"] ?? ""}`,
          HOST: "127.0.0.1",
          PORT: String(port)
        }
        const { client, runner } = yield* Effect.scoped(Effect.gen(function*() {
          const runner = yield* startIn("cluster-runner", box.cwd, env)
          // No ready line to wait for: the client's turn waits in the storage until the runner takes it.
          const client = yield* runIn("cluster-client", box.cwd, env)
          return { client, runner }
        }))
        expect(client.stderr).toBe("")
        expect(client.code, client.stdout + runner.output()).toBe(0)
        expect(client.stdout).toBe("Done: order #1: one flat white.\nsent twice, ordered once\n")
        // One model request asked to order: the re-sent turn came from storage.
        expect(api.messageRequests().filter((r) => Fake.lastUserLine(r).includes("Order"))).toHaveLength(1)
        // Both on the file the guide names, in the working directory; the runner stopped on SIGINT.
        expect(fs.existsSync(path.join(box.cwd, "cluster.db"))).toBe(true)
        expect(runner.child.signalCode, runner.output()).not.toBe("SIGKILL")
        // Within 2 s of the runner's exit, as for any program (test/e2e/Signals.e2e.test.ts).
        const deadline = Date.now() + 2_000
        while (claudeProcessesIn(box.cwd).length > 0 && Date.now() < deadline) yield* Effect.sleep("50 millis")
        expect(claudeProcessesIn(box.cwd), runner.output()).toEqual([])
      }),
    240_000
  )

  it.live(
    "ag-ui.md: the AG-UI server streams a Claude Code answer to an HttpAgent and stops on SIGINT",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make((req) => ({ text: `You said: ${Fake.lastUserLine(req)}` }))
        const box = yield* sandbox(api.url)
        const bin = path.join(box.dir, "bin")
        fs.mkdirSync(bin)
        fs.symlinkSync(claudeBinary, path.join(bin, "claude"))
        const port = yield* freePort
        const env = {
          ...withoutCredentials(),
          ...box.env,
          PATH: `${bin}${path.delimiter}${process.env["PATH"] ?? ""}`,
          PORT: String(port)
        }
        const { answer, server } = yield* Effect.scoped(Effect.gen(function*() {
          const server = yield* startIn("ag-ui", box.cwd, env)
          const agent = new HttpAgent({ url: `http://127.0.0.1:${port}/agent`, threadId: "thread-guide" })
          agent.addMessage({ id: "user-1", role: "user", content: "hello" })
          // The server listens once its layers are built.
          yield* listening(port).pipe(Effect.retry({ schedule: Schedule.spaced("250 millis"), times: 240 }))
          const answer = yield* Effect.promise(() => agent.runAgent()).pipe(
            Effect.map(() => agent.messages.filter((m) => m.role === "assistant").map((m) => m.content).join(""))
          )
          return { answer, server }
        }))
        expect(answer, server.output()).toBe("You said: hello")
        expect(fs.existsSync(path.join(box.cwd, "sessions.sqlite"))).toBe(true)
        expect(server.child.signalCode, server.output()).not.toBe("SIGKILL")
        const deadline = Date.now() + 2_000
        while (claudeProcessesIn(box.cwd).length > 0 && Date.now() < deadline) yield* Effect.sleep("50 millis")
        expect(claudeProcessesIn(box.cwd), server.output()).toEqual([])
      }),
    240_000
  )
})
