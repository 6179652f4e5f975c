import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
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

/**
 * A stand-in that speaks the control protocol: each control_request is echoed back (\`slow\` after
 * the others, \`bogus\` refused); "hang" starts a turn that only an interrupt ends, with an
 * error_during_execution result 300 ms later; "ede" prints such a result unasked.
 */
const controlStub = `
let hanging = false
const out = (o) => console.log(JSON.stringify(o))
require("readline").createInterface({ input: process.stdin }).on("line", (line) => {
  const msg = JSON.parse(line)
  if (msg.type === "control_request") {
    const { request, request_id } = msg
    if (request.subtype === "interrupt") {
      out({ type: "control_response", response: { subtype: "success", request_id, response: { still_queued: [] } } })
      if (hanging) { hanging = false; setTimeout(() => out({ type: "result", subtype: "error_during_execution", is_error: true, session_id: "s" }), 300) }
      return
    }
    if (request.subtype === "bogus") {
      return out({ type: "control_response", response: { subtype: "error", request_id, error: "Unsupported control request subtype: bogus" } })
    }
    const answer = () => out({ type: "control_response", response: { subtype: "success", request_id, response: { echo: request.subtype } } })
    return request.subtype === "slow" ? setTimeout(answer, 100) : answer()
  }
  const text = msg.message.content
  if (text === "hang") { hanging = true; return out({ type: "assistant", message: { content: [{ type: "text", text: "par" }] } }) }
  if (text === "ede") return out({ type: "result", subtype: "error_during_execution", is_error: true, session_id: "s" })
  out({ type: "result", result: "echo " + text, session_id: "s" })
})
`

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

  it.live("control requests are answered by request id, outside the turn's lines; only our interrupt marks a turn", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const slot = LiveCli.makeSlot(NodeSubprocess.make, scope)
      const cli = yield* slot.use(
        "k",
        Option.none(),
        () => Effect.succeed({ command: process.execPath, args: ["-e", controlStub] })
      )
      // Answers come back in the order the stub chooses; each reaches its own asker.
      const [slow, quick, refused] = yield* Effect.all([
        cli.control({ subtype: "slow" }),
        cli.control({ subtype: "quick" }),
        cli.control({ subtype: "bogus" })
      ], { concurrency: "unbounded" })
      assert.deepStrictEqual(slow, { _tag: "Success", response: { echo: "slow" } })
      assert.deepStrictEqual(quick, { _tag: "Success", response: { echo: "quick" } })
      assert.deepStrictEqual(refused, { _tag: "Error", error: "Unsupported control request subtype: bogus" })
      // No turn runs: nothing to interrupt.
      assert.isTrue(Option.isNone(yield* cli.interrupt))
      // An error_during_execution result we did not ask for is not an interruption.
      const failed = yield* cli.turn(say("ede"), noLines)
      assert.isFalse(failed.interrupted)
      assert.strictEqual(failed.lines.length, 1)
      // A turn we interrupt ends at its result and says so; the process answers the next turn.
      const fiber = yield* Effect.forkChild(cli.turn(say("hang"), noLines))
      yield* Effect.sleep("200 millis")
      const interrupting = yield* Effect.forkChild(cli.interrupt)
      yield* Effect.yieldNow
      // A message steered into a turn being stopped is refused: written after the interrupt, its
      // answer would be read as the next turn's.
      assert.isFalse(yield* cli.steer(say("late")))
      const receipt = yield* Fiber.join(interrupting)
      assert.deepStrictEqual(receipt, Option.some({ _tag: "Success", response: { still_queued: [] } }))
      const stopped = yield* Fiber.join(fiber)
      assert.isTrue(stopped.interrupted)
      assert.include(stopped.lines.at(-1)!, "error_during_execution")
      assert.strictEqual(answer(yield* cli.turn(say("next"), noLines)), "echo next")
      // A turn whose fiber is interrupted is settled: interrupted at the CLI and read to its end.
      const abandoned = yield* Effect.forkChild(cli.turn(say("hang"), noLines))
      yield* Effect.sleep("200 millis")
      yield* Fiber.interrupt(abandoned)
      assert.isTrue(yield* cli.settle("5 seconds"))
      assert.strictEqual(answer(yield* cli.turn(say("after"), noLines)), "echo after")
      assert.isTrue(cli.alive())
      yield* Scope.close(scope, Exit.void)
    }))
})
