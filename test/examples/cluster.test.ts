import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { type ChildProcess, execFile, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { claudeBinary, claudeProcessesIn, listeningSockets, sandbox } from "../support/claudeCli.ts"
import * as Fake from "../support/FakeMessagesApi.ts"
import * as Postgres from "../support/postgres.ts"

/** A port nobody listens on now (the runner must announce a real one: clients dial it). */
const freePort = Effect.callback<number>((resume) => {
  const server = net.createServer()
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as net.AddressInfo
    server.close(() => resume(Effect.succeed(port)))
  })
})

/**
 * Live processes of process group `pgid` (zombies left out: tsx's esbuild child, orphaned when
 * the runner exits, is reaped by init a moment later).
 */
const liveMembersOf = (pgid: number): Array<string> =>
  fs.readdirSync("/proc").filter((entry) => /^\d+$/.test(entry)).flatMap((entry) => {
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8")
      const [state, , group] = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      return Number(group) === pgid && state !== "Z" ? [stat.slice(0, stat.lastIndexOf(")") + 1)] : []
    } catch {
      return [] // it went away while we looked
    }
  })

const exited = (child: ChildProcess) =>
  Effect.callback<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    child.once("exit", () => resume(Effect.void))
  })

/**
 * The runner example as a process of its own (its own process group), up once it says so. The
 * scope's end stops it as Ctrl-C would (SIGINT), and SIGKILLs its group if that took over 20 s.
 */
const startRunner = (env: Record<string, string | undefined>): Effect.Effect<
  { readonly child: ChildProcess; readonly output: () => string },
  Error,
  Scope.Scope
> =>
  Effect.acquireRelease(
    Effect.callback<{ readonly child: ChildProcess; readonly output: () => string }, Error>((resume) => {
      const child = spawn(process.execPath, ["--import", "tsx", "examples/cluster-runner.ts"], {
        env,
        detached: true,
        stdio: ["ignore", "pipe", "pipe"]
      })
      let out = ""
      const output = () => out
      const collect = (chunk: Buffer) => {
        out += chunk.toString()
        if (out.includes("runner ready on")) resume(Effect.succeed({ child, output }))
      }
      child.stdout!.on("data", collect)
      child.stderr!.on("data", collect)
      child.once("exit", (code) =>
        resume(Effect.fail(new Error(`the runner exited (${code}) before it was up:\n${out}`))))
      // Never up in time: nothing of it may outlive the test.
      return Effect.sync(() => {
        if (child.exitCode === null && child.signalCode === null) {
          process.kill(-child.pid!, "SIGKILL")
        }
      })
    }).pipe(Effect.timeout("60 seconds")),
    ({ child }) =>
      Effect.gen(function*() {
        child.kill("SIGINT")
        yield* exited(child).pipe(
          Effect.timeout("20 seconds"),
          Effect.catch(() =>
            Effect.sync(() => process.kill(-child.pid!, "SIGKILL"))
          )
        )
      })
  )

/** Runs the client example to its end. */
const runClient = (env: Record<string, string | undefined>) =>
  Effect.callback<{ code: number | null; stdout: string; stderr: string }>((resume) => {
    const child = execFile(
      process.execPath,
      ["--import", "tsx", "examples/cluster-client.ts"],
      { env, timeout: 120_000 },
      (error, stdout, stderr) => resume(Effect.succeed({ code: error ? (error.code as number) : 0, stdout, stderr }))
    )
    return Effect.sync(() => child.kill())
  })

