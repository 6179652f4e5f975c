/**
 * One `CodexCli` turn: a fresh `codex exec --json` in the client's private directories, the
 * prompt written to its stdin as the whole prompt (`-`), the application's tools reached through
 * a per-run bridge credential in the child's environment, the JSONL events read into the turn.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as path from "node:path"
import * as ToolPolicy from "../../registry/ToolPolicy.ts"
import {
  ConfigurationError,
  InvalidResponseError,
  NotSupportedError,
  ProcessError,
  ProviderError,
  type ProviderErrorReason,
  reasonFromHttpStatus,
  TimeoutError
} from "../../services/ChatClient.ts"
import type { McpBridgeRun, McpBridgeService } from "../../services/McpBridge.ts"
import type { SubprocessError, SubprocessService } from "../../services/Subprocess.ts"
import type { ToolSet } from "../../services/Tool.ts"
import type { RunInput, RunOutcome } from "../claude/session.ts"
import * as Args from "./args.ts"
import * as Events from "./events.ts"
import type { Options } from "./options.ts"
import * as Skills from "./skills.ts"
import * as Threads from "./threads.ts"

/** The provider name in errors, spans and metrics. */
export const provider = "codex-cli"

/** The oldest Codex CLI `CodexCli` runs on: the release its switches and tests were checked on. */
export const versionRequirement = {
  provider,
  name: "Codex CLI",
  minimum: "0.171.0",
  upgrade: "npm install -g @openai/codex@latest",
  packageName: "@openai/codex"
} as const

/** The default bound on one run. */
export const DefaultRequestTimeout = Duration.minutes(10)

/** What a client holds across its turns. */
export interface CodexEnv {
  readonly options: Options
  readonly subprocess: SubprocessService
  readonly serverName: string
  /** The client's private directory: `home`, `tmp`, `work` and the run files live in it. */
  readonly dir: string
  /** `CODEX_HOME`. */
  readonly codexHome: string
  /** `HOME`: always private (the user's `~/.agents` and dotfiles stay out). */
  readonly home: string
  readonly cwd: string
  readonly bridge: () => Option.Option<McpBridgeService>
  readonly tools: () => ToolSet
  /** The last thread totals seen per thread: Codex reports usage cumulatively over a thread. */
  readonly seen: Map<string, Events.ThreadUsage>
}

/** This process's variables the CLI may see (the rest of the environment is not passed). */
const AllowedEnv = [
  "PATH",
  "LANG",
  "LC_ALL",
  "LC_CTYPE",
  "TZ",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  "CODEX_CA_CERTIFICATE",
  "OPENAI_API_KEY",
  "CODEX_API_KEY",
  "OPENAI_BASE_URL",
  "HTTPS_PROXY",
  "HTTP_PROXY",
  "NO_PROXY"
]

/** The CLI's whole environment: the allow-list, the private directories, the run's secrets, then `options.env`. */
export const runEnv = (env: CodexEnv, secrets: Record<string, string>): Record<string, string | undefined> => {
  const base: Record<string, string | undefined> = {}
  // Every inherited variable is removed unless allowed (the Subprocess service inherits by default).
  for (const name of Object.keys(process.env)) base[name] = undefined
  for (const name of AllowedEnv) if (process.env[name] !== undefined) base[name] = process.env[name]
  const apiKey = env.options.apiKey === undefined ? process.env["OPENAI_API_KEY"] : Redacted.value(env.options.apiKey)
  return {
    ...base,
    HOME: env.home,
    CODEX_HOME: env.codexHome,
    TMPDIR: path.join(env.dir, "tmp"),
    ...(apiKey === undefined ? {} : { [Args.ApiKeyVar]: apiKey }),
    ...secrets,
    ...env.options.env
  }
}

/** Writes `contents` to `file` with mode 0600 (checked: a umask can only remove bits). */
export const writePrivate = (file: string, contents: string) =>
  Effect.sync(() => {
    fs.writeFileSync(file, contents, { mode: 0o600 })
    fs.chmodSync(file, 0o600)
  })

export const fail = (reason: ProviderErrorReason) => new ProviderError({ provider, reason })

/** A failed turn's message (`unexpected status 401 Unauthorized: …`) as a reason. */
export const failureReason = (message: string): ProviderErrorReason => {
  const status = /\bstatus (\d{3})\b/.exec(message)
  if (status !== null) return reasonFromHttpStatus({ status: Number(status[1]), message: `Codex CLI: ${message}` })
  return new ProcessError({ message: `Codex CLI's turn failed: ${message}` })
}

