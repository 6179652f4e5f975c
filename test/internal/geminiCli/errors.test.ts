/**
 * How a Gemini CLI turn's failures become `ProviderError` reasons: subprocess failures (missing
 * binary, timeout, exit codes, anything else), ACP error answers (a failed `session/load`, an HTTP
 * status in the message, anything else), and the stderr tail an exit reason quotes.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Run from "../../../src/internal/geminiCli/run.ts"
import * as Subprocess from "../../../src/services/Subprocess.ts"

const command = "gemini"

describe("geminiCli run: fromSubprocess", () => {
  it("a missing binary is a configuration error that says how to install it", () => {
    const error = Run.fromSubprocess(
      new Subprocess.SubprocessError({
        command,
        reason: new Subprocess.NotFound({ message: "Command not found: gemini" })
      })
    )
    expect(error).toMatchObject({ _tag: "ProviderError", provider: "gemini-cli" })
    expect(error.reason._tag).toBe("ConfigurationError")
    expect(error.reason.message).toBe(
      "Command not found: gemini. Install Gemini CLI with `npm install -g @google/gemini-cli`, or set `binary`"
    )
  })

  it("a timeout, an exit code and a spawn failure keep what happened", () => {
    const timedOut = Run.fromSubprocess(
      new Subprocess.SubprocessError({
        command,
        reason: new Subprocess.TimedOut({ timeoutMillis: 5, stderrTail: "", message: "gemini did not finish" })
      })
    )
    expect(timedOut.reason).toMatchObject({
      _tag: "TimeoutError",
      message: "Gemini CLI run timed out: gemini did not finish"
    })
    const exited = Run.fromSubprocess(
      new Subprocess.SubprocessError({
        command,
        reason: new Subprocess.Exited({
          exitCode: 42,
          signal: undefined,
          stdoutTail: "",
          stderrTail: "bad input\n",
          message: "gemini exited with code 42"
        })
      })
    )
    expect(exited.reason).toMatchObject({
      _tag: "InvalidRequestError",
      message: "Gemini CLI refused the input: bad input"
    })
    const spawn = Run.fromSubprocess(
      new Subprocess.SubprocessError({
        command,
        reason: new Subprocess.SpawnFailed({ message: "Cannot run gemini: EACCES" })
      })
    )
    expect(spawn.reason).toMatchObject({ _tag: "ProcessError", message: "Cannot run gemini: EACCES" })
  })
})

describe("geminiCli run: exitReason", () => {
  it("the turn limit is a process error with its exit code, quoting the last five stderr lines", () => {
    const stderr = ["one", "two", "three", "four", "five", "six", ""].join("\n")
    const reason = Run.exitReason(53, stderr)
    expect(reason).toMatchObject({
      _tag: "ProcessError",
      exitCode: 53,
      message: "Gemini CLI reached its turn limit: two\nthree\nfour\nfive\nsix; start a new conversation"
    })
    expect(Run.exitReason(7, "")).toMatchObject({ message: "Gemini CLI exited with code 7", exitCode: 7 })
  })
})

describe("geminiCli run: fromAcp", () => {
  it("a failed session/load says what resuming needs", () => {
    const error = Run.fromAcp({ _tag: "AcpFailure", method: "session/load", code: -32603, message: "not found 404" })
    expect(error.reason).toMatchObject({
      _tag: "ConfigurationError",
      message: "Gemini CLI could not load the session (not found 404); resume needs the same `home` and `cwd`"
    })
  })

  it("an HTTP status in the message picks the reason; without one the answer is an invalid response", () => {
    const limited = Run.fromAcp({
      _tag: "AcpFailure",
      method: "session/prompt",
      code: -32603,
      message: "got status 429 Too Many Requests"
    })
    expect(limited.reason).toMatchObject({
      _tag: "RateLimitError",
      status: 429,
      message: "Gemini CLI: got status 429 Too Many Requests"
    })
    const denied = Run.fromAcp({ _tag: "AcpFailure", method: "session/prompt", code: undefined, message: "403" })
    expect(denied.reason).toMatchObject({ _tag: "AuthenticationError", status: 403 })
    const odd = Run.fromAcp({ _tag: "AcpFailure", method: "session/new", code: -32000, message: "weird" })
    expect(odd.reason).toMatchObject({
      _tag: "InvalidResponseError",
      message: "Gemini CLI failed session/new: weird"
    })
  })
})
