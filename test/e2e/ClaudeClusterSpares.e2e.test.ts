/**
 * Spare CLIs on a cluster runner (issue 48): a runner process (SQLite storage) whose CLIs run
 * through `ClaudeProcessPool.layerFromEnv()` with `CLAUDE_POOL_SPARES=1`. The first conversation
 * it hosts starts its CLI cold and teaches the runner's pool its configuration; the pool starts a
 * spare; the next new conversation's first turn claims that spare (no cold start with an MCP
 * config, the spare's pid lives on as its CLI) and the pool replaces it. A logging wrapper of the
 * binary records each start's pid and arguments. Nothing is left after the scope.
 */
import { expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as ClaudeCluster from "../../src/layers/ClaudeCluster.ts"
import * as ClaudeConversation from "../../src/services/ClaudeConversation.ts"
import { claudeBinary } from "../support/claudeCli.ts"
import { isAlive, startRunner, waitUntil } from "../support/clusterProcesses.ts"
import { retryStorage, shardsSettled, sharedStorage, tempDir } from "../support/clusterStorage.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

/** A CLI start the wrapper logged: its pid (`exec` keeps it) and arguments. */
interface Start {
  readonly pid: number
  readonly argv: string
}

/** A wrapper of the binary in `dir` that logs `pid argv` per start, then `exec`s the binary. */
const loggingWrapper = (dir: string) => {
  const log = join(dir, "starts.log")
  const path = join(dir, "claude.sh")
  writeFileSync(path, `#!/bin/sh\nprintf '%s %s\\n' "$$" "$*" >> '${log}'\nexec '${claudeBinary}' "$@"\n`, {
    mode: 0o755
  })
  /** Starts of CLIs that serve turns (not `claude --version` probes). */
  const starts = (): Array<Start> =>
    (existsSync(log) ? readFileSync(log, "utf8").split("\n") : [])
      .filter((line) => line !== "" && !line.includes("--version"))
      .map((line) => ({ pid: Number(line.slice(0, line.indexOf(" "))), argv: line.slice(line.indexOf(" ") + 1) }))
  return { path, starts }
}

const cold = (start: Start) => start.argv.includes("--mcp-config")

describeWithClaude("ClaudeCluster runner with spare CLIs (runner process, SQLite)", () => {
  it.live(
    "a runner's pool keeps a spare for its conversations' configuration; a new conversation's first turn claims it",
    () =>
      Effect.gen(function*() {
        const { sql, storage } = yield* sharedStorage("SQLite")
        const api = yield* Fake.make((req) => ({ text: `answer: ${Fake.lastUserLine(req)}` }))
        const dir = yield* tempDir("ecb-cluster-spares-")
        const binary = loggingWrapper(dir)
        const pids = yield* Effect.scoped(Effect.gen(function*() {
          const runner = yield* startRunner({
            name: "runner",
            storage,
            apiUrl: api.url,
            sideEffects: join(dir, "effects.jsonl"),
            env: {
              CLAUDE_BINARY: binary.path,
              CLAUDE_POOL_SPARES: "1",
              CLAUDE_MAX_LIVE_PROCESSES: "4",
              CLAUDE_POOL_SPARE_IDLE_TIMEOUT: "10 minutes"
            }
          })
          yield* Effect.provide(shardsSettled("SQLite", 1), sql)
          return yield* Effect.gen(function*() {
            const conversations = yield* ClaudeConversation.client
            const ask = (id: string) =>
              Effect.flatMap(conversations(id), (c) => c.chat(`hello from ${id}`, { turnId: `${id}-1` })).pipe(
                retryStorage
              )

            // The first conversation misses: its CLI starts cold, with its MCP config.
            expect(yield* ask("conv-a")).toBe("answer: hello from conv-a")
            expect(binary.starts().filter(cold).length).toBe(1)
            // The runner's pool now keeps a spare of that configuration: no MCP config, no session.
            const spare = yield* waitUntil(
              "the runner's spare CLI",
              () => binary.starts().find((start) => !cold(start) && runner.clis().includes(start.pid)),
              60_000
            )
            expect(spare.argv).not.toContain("--resume")

            // The second conversation's first turn claims it: no second cold start, and the spare's
            // process is now that conversation's CLI.
            expect(yield* ask("conv-b")).toBe("answer: hello from conv-b")
            expect(binary.starts().filter(cold).length).toBe(1)
            expect(runner.clis()).toContain(spare.pid)
            // B's first request is its own: one user prompt, B's, with the bridge's tools.
            const firstOfB = api.messageRequests().find((req) => Fake.lastUserLine(req).includes("conv-b"))!
            expect(JSON.stringify(firstOfB.body.messages)).not.toContain("conv-a")
            expect((firstOfB.body.tools ?? []).map((t) => t.name)).toContain("mcp__gtb__charge")

            // Replaced: the pool starts another spare once the claimed one's first turn ended.
            const replacement = yield* waitUntil(
              "a replacement spare",
              () =>
                binary.starts().find((start) =>
                  !cold(start) && start.pid !== spare.pid && runner.clis().includes(start.pid)
                ),
              60_000
            )
            expect(replacement.argv).toBe(spare.argv)
            return binary.starts().map((start) => start.pid)
          }).pipe(Effect.provide(ClaudeCluster.layerClient().pipe(Layer.provide(sql))))
        }))
        // The runner stopped (SIGTERM): its conversations' CLIs and its spares with it.
        expect(pids.length).toBeGreaterThanOrEqual(3)
        expect(pids.filter(isAlive)).toEqual([])
      }),
    240_000
  )
})
