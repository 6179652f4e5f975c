/**
 * What a `ClaudeSessionStore` costs a turn: a later plain turn of a kept-alive `ClaudeLocal`
 * client (the real `claude` binary against the fake Messages API) with a store vs the same client
 * without one. Both conversations grow alike (the turns alternate), so the store step reads a
 * session file of the same size as the baseline's CLI writes. Target ≤ 1.10× for a SQLite file
 * (`ClaudeSessionStoreSql.layerSqlite`, its default `synchronous: "normal"`); a SQLite file synced
 * at every commit and the memory store are printed for reference.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import { statSync } from "node:fs"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import * as SessionFile from "../src/internal/claude/sessionFile.ts"
import * as ClaudeLocal from "../src/layers/ClaudeLocal.ts"
import * as ClaudeSessionStoreSql from "../src/layers/ClaudeSessionStoreSql.ts"
import * as NodeSecretFile from "../src/layers/NodeSecretFile.ts"
import * as NodeSubprocess from "../src/layers/NodeSubprocess.ts"
import { ChatClient } from "../src/services/ChatClient.ts"
import { ClaudeSession } from "../src/services/ClaudeCodeOptions.ts"
import { ClaudeSessionStore, type ClaudeSessionStoreService, makeMemory } from "../src/services/ClaudeSessionStore.ts"
import { claudeBinary, sandbox } from "../test/support/claudeCli.ts"
import * as Fake from "../test/support/FakeMessagesApi.ts"
import { compare, median } from "./util.ts"

/** A SQLite file in `dir` (the target), or the memory store (for reference). */
const stores: ReadonlyArray<{
  readonly name: string
  readonly target?: number
  readonly make: (dir: string) => Effect.Effect<ClaudeSessionStoreService, never, Scope.Scope>
}> = [
  {
    name: "SQLite",
    target: 1.10,
    make: (dir) =>
      Layer.build(ClaudeSessionStoreSql.layerSqlite({ filename: join(dir, "sessions.sqlite") })).pipe(
        Effect.map((ctx) => Context.get(ctx, ClaudeSessionStore)),
        Effect.orDie
      )
  },
  {
    // For reference: a disk sync at every commit (the SQLite store's default is `normal`).
    name: "SQLite, synchronous full",
    make: (dir) =>
      Layer.build(ClaudeSessionStoreSql.layerSqlite({ filename: join(dir, "full.sqlite"), synchronous: "full" })).pipe(
        Effect.map((ctx) => Context.get(ctx, ClaudeSessionStore)),
        Effect.orDie
      )
  },
  { name: "memory", make: () => makeMemory }
]

const bench = (
  storeName: string,
  makeStore: (dir: string) => Effect.Effect<ClaudeSessionStoreService, never, Scope.Scope>,
  target: number | undefined
) =>
  Effect.scoped(Effect.gen(function*() {
    const api = yield* Fake.make((req) => ({ text: `ok: ${Fake.lastUserLine(req).slice(-20)}` }))
    const box = yield* sandbox(api.url)
    // Each append timed: how much of the difference is the store's own call.
    const appends: Array<number> = []
    const inner = yield* makeStore(box.dir)
    const store: ClaudeSessionStoreService = {
      ...inner,
      append: (key, entries) =>
        Effect.suspend(() => {
          const started = performance.now()
          return Effect.ensuring(
            inner.append(key, entries),
            Effect.sync(() => appends.push(performance.now() - started))
          )
        })
    }
    const scope = yield* Scope.make()
    const client = (withStore: boolean) => {
      const layer = ClaudeLocal.layer({
        binary: claudeBinary,
        cwd: box.cwd,
        env: box.env,
        cliVersion: "2.1.332",
        keepAlive: true
      }).pipe(Layer.provide(NodeSubprocess.layer), Layer.provide(NodeSecretFile.layer({ directory: box.secrets })))
      const provided = withStore ? layer.pipe(Layer.provide(Layer.succeed(ClaudeSessionStore, store))) : layer
      return Effect.map(
        Layer.buildWithScope(Layer.fresh(provided), scope),
        (ctx) => ({ chat: Context.get(ctx, ChatClient), session: Context.get(ctx, ClaudeSession) })
      )
    }
    const stored = yield* client(true)
    const plain = yield* client(false)
    const turn = (c: typeof stored) => () => Effect.runPromise(c.chat.chat("hello again"))
    // compare's warm-up turns include each client's first: the samples are later turns only.
    yield* Effect.promise(() =>
      compare(
        `a later plain turn, kept-alive ClaudeLocal with a ${storeName} ClaudeSessionStore vs without one`,
        turn(stored),
        turn(plain),
        { rounds: 3, perRound: 8, ...(target === undefined ? {} : { target }) }
      )
    )
    const id = Option.getOrThrow(yield* stored.session.sessionId)
    const entries = yield* Effect.map(store.load({ projectKey: "default", sessionId: id }), Option.getOrThrow)
    const file = SessionFile.sessionPath(SessionFile.configDir(box.env), box.cwd, id)
    console.log(`its append (one per turn): median ${median(appends).toFixed(2)} ms over ${appends.length} turns`)
    console.log(
      `the stored session (${storeName}) after the run: ${entries.length} entries, its file ${
        (statSync(file).size / 1024).toFixed(0)
      } KiB`
    )
    yield* Scope.close(scope, Exit.void)
  }))

const main = Effect.forEach(stores, (store) => bench(store.name, store.make, store.target), { discard: true })

Effect.runPromise(main).catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
