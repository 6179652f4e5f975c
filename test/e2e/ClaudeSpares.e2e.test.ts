import { expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { readdirSync, readFileSync } from "node:fs"
import type * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import * as Pool from "../../src/services/ClaudeProcessPool.ts"
import * as Tool from "../../src/services/Tool.ts"
import {
  claudeProcessesIn,
  listeningSockets,
  loggingBinary,
  type Sandbox,
  sandbox,
  socketInodesOf
} from "../support/claudeCli.ts"
import { localSession } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

/** The scripted model: "call <tool>" calls the bridge tool of that name, a tool result is answered with its text. */
const model = (req: Fake.FakeRequest): Fake.FakeReply => {
  const results = Fake.toolResults(req)
  if (results.length > 0) return { text: `result: ${results.map((r) => r.content).join(" | ")}` }
  const call = /^call (\w+)$/.exec(Fake.lastUserLine(req))
  if (call !== null) return { toolUses: [{ name: `mcp__gtb__${call[1]}`, input: {} }] }
  return { text: `You said: ${Fake.lastUserLine(req)}` }
}

/** A tool answering a secret of its conversation's own. */
const secretTool = (name: string) =>
  Tool.make(name, {
    description: `The ${name} secret`,
    parameters: {},
    handler: () => Effect.succeed(`${name}-secret`)
  })

const environOf = (pid: number) => readFileSync(`/proc/${pid}/environ`, "utf8").split("\0")

/** The bridge tools (`mcp__gtb__*`) a model request offered. */
const bridgeTools = (req: Fake.FakeRequest) =>
  (req.body.tools ?? []).map((t) => t.name).filter((name) => name.startsWith("mcp__gtb__"))

/** Listening sockets of this process (the fake API, the bridges): the machine's others are not ours. */
const ownListeners = () => {
  const own = new Set(socketInodesOf(process.pid))
  return listeningSockets().filter((entry) => own.has(entry.split(" ")[1]!)).sort()
}

const until = (done: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 1200 && !done(); i++) yield* Effect.sleep("50 millis")
    expect(done()).toBe(true)
  })