export const fromSubprocess = (error: SubprocessError): ProviderError => {
  const reason = error.reason
  switch (reason._tag) {
    case "NotFound":
      return fail(
        new ConfigurationError({
          message: `${reason.message}. Install Codex CLI with \`npm install -g @openai/codex\`, or set \`binary\``
        })
      )
    case "TimedOut":
      return fail(new TimeoutError({ message: `Codex CLI run timed out: ${reason.message}; raise \`requestTimeout\`` }))
    case "Exited": {
      const said = reason.stderrTail.trim().split("\n").slice(-5).join("\n").slice(0, 1_000)
      return fail(
        new ProcessError({
          message: `Codex CLI exited with code ${reason.exitCode}${said === "" ? "" : `: ${said}`}`,
          exitCode: reason.exitCode
        })
      )
    }
    default:
      return fail(new ProcessError({ message: reason.message }))
  }
}

/** The run's usage: this turn's share of the thread totals `turn.completed` reports. */
export const turnUsage = (env: CodexEnv, threadId: string | undefined, totals: Events.ThreadUsage) => {
  const before = threadId === undefined ? undefined : env.seen.get(threadId)
  if (threadId !== undefined) env.seen.set(threadId, totals)
  const input = Math.max(0, totals.inputTokens - (before?.inputTokens ?? 0))
  const cached = Math.max(0, totals.cachedInputTokens - (before?.cachedInputTokens ?? 0))
  return {
    input_tokens: Math.max(0, input - cached),
    output_tokens: Math.max(0, totals.outputTokens - (before?.outputTokens ?? 0)),
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: cached
  }
}

/** `toolPolicy` compiled for this run's bridge; `undefined` without one. */
export const compilePolicy = (
  options: Options,
  serverName: string
): Result.Result<Args.PolicySwitches | undefined, ProviderError> => {
  const input = options.toolPolicy
  if (input === undefined) return Result.succeed(undefined)
  const compiled = ToolPolicy.toCodexPolicy({
    registry: input.registry,
    disabledTools: input.disabledTools,
    conditions: input.conditions,
    allowedTools: input.allowedTools,
    strict: input.strict
  }, { mcpServers: [serverName] })
  return Result.isFailure(compiled)
    ? Result.fail(fail(new ConfigurationError({ message: `CodexCli toolPolicy: ${compiled.failure.message}` })))
    : Result.succeed(compiled.success.cliOptions)
}

/** A fork of a thread: neither path forks yet. */
export const refuseFork = fail(
  new NotSupportedError({
    feature: "forkSession",
    message: "CodexCli does not fork threads yet; resume the thread instead"
  })
)

