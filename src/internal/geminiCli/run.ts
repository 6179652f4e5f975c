/**
 * One `GeminiCli` turn: a fresh `gemini --acp` in the client's private directories, the
 * application's tools reached through a per-run bridge credential, the prompt as ACP text blocks.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as path from "node:path"
import * as ToolPolicy from "../../registry/ToolPolicy.ts"
import {
  AuthenticationError,
  ConfigurationError,
  InvalidRequestError,
  InvalidResponseError,
  NotSupportedError,
  ProcessError,
  ProviderError,
  type ProviderErrorReason,
  reasonFromHttpStatus,
  TimeoutError
} from "../../services/ChatClient.ts"
import type { McpBridgeService } from "../../services/McpBridge.ts"
import type { SubprocessError, SubprocessService } from "../../services/Subprocess.ts"
import type { ToolSet } from "../../services/Tool.ts"
import type { RunInput, RunOutcome } from "../claude/session.ts"
import { schemaInstruction } from "../claudeLocal/args.ts"
import * as Acp from "./acp.ts"
import type { Options } from "./options.ts"
import * as Policy from "./policy.ts"
import * as Store from "./sessionStore.ts"

/** The provider name in errors, spans and metrics. */
export const provider = "gemini-cli"

/** The oldest Gemini CLI `GeminiCli` runs on: the release its ACP workarounds and tests were checked on. */
export const versionRequirement = {
  provider,
  name: "Gemini CLI",
  minimum: "0.61.0",
  upgrade: "npm install -g @google/gemini-cli@latest",
  packageName: "@google/gemini-cli"
} as const

/** The default bound on one run. */
export const DefaultRequestTimeout = Duration.minutes(10)

/** The default model: an explicit one, so that no router request precedes each turn. */
export const DefaultModel = "gemini-2.5-flash"

/** What a client holds across its turns. */
export interface GeminiEnv {
  readonly options: Options
  readonly subprocess: SubprocessService
  readonly serverName: string
  /** The client's private directory: `home`, `tmp`, `work` and the run files live in it. */
  readonly dir: string
  readonly home: string
  readonly cwd: string
  readonly bridge: () => Option.Option<McpBridgeService>
  readonly tools: () => ToolSet
  /** With `sessionStore`: where the sessions are mirrored. */
  readonly store?: Store.StoreSetup | undefined
}

/** This process's variables the CLI may see (the rest of the environment is not passed). */
const AllowedEnv = [
  "PATH",
  "LANG",
  "LC_ALL",
  "LC_CTYPE",
  "TZ",
  "NODE_EXTRA_CA_CERTS",
  "GEMINI_API_KEY",
  "GOOGLE_API_KEY",
  "GOOGLE_GEMINI_BASE_URL",
  "GOOGLE_CLOUD_PROJECT",
  "GOOGLE_CLOUD_LOCATION",
  "GOOGLE_GENAI_USE_VERTEXAI",
  "GOOGLE_APPLICATION_CREDENTIALS",
  "HTTPS_PROXY",
  "HTTP_PROXY",
  "NO_PROXY"
]

/** The CLI's whole environment: the allow-list, the private directories, then `options.env`. */
export const runEnv = (env: GeminiEnv, extra: Record<string, string>): Record<string, string | undefined> => {
  const base: Record<string, string | undefined> = {}
  // Every inherited variable is removed unless allowed (the Subprocess service inherits by default).
  for (const name of Object.keys(process.env)) base[name] = undefined
  for (const name of AllowedEnv) if (process.env[name] !== undefined) base[name] = process.env[name]
  return {
    ...base,
    HOME: env.home,
    GEMINI_CLI_HOME: env.home,
    TMPDIR: path.join(env.dir, "tmp"),
    ...extra,
    ...env.options.env
  }
}

/**
 * The settings the CLI reads from its home: the auth type, and nothing that reaches the network
 * on its own (usage statistics, update checks).
 */
export const settings = (options: Options) => ({
  security: { auth: { selectedType: options.authType ?? "gemini-api-key" } },
  privacy: { usageStatisticsEnabled: false },
  telemetry: { enabled: false },
  general: { disableAutoUpdate: true, disableUpdateNag: true }
})

/** Writes `contents` to `file` with mode 0600 (checked: a umask can only remove bits). */
export const writePrivate = (file: string, contents: string) =>
  Effect.sync(() => {
    fs.writeFileSync(file, contents, { mode: 0o600 })
    fs.chmodSync(file, 0o600)
  })

/** ACP's built-in commands: a prompt whose text starts with `/` or `$` and one of them is run, not sent. */
const AcpCommands = ["memory", "extensions", "init", "restore", "about", "help"]

