import { expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { existsSync, readdirSync, readFileSync, readlinkSync } from "node:fs"
import { join } from "node:path"
import type * as ClaudeAgent from "../../src/layers/ClaudeAgent.ts"
import * as ClaudeCodeOptions from "../../src/services/ClaudeCodeOptions.ts"
import * as Pool from "../../src/services/ClaudeProcessPool.ts"
import * as Tool from "../../src/services/Tool.ts"
import { loggingBinary, type Sandbox, sandbox } from "../support/claudeCli.ts"
import { agentSession } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

/** The scripted model: "call <tool>" calls the tool server's tool of that name, a tool result is answered with its text. */
const model = (req: Fake.FakeRequest): Fake.FakeReply => {
  const results = Fake.toolResults(req)
  if (results.length > 0) return { text: `result: ${results.map((r) => r.content).join(" | ")}` }
  const call = /^call (\w+)$/.exec(Fake.lastUserLine(req))
  if (call !== null) return { toolUses: [{ name: `mcp__gtb__${call[1]}`, input: {} }] }
  const bash = /^bash (\w+)$/.exec(Fake.lastUserLine(req))
  if (bash !== null) {
    return { toolUses: [{ name: "Bash", input: { command: `mkdir ${bash[1]}-dir`, description: "make a dir" } }] }
  }
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

/** The tool server's tools (`mcp__gtb__*`) a model request offered. */
const serverTools = (req: Fake.FakeRequest) =>
  (req.body.tools ?? []).map((t) => t.name).filter((name) => name.startsWith("mcp__gtb__"))

/**
 * Pids of live claude CLIs whose working directory is inside `dir`: a parked spare works in a
 * parking folder under the config home (`CLAUDE_CONFIG_DIR/spares`), not in the session's cwd.
 */
const claudeProcessesUnder = (dir: string): Array<number> => {
  const pids: Array<number> = []
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (!readlinkSync(`/proc/${entry}/cwd`).startsWith(`${dir}/`)) continue
      if (!readFileSync(`/proc/${entry}/cmdline`, "utf8").includes("claude")) continue
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8")
      if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) continue
      pids.push(Number(entry))
    } catch {
      // The process went away while we looked.
    }
  }
  return pids.sort((a, b) => a - b)
}

const until = (done: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 1200 && !done(); i++) yield* Effect.sleep("50 millis")
    expect(done()).toBe(true)
  })

