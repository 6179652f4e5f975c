/**
 * Not an example of its own: a helper the runnable examples in `examples/` share.
 *
 * Picks a chat provider from the environment, for the examples:
 *
 * 1. `AI_PROVIDER` when set: `scripted`, `anthropic`, `openai`, `gemini`, `claude-local` or
 *    `claude-agent`;
 * 2. else the first credentials present: `ANTHROPIC_API_KEY`, `OPENAI_API_KEY` (or just
 *    `OPENAI_BASE_URL`, for a local OpenAI-compatible server), `GEMINI_API_KEY`;
 * 3. else the offline fallback you pass (the Scripted model).
 *
 * The HTTP providers read the rest of their settings (`*_MODEL`, `*_BASE_URL`, …) with
 * `layerFromEnv` and run on `NodeHttpClient.layerUndici`. A configuration error (say, a bad base
 * URL) stops the program with a clear message when the layer is built.
 */
import { NodeHttpClient, NodeRuntime } from "@effect/platform-node"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { execFile } from "node:child_process"
import { existsSync } from "node:fs"
import { createRequire } from "node:module"
import { join } from "node:path"
import * as ClaudeApi from "../../src/layers/ClaudeApi.ts"
import * as Gemini from "../../src/layers/Gemini.ts"
import * as OpenAi from "../../src/layers/OpenAi.ts"
import { ChatClient } from "../../src/services/ChatClient.ts"

/** A provider the examples can run on, and how to say which one it is. */
export interface ProviderChoice {
  readonly name: string
  readonly layer: Layer.Layer<ChatClient>
}

export const ProviderNames = ["scripted", "anthropic", "openai", "gemini", "claude-local", "claude-agent"] as const

const present = (value: string | undefined): value is string => value !== undefined && value.trim() !== ""

/**
 * Chooses the provider. `scripted` is the offline fallback; `claudeLocal` / `claudeAgent` are used
 * for `AI_PROVIDER=claude-local` / `claude-agent` (never picked from credentials: the CLI has its
 * own login).
 * An unknown `AI_PROVIDER`, or `claude-local` without a `claudeLocal` choice, is a layer that
 * fails when built, so the example ends with one `error: …` line like any other failure.
 */
export const providerFromEnv = (options: {
  readonly scripted: ProviderChoice
  readonly claudeLocal?: ProviderChoice | undefined
  readonly claudeAgent?: ProviderChoice | undefined
  readonly env?: Readonly<Record<string, string | undefined>>
}): ProviderChoice => {
  const env = options.env ?? process.env
  const http = (name: string, layer: Layer.Layer<ChatClient, unknown, never>): ProviderChoice => ({
    name,
    layer: Layer.orDie(layer)
  })
  const anthropic = () =>
    http(
      `anthropic (${env["ANTHROPIC_MODEL"] ?? ClaudeApi.DefaultModel})`,
      ClaudeApi.layerFromEnv().pipe(Layer.provide(NodeHttpClient.layerUndici))
    )
  const openai = () =>
    http(
      `openai (${env["OPENAI_MODEL"] ?? OpenAi.DefaultModel}${
        present(env["OPENAI_BASE_URL"]) ? ", custom base URL" : ""
      })`,
      OpenAi.layerFromEnv().pipe(Layer.provide(NodeHttpClient.layerUndici))
    )
  const gemini = () =>
    http(
      `gemini (${env["GEMINI_MODEL"] ?? Gemini.DefaultModel})`,
      Gemini.layerFromEnv().pipe(Layer.provide(NodeHttpClient.layerUndici))
    )

  const unavailable = (message: string): ProviderChoice => ({
    name: "none",
    layer: Layer.effect(ChatClient, Effect.die(new Error(message)))
  })
  const chosen = env["AI_PROVIDER"]?.trim().toLowerCase()
  if (present(chosen)) {
    switch (chosen) {
      case "scripted":
        return options.scripted
      case "anthropic":
        return anthropic()
      case "openai":
        return openai()
      case "gemini":
        return gemini()
      case "claude-local":
        return options.claudeLocal ?? unavailable("AI_PROVIDER=claude-local is not available in this example")
      case "claude-agent":
        return options.claudeAgent ?? unavailable("AI_PROVIDER=claude-agent is not available in this example")
      default:
        return unavailable(`AI_PROVIDER must be one of ${ProviderNames.join(", ")} (got ${JSON.stringify(chosen)})`)
    }
  }
  if (present(env["ANTHROPIC_API_KEY"])) return anthropic()
  if (present(env["OPENAI_API_KEY"]) || present(env["OPENAI_BASE_URL"])) return openai()
  if (present(env["GEMINI_API_KEY"])) return gemini()
  return options.scripted
}