/** The run's private files (0600, in a directory removed with the run): instructions and the `ask` schema. */
const runFiles = Effect.fnUntraced(function*(env: CodexEnv, input: RunInput) {
  const runDir = yield* Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(env.dir, "run-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )
  const instructionsFile = env.options.systemPrompt === undefined ? undefined : path.join(runDir, "instructions.md")
  if (instructionsFile !== undefined) yield* writePrivate(instructionsFile, env.options.systemPrompt ?? "")
  const schemaFile = input.responseFormat === undefined ? undefined : path.join(runDir, "schema.json")
  if (schemaFile !== undefined) yield* writePrivate(schemaFile, JSON.stringify(input.responseFormat?.schema))
  return { instructionsFile, schemaFile }
})

/** A thread this client did not run yet: its usage counts from what its earlier turns used. */
export const rememberThread = (env: CodexEnv, threadId: string | undefined) =>
  Effect.sync(() => {
    if (threadId === undefined || env.seen.has(threadId)) return
    const before = Threads.recordedTotals(env.codexHome, threadId)
    if (before !== undefined) env.seen.set(threadId, before)
  })

/**
 * Whether the CLI reached the bridge. `exec --json` says nothing when it could not (the model
 * then answers without your tools); the CLI holds its MCP session while it runs, so the run's
 * sessions are looked at on each event until one is seen (a call of one of your tools says so too).
 */
const watchBridge = (access: McpBridgeRun | undefined, serverName: string) => {
  let reached = access === undefined
  const called = `"server":${JSON.stringify(serverName)}`
  return {
    line: (line: string): Effect.Effect<void> =>
      reached || access === undefined ? Effect.void : Effect.map(access.sessionCount, (open) => {
        reached = open > 0 || line.includes(called)
      }),
    reached: () => reached
  }
}

/**
 * How the run ended, as the turn's error if it failed: a process that timed out or could not
 * start first, then the turn's own failure (a failed turn exits 1: its message says more), then
 * the exit, a turn never completed, a bridge never reached.
 */
const judge = (
  env: CodexEnv,
  turn: Events.Turn,
  exited: SubprocessError | undefined,
  reached: boolean
): Effect.Effect<void, ProviderError> => {
  if (exited !== undefined && exited.reason._tag !== "Exited") return Effect.fail(fromSubprocess(exited))
  if (turn.failure !== undefined) return Effect.fail(fail(failureReason(turn.failure)))
  if (exited !== undefined) return Effect.fail(fromSubprocess(exited))
  if (!turn.completed) {
    return Effect.fail(fail(new InvalidResponseError({ message: "Codex CLI exited without completing the turn" })))
  }
  if (!reached) {
    return Effect.fail(fail(
      new ConfigurationError({
        message: `Codex CLI could not use the tool server (MCP server ${env.serverName}); refusing an answer ` +
          "given without tools. Its stderr says why (a proxy in between, a changed bearer variable in `env`)"
      })
    ))
  }
  return Effect.void
}

/** One turn on a fresh CLI; what it acquired (bridge credential, run files) ends with it. */
export const freshRun = (env: CodexEnv) =>
  Effect.fnUntraced(function*(input: RunInput) {
    if (input.fork) return yield* refuseFork
    const policy = compilePolicy(env.options, env.serverName)
    if (Result.isFailure(policy)) return yield* Effect.fail(policy.failure)
    const bridge = env.bridge()
    const mounted = Option.isSome(bridge) && env.tools().tools.length > 0
    const { instructionsFile, schemaFile } = yield* runFiles(env, input)
    const secrets: Record<string, string> = {}
    const access = mounted ? yield* bridge.value.openRun : undefined
    if (access !== undefined) secrets[Args.BridgeTokenVar] = Redacted.value(access.token)
    const skillFiles = env.options.loadSkills === true
      ? []
      : yield* Effect.sync(() => Skills.skillFiles(Skills.roots(env.codexHome, env.home, env.cwd)))
    const args = Args.buildArgs(env.options, {
      serverName: env.serverName,
      bridgeUrl: mounted ? bridge.value.url : undefined,
      cwd: env.cwd,
      instructionsFile,
      schemaFile,
      skillFiles,
      threadId: Option.getOrUndefined(input.sessionId),
      policy: policy.success
    })
    yield* rememberThread(env, Option.getOrUndefined(input.sessionId))
    const reader = Events.makeReader(input.emit, env.serverName)
    const watch = watchBridge(access, env.serverName)
    const exited = yield* env.subprocess.stream({
      command: env.options.binary ?? "codex",
      args,
      env: runEnv(env, secrets),
      cwd: env.cwd,
      // The whole prompt on stdin, which is then closed: not on argv (`ps`), no `<stdin>` block.
      stdin: input.prompt,
      timeout: env.options.requestTimeout ?? DefaultRequestTimeout,
      ...(env.options.killGrace === undefined ? {} : { killGrace: env.options.killGrace })
    }).pipe(
      Stream.runForEach((line) => Effect.andThen(reader.line(line), watch.line(line))),
      Effect.map(() => undefined),
      // Judged with the turn's events below.
      Effect.catchTag("SubprocessError", (e) => Effect.succeed(e))
    )
    const turn = reader.turn()
    yield* judge(env, turn, exited, watch.reached())
    if (turn.usage === undefined) {
      return yield* fail(new InvalidResponseError({ message: "Codex CLI reported no usage" }))
    }
    yield* input.recordResult({
      type: "result",
      is_error: false,
      result: turn.text,
      ...(turn.threadId === undefined ? {} : { session_id: turn.threadId }),
      permission_denials: [],
      usage: turnUsage(env, turn.threadId, turn.usage)
    })
    const result: RunOutcome = {
      text: turn.text,
      structured: undefined,
      sessionId: turn.threadId,
      activity: turn.activity
    }
    return result
  }, Effect.scoped)
