/**
 * Keeps a SQLite file that holds conversations private: created 0600 before SQLite opens it (SQLite
 * gives its `-wal`, `-shm` and `-journal` files the main file's mode, so they follow), companions
 * left wider by an older run narrowed after the open, and a warning for a file or directory others
 * can read or write. Private: `layers/SqliteClient.ts` calls it around every open.
 */
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as path from "node:path"

/** The companion files SQLite creates next to a database (WAL mode and the rollback journal). */
export const companions: ReadonlyArray<string> = ["-wal", "-shm", "-journal"]

/** `:memory:`, the anonymous temporary database and URI filenames have no plain file to guard. */
const isPlainFile = (filename: string): boolean =>
  filename !== "" && filename !== ":memory:" && !filename.startsWith("file:")

const modeOf = (file: string): number | undefined => {
  try {
    return fs.statSync(file).mode
  } catch {
    return undefined
  }
}

const octal = (mode: number) => (mode & 0o777).toString(8).padStart(4, "0")

/**
 * Creates the file with mode 0600 when it does not exist yet (umask only removes bits), so it is
 * never readable by others, not even between SQLite's create and a later chmod. Returns the
 * warnings about what already existed: a file with group/other bits, or a directory others may
 * write to (they could replace the file or plant its companions). A 0755 directory is not
 * flagged: it shows the file's name, not its contents.
 */
export const createPrivate = (filename: string, readonly: boolean): ReadonlyArray<string> => {
  if (!isPlainFile(filename) || readonly) return []
  const warnings: Array<string> = []
  try {
    fs.closeSync(fs.openSync(filename, fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_WRONLY, 0o600))
  } catch (cause) {
    // EEXIST: the user's file (or another process's, just now). Anything else (a missing
    // directory, no permission) is left for SQLite's open to report in its own words.
    if ((cause as NodeJS.ErrnoException).code !== "EEXIST") return []
    const mode = modeOf(filename)
    if (mode !== undefined && (mode & 0o077) !== 0) {
      warnings.push(
        `${filename} has mode ${octal(mode)}: other users can read the conversations it holds; chmod 600 it`
      )
    }
  }
  const dir = path.dirname(path.resolve(filename))
  const dirMode = modeOf(dir)
  if (dirMode !== undefined && (dirMode & 0o022) !== 0 && (dirMode & 0o1000) === 0) {
    warnings.push(
      `${dir} has mode ${octal(dirMode)}: other users can replace ${path.basename(filename)} or its ` +
        "-wal/-shm files; keep it in a directory only you can write to (chmod 700)"
    )
  }
  return warnings
}

/**
 * After the open (and the switch to WAL): companions that exist with group/other bits while the
 * database itself has none are narrowed to 0600 — a leftover `-shm` keeps its old mode otherwise.
 * A database the user made wider on purpose (shared with a group) keeps SQLite's matching modes.
 */
export const narrowCompanions = (filename: string): void => {
  if (!isPlainFile(filename)) return
  const mode = modeOf(filename)
  if (mode === undefined || (mode & 0o077) !== 0) return
  for (const suffix of companions) {
    const companion = `${filename}${suffix}`
    const companionMode = modeOf(companion)
    if (companionMode !== undefined && (companionMode & 0o077) !== 0) {
      try {
        fs.chmodSync(companion, 0o600)
      } catch {
        // Owned by another user: the warning about the directory covers it.
      }
    }
  }
}

/** Logs each warning once, with the file it is about. */
export const logWarnings = (filename: string, warnings: ReadonlyArray<string>): Effect.Effect<void> =>
  Effect.forEach(
    warnings,
    (warning) => Effect.logWarning(warning).pipe(Effect.annotateLogs({ file: filename })),
    { discard: true }
  )
