/**
 * Runs a program (an example, a README snippet, tsc) as a user would: a child `node` (with tsx for
 * TypeScript), an environment without the developer's provider credentials, its exit code and output kept.
 */
import * as Effect from "effect/Effect"
import { execFile } from "node:child_process"

export interface RunResult {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** `process.env` without any provider key, base URL or binary a developer may have exported. */
export const withoutCredentials = (): Record<string, string | undefined> => {
  const env: Record<string, string | undefined> = { ...process.env }
  for (const k of Object.keys(env)) {
    if (/^(ANTHROPIC|OPENAI|GEMINI|CLAUDE)_/.test(k) || k === "AI_PROVIDER") delete env[k]
  }
  return env
}

// Generous bound: tsx's start-up, a CLI's and tsc over every snippet are slow on a loaded machine.
const timeout = 200_000

/** `node <args>` with `env` on top of {@link withoutCredentials}; the child dies with the fiber. */
export const runNode = (
  args: ReadonlyArray<string>,
  env: Record<string, string | undefined> = {}
): Effect.Effect<RunResult> =>
  Effect.callback<RunResult>((resume) => {
    const child = execFile(
      process.execPath,
      args,
      { env: { ...withoutCredentials(), ...env }, timeout },
      (error, stdout, stderr) => resume(Effect.succeed({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }))
    )
    return Effect.sync(() => child.kill())
  })

/** `node --import tsx <file> ...args`, as {@link runNode}. */
export const runTsx = (
  file: string,
  env: Record<string, string | undefined> = {},
  args: ReadonlyArray<string> = []
): Effect.Effect<RunResult> => runNode(["--import", "tsx", file, ...args], env)