// The model of the coffee shop: looks the price up, orders through the tool, gives a receipt.
const coffeeShop = (req: Fake.FakeRequest): Fake.FakeReply => {
  const asked = Fake.lastUserLine(req)
  const [result] = Fake.toolResults(req)
  if (result !== undefined) {
    return { text: result.content.startsWith("order") ? `Done: ${result.content}.` : `It costs ${result.content} EUR.` }
  }
  if (asked.includes("How much")) return { toolUses: [{ name: "mcp__gtb__menu", input: { item: "flat white" } }] }
  if (asked.includes("Order")) return { toolUses: [{ name: "mcp__gtb__place_order", input: { item: "flat white" } }] }
  if (asked.includes("receipt") && (req.body.tools ?? []).some((t) => t.name === "StructuredOutput")) {
    return { toolUses: [{ name: "StructuredOutput", input: { item: "flat white", total: 3.5 } }] }
  }
  return { text: "Hello." }
}

/**
 * Starts the runner example on `storage`, runs the client example twice on one conversation, stops
 * the runner, and checks the answers, the re-sent turn ids, and that nothing is left running.
 */
const runExample = (storage: (box: { readonly dir: string }) => Record<string, string>) =>
  Effect.gen(function*() {
    const api = yield* Fake.make(coffeeShop)
    const box = yield* sandbox(api.url)
    const port = yield* freePort
    const env = {
      ...process.env,
      ...box.env,
      CLAUDE_BINARY: claudeBinary,
      CLAUDE_CWD: box.cwd,
      RUNNER_PORT: String(port),
      CONVERSATION_ID: "coffee-1",
      ...storage(box)
    }
    const { first, second, runner } = yield* Effect.scoped(Effect.gen(function*() {
      const runner = yield* startRunner(env)
      const first = yield* runClient(env)
      const requests = api.messageRequests().length
      // Another client process, the same conversation and turn ids: every reply from storage.
      const second = yield* runClient(env)
      expect(api.messageRequests().length).toBe(requests)
      return { first, second, runner }
    }))
    for (const out of [first, second]) {
      expect(out.stderr).toBe("")
      expect(out.code, out.stdout).toBe(0)
      expect(out.stdout).toContain("claude [turn-1]: It costs 3.5 EUR.")
      expect(out.stdout).toContain("claude [turn-2]: Done: order #1: one flat white.")
      expect(out.stdout).toContain("turn-2 sent twice: the same reply, one order")
      expect(out.stdout).toContain("receipt [turn-3]: flat white, 3.50 EUR")
      expect(out.stdout).toMatch(/usage: [1-9]\d* in \/ [1-9]\d* out tokens/)
    }
    // The re-sent turns reached no model and ran no tool: one request asked to order, one order.
    const ordering = api.messageRequests().filter((r) => Fake.lastUserLine(r).includes("Order one"))
    expect(ordering).toHaveLength(1)
    const log = runner.output()
    expect(log.split("hosting coffee-1")).toHaveLength(2)
    expect(log.split("tool place_order(")).toHaveLength(2)
    expect(log.split("tool menu(")).toHaveLength(2)
    // Nothing left running: the runner (and its group), its conversation's CLI, its port.
    expect(runner.child.exitCode ?? runner.child.signalCode).not.toBeNull()
    expect(runner.child.signalCode, "the runner did not stop on SIGINT").not.toBe("SIGKILL")
    expect(liveMembersOf(runner.child.pid!)).toEqual([])
    expect(claudeProcessesIn(box.cwd)).toEqual([])
    const hexPort = `:${port.toString(16).toUpperCase().padStart(4, "0")} `
    expect(listeningSockets().filter((s) => s.includes(hexPort))).toEqual([])
  })

describe("examples/cluster-runner.ts and examples/cluster-client.ts", () => {
  it.live(
    "on a SQLite file: the client process talks to the runner process; re-sent turn ids give the stored replies",
    () => runExample((box) => ({ DATABASE_URL: "", CLUSTER_SQLITE_FILE: path.join(box.dir, "cluster.db") })),
    180_000
  )

  it.live(
    "on PostgreSQL (DATABASE_URL): the same conversation, the same answers",
    () =>
      Effect.gen(function*() {
        const server = yield* Postgres.start()
        yield* runExample(() => ({ DATABASE_URL: Redacted.value(server.url()) }))
      }),
    240_000
  )
})
