/**
 * What the library started must not outlive the Node process that started it: the process groups
 * of the CLIs it spawned and the secret directories it wrote.
 *
 * Scope finalizers cover a clean close, but not a process that goes without running them: a
 * terminal's Ctrl-C under `Effect.runPromise` (Node's default SIGINT action ends the process at
 * once), a SIGTERM from a process manager, `process.exit()` mid-turn, or a SIGKILL. The CLIs run in
 * their own process groups (so their whole tree can be signalled), so nothing else stops them: they
 * would go on calling the model with a dead bridge.
 *
 * Three layers, the convention `execa`'s `cleanup` and `signal-exit` follow:
 * - `exit`: every tracked group gets SIGKILL and every tracked directory is removed, synchronously.
 * - SIGINT, SIGTERM, SIGHUP: when nobody else listens for the signal (so Node would end the process
 *   at once), the same cleanup runs and the signal is raised again with the default action, so the
 *   process ends with the usual status. When the app listens itself (`NodeRuntime.runMain` does),
 *   the app decides; the library only shortens the grace its finalizers give a CLI, since the
 *   process is on its way out.
 * - A watchdog: a tiny `sh` in its own process group that reads the tracked groups and directories
 *   from a pipe. When this process dies by any means, SIGKILL included, the pipe closes and the
 *   watchdog kills and removes whatever is still tracked.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as nodeFs from "node:fs"

const Signals = ["SIGINT", "SIGTERM", "SIGHUP"] as const

// Reads "+g <pgid>", "-g <pgid>", "+d <path>", "-d <path>" lines; on end of input, kills the groups
// still held and removes the directories. Pattern parts in double quotes are matched literally, so
// a path's glob characters mean nothing. SIGINT and SIGHUP are ignored: only the pipe ends it.
const WatchdogScript = `trap '' INT HUP
nl='
'
groups=' '
dirs="$nl"
while IFS= read -r line; do
  arg=\${line#?? }
  case $line in
    "+g "*) groups="$groups$arg " ;;
    "-g "*) case $groups in *" $arg "*) groups="\${groups%%" $arg "*} \${groups#*" $arg "}" ;; esac ;;
    "+d "*) dirs="$dirs$arg$nl" ;;
    "-d "*) case $dirs in *"$nl$arg$nl"*) dirs="\${dirs%%"$nl$arg$nl"*}$nl\${dirs#*"$nl$arg$nl"}" ;; esac ;;
  esac
done
for g in $groups; do kill -s KILL -- "-$g" 2>/dev/null; done
printf '%s' "$dirs" | while IFS= read -r d; do [ -n "$d" ] && rm -rf -- "$d"; done
`

interface State {
  readonly groups: Set<number>
  readonly directories: Set<string>
  readonly handlers: Map<NodeJS.Signals, () => void>
  watchdog: ChildProcess | undefined
  shuttingDown: boolean
}

// One registry per process, shared by every copy of the library loaded into it: two registries
// would each see the other's listener and think the app handles the signal.
const StateKey = Symbol.for("effect-chat-bridge/exitCleanup")
const registry = globalThis as { [StateKey]?: State }

const killGroup = (pgid: number): void => {
  try {
    process.kill(-pgid, "SIGKILL")
  } catch {
    // ESRCH: gone already.
  }
}

const removeDirectory = (directory: string): void => {
  try {
    nodeFs.rmSync(directory, { recursive: true, force: true })
  } catch {
    // Nothing more can be done while the process exits.
  }
}

/** Kills every tracked group and removes every tracked directory, synchronously. */
const cleanupNow = (s: State): void => {
  for (const pgid of s.groups) killGroup(pgid)
  for (const directory of s.directories) removeDirectory(directory)
  s.groups.clear()
  s.directories.clear()
}

const onSignal = (s: State, signal: NodeJS.Signals) => () => {
  s.shuttingDown = true
  // Someone else handles it: the process is not ending because of it (yet); leave it to them.
  if (process.listenerCount(signal) > 1) return
  cleanupNow(s)
  for (const [sig, handler] of s.handlers) process.removeListener(sig, handler)
  s.handlers.clear()
  process.kill(process.pid, signal)
}

const startWatchdog = (): ChildProcess | undefined => {
  if (process.platform === "win32") return undefined
  try {
    const child = spawn("/bin/sh", ["-c", WatchdogScript], { detached: true, stdio: ["pipe", "ignore", "ignore"] })
    child.on("error", () => {})
    child.stdin?.on("error", () => {})
    child.unref() // The pipe must not keep the event loop alive either.
    ;(child.stdin as unknown as { unref?: () => void } | null)?.unref?.()
    return child
  } catch {
    return undefined
  }
}

const tell = (s: State, line: string): void => {
  const stdin = s.watchdog?.stdin
  if (stdin?.writable) stdin.write(`${line}\n`)
}

const install = (): State => {
  const existing = registry[StateKey]
  if (existing !== undefined) return existing
  const s: State = {
    groups: new Set(),
    directories: new Set(),
    handlers: new Map(),
    watchdog: undefined,
    shuttingDown: false
  }
  process.on("exit", () => cleanupNow(s))
  for (const signal of Signals) {
    const handler = onSignal(s, signal)
    s.handlers.set(signal, handler)
    process.on(signal, handler)
  }
  s.watchdog = startWatchdog()
  registry[StateKey] = s
  return s
}

/**
 * Tracks the process group led by `pgid` until the returned function is called (call it once the
 * group is known to be gone).
 */
export const trackGroup = (pgid: number): () => void => {
  const s = install()
  s.groups.add(pgid)
  tell(s, `+g ${pgid}`)
  return () => {
    if (s.groups.delete(pgid)) tell(s, `-g ${pgid}`)
  }
}

/**
 * Tracks a directory to remove if the process goes before the returned function is called. A path
 * with a line break is not passed to the watchdog (its protocol is lines); `exit` still removes it.
 */
export const trackDirectory = (directory: string): () => void => {
  const s = install()
  s.directories.add(directory)
  const watched = !/[\n\r]/.test(directory)
  if (watched) tell(s, `+d ${directory}`)
  return () => {
    if (s.directories.delete(directory) && watched) tell(s, `-d ${directory}`)
  }
}

/**
 * Whether the process received a termination signal: finalizers then give a CLI only a short grace
 * before SIGKILL (it is going away with its parent either way).
 */
export const shuttingDown = (): boolean => registry[StateKey]?.shuttingDown ?? false
