import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as nodeFs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as UserMessage from "../../../src/internal/claude/userMessage.ts"
import * as LiveCli from "../../../src/internal/claudeLocal/liveCli.ts"
import * as NodeSubprocess from "../../../src/layers/NodeSubprocess.ts"

/**
 * A stand-in for `claude -p --input-format stream-json`: per user message an init line and a
 * result naming the session (the `--resume` one, a new one with `--fork-session`, else its pid);
 * `die` makes it exit 3 mid-turn.
 */
const stub = `
const resume = process.argv.indexOf("--resume")
const fork = process.argv.includes("--fork-session")
const session = resume > 0 ? (fork ? "f" + process.pid : process.argv[resume + 1]) : "s" + process.pid
require("readline").createInterface({ input: process.stdin }).on("line", (line) => {
  const text = JSON.parse(line).message.content
  console.log(JSON.stringify({ type: "system", subtype: "init", session_id: session }))
  if (text === "die") { process.stderr.write("boom"); process.exit(3) }
  console.log(JSON.stringify({ type: "result", result: "echo " + text + " " + process.pid, session_id: session }))
})
`

const folder = Effect.acquireRelease(
  Effect.sync(() => nodeFs.mkdtempSync(path.join(os.tmpdir(), "live-cli-test-"))),
  (dir) => Effect.sync(() => nodeFs.rmSync(dir, { recursive: true, force: true }))
)

const prepare = (extra: ReadonlyArray<string>) => (resume: Option.Option<string>, fork = false) =>
  Effect.succeed({
    command: process.execPath,
    args: [
      "-e",
      stub,
      "--",
      ...extra,
      ...Option.match(resume, { onNone: () => [], onSome: (id) => ["--resume", id] }),
      ...(fork ? ["--fork-session"] : [])
    ]
  })

const answer = (output: LiveCli.TurnOutput) => JSON.parse(output.lines.at(-1)!).result as string
const noLines = () => Effect.void
const say = (prompt: string) => UserMessage.make({ prompt }, true)

describe("claudeLiveCli", () => {
  it.live("a slot reuses its CLI for the same key and session, and replaces it otherwise", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const slot = LiveCli.makeSlot(NodeSubprocess.make, scope)
      const a = yield* slot.use("k1", Option.none(), prepare([]))
      const first = yield* a.turn(say("one"), noLines)
      assert.strictEqual(first.ended, undefined)
      assert.strictEqual(first.lines.length, 2)
      const session = a.sessionId()
      assert.isTrue(Option.isSome(session))
      // Same key, the session it carries: the same process.
      assert.strictEqual(yield* slot.use("k1", session, prepare([])), a)
      assert.strictEqual(answer(yield* a.turn(say("two"), noLines)), `echo two ${answer(first).split(" ")[2]}`)
      // Another key: a new process resuming the session; the old one is stopped.
      const b = yield* slot.use("k2", session, prepare(["x"]))
      assert.notStrictEqual(b, a)
      assert.isFalse(a.alive())
      assert.deepStrictEqual(b.sessionId(), session)
      // Another session (the conversation rolled back): a new process too.
      const c = yield* slot.use("k2", Option.none(), prepare(["x"]))
      assert.notStrictEqual(c, b)
      assert.strictEqual(slot.current(), c)
      yield* Scope.close(scope, Exit.void)
      assert.isFalse(c.alive())
      const after = yield* c.turn(say("late"), noLines)
      assert.deepStrictEqual(after.lines, [])
      assert.isDefined(after.ended)
    }))

  it.live("a forking CLI serves the fork's first turn (a warm start), then the new session; a plain resume is not it", () =>
    Effect.gen(function*() {
      const slot = LiveCli.makeSlot(NodeSubprocess.make, yield* Effect.scope)
      const old = Option.some("old")
      const a = yield* slot.use("k", old, prepare([]), true)
      assert.isTrue(a.forks())
      assert.deepStrictEqual(a.sessionId(), old)
      // Resuming the same session without forking needs a process started without --fork-session.
      const b = yield* slot.use("k", old, prepare([]), false)
      assert.notStrictEqual(b, a)
      assert.isFalse(b.forks())
      const c = yield* slot.use("k", old, prepare([]), true)
      assert.notStrictEqual(c, b)
      // The prewarmed fork is the one the first turn uses.
      assert.strictEqual(yield* slot.use("k", old, prepare([]), true), c)
      yield* c.turn(say("one"), noLines)
      assert.isFalse(c.forks())
      const forked = c.sessionId()
      assert.isTrue(Option.isSome(forked) && forked.value.startsWith("f"))
      // Later turns continue the new session on the same process.
      assert.strictEqual(yield* slot.use("k", forked, prepare([]), false), c)
    }))

  it.live("a process that dies mid-turn ends the turn with its exit code and stderr; the slot restarts it", () =>
    Effect.gen(function*() {
      yield* folder
      const scope = yield* Effect.scope
      const slot = LiveCli.makeSlot(NodeSubprocess.make, scope)
      const a = yield* slot.use("k", Option.none(), prepare([]))
      const seen: Array<string> = []
      const died = yield* a.turn(say("die"), (line) => Effect.sync(() => seen.push(line)))
      assert.strictEqual(seen.length, 1)
      assert.strictEqual(died.ended?.exitCode, 3)
      assert.include(died.ended?.stderr ?? "", "boom")
      assert.isFalse(a.alive())
      const b = yield* slot.use("k", Option.none(), prepare([]))
      assert.notStrictEqual(b, a)
      assert.include(answer(yield* b.turn(say("hello"), noLines)), "echo hello")
      yield* slot.drop
      assert.isFalse(b.alive())
      assert.strictEqual(slot.current(), undefined)
    }))

  it.live("a CLI that cannot start ends its first turn with the spawn error", () =>
    Effect.gen(function*() {
      const slot = LiveCli.makeSlot(NodeSubprocess.make, yield* Effect.scope)
      const cli = yield* slot.use("k", Option.none(), () => Effect.succeed({ command: "/no/such/claude", args: [] }))
      const output = yield* cli.turn(say("hi"), noLines)
      assert.strictEqual(output.ended?.error?.reason._tag, "NotFound")
    }))
})