/**
 * The text ACP would dispatch as a command instead of sending it, if any. Everything else in a
 * text block (`@path`, other `/words`, `\@`) reaches the model unchanged.
 */
export const interpretedCommand = (prompt: string): string | undefined => {
  const trimmed = prompt.trim()
  if (!trimmed.startsWith("/") && !trimmed.startsWith("$")) return undefined
  const word = trimmed.slice(1).trim().split(/\s+/)[0] ?? ""
  return AcpCommands.includes(word) ? `${trimmed[0]}${word}` : undefined
}

export const fail = (reason: ProviderErrorReason) => new ProviderError({ provider, reason })

/** Gemini CLI's exit codes, as reasons that say what to do next. */
export const exitReason = (exitCode: number, stderr: string): ProviderErrorReason => {
  const said = stderr.trim().split("\n").slice(-5).join("\n").slice(0, 1_000)
  const tail = said === "" ? "" : `: ${said}`
  switch (exitCode) {
    case 41:
      return new AuthenticationError({
        message: `Gemini CLI could not authenticate${tail}. Set GEMINI_API_KEY (or pass it in \`env\`), or choose ` +
          "another `authType`"
      })
    case 42:
      return new InvalidRequestError({ message: `Gemini CLI refused the input${tail}` })
    case 52:
      return new ConfigurationError({ message: `Gemini CLI's configuration is invalid${tail}` })
    case 53:
      return new ProcessError({
        message: `Gemini CLI reached its turn limit${tail}; start a new conversation`,
        exitCode
      })
    case 55:
      return new ConfigurationError({
        message: `Gemini CLI does not trust the working directory${tail}; the library passes --skip-trust, so ` +
          "check that the installed CLI supports it (0.61 or newer)"
      })
    default:
      return new ProcessError({ message: `Gemini CLI exited with code ${exitCode}${tail}`, exitCode })
  }
}

export const fromSubprocess = (error: SubprocessError): ProviderError => {
  const reason = error.reason
  switch (reason._tag) {
    case "NotFound":
      return fail(
        new ConfigurationError({
          message: `${reason.message}. Install Gemini CLI with \`npm install -g @google/gemini-cli\`, or set \`binary\``
        })
      )
    case "TimedOut":
      return fail(new TimeoutError({ message: `Gemini CLI run timed out: ${reason.message}` }))
    case "Exited":
      return fail(exitReason(reason.exitCode, reason.stderrTail))
    default:
      return fail(new ProcessError({ message: reason.message }))
  }
}

export const fromAcp = (failure: Acp.AcpFailure): ProviderError => {
  const status = /\b([45]\d\d)\b/.exec(failure.message)
  if (failure.method === "session/load") {
    return fail(
      new ConfigurationError({
        message:
          `Gemini CLI could not load the session (${failure.message}); resume needs the same \`home\` and \`cwd\``
      })
    )
  }
  return fail(
    status === null
      ? new InvalidResponseError({ message: `Gemini CLI failed ${failure.method}: ${failure.message}` })
      : reasonFromHttpStatus({ status: Number(status[1]), message: `Gemini CLI: ${failure.message}` })
  )
}

/** The argv of a run: no prompt and no secret in it. */
export const buildArgs = (
  options: Options,
  files: {
    readonly policy: string | undefined
    readonly mounted: boolean
    readonly allowedMcpServerNames?: ReadonlyArray<string> | undefined
  },
  serverName: string
) => {
  const servers = files.allowedMcpServerNames ?? (files.mounted ? [serverName] : [])
  return [
    "--acp",
    "--skip-trust",
    "--model",
    options.model ?? DefaultModel,
    ...(files.policy === undefined ? [] : ["--policy", files.policy]),
    ...(servers.length === 0 ? [] : ["--allowed-mcp-server-names", servers.join(",")])
  ]
}

/** What a run's `--policy` file says and which MCP servers it mounts. */
export interface RunPolicy {
  /** The policy file's text; `undefined`: no `--policy`. */
  readonly policyText: string | undefined
  /** `--allowed-mcp-server-names` when the tool policy decides it; `undefined`: the bridge's, if mounted. */
  readonly allowedMcpServerNames: ReadonlyArray<string> | undefined
}

/**
 * The compiled policy's last rule, `*` denied at priority 0. Gemini CLI 0.61 applies it to the
 * ACP-mounted bridge's tools over their allow rules (a call is "denied by policy", the e2e shows
 * it), so a run leaves it out: built-ins the catalog does not know keep the CLI's defaults.
 */
const isFallbackDeny = (rule: ToolPolicy.GeminiRule): boolean =>
  rule.mcpName === undefined && rule.decision === "deny" && rule.toolName.includes("*")

