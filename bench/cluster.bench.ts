/**
 * `effect-chat-bridge/cluster`, the real `claude` binary against the fake Messages API:
 * 1. What the entity costs a turn: a later plain turn through `ClaudeConversation.client` to
 *    `ClaudeConversationRunner` (one runner in this process, its cluster and session store on one
 *    SqlClient) vs a kept-alive `ClaudeLocal` with a `ClaudeSessionStore` — what a single-machine
 *    app with durable sessions runs. Turns alternate in rounds; target ≤ 1.15×. On a SQLite file
 *    (both at `synchronous: normal`, the store's default; the cluster at SqliteClient's default
 *    `full` for reference), then on PostgreSQL (`@effect/sql-pg`, a real server from
 *    test/support/postgres.ts).
 * 2. Failover: three runner processes (test/support/clusterRunner.ts, each its own process group
 *    and sandbox) and a client in this process; after a turn, the runner that printed `HOSTING`
 *    is SIGKILLed with its CLI (a machine dying), and the time from the kill until the next turn
 *    is answered is printed (min / median / max; target median ≤ 5 s), at the documented settings
 *    (`ClaudeCluster.sqliteDefaults` on SQLite, `ClaudeCluster.defaults` on PostgreSQL), then once
 *    each at Effect's own defaults for comparison.
 *
 * Effect's defaults need runners started with other sharding settings. clusterRunner.ts takes
 * none, and the environment (`ShardingConfig.layerFromEnv`: RUNNER_HEALTH_CHECK_INTERVAL, …)
 * cannot change them, because `ClaudeCluster.layerRunner` passes its defaults as options, which win
 * over the environment. So for that run this file starts itself as the runner
 * (`CLUSTER_BENCH_RUNNER=effect-defaults`): the same layers as clusterRunner.ts, with
 * `shardingConfig` set to Effect's values.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import type * as SqlClient from "effect/sql/SqlClient"
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { performance } from "node:perf_hooks"
import * as ClaudeCluster from "../src/layers/ClaudeCluster.ts"
import * as ClaudeConversationRunner from "../src/layers/ClaudeConversationRunner.ts"
import * as ClaudeLocal from "../src/layers/ClaudeLocal.ts"
import * as ClaudeSessionStoreSql from "../src/layers/ClaudeSessionStoreSql.ts"
import * as NodeSecretFile from "../src/layers/NodeSecretFile.ts"
import * as NodeSubprocess from "../src/layers/NodeSubprocess.ts"
import * as SqliteClient from "../src/layers/SqliteClient.ts"
import * as ClaudeConversation from "../src/services/ClaudeConversation.ts"
import { ClaudeSessionStore, type ClaudeSessionStoreService } from "../src/services/ClaudeSessionStore.ts"
import { claudeBinary, claudeProcessesIn, sandbox } from "../test/support/claudeCli.ts"
import * as Fake from "../test/support/FakeMessagesApi.ts"
import * as Postgres from "../test/support/postgres.ts"
import { compare, median } from "./util.ts"

const cliVersion = "2.1.332"

/** The settings `ClaudeCluster.defaults` changes, at Effect's own values. */
const effectDefaults: Partial<ShardingConfig.ShardingConfig["Service"]> = {
  runnerHealthCheckInterval: ShardingConfig.defaults.runnerHealthCheckInterval,
  shardLockRefreshInterval: ShardingConfig.defaults.shardLockRefreshInterval,
  shardLockExpiration: ShardingConfig.defaults.shardLockExpiration,
  refreshAssignmentsInterval: ShardingConfig.defaults.refreshAssignmentsInterval,
  entityMessagePollInterval: ShardingConfig.defaults.entityMessagePollInterval
}

const fmt = (d: Duration.Input | undefined) => (d === undefined ? "?" : Duration.format(Duration.fromInputUnsafe(d)))

const describeSettings = (s: Partial<ShardingConfig.ShardingConfig["Service"]>) =>
  `health check ${fmt(s.runnerHealthCheckInterval)}, lock refresh ${fmt(s.shardLockRefreshInterval)}, ` +
  `lock expiry ${fmt(s.shardLockExpiration)}, assignments refresh ${fmt(s.refreshAssignmentsInterval)}, ` +
  `message poll ${fmt(s.entityMessagePollInterval)}`

