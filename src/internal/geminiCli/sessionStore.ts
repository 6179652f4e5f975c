/**
 * `GeminiCli`'s `sessionStore`: a Gemini CLI session mirrored into a `ClaudeSessionStore`, so a
 * conversation continues in another home (another machine).
 *
 * Gemini CLI 0.61 keeps a session in `<home>/.gemini/tmp/<project>/chats/session-*.jsonl`: an
 * append-only log (a header, message records, `$set`/`$rewindTo` patches) that the CLI folds when
 * it loads the session, and appends to from then on. The store keeps the log's lines as they are,
 * one entry each (`type: "gemini-cli/line"`, `uuid` its line number, so a resent batch is not
 * stored twice), under the session's id with the subpath `gemini-cli`, apart from Claude's
 * transcripts. After each turn the lines the store lacks are appended; before each `session/load`
 * the local log is made exactly the store's when they differ (the store's history is the truth:
 * records a failed attempt left, or another home's turns, are settled there), except for a turn
 * of this client whose store step failed: it is kept, and stored with the next turn.
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as path from "node:path"
import {
  type ClaudeSessionStoreService,
  CorruptTranscript,
  SessionFileFailed,
  type SessionKey,
  SessionStoreError,
  type SessionStoreErrorReason,
  StoreFailed,
  type TranscriptEntry
} from "../../services/ClaudeSessionStore.ts"
import { boundedCall, storeFailure } from "../claude/transcripts.ts"
import type { Json } from "./acp.ts"
import * as Acp from "./acp.ts"

/** The subpath a Gemini CLI session is stored under. */
export const Subpath = "gemini-cli"

/** The type of every stored line. */
const LineType = "gemini-cli/line"

/** Where and how a client mirrors its sessions. */
export interface StoreSetup {
  readonly store: ClaudeSessionStoreService
  readonly projectKey: string
  readonly storeTimeout: Duration.Input | undefined
  readonly home: string
  readonly cwd: string
  /**
   * Sessions whose last store step failed after a successful turn: their local log may hold that
   * turn beyond the stored lines, and is kept so that the next turn stores it.
   */
  readonly unstored: Set<string>
}

interface LocalLog {
  readonly file: string
  readonly lines: ReadonlyArray<string>
}

const failure = (operation: "append" | "load", sessionId: string, reason: SessionStoreErrorReason) =>
  new SessionStoreError({ operation, sessionId, reason })

const chatsDirs = (home: string): ReadonlyArray<string> => {
  const projects = path.join(home, ".gemini", "tmp")
  if (!fs.existsSync(projects)) return []
  return fs.readdirSync(projects).map((project) => path.join(projects, project, "chats")).filter((dir) =>
    fs.existsSync(dir)
  )
}

const linesOf = (file: string) => fs.readFileSync(file, "utf8").split("\n").filter((line) => line.trim() !== "")

/** The messages a record adds: itself, or the ones a `$set` puts in place. */
const messagesOf = (record: Json): ReadonlyArray<unknown> => {
  if (typeof record["id"] === "string") return [record]
  const set = record["$set"]
  return Acp.isObject(set) && Array.isArray(set["messages"]) ? set["messages"] : []
}

/** A message the CLI resumes from: the model's, or the user's own (not the context it adds). */
const isConversation = (message: unknown): boolean => {
  if (!Acp.isObject(message)) return false
  if (message["type"] === "gemini") return true
  const content = message["content"]
  const first = Array.isArray(content) && Acp.isObject(content[0]) ? content[0]["text"] : content
  return message["type"] === "user" && !(typeof first === "string" && first.startsWith("<session_context>"))
}

/**
 * The session's log as the CLI picks it on `session/load`: among the files of the session that
 * hold a conversation (a load also leaves stubs of only its context), the last updated.
 */
const sessionLogs = (home: string, sessionId: string) =>
  chatsDirs(home).flatMap((dir) =>
    fs.readdirSync(dir).filter((name) => name.startsWith("session-") && name.endsWith(".jsonl")).flatMap((name) => {
      const file = path.join(dir, name)
      const lines = linesOf(file)
      const records = lines.flatMap((line) => Option.toArray(Option.fromUndefinedOr(Acp.parse(line))))
      if (records[0]?.["sessionId"] !== sessionId) return []
      const updated = records.reduce((at, r) => {
        const set = Acp.isObject(r["$set"]) ? r["$set"] : r
        return typeof set["lastUpdated"] === "string" ? set["lastUpdated"] : at
      }, "")
      return [{ file, lines, updated, conversation: records.some((r) => messagesOf(r).some(isConversation)) }]
    })
  )

const currentLog = (home: string, sessionId: string): LocalLog | undefined =>
  sessionLogs(home, sessionId).filter((log) => log.conversation).sort((a, b) =>
    Date.parse(a.updated) - Date.parse(b.updated)
  ).at(-1)

const keyOf = (setup: StoreSetup, sessionId: string): SessionKey => ({
  projectKey: setup.projectKey,
  sessionId,
  subpath: Subpath
})

/** The stored lines of the session, or `undefined` when the store never held it. */
const storedLines = (setup: StoreSetup, sessionId: string) =>
  setup.store.load(keyOf(setup, sessionId)).pipe(
    boundedCall("load", sessionId, setup.storeTimeout),
    storeFailure("load", sessionId),
    Effect.flatMap((stored) => {
      if (Option.isNone(stored)) return Effect.succeed(undefined)
      const lines = stored.value.map((entry) => (entry.type === LineType ? entry["line"] : undefined))
      return lines.every((line): line is string => typeof line === "string")
        ? Effect.succeed(lines)
        : Effect.fail(
          failure(
            "load",
            sessionId,
            new CorruptTranscript({
              message: `The store holds entries under ${Subpath} that are not Gemini CLI session lines; ` +
                "check what else writes under this key"
            })
          )
        )
    })
  )

