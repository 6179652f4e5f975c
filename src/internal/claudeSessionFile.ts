/**
 * The CLI's own copy of a session: `$CLAUDE_CONFIG_DIR/projects/<dir>/<session id>.jsonl`, one
 * transcript entry per line, where `<dir>` is the CLI's working directory with every character
 * but ASCII letters and digits replaced by `-` (the layout `claude --resume` reads; pinned by the
 * real-binary e2e tests, which fail if a CLI moves it).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { SessionStoreError, type StoreOperation, type TranscriptEntry } from "../services/ClaudeSessionStore.ts"

/** The CLI's config dir under an environment given as changes to this process's. */
export const configDir = (changes: Readonly<Record<string, string | undefined>>): string => {
  const read = (name: string) => (name in changes ? changes[name] : process.env[name])
  const configured = read("CLAUDE_CONFIG_DIR")
  if (configured !== undefined && configured !== "") return configured
  return path.join(read("HOME") ?? os.homedir(), ".claude")
}

/** The folder name the CLI gives a working directory under `projects/`. */
export const projectDirName = (cwd: string): string => cwd.replace(/[^a-zA-Z0-9]/g, "-")

/** The CLI resolves its working directory (symbolic links included) before naming the folder. */
const realCwd = (cwd: string | undefined) => {
  const dir = cwd ?? process.cwd()
  try {
    return fs.realpathSync(dir)
  } catch {
    return path.resolve(dir)
  }
}

/** Where a CLI started in `cwd` with config dir `dir` reads and writes `sessionId`. */
export const sessionPath = (dir: string, cwd: string | undefined, sessionId: string): string =>
  path.join(dir, "projects", projectDirName(realCwd(cwd)), `${sessionId}.jsonl`)

const failure = (operation: StoreOperation, sessionId: string, message: string, cause: unknown) =>
  new SessionStoreError({ operation, sessionId, message, retryable: false, cause })

/** The session's file under any project folder of `dir` (a session id is unique); none when absent. */
export const findSessionFile = (dir: string, sessionId: string) =>
  Effect.sync(() => {
    const projects = path.join(dir, "projects")
    let folders: ReadonlyArray<string>
    try {
      folders = fs.readdirSync(projects)
    } catch {
      return Option.none<string>()
    }
    for (const folder of folders) {
      const file = path.join(projects, folder, `${sessionId}.jsonl`)
      if (fs.existsSync(file)) return Option.some(file)
    }
    return Option.none<string>()
  })

/**
 * The entries of a session file. Only complete lines count: a CLI still writing its last entry
 * has not finished it, and the next read picks it up. A line that is not a JSON object is refused.
 */
export const readSessionFile = (file: string, sessionId: string) =>
  Effect.gen(function*() {
    const text = yield* Effect.try({
      try: () => fs.readFileSync(file, "utf8"),
      catch: (cause) => failure("load", sessionId, `Could not read the session file ${file}: ${String(cause)}`, cause)
    })
    const complete = text.slice(0, text.lastIndexOf("\n") + 1)
    const entries: Array<TranscriptEntry> = []
    for (const line of complete.split("\n")) {
      if (line.trim() === "") continue
      const entry = yield* Effect.try({
        try: () => JSON.parse(line) as unknown,
        catch: (cause) => failure("load", sessionId, `The session file ${file} has a line that is not JSON`, cause)
      })
      if (typeof entry !== "object" || entry === null || typeof (entry as { type?: unknown }).type !== "string") {
        return yield* failure("load", sessionId, `The session file ${file} has a line without a "type"`, undefined)
      }
      entries.push(entry as TranscriptEntry)
    }
    return entries
  })

/**
 * Writes a session file whole, through a temporary file in the same folder renamed into place: a
 * reader (or a CLI resuming it) never sees half of it. 0600, like the CLI's own.
 */
export const writeSessionFile = (file: string, sessionId: string, entries: ReadonlyArray<TranscriptEntry>) =>
  Effect.try({
    try: () => {
      fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
      // Unique per write: two writers of one session (fibers, processes) never share a temporary file.
      const temporary = `${file}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`
      try {
        fs.writeFileSync(temporary, entries.map((e) => `${JSON.stringify(e)}\n`).join(""), { mode: 0o600 })
        fs.renameSync(temporary, file)
      } catch (cause) {
        fs.rmSync(temporary, { force: true })
        throw cause
      }
    },
    catch: (cause) =>
      failure("load", sessionId, `Could not write the session file ${file} to resume it: ${String(cause)}`, cause)
  })