/** What this bench started, checked at the end: none of it may outlive the run. */
const started = { pids: new Set<number>(), dirs: new Set<string>() }

/** Whether `pid` runs (a zombie does not). */
const running = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return !stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")
  } catch {
    return false
  }
}

/**
 * Live processes whose parent is this one, but the library's exit-cleanup watchdog: a `sh` meant to
 * live as long as this process (it ends when this process's end closes its pipe).
 */
const children = () =>
  readdirSync("/proc").filter((e) => /^\d+$/.test(e)).map(Number).filter((pid) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      const watchdog = readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("trap '' INT HUP")
      return fields[0] !== "Z" && Number(fields[1]) === process.pid && !watchdog
    } catch {
      return false
    }
  })

/** Children from before the bench (tsx's esbuild service). */
const preexisting = new Set(children())

const leftovers = () => [
  ...[...started.pids].filter(running).map((pid) => `process ${pid}`),
  ...children().filter((pid) => !preexisting.has(pid)).map((pid) => `child process ${pid}`),
  ...[...started.dirs].filter((dir) => existsSync(dir))
]

/** A temporary folder removed with the scope. */
const tempDir = (prefix: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const dir = mkdtempSync(join(tmpdir(), prefix))
      started.dirs.add(dir)
      return dir
    }),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )

/** The fake model: echoes the prompt's last line. */
const fakeApi = Fake.make((req) => ({ text: `ok: ${Fake.lastUserLine(req).slice(-40)}` }))

// ---------------------------------------------------------------------------------------------
// 1. A turn through the entity vs a direct kept-alive client

interface Storage {
  readonly name: string
  /** The cluster's and the entity's store's SqlClient. */
  readonly cluster: Layer.Layer<SqlClient.SqlClient, unknown>
  /** The direct client's store. */
  readonly direct: Layer.Layer<ClaudeSessionStore, unknown>
  readonly target?: number
}

/** Milliseconds spent in a store's calls, and how many calls. */
interface StoreTime {
  ms: number
  calls: number
}

const timedCall = <A, E>(time: StoreTime, effect: Effect.Effect<A, E>) =>
  Effect.suspend(() => {
    const t = performance.now()
    return Effect.ensuring(
      effect,
      Effect.sync(() => {
        time.ms += performance.now() - t
        time.calls++
      })
    )
  })

/** The store with the time of each append and load added to `time`. */
const timed = (time: StoreTime) => (store: ClaudeSessionStoreService): ClaudeSessionStoreService => ({
  ...store,
  append: (key, entries) => timedCall(time, store.append(key, entries)),
  load: (key) => timedCall(time, store.load(key))
})

