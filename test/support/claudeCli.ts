/**
 * Runs the pinned real `claude` binary in a sandbox of the test's own: a temporary HOME, config
 * dir, TMPDIR and working directory, the model pointed at a local fake API, no traffic elsewhere.
 * It imports no test runner, because the benchmarks use it too (`describeWithClaude` has its own module).
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync
} from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"

/**
 * The binary the Agent SDK would run on this platform: its per-platform package
 * (`@anthropic-ai/claude-agent-sdk-<platform>-<arch>[-musl]`), found the way the SDK looks.
 */
const findClaudeBinary = (): string | undefined => {
  const require = createRequire(resolve("package.json"))
  const base = `@anthropic-ai/claude-agent-sdk-${
    process.platform === "android" ? "linux" : process.platform
  }-${process.arch}`
  const candidates = process.platform === "linux" ? [base, `${base}-musl`] : [base]
  for (const pkg of candidates) {
    try {
      const path = require.resolve(`${pkg}/claude${process.platform === "win32" ? ".exe" : ""}`)
      if (existsSync(path)) return path
    } catch {
      // Not installed for this platform.
    }
  }
  return undefined
}

const found = findClaudeBinary()

/** The real `claude` binary for this platform ("" when there is none: real-binary suites use `describeWithClaude`). */
export const claudeBinary = found ?? ""

/** Why real-binary tests do not run here, or undefined when they do. */
export const noClaudeBinary = found === undefined
  ? `no @anthropic-ai/claude-agent-sdk binary package for ${process.platform}-${process.arch} is installed`
  : undefined

/** The oldest CLI `ClaudeLocal` supports (2.0.0, a JS CLI), installed as the `claude-code-oldest` alias. */
export const oldestClaudeBinary = resolve("node_modules/claude-code-oldest/cli.js")

/** The CLIs the e2e suites run against: the oldest supported release and the pinned one. */
export const claudeVersions = [
  { version: "2.0.0", binary: oldestClaudeBinary, oldest: true },
  { version: "2.1.335", binary: claudeBinary, oldest: false }
] as const

export interface Sandbox {
  readonly dir: string
  /** Working directory of the CLI. */
  readonly cwd: string
  /** Where secret files are written (checked for leftovers). */
  readonly secrets: string
  readonly env: Record<string, string>
}

export const sandbox = (apiUrl: string): Effect.Effect<Sandbox, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const dir = mkdtempSync(join(tmpdir(), "ecb-claude-"))
      for (const sub of ["home", "config", "tmp", "work", "secrets"]) mkdirSync(join(dir, sub))
      return {
        dir,
        cwd: join(dir, "work"),
        secrets: join(dir, "secrets"),
        env: {
          HOME: join(dir, "home"),
          CLAUDE_CONFIG_DIR: join(dir, "config"),
          TMPDIR: join(dir, "tmp"),
          ANTHROPIC_BASE_URL: apiUrl,
          ANTHROPIC_API_KEY: "sk-ant-dummy-test-key",
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
          DISABLE_TELEMETRY: "1",
          DISABLE_AUTOUPDATER: "1",
          DISABLE_ERROR_REPORTING: "1"
        }
      }
    }),
    ({ dir }) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )

/** A wrapper of a `claude` binary that logs how it was started. */
export interface LoggingBinary {
  /** The wrapper's path: pass it as `binary` (ClaudeLocal) or `pathToClaudeCodeExecutable` (ClaudeAgent). */
  readonly path: string
  /** The arguments of each start so far, one string per start (joined by spaces). */
  readonly starts: () => ReadonlyArray<string>
}

/**
 * A shell wrapper in `box` that appends each start's arguments to a log, then `exec`s `binary`
 * (same pid, same working directory): how a test tells which CLIs a client started, and with what.
 */
export const loggingBinary = (box: Sandbox, binary: string = claudeBinary): LoggingBinary => {
  const log = join(box.dir, `starts-${Math.random().toString(36).slice(2)}.log`)
  const path = `${log}.sh`
  writeFileSync(path, `#!/bin/sh\nprintf '%s\\n' "$*" >> '${log}'\nexec '${binary}' "$@"\n`, { mode: 0o755 })
  return {
    path,
    starts: () => existsSync(log) ? readFileSync(log, "utf8").split("\n").filter((line) => line !== "") : []
  }
}

/** Pids of live processes running the claude binary whose working directory is `cwd`. */
export const claudeProcessesIn = (cwd: string): Array<number> => {
  const pids: Array<number> = []
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readlinkSync(`/proc/${entry}/cwd`) !== cwd) continue
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8")
      if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) continue
      pids.push(Number(entry))
    } catch {
      // The process went away while we looked.
    }
  }
  return pids
}

/**
 * Listening TCP sockets of the network namespace (IPv4 and IPv6), from /proc/net/tcp{,6}, as
 * `<local address:port in hex> <socket inode>` strings.
 */
export const listeningSockets = (): Array<string> => {
  const entries: Array<string> = []
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = ""
    try {
      text = readFileSync(file, "utf8")
    } catch {
      continue
    }
    for (const line of text.split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/)
      // st 0A is TCP_LISTEN; the inode is the tenth column.
      if (cols.length > 9 && cols[3] === "0A") entries.push(`${cols[1]} ${cols[9]}`)
    }
  }
  return entries
}

/** Inodes of the sockets process `pid` holds open (empty when it is gone). */
export const socketInodesOf = (pid: number): Array<string> => {
  const inodes: Array<string> = []
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))
        if (m) inodes.push(m[1]!)
      } catch {
        // The descriptor closed while we looked.
      }
    }
  } catch {
    // The process went away.
  }
  return inodes
}