describeWithClaude("ClaudeProcessPool spares with the real claude CLI (ClaudeLocal keepAlive)", () => {
  it.live(
    "new conversations claim spares with their own tools, env and session; a miss starts cold; spares are replenished and reaped",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const box: Sandbox = yield* sandbox(api.url)
        const sockets = ownListeners()
        const binary = loggingBinary(box)
        const poolScope = yield* Scope.make()
        const pool = yield* Pool.make({ maxLiveProcesses: 6, spares: 2, spareIdleTimeout: "8 seconds" }).pipe(
          Scope.provide(poolScope)
        )
        const stats = () => Effect.runSync(pool.stats)
        /** A new keepAlive conversation serving `tool`, open until its own scope closes. */
        const conversation = (tool: string, options: ClaudeLocal.Options = {}) =>
          Effect.gen(function*() {
            const scope = yield* Scope.make()
            const { chat } = yield* localSession(box, {
              binary: binary.path,
              keepAlive: true,
              cliVersion: "2.1.332",
              requestTimeout: "120 seconds",
              ...options
            }, { pool }).pipe(Scope.provide(scope))
            yield* chat.setTools([secretTool(tool)])
            return { chat, scope }
          })
        const withMcpConfig = () => binary.starts().filter((argv) => argv.includes("--mcp-config")).length

        // The first conversation of a configuration misses (cold) and teaches the pool its key.
        const teacher = yield* conversation("teach")
        expect(yield* teacher.chat.chat("call teach")).toBe("result: teach-secret")
        yield* Scope.close(teacher.scope, Exit.void)
        yield* until(() => stats().spares === 2 && claudeProcessesIn(box.cwd).length === 2)
        expect(stats()).toMatchObject({ claims: 0, misses: 1 })
        const spares = claudeProcessesIn(box.cwd).sort()
        // Spares start with no MCP config (no credential) and no session to resume.
        // (They may have started before the teacher's own CLI: the miss forks their start.)
        expect(binary.starts().length).toBe(3)
        expect(withMcpConfig()).toBe(1)
        for (const argv of binary.starts()) expect(argv).not.toContain("--resume")

        // Two new conversations claim the two spares: no cold start with an MCP config.
        const a = yield* conversation("alpha")
        const b = yield* conversation("beta")
        const [answerA, answerB] = yield* Effect.all([a.chat.chat("call alpha"), b.chat.chat("call beta")], {
          concurrency: "unbounded"
        })
        expect(answerA).toBe("result: alpha-secret")
        expect(answerB).toBe("result: beta-secret")
        expect(stats()).toMatchObject({ claims: 2, misses: 1 })
        expect(withMcpConfig()).toBe(1)
        // The spares' processes are the ones answering (still alive, now the conversations').
        for (const pid of spares) expect(claudeProcessesIn(box.cwd)).toContain(pid)

        // A third conversation with another environment has no spare of its configuration: cold.
        const c = yield* conversation("gamma", { env: { ...box.env, TENANT: "c" } })
        expect(yield* c.chat.chat("call gamma")).toBe("result: gamma-secret")
        expect(stats()).toMatchObject({ claims: 2, misses: 2 })
        expect(withMcpConfig()).toBe(2)

        // Every model request offered exactly its conversation's own tool, and no one else's history.
        for (const req of api.messageRequests()) {
          const tools = bridgeTools(req)
          expect(tools.length).toBe(1)
          const own = tools[0]!.replace("mcp__gtb__", "")
          const history = JSON.stringify(req.body.messages)
          for (const other of ["teach", "alpha", "beta", "gamma"].filter((name) => name !== own)) {
            expect(history).not.toContain(`call ${other}`)
          }
        }

        // A spare's warm-up (a control request at start) leaves nothing in its conversation: the
        // first request of a claimed spare holds no earlier turn, and its prompt once.
        for (const name of ["alpha", "beta"]) {
          const first = api.messageRequests().find((req) => JSON.stringify(req.body.messages).includes(`call ${name}`))
          const messages = first?.body.messages ?? []
          expect(messages.filter((message) => message.role === "assistant")).toEqual([])
          expect(JSON.stringify(messages).split(`call ${name}`).length - 1).toBe(1)
        }

        // Replenished for the configuration used last (C's): its spares carry C's environment.
        yield* until(() => stats().spares === 2)
        yield* until(() => claudeProcessesIn(box.cwd).length === 5)
        const fresh = claudeProcessesIn(box.cwd).filter((pid) => !spares.includes(pid))
        const tenants = fresh.map((pid) => environOf(pid).includes("TENANT=c"))
        // C's own CLI and its two spares; A's and B's (the old spares) have no TENANT.
        expect(tenants).toEqual([true, true, true])
        for (const pid of spares) expect(environOf(pid)).not.toContain("TENANT=c")

        // A claimed spare is the conversation's CLI for its next turns too.
        const startsBefore = binary.starts().length
        expect(yield* a.chat.chat("call alpha")).toBe("result: alpha-secret")
        expect(binary.starts().length).toBe(startsBefore)

        // Unclaimed spares are stopped after spareIdleTimeout, and not replaced.
        yield* until(() => stats().spares === 0 && claudeProcessesIn(box.cwd).length === 3)
        expect(stats().evictions).toBeGreaterThanOrEqual(2)

        yield* Scope.close(a.scope, Exit.void)
        // A's CLI (one of the old spares) is gone with A.
        expect(spares.filter((pid) => claudeProcessesIn(box.cwd).includes(pid)).length).toBe(1)
        yield* Scope.close(b.scope, Exit.void)
        yield* Scope.close(c.scope, Exit.void)
        yield* Scope.close(poolScope, Exit.void)
        expect(claudeProcessesIn(box.cwd)).toEqual([])
        expect(stats()).toMatchObject({ live: 0, spares: 0 })
        expect(readdirSync(box.secrets)).toEqual([])
        expect(ownListeners()).toEqual(sockets)
      }),
    300_000
  )
})