const turnOverhead = (storage: Storage) =>
  Effect.scoped(Effect.gen(function*() {
    const api = yield* fakeApi
    const box = yield* sandbox(api.url)
    started.dirs.add(box.dir)
    const options: ClaudeLocal.Options = {
      binary: claudeBinary,
      cwd: box.cwd,
      env: box.env,
      cliVersion,
      requestTimeout: "60 seconds"
    }
    const platform = Layer.merge(NodeSubprocess.layer, NodeSecretFile.layer({ directory: box.secrets }))
    const scope = yield* Effect.scope

    // Store calls timed on both sides: how much of the difference is the entity's own records.
    const directStore: StoreTime = { ms: 0, calls: 0 }
    const entityStore: StoreTime = { ms: 0, calls: 0 }
    const directStoreLayer = Layer.effect(
      ClaudeSessionStore,
      Effect.map(Effect.service(ClaudeSessionStore), timed(directStore))
    ).pipe(Layer.provide(storage.direct))
    const directCtx = yield* Layer.buildWithScope(Layer.merge(directStoreLayer, platform), scope)
    const direct = yield* ClaudeLocal.make({ ...options, keepAlive: true }).pipe(
      Effect.provideContext(directCtx),
      Scope.provide(scope)
    )

    const runner = ClaudeConversationRunner.layer({
      make: ClaudeLocal.make,
      conversation: () => Effect.succeed({ options })
    }).pipe(
      Layer.provideMerge(ClaudeCluster.layerRunner({ host: "127.0.0.1", port: 0 })),
      Layer.provide(Layer.effect(ClaudeSessionStore, Effect.map(ClaudeSessionStoreSql.make, timed(entityStore)))),
      Layer.provide(platform),
      Layer.provide(storage.cluster)
    )
    const runnerCtx = yield* Layer.buildWithScope(runner, scope)
    const conversations = yield* Effect.provideContext(ClaudeConversation.client, runnerCtx)
    const conversation = yield* conversations("bench-turns")

    let turns = 0
    let directTurns = 0
    const viaEntity = () =>
      Effect.runPromise(conversation.chat("hello again", { turnId: `t${turns++}` }).pipe(Effect.orDie))
    const viaDirect = () => {
      directTurns++
      return Effect.runPromise(direct.chat("hello again").pipe(Effect.orDie))
    }
    // compare's warm-up turns include each client's first (which starts its CLI): samples are later turns.
    yield* Effect.promise(() =>
      compare(
        `a later plain turn on ${storage.name}: through the ClaudeConversation entity (one runner in process) vs ` +
          `kept-alive ClaudeLocal with a ClaudeSessionStore`,
        viaEntity,
        viaDirect,
        { rounds: 5, perRound: 8, ...(storage.target === undefined ? {} : { target: storage.target }) }
      )
    )
    const per = (time: StoreTime, n: number) => `${(time.calls / n).toFixed(1)} calls, ${(time.ms / n).toFixed(1)} ms`
    console.log(
      `  session store per turn (mean over all turns, first included): entity ${per(entityStore, turns)} vs direct ${
        per(directStore, directTurns)
      }; the rest of the difference is the cluster's own ` +
        `(persisted message and reply, delivery)`
    )
    for (const pid of claudeProcessesIn(box.cwd)) started.pids.add(pid)
  }))

const sqliteStorages = (dir: string): ReadonlyArray<Storage> => [
  {
    name: "SQLite (synchronous normal)",
    target: 1.15,
    cluster: SqliteClient.layer({ filename: join(dir, "cluster-normal.sqlite"), synchronous: "normal" }),
    direct: ClaudeSessionStoreSql.layerSqlite({ filename: join(dir, "direct-normal.sqlite") })
  },
  {
    // For reference: SqliteClient's own default, a disk sync at every commit (the cluster commits
    // several times a turn); the direct store at the same setting.
    name: "SQLite (synchronous full)",
    cluster: SqliteClient.layer({ filename: join(dir, "cluster-full.sqlite") }),
    direct: ClaudeSessionStoreSql.layerSqlite({ filename: join(dir, "direct-full.sqlite"), synchronous: "full" })
  }
]

const pgClient = (url: Redacted.Redacted) => PgClient.layer({ url, connectTimeout: "5 seconds" })

/** A new, empty database on the server. */
const freshDatabase = (server: Postgres.PostgresServer, name: string) =>
  Effect.provide(
    Effect.flatMap(
      Effect.service(PgClient.PgClient),
      (sql) => sql`CREATE DATABASE ${sql(name)}`
    ),
    pgClient(server.url())
  ).pipe(Effect.orDie, Effect.as(server.url(name)))

const pgStorage = (server: Postgres.PostgresServer) =>
  Effect.gen(function*() {
    const cluster = yield* freshDatabase(server, "bench_cluster_turns")
    const direct = yield* freshDatabase(server, "bench_direct_turns")
    return {
      name: "PostgreSQL",
      target: 1.15,
      cluster: pgClient(cluster),
      direct: ClaudeSessionStoreSql.layer.pipe(Layer.provide(pgClient(direct)))
    } satisfies Storage
  })

// ---------------------------------------------------------------------------------------------
// 2. Failover between runner processes