/**
 * The run's policy. Without `toolPolicy`: allow rules for the app's tools, then `policyRules`.
 * With it: the compiled policy (denies for what the opt-outs exclude), an allow per app tool
 * (so your tools stay visible), then `policyRules`. ACP's server entry has
 * no `includeTools`/`excludeTools`, so the compiled deny rules are what hide the bridge's
 * excluded tools.
 */
export const runPolicy = (
  options: Options,
  serverName: string,
  tools: ReadonlyArray<string>,
  mounted: boolean
): Result.Result<RunPolicy, ProviderError> => {
  const extra = options.policyRules ?? []
  const input = options.toolPolicy
  if (input === undefined) {
    const rules = [...(mounted ? Policy.allowBridgeTools(serverName, tools) : []), ...extra]
    return Result.succeed({
      policyText: rules.length === 0 ? undefined : Policy.render(rules),
      allowedMcpServerNames: undefined
    })
  }
  const compiled = ToolPolicy.toGeminiPolicy({
    registry: input.registry,
    disabledTools: input.disabledTools,
    conditions: input.conditions,
    allowedTools: input.allowedTools,
    strict: input.strict
  }, { mcpServers: [serverName] })
  // Each app tool gets its own allow, below the opt-outs' denies (900).
  const allowed = mounted
    ? Policy.allowBridgeTools(serverName, tools).map((rule) => ({ ...rule, priority: 100 }))
    : []
  if (Result.isFailure(compiled)) {
    return Result.fail(
      fail(new ConfigurationError({ message: `GeminiCli toolPolicy: ${compiled.failure.message}` }))
    )
  }
  return Result.succeed({
    policyText: ToolPolicy.toToml(compiled.success.rules.filter((rule) => !isFallbackDeny(rule))) + "\n" +
      Policy.render([...allowed, ...extra]),
    allowedMcpServerNames: compiled.success.allowedMcpServerNames
  })
}

/**
 * Gemini CLI 0.61's `session/load` starts by recording a new chat under the session's id, in a
 * file named by the minute and the id's first 8 characters: within the minute the session was
 * written, that is the session's own file, which it resets before reading it ("No previous
 * sessions found"). Renaming the session's files out of that pattern, each to a new name (still
 * `session-*.jsonl`, which the CLI lists), keeps them whole; the CLI then goes on writing to the
 * file it loaded, and the stubs earlier loads left hold no conversation, so the CLI skips them.
 */
export const protectSession = (home: string, sessionId: string) =>
  Effect.sync(() => {
    const projects = path.join(home, ".gemini", "tmp")
    if (!fs.existsSync(projects)) return
    const suffix = `-${sessionId.slice(0, 8)}.jsonl`
    for (const project of fs.readdirSync(projects)) {
      const chats = path.join(projects, project, "chats")
      if (!fs.existsSync(chats)) continue
      for (const file of fs.readdirSync(chats)) {
        if (file.startsWith("session-") && file.endsWith(suffix)) {
          // A unique name: a stub the last load left in the same minute must not replace a kept file.
          const kept = `${file.slice(0, -".jsonl".length)}-kept${Date.now()}${
            Math.random().toString(36).slice(2, 8)
          }.jsonl`
          fs.renameSync(path.join(chats, file), path.join(chats, kept))
        }
      }
    }
  })

/**
 * Before a `session/load` of `sessionId`: the local log made the store's (with `sessionStore`),
 * then the session's files protected from the CLI's reset ({@link protectSession}).
 */
export const prepareResume = (env: GeminiEnv, sessionId: string) =>
  Effect.andThen(
    env.store === undefined ? Effect.void : Store.restore(env.store, sessionId),
    protectSession(env.home, sessionId)
  )

/** What a turn runs with, decided before any process starts. */
export interface TurnPlan {
  readonly bridge: Option.Option<McpBridgeService>
  readonly mounted: boolean
  readonly policyText: string | undefined
  readonly allowedMcpServerNames: ReadonlyArray<string> | undefined
  /** What a process started for this plan was given: a kept-alive CLI serves only turns with its key. */
  readonly key: string
}

/** The turn's plan, or the refusal of a prompt the CLI would not pass on verbatim. */
export const planTurn = Effect.fnUntraced(function*(env: GeminiEnv, input: RunInput) {
  const command = interpretedCommand(input.prompt)
  if (command !== undefined) {
    return yield* fail(
      new NotSupportedError({
        feature: "verbatimPrompt",
        message: `The prompt starts with ${command}, which Gemini CLI runs as its own command instead of sending it ` +
          "to the model; reword it (a leading word before it is enough)"
      })
    )
  }
  const bridge = env.bridge()
  const tools = env.tools().tools
  const names = tools.map((tool) => tool.name)
  const mounted = Option.isSome(bridge) && names.length > 0
  const planned = runPolicy(env.options, env.serverName, names, mounted)
  if (Result.isFailure(planned)) return yield* Effect.fail(planned.failure)
  const { allowedMcpServerNames, policyText } = planned.success
  // The CLI lists a server's tools once, when it connects: another tool set needs another process.
  const key = JSON.stringify({
    policyText,
    allowedMcpServerNames,
    mounted,
    tools: tools.map((tool) => [tool.name, tool.description])
  })
  const plan: TurnPlan = { bridge, mounted, policyText, allowedMcpServerNames, key }
  return plan
})

