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
import {
  CorruptTranscript,
  InvalidSessionId,
  SessionFileFailed,
  SessionStoreError,
  type StoreOperation,
  type TranscriptEntry
} from "../../services/ClaudeSessionStore.ts"

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

/** What a session id may look like (the CLI's are UUIDs): no separator, no `..`, not a flag. */
const SafeSessionId = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/

/**
 * Refuses a session id that is not a plain name before it becomes part of a path: a `resume` or
 * a snapshot from outside could otherwise name a file anywhere (`../../x`).
 */
export const requireSessionId = (operation: StoreOperation, sessionId: string) =>
  SafeSessionId.test(sessionId) ? Effect.void : Effect.fail(
    new SessionStoreError({
      operation,
      sessionId: sessionId.slice(0, 200),
      reason: new InvalidSessionId({
        message: `${
          JSON.stringify(sessionId.slice(0, 80))
        } is not a session id (letters, digits, "-" and "_" only, as the claude CLI's UUIDs); pass the id ClaudeSession.sessionId gave`
      })
    })
  )

/** Where a CLI started in `cwd` with config dir `dir` reads and writes `sessionId`. */
export const sessionPath = (dir: string, cwd: string | undefined, sessionId: string): string =>
  path.join(dir, "projects", projectDirName(realCwd(cwd)), `${sessionId}.jsonl`)

const failure = (operation: StoreOperation, sessionId: string, message: string, cause: unknown) =>
  new SessionStoreError({ operation, sessionId, reason: new SessionFileFailed({ message }), cause })

/** A session file with a line that cannot be an entry. */
const corrupt = (sessionId: string, message: string, cause: unknown) =>
  new SessionStoreError({ operation: "load", sessionId, reason: new CorruptTranscript({ message }), cause })

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
  Effect.map(readSessionFileFrom(file, sessionId, 0), (read) => read?.entries ?? [])

/**
 * The complete lines of a session file from byte `offset` on, the offset after them (where the
 * next read starts) and the last complete line's bytes (`last`). Given the `last` of the previous
 * read, the file must still hold it just before `offset`: otherwise, and when the file is shorter
 * than `offset`, it was rewritten since, and this is `undefined`.
 */
export const readSessionFileFrom = (file: string, sessionId: string, offset: number, last?: Uint8Array) =>
  Effect.suspend(() => {
    const before = last?.length ?? 0
    let bytes: Buffer | undefined
    try {
      bytes = readFrom(file, offset - before)
    } catch (cause) {
      return Effect.fail(failure("load", sessionId, `Could not read the session file ${file}: ${String(cause)}`, cause))
    }
    if (bytes === undefined || (last !== undefined && !bytes.subarray(0, before).equals(last))) {
      return Effect.succeed(undefined)
    }
    // A newline byte never occurs inside a multi-byte UTF-8 character: cutting there is safe.
    const complete = bytes.subarray(before, bytes.lastIndexOf(0x0a) + 1)
    const all = bytes.subarray(0, before + complete.length)
    const lastLine = all.subarray(all.lastIndexOf(0x0a, all.length - 2) + 1)
    return Effect.map(
      parseLines(complete.toString("utf8"), file, sessionId),
      (entries) => ({ entries, end: offset + complete.length, last: Buffer.from(lastLine) })
    )
  })

/** The bytes of `file` from `offset` to its end; `undefined` when it is shorter than `offset`. */
const readFrom = (file: string, offset: number): Buffer | undefined => {
  const fd = fs.openSync(file, "r")
  try {
    const size = fs.fstatSync(fd).size
    if (size < offset || offset < 0) return undefined
    const buffer = Buffer.alloc(size - offset)
    let read = 0
    while (read < buffer.length) {
      const n = fs.readSync(fd, buffer, read, buffer.length - read, offset + read)
      if (n === 0) break
      read += n
    }
    return buffer.subarray(0, read)
  } finally {
    fs.closeSync(fd)
  }
}

/** One plain loop (no effect per line): this runs after every turn, over the whole file. */
const parseLines = (complete: string, file: string, sessionId: string) => {
  const entries: Array<TranscriptEntry> = []
  for (const line of complete.split("\n")) {
    if (line.trim() === "") continue
    let entry: unknown
    try {
      entry = JSON.parse(line)
    } catch (cause) {
      return Effect.fail(corrupt(sessionId, `The session file ${file} has a line that is not JSON`, cause))
    }
    if (typeof entry !== "object" || entry === null || typeof (entry as { type?: unknown }).type !== "string") {
      return Effect.fail(corrupt(sessionId, `The session file ${file} has a line without a "type"`, undefined))
    }
    entries.push(entry as TranscriptEntry)
  }
  return Effect.succeed<ReadonlyArray<TranscriptEntry>>(entries)
}

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