interface Runner {
  readonly index: number
  readonly child: ChildProcess
  readonly pid: number
  readonly cwd: string
  readonly configDir: string
  readonly port: number
  /** Everything it printed on stdout so far. */
  readonly out: () => string
}

const killGroup = (pid: number, signal: NodeJS.Signals) => {
  try {
    process.kill(-pid, signal)
  } catch {
    // The group is gone already.
  }
}

/**
 * A runner's CLIs: live processes outside its process group (the CLI gets a group of its own)
 * started with its `CLAUDE_CONFIG_DIR`.
 */
const clisOf = (runner: Runner) =>
  readdirSync("/proc").filter((e) => /^\d+$/.test(e)).map(Number).filter((pid) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      // Only the CLI: the runner's exit-cleanup watchdog (`/bin/sh`) has the runner's environment
      // too, and stays after the conversation moves away.
      return fields[0] !== "Z" && Number(fields[2]) !== runner.pid &&
        readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0]!.endsWith("claude") &&
        readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").includes(`CLAUDE_CONFIG_DIR=${runner.configDir}`)
    } catch {
      return false
    }
  })

/** Resolves once `child` has exited (at once when it has). */
const exited = (child: ChildProcess) =>
  Effect.callback<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    child.once("exit", () => resume(Effect.void))
  })

/** Waits until `check` holds, polling every 50 ms, at most `timeout`. */
const until = (what: string, check: () => boolean, timeout: Duration.Input) =>
  Effect.suspend(() => (check() ? Effect.void : Effect.fail(what))).pipe(
    Effect.retry({ schedule: Schedule.spaced("50 millis") }),
    Effect.timeoutOrElse({ duration: timeout, orElse: () => Effect.die(new Error(`timed out: ${what}`)) }),
    Effect.orDie
  )

/** How the runner processes of one repetition reach the storage. */
type RunnerStorage = {
  readonly env: Record<string, string>
  readonly client: Layer.Layer<SqlClient.SqlClient, unknown>
}

/**
 * One runner process in its own process group and sandbox. Its release stops it with SIGTERM (its
 * CLIs stop with its scope), SIGKILLs its group and any CLI left in its cwd after 15 s, and checks
 * nothing of it is left.
 */
const startRunner = (
  index: number,
  apiUrl: string,
  storageEnv: Record<string, string>,
  port: number,
  mode: "documented" | "effect-defaults"
) =>
  Effect.gen(function*() {
    const dir = yield* tempDir(`ecb-bench-runner${index}-`)
    for (const sub of ["home", "config", "tmp", "work", "secrets"]) mkdirSync(join(dir, sub))
    const cwd = join(dir, "work")
    const env: Record<string, string> = {
      ...(process.env as Record<string, string>),
      ...storageEnv,
      HOME: join(dir, "home"),
      CLAUDE_CONFIG_DIR: join(dir, "config"),
      TMPDIR: join(dir, "tmp"),
      ANTHROPIC_BASE_URL: apiUrl,
      ANTHROPIC_API_KEY: "dummy",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      DISABLE_TELEMETRY: "1",
      DISABLE_AUTOUPDATER: "1",
      RUNNER_PORT: String(port),
      CLAUDE_BINARY: claudeBinary,
      CLAUDE_CWD: cwd,
      SECRETS_DIR: join(dir, "secrets"),
      SIDE_EFFECTS: join(dir, "side-effects.jsonl"),
      ...(mode === "effect-defaults" ? { CLUSTER_BENCH_RUNNER: "effect-defaults" } : {})
    }
    const script = mode === "effect-defaults"
      ? resolve("bench/cluster.bench.ts")
      : resolve("test/support/clusterRunner.ts")
    let out = ""
    let err = ""
    const child = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const c = spawn(process.execPath, ["--import", "tsx", script], {
          cwd: resolve("."),
          env,
          detached: true,
          stdio: ["ignore", "pipe", "pipe"]
        })
        started.pids.add(c.pid!)
        c.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()))
        c.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()))
        return c
      }),
      (c) =>
        Effect.gen(function*() {
          if (c.exitCode === null && c.signalCode === null) killGroup(c.pid!, "SIGTERM")
          yield* exited(c).pipe(
            Effect.timeoutOrElse({
              duration: "15 seconds",
              orElse: () => Effect.sync(() => killGroup(c.pid!, "SIGKILL"))
            })
          )
          for (const cli of claudeProcessesIn(cwd)) {
            started.pids.add(cli)
            killGroup(cli, "SIGKILL")
          }
          yield* exited(c)
          yield* until(`runner ${index}'s CLIs exit`, () => claudeProcessesIn(cwd).length === 0, "10 seconds")
        })
    )
    const ready = () => out.includes(`READY ${port}`)
    yield* until(`runner ${index} READY or exited`, () => ready() || child.exitCode !== null, "120 seconds")
    if (!ready()) {
      return yield* Effect.die(
        new Error(`runner ${index} exited (${child.exitCode}) before READY:\n${out.slice(-2000)}\n${err.slice(-3000)}`)
      )
    }
    return {
      index,
      child,
      pid: child.pid!,
      cwd,
      configDir: env["CLAUDE_CONFIG_DIR"]!,
      port,
      out: () => out
    } satisfies Runner
  })