/**
 * The `claude` binary the examples run: `CLAUDE_BINARY` when set; else, when the Agent SDK is
 * installed, its pinned binary — in this repository npm puts the oldest supported CLI (a test
 * devDependency) first on the PATH that `npx` and npm scripts build, and it must not run silently
 * instead; else `claude` on PATH.
 */
export const exampleClaudeBinary = (env: Readonly<Record<string, string | undefined>> = process.env): string => {
  if (present(env["CLAUDE_BINARY"])) return env["CLAUDE_BINARY"]
  const require = createRequire(join(process.cwd(), "package.json"))
  const platform = `@anthropic-ai/claude-agent-sdk-${process.platform}-${process.arch}`
  for (const pkg of process.platform === "linux" ? [platform, `${platform}-musl`] : [platform]) {
    try {
      const path = require.resolve(`${pkg}/claude${process.platform === "win32" ? ".exe" : ""}`)
      if (existsSync(path)) return path
    } catch {
      // That platform package is not installed.
    }
  }
  return "claude"
}

/** `claude CLI: <path> (<version>)`: which CLI an example runs, for it to print first. */
export const describeClaude = (binary: string): Effect.Effect<string> =>
  Effect.callback<string>((resume) => {
    const child = execFile(binary, ["--version"], { timeout: 15_000 }, (error, stdout) =>
      resume(Effect.succeed(
        `claude CLI: ${binary} (${error === null ? stdout.trim() : `version unknown: ${error.message.split("\n")[0]}`})`
      )))
    return Effect.sync(() => child.kill())
  })

const isObject = (value: unknown): value is object => typeof value === "object" && value !== null

const messageOf = (error: unknown): string | undefined =>
  isObject(error) && "message" in error && String(error.message) !== "" ? String(error.message) : undefined

/** The messages under an error: its `cause`, that one's `cause`, … (a SqlError's reason, then the driver's error). */
const causeMessages = (error: unknown, depth = 3): Array<string> => {
  if (depth === 0 || !isObject(error) || !("cause" in error)) return []
  const message = messageOf(error.cause)
  return [...(message === undefined ? [] : [message]), ...causeMessages(error.cause, depth - 1)]
}

/**
 * The failure of a cause in one line: the error's message (with its tag), no stack trace. The
 * messages of wrapped causes (say, the driver's under a SqlError) are added when the line does not
 * say them yet: they are often the part that says what is wrong.
 */
export const describeFailure = (cause: Cause.Cause<unknown>): string => {
  const error = Cause.squash(cause)
  const message = messageOf(error)
  if (message === undefined) return String(error)
  const tag = isObject(error) && "_tag" in error && typeof error._tag === "string" ? `${error._tag}: ` : ""
  const withCauses = causeMessages(error).reduce(
    (text, inner) => text.includes(inner) ? text : `${text} (${inner})`,
    message
  )
  return `${tag}${readableConfigError(withCauses)}`.replace(/\s*\n\s*/g, " ").trim()
}

// Effect's ConfigError reads `SchemaError(Expected … at ["NAME"])`: say the variable and its value first.
const readableConfigError = (line: string): string => {
  const m = /^SchemaError\((.*) at \["([A-Z][A-Z0-9_]*)"\]\)$/s.exec(line)
  if (m === null) return line
  const value = process.env[m[2]!]
  return `${m[2]}${value === undefined ? " is not set" : `=${JSON.stringify(value)} is not valid`}: ${m[1]}`
}

/**
 * Ends an example on failure with one readable line on stderr and exit code 1, instead of a stack
 * trace: what failed and what to do is in the library's messages.
 */
export const printFailure = <A, E, R>(program: Effect.Effect<A, E, R>): Effect.Effect<A | void, never, R> =>
  Effect.catchCause(program, (cause) =>
    Cause.hasInterruptsOnly(cause)
      ? Effect.void
      : Effect.sync(() => {
        process.stderr.write(`error: ${describeFailure(cause)}\n`)
        process.exitCode = 1
      }))

/**
 * Runs an example's main program: a failure ends it with one line (`printFailure`); Ctrl-C still
 * interrupts it, its finalizers run, and it exits as `NodeRuntime.runMain` does.
 */
export const runExample = <A, E>(program: Effect.Effect<A, E>): void => NodeRuntime.runMain(printFailure(program))
