import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as TestSubprocess from "../../src/layers/TestSubprocess.ts"
import * as Subprocess from "../../src/services/Subprocess.ts"

describe("TestSubprocess", () => {
  it.effect("records calls and answers them in order with the scripted outcomes", () =>
    Effect.gen(function*() {
      const first = yield* Subprocess.run({ command: "claude", args: ["-p", "hi"], stdin: "prompt" })
      assert.deepStrictEqual(first, { exitCode: 0, stdout: "hello\n", stderr: "" })
      const second = yield* Effect.flip(Subprocess.run({ command: "claude", args: ["--version"] }))
      assert.strictEqual(second.reason._tag, "NotFound")
      const third = yield* Effect.flip(Subprocess.run({ command: "claude", args: [] }))
      assert.strictEqual(third.reason._tag, "Exited")
      if (third.reason._tag === "Exited") {
        assert.strictEqual(third.reason.exitCode, 2)
        assert.strictEqual(third.reason.stderrTail, "bad flag")
      }
      const fourth = yield* Subprocess.run({ command: "claude", args: [], allowNonZeroExit: true })
      assert.strictEqual(fourth.exitCode, 2)
      const exhausted = yield* Effect.flip(Subprocess.run({ command: "claude", args: ["again"] }))
      assert.strictEqual(exhausted.reason._tag, "SpawnFailed")
      assert.include(exhausted.message, "#5")
      const calls = yield* Effect.flatMap(TestSubprocess.TestSubprocess, (t) => t.calls)
      assert.deepStrictEqual(calls.map((c) => c.args), [["-p", "hi"], ["--version"], [], [], ["again"]])
      assert.strictEqual(calls[0]!.stdin, "prompt")
    }).pipe(
      Effect.provide(
        TestSubprocess.layer([
          { stdout: "hello\n" },
          new Subprocess.SubprocessError({
            command: "claude",
            reason: new Subprocess.NotFound({ message: "Command not found: claude" })
          }),
          { exitCode: 2, stderr: "bad flag" },
          { exitCode: 2, stderr: "bad flag" }
        ])
      )
    ))

  it.effect("a function script answers every call and streams split into lines", () =>
    Effect.gen(function*() {
      const lines = yield* Stream.runCollect(Subprocess.stream({ command: "echo", args: ["a", "b"] }))
      assert.deepStrictEqual(lines, ["a", "b"])
      const failing = yield* Effect.flip(Stream.runCollect(Subprocess.stream({ command: "fail", args: [] })))
      assert.strictEqual(failing.reason._tag, "Exited")
      const calls = yield* Effect.flatMap(TestSubprocess.TestSubprocess, (t) => t.calls)
      assert.deepStrictEqual(calls.map((c) => c.command), ["echo", "fail"])
    }).pipe(
      Effect.provide(
        TestSubprocess.layer((options) =>
          Effect.succeed({
            exitCode: options.command === "fail" ? 1 : 0,
            stdout: options.args.map((a) => `${a}\n`).join(""),
            stderr: ""
          })
        )
      )
    ))
})