/** Ports for the runners: free now, on 127.0.0.1. */
const freePorts = (n: number) => Effect.forEach(Array.from({ length: n }), () => Postgres.freePort, { concurrency: 1 })

/** One repetition: a fresh cluster, a turn, the hosting runner killed, the next turn timed. */
const failoverOnce = (
  apiUrl: string,
  storage: RunnerStorage,
  settings: Partial<ShardingConfig.ShardingConfig["Service"]>,
  mode: "documented" | "effect-defaults",
  id: string
) =>
  Effect.scoped(Effect.gen(function*() {
    const ports = yield* Effect.orDie(freePorts(3))
    // The first runner alone creates the tables: runners starting together on a new SQLite file
    // can fail "database is locked" (seen here: one of three died that way).
    const leader = yield* startRunner(0, apiUrl, storage.env, ports[0]!, mode)
    const rest = yield* Effect.forEach(
      ports.slice(1),
      (port, i) => startRunner(i + 1, apiUrl, storage.env, port, mode),
      { concurrency: "unbounded" }
    )
    const runners = [leader, ...rest]
    const scope = yield* Effect.scope
    const clientCtx = yield* Layer.buildWithScope(
      ClaudeCluster.layerClient({ shardingConfig: settings }).pipe(Layer.provide(storage.client)),
      scope
    )
    const conversations = yield* Effect.provideContext(ClaudeConversation.client, clientCtx)
    const conversation = yield* conversations(id)
    // A turn retried with its own turn id (so at most once more in the model) when the storage
    // fails: a SQLite file shared by four processes can time out on its write lock under load
    // (seen at load 10-17: the lock held past the 5 s busy timeout), so after a pause.
    let storageRetries = 0
    const chat = (prompt: string, turnId: string) =>
      conversation.chat(prompt, { turnId }).pipe(
        Effect.tapError((e) => Effect.sync(() => e._tag === "PersistenceError" && storageRetries++)),
        Effect.retry({ while: (e) => e._tag === "PersistenceError", times: 5, schedule: Schedule.spaced("1 second") }),
        Effect.orDie,
        Effect.tap((answer) =>
          answer.includes(prompt) ? Effect.void : Effect.die(new Error(`unexpected answer ${answer}`))
        )
      )
    // Warm turns until one runner hosts the conversation with its CLI running: the shards move
    // while the later runners join (the first runner owned them all), and a conversation moved in
    // that rebalancing is stopped cleanly — killing its first host would time nothing.
    // Its host must be the same at two checks a refresh of the assignments (3 s) apart.
    let victim: Runner | undefined
    let candidate: Runner | undefined
    for (let warm = 0; victim === undefined; warm++) {
      if (warm === 15) return yield* Effect.die(new Error(`no runner kept ${id} with its CLI`))
      yield* chat(`warm turn ${warm}`, `warm-${warm}`)
      const hosts = runners.filter((r) => clisOf(r).length > 0)
      const host = hosts.length === 1 ? hosts[0] : undefined
      if (host !== undefined && host === candidate) victim = host
      else yield* Effect.sleep("3500 millis")
      candidate = host
    }
    const clis = clisOf(victim)
    for (const cli of clis) started.pids.add(cli)
    // The runner's process group dies at once; its CLI, in a group of its own, is left to notice
    // (its stdin closes) and killed after the turn if it did not.
    const killedAt = performance.now()
    killGroup(victim.pid, "SIGKILL")
    const hostingBefore = runners.map((r) => r.out().split(`HOSTING ${id}`).length)
    const takenOver = () =>
      runners.some((r, i) => r !== victim && r.out().split(`HOSTING ${id}`).length > hostingBefore[i]!)
    // When another runner set the conversation up: the cluster's part of the failover (the rest is
    // the new CLI resuming the session and answering).
    const hostedAt = yield* Effect.forkScoped(
      until("another runner hosts the conversation", takenOver, "120 seconds").pipe(
        Effect.map(() => performance.now() - killedAt)
      )
    )
    yield* chat("turn after the kill", "after-kill")
    const ms = performance.now() - killedAt
    const hostedMs = yield* Fiber.join(hostedAt)
    yield* exited(victim.child)
    const leftCli = clis.filter(running)
    for (const cli of leftCli) killGroup(cli, "SIGKILL")
    const taker = runners.filter((r, i) => r !== victim && r.out().split(`HOSTING ${id}`).length > hostingBefore[i]!)
    return {
      ms,
      hostedMs,
      clis: clis.length,
      leftCli: leftCli.length,
      taker: taker.map((r) => r.index).join(","),
      storageRetries
    }
  }))

