/**
 * A stand-in for `@anthropic-ai/claude-agent-sdk`, loaded by ClaudeAgent through its
 * `sdkSpecifier` option: `query` records what it was given and plays the script the test installed
 * with `script`. Lets the provider's handling of SDK failures be tested without the real binary.
 */
import * as path from "node:path"
import { fileURLToPath } from "node:url"

/** The module specifier to pass as `sdkSpecifier`. */
export const specifier = path.join(path.dirname(fileURLToPath(import.meta.url)), "fakeAgentSdk.ts")

/** What a script gets: the query's options (as the provider built them) and a way to spawn a CLI. */
export interface QueryCall {
  readonly prompt: unknown
  readonly options: Record<string, unknown>
  /** Spawns `node -e script` through the provider's `spawnClaudeCodeProcess`; resolves when it closes. */
  readonly spawn: (script: string) => Promise<void>
  /** Resolves when the provider closes the query or aborts it. */
  readonly ended: Promise<void>
}

export type Script = (call: QueryCall) => AsyncGenerator<unknown, void, unknown>

interface State {
  script: Script
  readonly calls: Array<QueryCall>
  closed: number
}

const key = Symbol.for("effect-chat-bridge/test/fakeAgentSdk")
const globals = globalThis as unknown as Record<symbol, State | undefined>

const state = (): State => {
  const existing = globals[key]
  if (existing !== undefined) return existing
  const fresh: State = {
    script: async function*() {
      throw new Error("no script installed")
    },
    calls: [],
    closed: 0
  }
  globals[key] = fresh
  return fresh
}

/** Installs the script of the next queries and forgets earlier calls. */
export const script = (run: Script): void => {
  const s = state()
  s.script = run
  s.calls.length = 0
  s.closed = 0
}

/** The queries made since the last `script`. */
export const calls = (): ReadonlyArray<QueryCall> => state().calls

/** How many queries the provider closed since the last `script`. */
export const closed = (): number => state().closed

type Spawn = (options: {
  command: string
  args: Array<string>
  env: Record<string, string | undefined>
  signal: AbortSignal
}) => { once: (event: "close", listener: () => void) => void }

export const query = (params: { prompt: unknown; options?: Record<string, unknown> }) => {
  const s = state()
  const options = params.options ?? {}
  let close = () => {}
  const ended = new Promise<void>((resolve) => {
    close = resolve
  })
  const controller = options["abortController"] as AbortController | undefined
  controller?.signal.addEventListener("abort", () => close(), { once: true })
  const call: QueryCall = {
    prompt: params.prompt,
    options,
    ended,
    spawn: (scriptText) =>
      new Promise((resolve) => {
        const child = (options["spawnClaudeCodeProcess"] as Spawn)({
          command: process.execPath,
          args: ["-e", scriptText],
          env: { PATH: process.env["PATH"] },
          signal: controller?.signal ?? new AbortController().signal
        })
        child.once("close", () => resolve())
      })
  }
  s.calls.push(call)
  const messages = s.script(call)
  return {
    [Symbol.asyncIterator]: () => messages,
    close: () => {
      s.closed++
      close()
    }
  }
}