/**
 * After a turn: appends the lines of the session's log that the store lacks. A log that does not
 * continue the stored lines (the session went on elsewhere meanwhile) is refused.
 */
export const storeTurn = (setup: StoreSetup, sessionId: string) =>
  Effect.gen(function*() {
    const log = currentLog(setup.home, sessionId)
    if (log === undefined) {
      return yield* failure(
        "append",
        sessionId,
        new SessionFileFailed({ message: `Gemini CLI left no session file for ${sessionId} in its home` })
      )
    }
    const stored = (yield* storedLines(setup, sessionId)) ?? []
    if (stored.some((line, i) => log.lines[i] !== line)) {
      return yield* failure(
        "append",
        sessionId,
        new StoreFailed({
          message: `The session file of ${sessionId} does not continue its stored history: another client ` +
            "continued the session meanwhile; start a new client that resumes it"
        })
      )
    }
    const entries: ReadonlyArray<TranscriptEntry> = log.lines.slice(stored.length).map((line, i) => ({
      type: LineType,
      uuid: String(stored.length + i),
      line
    }))
    if (entries.length === 0) return
    yield* setup.store.append(keyOf(setup, sessionId), entries).pipe(
      boundedCall("append", sessionId, setup.storeTimeout),
      storeFailure("append", sessionId)
    )
  }).pipe(
    Effect.tapError(() => Effect.sync(() => setup.unstored.add(sessionId))),
    Effect.tap(() => Effect.sync(() => setup.unstored.delete(sessionId)))
  )

const startsWith = (lines: ReadonlyArray<string>, prefix: ReadonlyArray<string>) =>
  lines.length >= prefix.length && prefix.every((line, i) => lines[i] === line)

/**
 * Before a `session/load`: when the store holds the session and the local log is not exactly its
 * lines (nor its lines and then a turn this client could not store), the session's local files
 * are replaced by one file of the stored lines, in the project directory the CLI uses for `cwd`.
 * A session the store never held is left as it is.
 */
export const restore = (setup: StoreSetup, sessionId: string) =>
  Effect.gen(function*() {
    const stored = yield* storedLines(setup, sessionId)
    if (stored === undefined || stored.length === 0) return
    const local = currentLog(setup.home, sessionId)
    if (local !== undefined && startsWith(local.lines, stored)) {
      // Exactly the store's, or this client's turn that the last store step could not store.
      if (local.lines.length === stored.length || setup.unstored.has(sessionId)) return
    }
    yield* Effect.try({
      try: () => {
        const chats = path.join(projectDir(setup.home, setup.cwd), "chats")
        fs.mkdirSync(chats, { recursive: true, mode: 0o700 })
        const file = path.join(chats, `session-restored-${sessionId.slice(0, 8)}-store.jsonl`)
        // Written aside and renamed into place: a crash leaves no half-written log for the CLI to load.
        fs.writeFileSync(`${file}.partial`, stored.join("\n") + "\n", { mode: 0o600 })
        for (const log of sessionLogs(setup.home, sessionId)) fs.rmSync(log.file, { force: true })
        fs.renameSync(`${file}.partial`, file)
      },
      catch: (error) =>
        failure(
          "load",
          sessionId,
          new SessionFileFailed({ message: `Could not write the session file of ${sessionId}: ${String(error)}` })
        )
    })
  })

/**
 * The CLI's project directory for `cwd` under `home`: the one its registry (`projects.json`) or a
 * `.project_root` marker names, else a new one claimed with a marker, as the CLI itself claims one
 * (it then finds it by the marker).
 */
export const projectDir = (home: string, cwd: string): string => {
  const base = path.join(home, ".gemini", "tmp")
  const root = path.resolve(cwd)
  const marker = (slug: string) => path.join(base, slug, ".project_root")
  const ownerOf = (slug: string) => (fs.existsSync(marker(slug)) ? fs.readFileSync(marker(slug), "utf8").trim() : "")
  const registry = path.join(home, ".gemini", "projects.json")
  const registered = fs.existsSync(registry) ? Acp.parse(fs.readFileSync(registry, "utf8"))?.["projects"] : undefined
  const slug = Acp.isObject(registered) ? registered[root] : undefined
  if (typeof slug === "string" && [root, ""].includes(ownerOf(slug))) return path.join(base, slug)
  const existing = fs.existsSync(base) ? fs.readdirSync(base).find((s) => ownerOf(s) === root) : undefined
  if (existing !== undefined) return path.join(base, existing)
  const name = path.basename(root).toLowerCase().replace(/[^a-z0-9]/g, "-").replace(/-+/g, "-").replace(/^-|-$/g, "") ||
    "project"
  const taken = new Set(Acp.isObject(registered) ? Object.values(registered) : [])
  let claimed = name
  for (let n = 1; taken.has(claimed) || fs.existsSync(path.join(base, claimed)); n++) claimed = `${name}-${n}`
  fs.mkdirSync(path.join(base, claimed), { recursive: true, mode: 0o700 })
  fs.writeFileSync(marker(claimed), root, { mode: 0o600 })
  return path.join(base, claimed)
}