const failover = (
  label: string,
  apiUrl: string,
  storage: (rep: number) => Effect.Effect<RunnerStorage, never, Scope.Scope>,
  settings: Partial<ShardingConfig.ShardingConfig["Service"]>,
  mode: "documented" | "effect-defaults",
  repetitions: number
) =>
  Effect.gen(function*() {
    const times: Array<number> = []
    for (let rep = 0; rep < repetitions; rep++) {
      const r = yield* Effect.scoped(
        Effect.flatMap(storage(rep), (s) => failoverOnce(apiUrl, s, settings, mode, `failover-${mode}-${rep}`))
      )
      times.push(r.ms)
      console.log(
        `  ${label} #${rep + 1}: ${(r.ms / 1000).toFixed(1)} s (runner ${r.taker} took over and hosted it at ` +
          `${(r.hostedMs / 1000).toFixed(1)} s; ` +
          `its CLIs: ${r.clis}, of which ${r.leftCli} still ran when the next turn was answered` +
          `${r.storageRetries > 0 ? `; ${r.storageRetries} turn(s) retried after a storage error` : ""})`
      )
    }
    const s = (x: number) => `${(x / 1000).toFixed(1)} s`
    console.log(
      `failover, kill -> next turn answered, ${label} (${describeSettings(settings)}), 3 runner processes: ` +
        `min ${s(Math.min(...times))} / median ${s(median(times))} / max ${
          s(Math.max(...times))
        } over ${times.length}` +
        (mode === "documented" ? ` (target median ≤ 5 s: ${median(times) <= 5_000 ? "met" : "MISSED"})` : "")
    )
    return times
  })

const sqliteRunners = (dir: string, tag: string) => (rep: number) =>
  Effect.sync(() => {
    const filename = join(dir, `failover-${tag}-${rep}.sqlite`)
    return { env: { CLUSTER_SQLITE_FILE: filename }, client: SqliteClient.layer({ filename }) }
  })

const pgRunners = (server: Postgres.PostgresServer, tag: string) => (rep: number) =>
  Effect.map(freshDatabase(server, `bench_failover_${tag}_${rep}`), (url) => ({
    env: { CLUSTER_DATABASE_URL: Redacted.value(url) },
    client: pgClient(url)
  }))

// ---------------------------------------------------------------------------------------------