/**
 * A process's run options and MCP servers for `plan`, in the caller's scope: its files (the
 * `--policy` file, the system prompt) in a private directory, and a bridge credential of its own.
 */
export const prepareProcess = Effect.fnUntraced(function*(env: GeminiEnv, plan: TurnPlan) {
  const runDir = yield* Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(env.dir, "run-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )
  const { allowedMcpServerNames, mounted, policyText } = plan
  const policy = policyText === undefined ? undefined : path.join(runDir, "policy.toml")
  if (policy !== undefined && policyText !== undefined) yield* writePrivate(policy, policyText)
  const extra: Record<string, string> = {}
  if (env.options.systemPrompt !== undefined) {
    extra["GEMINI_SYSTEM_MD"] = path.join(runDir, "system.md")
    yield* writePrivate(extra["GEMINI_SYSTEM_MD"], env.options.systemPrompt)
  }
  const mcpServers: Array<Acp.AcpMcpServer> = []
  let aroundTurn: (<A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>) | undefined
  if (mounted && Option.isSome(plan.bridge)) {
    const bridge = plan.bridge.value
    const run = yield* bridge.openRun
    aroundTurn = run.withRunSpan
    mcpServers.push({
      type: "http",
      name: env.serverName,
      url: bridge.url,
      headers: [{ name: "Authorization", value: `Bearer ${Redacted.value(run.token)}` }]
    })
  }
  return {
    runOptions: {
      command: env.options.binary ?? "gemini",
      args: buildArgs(env.options, { policy, mounted, allowedMcpServerNames }, env.serverName),
      env: runEnv(env, extra),
      cwd: env.cwd,
      ...(env.options.killGrace === undefined ? {} : { killGrace: env.options.killGrace })
    },
    mcpServers,
    aroundTurn
  }
})

/** The prompt's text blocks: the prompt, then for `ask` the schema instruction. */
export const blocksOf = (input: RunInput): ReadonlyArray<string> =>
  input.responseFormat === undefined
    ? [input.prompt]
    : [input.prompt, schemaInstruction(JSON.stringify(input.responseFormat.schema))]

/** Counts a prompt's usage and gives the conversation its outcome. */
export const finishTurn = Effect.fnUntraced(function*(input: RunInput, outcome: Acp.AcpOutcome) {
  yield* input.recordResult({
    type: "result",
    is_error: false,
    result: outcome.text,
    session_id: outcome.sessionId,
    stop_reason: outcome.stopReason,
    permission_denials: [],
    ...(outcome.inputTokens === undefined && outcome.outputTokens === undefined
      ? {}
      : {
        usage: {
          input_tokens: outcome.inputTokens ?? 0,
          output_tokens: outcome.outputTokens ?? 0,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0
        }
      })
  })
  const result: RunOutcome = {
    text: outcome.text,
    structured: undefined,
    sessionId: outcome.sessionId,
    activity: outcome.activity
  }
  return result
})

/** One turn on a fresh CLI; what it acquired (bridge credential, run files) ends with it. */
export const freshRun = (env: GeminiEnv) =>
  Effect.fnUntraced(function*(input: RunInput) {
    const plan = yield* planTurn(env, input)
    const { mcpServers, runOptions } = yield* prepareProcess(env, plan)
    if (Option.isSome(input.sessionId)) yield* prepareResume(env, input.sessionId.value)
    const outcome = yield* Acp.runTurn(env.subprocess, {
      ...runOptions,
      timeout: env.options.requestTimeout ?? DefaultRequestTimeout
    }, {
      cwd: env.cwd,
      mcpServers,
      sessionId: Option.getOrUndefined(input.sessionId),
      blocks: blocksOf(input),
      emit: input.emit
    }).pipe(
      Effect.mapError((e) => (e._tag === "AcpFailure" ? fromAcp(e) : fromSubprocess(e)))
    )
    if (outcome === undefined) {
      return yield* fail(new InvalidResponseError({ message: "Gemini CLI exited without answering the prompt" }))
    }
    return yield* finishTurn(input, outcome)
  }, Effect.scoped)