describeWithClaude("ClaudeProcessPool spares with the real claude CLI (ClaudeAgent keepAlive)", () => {
  it.live(
    "new ClaudeAgent conversations claim spares with their own tools, env and session; a miss starts cold; spares are replenished and reaped",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const box: Sandbox = yield* sandbox(api.url)
        const binary = loggingBinary(box)
        const poolScope = yield* Scope.make()
        const pool = yield* Pool.make({ maxLiveProcesses: 6, spares: 2, spareIdleTimeout: "8 seconds" }).pipe(
          Scope.provide(poolScope)
        )
        const stats = () => Effect.runSync(pool.stats)
        const clis = () => claudeProcessesUnder(box.dir)
        /** CLI starts (not `--version` probes). */
        const starts = () => binary.starts().filter((argv) => !argv.includes("--version"))
        /** Cold starts: a spare is started by the SDK's `prewarm()`, which waits for a claim. */
        const coldStarts = () => starts().filter((argv) => !argv.includes("--await-claim")).length
        /** A new keepAlive conversation serving `tool`, open until its own scope closes. */
        const conversation = (tool: string, options: ClaudeAgent.Options = {}) =>
          Effect.gen(function*() {
            const scope = yield* Scope.make()
            const { chat } = yield* agentSession(box, {
              pathToClaudeCodeExecutable: binary.path,
              keepAlive: true,
              requestTimeout: "120 seconds",
              ...options
            }, { pool }).pipe(Scope.provide(scope))
            yield* chat.setTools([secretTool(tool)])
            return { chat, scope }
          })

        // The first conversation of a configuration misses (cold) and teaches the pool its key.
        const teacher = yield* conversation("teach")
        expect(yield* teacher.chat.chat("call teach")).toBe("result: teach-secret")
        yield* Scope.close(teacher.scope, Exit.void)
        yield* until(() => stats().spares === 2 && clis().length === 2)
        expect(stats()).toMatchObject({ claims: 0, misses: 1 })
        const spares = clis()
        expect(starts().length).toBe(3)
        expect(coldStarts()).toBe(1)
        // Parked: no session to resume, and in a parking folder rather than the session's cwd.
        for (const argv of starts()) expect(argv).not.toContain("--resume")
        for (const pid of spares) expect(readlinkSync(`/proc/${pid}/cwd`)).not.toBe(box.cwd)

        // Two new conversations claim the two spares: no CLI starts for them.
        const a = yield* conversation("alpha")
        const b = yield* conversation("beta")
        const [answerA, answerB] = yield* Effect.all([a.chat.chat("call alpha"), b.chat.chat("call beta")], {
          concurrency: "unbounded"
        })
        expect(answerA).toBe("result: alpha-secret")
        expect(answerB).toBe("result: beta-secret")
        expect(stats()).toMatchObject({ claims: 2, misses: 1 })
        // The spares' processes are the ones that answered (still alive, now the conversations').
        for (const pid of spares) expect(clis()).toContain(pid)
        expect(coldStarts()).toBe(1)
        // Claimed: the CLI works in the conversation's folder now.
        for (const pid of spares) expect(readlinkSync(`/proc/${pid}/cwd`)).toBe(box.cwd)
        // A claimed spare is the conversation's CLI for its next turns too (no cold start; the
        // pool may be starting replacement spares meanwhile).
        expect(yield* a.chat.chat("call alpha")).toBe("result: alpha-secret")
        expect(coldStarts()).toBe(1)
        for (const pid of spares) expect(clis()).toContain(pid)

        // A third conversation with another environment has no spare of its configuration: cold.
        const c = yield* conversation("gamma", { env: { ...box.env, TENANT: "c" } })
        expect(yield* c.chat.chat("call gamma")).toBe("result: gamma-secret")
        expect(stats()).toMatchObject({ claims: 2, misses: 2 })
        expect(coldStarts()).toBe(2)

        // Every model request offered exactly its conversation's own tool, and no one else's history.
        for (const req of api.messageRequests()) {
          const tools = serverTools(req)
          expect(tools.length).toBe(1)
          const own = tools[0]!.replace("mcp__gtb__", "")
          const history = JSON.stringify(req.body.messages)
          for (const other of ["teach", "alpha", "beta", "gamma"].filter((name) => name !== own)) {
            expect(history).not.toContain(`call ${other}`)
          }
        }
        // A claimed spare's first request holds no earlier turn, and its prompt once.
        for (const name of ["alpha", "beta"]) {
          const first = api.messageRequests().find((req) => JSON.stringify(req.body.messages).includes(`call ${name}`))
          const messages = first?.body.messages ?? []
          expect(messages.filter((message) => message.role === "assistant")).toEqual([])
          expect(JSON.stringify(messages).split(`call ${name}`).length - 1).toBe(1)
        }

        // Replenished for the configuration used last (C's): its spares carry C's environment.
        yield* until(() => stats().spares === 2 && clis().length === 5)
        const fresh = clis().filter((pid) => !spares.includes(pid))
        expect(fresh.map((pid) => environOf(pid).includes("TENANT=c"))).toEqual([true, true, true])
        for (const pid of spares) expect(environOf(pid)).not.toContain("TENANT=c")

        // Unclaimed spares are stopped after spareIdleTimeout, and not replaced.
        yield* until(() => stats().spares === 0 && clis().length === 3)
        expect(stats().evictions).toBeGreaterThanOrEqual(2)

        yield* Scope.close(a.scope, Exit.void)
        // A's CLI (one of the old spares) is gone with A.
        expect(spares.filter((pid) => clis().includes(pid)).length).toBe(1)
        yield* Scope.close(b.scope, Exit.void)
        yield* Scope.close(c.scope, Exit.void)
        yield* Scope.close(poolScope, Exit.void)
        yield* until(() => clis().length === 0)
        expect(stats()).toMatchObject({ live: 0, spares: 0 })
        // The SDK's parking folders (one per spare) are gone with their spares.
        const parking = join(box.env["CLAUDE_CONFIG_DIR"]!, "spares")
        yield* until(() => !existsSync(parking) || readdirSync(parking).length === 0)
      }),
    300_000
  )
  it.live(
    "a ClaudeAgent spare asks the canUseTool of the conversation that claimed it, never the one whose configuration started it",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const box: Sandbox = yield* sandbox(api.url)
        const pool = yield* Pool.make({ maxLiveProcesses: 3, spares: 1 })
        const asked: Array<string> = []
        /** A new keepAlive conversation whose canUseTool records `who` and denies. */
        const conversation = (who: string) =>
          Effect.gen(function*() {
            const scope = yield* Scope.make()
            const { chat } = yield* agentSession(box, {
              keepAlive: true,
              requestTimeout: "120 seconds",
              canUseTool: (request) =>
                Effect.sync(() => {
                  asked.push(`${who}: ${String(request.input["command"])}`)
                  return ClaudeCodeOptions.deny(`${who} says no`)
                })
            }, { pool }).pipe(Scope.provide(scope))
            yield* chat.setTools([secretTool(who)])
            return { chat, scope }
          })
        const teacher = yield* conversation("teacher")
        expect(yield* teacher.chat.chat("bash teacher")).toContain("teacher says no")
        yield* Scope.close(teacher.scope, Exit.void)
        yield* until(() => Effect.runSync(pool.stats).spares === 1)
        const claimer = yield* conversation("claimer")
        expect(yield* claimer.chat.chat("bash claimer")).toContain("claimer says no")
        expect(yield* claimer.chat.chat("call claimer")).toBe("result: claimer-secret")
        expect(Effect.runSync(pool.stats)).toMatchObject({ claims: 1, misses: 1 })
        expect(asked).toEqual(["teacher: mkdir teacher-dir", "claimer: mkdir claimer-dir"])
      }),
    120_000
  )
})