const main = Effect.scoped(Effect.gen(function*() {
  // CLUSTER_BENCH_ONLY=turns or =failover runs one part (the whole bench takes several minutes);
  // =turns-pg only the PostgreSQL turns, =failover-documented the failover at the documented settings,
  // =failover-sqlite only its SQLite part.
  const only = process.env["CLUSTER_BENCH_ONLY"]
  const dir = yield* tempDir("ecb-bench-cluster-")
  const server = yield* Effect.orDie(Postgres.start())
  started.pids.add(server.pid)
  started.dirs.add(server.folder)
  if (only === undefined || only.startsWith("turns")) {
    if (only !== "turns-pg") { for (const storage of sqliteStorages(dir)) yield* turnOverhead(storage) }
    yield* turnOverhead(yield* pgStorage(server))
  }
  if (only !== undefined && only.startsWith("turns")) return

  const api = yield* fakeApi
  const reps = 3
  // What a member on that storage runs with: `sqliteDefaults` on SQLite, `defaults` elsewhere.
  console.log(`failover at ClaudeCluster.sqliteDefaults (SQLite) and ClaudeCluster.defaults (PostgreSQL):`)
  yield* failover("SQLite", api.url, sqliteRunners(dir, "doc"), ClaudeCluster.sqliteDefaults, "documented", reps)
  if (only === "failover-sqlite") return
  yield* failover("PostgreSQL", api.url, pgRunners(server, "doc"), ClaudeCluster.defaults, "documented", reps)
  if (only === "failover-documented") return
  console.log(`failover at Effect's own defaults (${describeSettings(effectDefaults)}), for comparison:`)
  yield* failover("SQLite, Effect defaults", api.url, sqliteRunners(dir, "eff"), effectDefaults, "effect-defaults", 1)
  yield* failover(
    "PostgreSQL, Effect defaults",
    api.url,
    pgRunners(server, "eff"),
    effectDefaults,
    "effect-defaults",
    1
  )
}))

/** The runner of the Effect-defaults run: clusterRunner.ts's layers, with Effect's sharding settings. */
const runnerMain = Effect.suspend(() => {
  const env = (name: string) => process.env[name] ?? ""
  const port = Number(env("RUNNER_PORT"))
  const url = env("CLUSTER_DATABASE_URL")
  const storage: Layer.Layer<SqlClient.SqlClient, unknown> = url !== ""
    ? PgClient.layer({ url: Redacted.make(url) })
    : SqliteClient.layer({ filename: env("CLUSTER_SQLITE_FILE") })
  const runner = ClaudeConversationRunner.layer({
    make: ClaudeLocal.make,
    conversation: ({ conversationId }) =>
      Effect.sync(() => {
        process.stdout.write(`HOSTING ${conversationId}\n`)
        const options: ClaudeLocal.Options = {
          binary: env("CLAUDE_BINARY"),
          cwd: env("CLAUDE_CWD"),
          requestTimeout: "60 seconds"
        }
        return { options }
      })
  }).pipe(
    Layer.provide(ClaudeCluster.layerRunner({ host: "127.0.0.1", port, shardingConfig: effectDefaults })),
    Layer.provide(ClaudeSessionStoreSql.layer),
    Layer.provide(Layer.merge(NodeSubprocess.layer, NodeSecretFile.layer({ directory: env("SECRETS_DIR") }))),
    Layer.provide(storage)
  )
  return Effect.andThen(
    Layer.build(runner),
    Effect.andThen(Effect.sync(() => process.stdout.write(`READY ${port}\n`)), Effect.never)
  )
})

if (process.env["CLUSTER_BENCH_RUNNER"] === "effect-defaults") {
  NodeRuntime.runMain(Effect.scoped(runnerMain))
} else {
  Effect.runPromise(main).then(
    () => {
      const left = leftovers()
      if (left.length > 0) {
        console.error(`left behind: ${left.join(", ")}`)
        process.exitCode = 1
      } else {
        console.log(
          `cleanup: none of the ${started.pids.size} processes and ${started.dirs.size} temporary folders ` +
            `this bench started is left`
        )
      }
    },
    (error: unknown) => {
      console.error(error)
      process.exitCode = 1
    }
  )
}
