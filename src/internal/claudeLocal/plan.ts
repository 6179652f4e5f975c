/**
 * What every `ClaudeLocal` run shares, fresh or kept alive: the client's fixed set-up
 * ({@link LocalEnv}), the installed CLI's version, the plan of a run (what holds no resource) and
 * its preparation in a scope (the files and the bridge run it holds).
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Ref from "effect/Ref"
import * as Result from "effect/Result"
import * as Scope from "effect/Scope"
import * as ToolPolicy from "../../registry/ToolPolicy.ts"
import { ConfigurationError, ProviderError } from "../../services/ChatClient.ts"
import type { CanUseTool } from "../../services/ClaudeCodeOptions.ts"
import * as ClaudeHooks from "../../services/ClaudeHooks.ts"
import type { McpBridgeError, McpBridgeOptions, McpBridgeService } from "../../services/McpBridge.ts"
import { SecretFile, type SecretFileService } from "../../services/SecretFile.ts"
import { type RunOptions, Subprocess, type SubprocessError, type SubprocessService } from "../../services/Subprocess.ts"
import * as Tool from "../../services/Tool.ts"
import * as Approvals from "../claude/approvals.ts"
import * as CliVersion from "../claude/cliVersion.ts"
import { asChanges, cliEnvironment, mcpConfigEntry, permissionTool, PermissionToolName } from "../claude/codeRun.ts"
import * as Extensions from "../claude/extensions.ts"
import * as ProviderPolicy from "../claude/providerPolicy.ts"
import { bounded, type RunInput, turnTimeout } from "../claude/session.ts"
import * as Stall from "../claude/stall.ts"
import {
  buildArgs,
  configError,
  fromSubprocess,
  hidePermissionTool,
  provider,
  schemaInstruction,
  serverAllowRules
} from "./args.ts"
import type { Options } from "./options.ts"

/** The default bound on one CLI run (`requestTimeout`): 10 minutes. */
export const DefaultRequestTimeout = Duration.minutes(10)

/** A client's fixed set-up, read once when it is built. */
export interface LocalEnv {
  readonly options: Options
  readonly subprocess: SubprocessService
  readonly secretFile: SecretFileService
  /** The client's scope: bridges and kept-alive CLIs live in it. */
  readonly scope: Scope.Scope
  readonly binary: string
  readonly serverName: string
  /** `mcp__<serverName>__`. */
  readonly toolPrefix: string
  readonly timeout: Duration.Input
  /** The tool policy, checked when the client was built (see `providerPolicy.ts`). */
  readonly policy: ProviderPolicy.ProviderPolicy
  readonly tools: Ref.Ref<Tool.ToolSet>
  readonly bridge: Ref.Ref<Option.Option<McpBridgeService>>
  /** Tool use ids the application denied through `canUseTool`: its decisions, not failures. */
  readonly decidedDenials: Set<string>
  readonly permissionServer: string
  /** The permission prompt's own bridge, started once when first needed; none without `canUseTool`. */
  readonly permissionBridge: Effect.Effect<McpBridgeService | undefined, ProviderError>
  /**
   * The hooks' own bridge (the application's `hooks` and the approvals' gate), started once when
   * a run first needs it.
   */
  readonly hooksBridge: Effect.Effect<McpBridgeService, ProviderError>
  /** The deferring hook of the tools that `needsApproval` (see `approvals.ts`). */
  readonly gate: Approvals.Gate
  /** `canUseTool` decisions in progress: the run's `stallTimeout` does not count while one is pending. */
  readonly permissionWaits: Stall.PermissionWaits
  /** The installed CLI's version, read once (only a supported one is kept). */
  readonly cliVersion: Effect.Effect<CliVersion.CliVersion, ProviderError>
  /** The CLI's environment as changes to this process's: the allow-list of now. */
  readonly runEnv: () => Record<string, string | undefined>
  /** A fresh run that outlives `requestTimeout` fails as a kept-alive turn does. */
  readonly fromTurnSubprocess: (error: SubprocessError) => ProviderError
}

const badCliVersion = (given: string) =>
  new ProviderError({
    provider,
    reason: new ConfigurationError({
      message: `cliVersion ${JSON.stringify(given)} is not a version such as 2.1.332; ` +
        "fix it, or leave it out to read `claude --version`"
    })
  })

/** `claude --version` (or the `cliVersion` option); none when it printed no version. */
const readVersion = Effect.fnUntraced(function*(options: Options, subprocess: SubprocessService, binary: string) {
  if (options.cliVersion !== undefined) {
    const given = CliVersion.parse(options.cliVersion)
    if (Option.isNone(given)) return yield* badCliVersion(options.cliVersion)
    return given
  }
  const printed = yield* subprocess.run({
    command: binary,
    args: ["--version"],
    timeout: Duration.seconds(30),
    env: asChanges(process.env, cliEnvironment(process.env, options)),
    ...(options.cwd === undefined ? {} : { cwd: options.cwd })
  }).pipe(
    // A `--version` that fails says nothing about the version: the run itself reports why the
    // CLI cannot start (not logged in, broken install) with its own exit code and stderr.
    Effect.catchReason("SubprocessError", "Exited", (e) => Effect.succeed({ stdout: "", stderr: e.stderrTail })),
    Effect.mapError(fromSubprocess(binary))
  )
  const parsed = CliVersion.parse(printed.stdout)
  if (Option.isNone(parsed)) {
    // A wrapper script may print something else: run it as the pinned version rather than refuse.
    yield* Effect.logWarning("claude --version printed no version; assuming the newest features").pipe(
      Effect.annotateLogs({ output: bounded(printed.stdout.trim(), 200) })
    )
  }
  return parsed
})

/** The version of the CLI, read at the first turn; after an upgrade past a refusal, read again. */
const makeCliVersion = (options: Options, subprocess: SubprocessService, binary: string) =>
  Effect.map(Ref.make(Option.none<CliVersion.CliVersion>()), (known) =>
    Effect.gen(function*() {
      const seen = yield* Ref.get(known)
      if (Option.isSome(seen)) return seen.value
      const read = yield* readVersion(options, subprocess, binary)
      if (Option.isNone(read)) return Option.getOrThrow(CliVersion.parse(CliVersion.PinnedVersion))
      const version = yield* CliVersion.requireSupported(provider, read.value)
      yield* Ref.set(known, Option.some(version))
      return version
    }))

/**
 * Starts a loopback MCP bridge in the current scope. The layer passes `NodeMcpBridge.make`:
 * internal code never imports a layer.
 */
export type StartBridge = (
  options: McpBridgeOptions
) => Effect.Effect<McpBridgeService, McpBridgeError | Tool.InvalidToolsError, Scope.Scope>

/** Reads the options and the services once, for the client's lifetime. */
export const makeEnv = Effect.fnUntraced(function*(options: Options, startBridge: StartBridge) {
  const subprocess = yield* Subprocess
  const secretFile = yield* SecretFile
  const scope = yield* Effect.scope
  const binary = options.binary ?? "claude"
  const serverName = options.bridge?.serverName ?? options.serverName ?? "gtb"
  const timeout = options.requestTimeout ?? DefaultRequestTimeout
  const decidedDenials = new Set<string>()
  const permissionServer = `${serverName}_permission`
  const permissionWaits = Stall.makePermissionWaits()
  const given = options.canUseTool
  const canUseTool: CanUseTool | undefined = given === undefined
    ? undefined
    : (request) => permissionWaits.around(given(request))
  // Not the tools' bridge, so it never mixes with the caller's tools, and the policy never
  // mounts or allows it for the model.
  const permissionBridge = canUseTool === undefined
    ? Effect.succeed(undefined)
    : yield* Effect.cached(
      startBridge({
        serverName: permissionServer,
        tools: [permissionTool(canUseTool, (id) => decidedDenials.add(id))]
      }).pipe(Scope.provide(scope), Effect.mapError(configError))
    )
  // Its own bridge too: the hooks' URLs and token are the same for every run of the client.
  const hooks = ClaudeHooks.entries(options.hooks)
  const gate = Approvals.makeGate(canUseTool, decidedDenials)
  // The bridge starts at the first turn that needs it; the hooks run in the layer's context.
  const layerContext = yield* Effect.context<never>()
  const hooksBridge = yield* Effect.cached(
    // A hook at work is the application deciding, not the run going silent.
    startBridge({
      serverName: `${serverName}_hooks`,
      hooks: (name, input) =>
        permissionWaits.around(
          name === Approvals.GateRoute ? gate.hook(input) : hookHandler(hooks)(name, input)
        ).pipe(Effect.provideContext(layerContext))
    }).pipe(
      Scope.provide(scope),
      Effect.mapError(configError)
    )
  )
  const env: LocalEnv = {
    options,
    subprocess,
    secretFile,
    scope,
    binary,
    serverName,
    toolPrefix: `mcp__${serverName}__`,
    timeout,
    policy: yield* ProviderPolicy.fromOptions(provider, options, {
      permissionMode: options.permissionMode,
      servers: Object.keys(options.mcpServers ?? {})
    }),
    tools: yield* Ref.make<Tool.ToolSet>(Tool.empty),
    bridge: yield* Ref.make(Option.fromUndefinedOr(options.bridge)),
    decidedDenials,
    permissionServer,
    permissionBridge,
    hooksBridge,
    gate,
    permissionWaits,
    cliVersion: yield* makeCliVersion(options, subprocess, binary),
    runEnv: () => asChanges(process.env, cliEnvironment(process.env, options)),
    fromTurnSubprocess: (error) =>
      error.reason._tag === "TimedOut" ? turnTimeout(provider, timeout) : fromSubprocess(binary)(error)
  }
  return env
})

/** Answers the hooks bridge's `/hooks/<index>`: the index-th hook of the client. */
const hookHandler =
  (hooks: ReadonlyArray<readonly [ClaudeHooks.HookEvent, ClaudeHooks.Hook<ClaudeHooks.HookEvent>]>) =>
  (name: string, input: unknown): Effect.Effect<unknown, unknown> => {
    const entry = hooks[Number(name)]
    return entry === undefined
      ? Effect.fail(`No hook ${name}`)
      : ClaudeHooks.answer(entry[0], entry[1], input)
  }

/** Events whose HTTP hooks Claude Code skips (checked on 2.1.335): they get a command hook instead. */
const commandOnly: ReadonlySet<ClaudeHooks.HookEvent> = new Set(["SessionStart"])

/**
 * A Node one-liner that POSTs its stdin to `argv[1]` with the bearer token read from the file
 * `argv[2]`, and prints the answer: a command hook standing in for an HTTP one.
 */
const forwardScript = "const [u,f]=process.argv.slice(1);let b=\"\";process.stdin.on(\"data\",(c)=>b+=c)" +
  ".on(\"end\",async()=>{try{const r=await fetch(u,{method:\"POST\",headers:{\"content-type\":" +
  "\"application/json\",authorization:\"Bearer \"+require(\"fs\").readFileSync(f,\"utf8\")},body:b});" +
  "process.stdout.write(await r.text())}catch(e){console.error(String(e));process.exit(1)}})"

/** `text` as one single-quoted shell word. */
const shellWord = (text: string) => `'${text.replaceAll("'", "'\\''")}'`

/**
 * The `hooks` settings pointing the CLI at the hooks bridge: one HTTP hook per application hook,
 * carrying the bridge's token (so the settings go in a 0600 file, never argv). A
 * {@link commandOnly} event's hook is a command running {@link forwardScript} with this Node,
 * reading the token from `tokenFile` (0600), so it never shows in a process's argv either.
 */
const hookSettings = (
  hooks: ClaudeHooks.Hooks | undefined,
  bridge: McpBridgeService,
  tokenFile: string | undefined
) => {
  const settings: Record<string, Array<unknown>> = {}
  const base = bridge.url.replace(/\/mcp$/, "/hooks/")
  ClaudeHooks.entries(hooks).forEach(([event, hook], index) => {
    const url = `${base}${index}`
    const timeout = hook.timeout === undefined ? {} : { timeout: hook.timeout }
    ;(settings[event] ??= []).push({
      ...(hook.matcher === undefined ? {} : { matcher: hook.matcher }),
      hooks: [
        commandOnly.has(event) && tokenFile !== undefined
          ? {
            type: "command",
            command: [process.execPath, "-e", forwardScript, url, tokenFile].map(shellWord).join(" "),
            ...timeout
          }
          : {
            type: "http",
            url,
            headers: { Authorization: `Bearer ${Redacted.value(bridge.token)}` },
            ...timeout
          }
      ]
    })
  })
  return settings
}

/** The approvals' gate beside the application's `PreToolUse` hooks, for the tools that `needsApproval`. */
const withGate = (
  env: LocalEnv,
  settings: Record<string, Array<unknown>>,
  bridge: McpBridgeService,
  tools: ReadonlyArray<Tool.Tool>
) => {
  const url = bridge.url.replace(/\/mcp$/, `/hooks/${Approvals.GateRoute}`)
  const entry = Approvals.gateSettings(env.toolPrefix, tools, url, Redacted.value(bridge.token))
  return entry === undefined ? settings : { ...settings, PreToolUse: [entry, ...(settings["PreToolUse"] ?? [])] }
}

/** The hooks bridge's token in a 0600 file of the run, when a {@link commandOnly} hook needs it. */
const tokenFileFor = (
  env: LocalEnv,
  bridge: McpBridgeService
): Effect.Effect<string | undefined, ProviderError, Scope.Scope> =>
  ClaudeHooks.entries(env.options.hooks).some(([event]) => commandOnly.has(event))
    ? env.secretFile.writeScoped(Redacted.value(bridge.token)).pipe(Effect.mapError(configError))
    : Effect.succeed(undefined)

/**
 * Long lists go to a `--settings` file, so a huge policy never makes the spawn fail (E2BIG); the
 * application's hooks and the `sandbox` option go in the same file.
 */
export const policyArguments = Effect.fnUntraced(function*(
  env: LocalEnv,
  policy: ToolPolicy.ToolPolicy,
  approvalTools: ReadonlyArray<Tool.Tool>
) {
  const fitted = ToolPolicy.boundPolicy(policy)
  if (Result.isFailure(fitted)) return yield* configError(fitted.failure)
  const needsBridge = ClaudeHooks.entries(env.options.hooks).length > 0 ||
    approvalTools.some((tool) => tool.needsApproval === true)
  const hooksBridge = needsBridge ? yield* env.hooksBridge : undefined
  const sandbox = env.options.sandbox === undefined ? undefined : Extensions.sandboxSettings(env.options.sandbox)
  const tokenFile = hooksBridge === undefined ? undefined : yield* tokenFileFor(env, hooksBridge)
  const settings = hooksBridge === undefined && sandbox === undefined
    ? fitted.success.settings
    : {
      ...fitted.success.settings,
      ...(hooksBridge === undefined ? {} : {
        hooks: withGate(env, hookSettings(env.options.hooks, hooksBridge, tokenFile), hooksBridge, approvalTools)
      }),
      ...(sandbox === undefined ? {} : { sandbox })
    }
  const settingsPath = settings === undefined
    ? undefined
    : yield* env.secretFile.writeScoped(JSON.stringify(settings)).pipe(Effect.mapError(configError))
  return ToolPolicy.toBoundedCliFlags(fitted.success, settingsPath)
})

/** Fails with the upgrade advice when an option needs a feature the installed CLI lacks. */
const requireFeatures = (options: Options, cli: CliVersion.CliVersion) => {
  if (options.permissionMode === "dontAsk" && !CliVersion.supports(cli, "dontAskMode")) {
    return Effect.fail(CliVersion.unsupported(provider, cli, "dontAskMode"))
  }
  if (options.maxBudgetUsd !== undefined && !CliVersion.supports(cli, "maxBudgetFlag")) {
    return Effect.fail(CliVersion.unsupported(provider, cli, "maxBudgetFlag"))
  }
  if (options.effort !== undefined && !CliVersion.supports(cli, "effortFlag")) {
    return Effect.fail(CliVersion.unsupported(provider, cli, "effortFlag"))
  }
  if ((options.thinking ?? options.maxThinkingTokens) !== undefined && !CliVersion.supports(cli, "thinkingFlags")) {
    return Effect.fail(CliVersion.unsupported(provider, cli, "thinkingFlags"))
  }
  if (options.tools !== undefined && !CliVersion.supports(cli, "toolsFlag")) {
    return Effect.fail(CliVersion.unsupported(provider, cli, "toolsFlag"))
  }
  if ((options.plugins ?? []).length > 0 && !CliVersion.supports(cli, "pluginDirFlags")) {
    return Effect.fail(CliVersion.unsupported(provider, cli, "pluginDirFlags"))
  }
  // Not a hook that merely never fires: an old CLI may drop the whole settings file with it.
  if ((options.hooks?.Interrupt?.length ?? 0) > 0 && !CliVersion.supports(cli, "interruptHook")) {
    return Effect.fail(CliVersion.unsupported(provider, cli, "interruptHook"))
  }
  return Effect.void
}

/**
 * The policy a run started now gets: resolved for the servers it mounts (the bridge, when it
 * serves tools, and the application's). Fails with the `config` error of a refused policy.
 */
export const currentPolicy = Effect.fnUntraced(function*(env: LocalEnv) {
  const toolSet = yield* Ref.get(env.tools)
  const running = yield* Ref.get(env.bridge)
  const serving = toolSet.tools.length > 0 && Option.isSome(running)
  const requested = [...(serving ? [env.serverName] : []), ...Object.keys(env.options.mcpServers ?? {})]
  const policy = yield* env.policy.resolve(requested)
  return { toolSet, running, serving, policy }
})

/**
 * What a run needs that holds no resource: the CLI's version (and the features an option needs
 * of it), the resolved policy, the tools, the permission bridge. A kept-alive CLI is reused while
 * this stays the same (see {@link liveKey}).
 */
export const planRun = Effect.fnUntraced(function*(env: LocalEnv, responseFormat: RunInput["responseFormat"]) {
  const { options, serverName } = env
  const cli = yield* env.cliVersion
  yield* requireFeatures(options, cli)
  const { policy, running, serving, toolSet } = yield* currentPolicy(env)
  const permissions = yield* env.permissionBridge
  const schema = responseFormat === undefined ? undefined : JSON.stringify(responseFormat.schema)
  const structured = CliVersion.supports(cli, "jsonSchema")
  return {
    cli,
    toolSet,
    running,
    policy,
    mounted: serving && policy.mountedServers.includes(serverName),
    permissions,
    permissionPromptTool: permissions === undefined
      ? undefined
      : `mcp__${env.permissionServer}__${PermissionToolName}`,
    jsonSchema: structured ? schema : undefined,
    // For a CLI without `--json-schema` the schema goes in the prompt.
    schemaText: schema === undefined || structured ? undefined : schemaInstruction(schema)
  }
})

/** A run's plan (see {@link planRun}). */
export type RunPlan = Effect.Success<ReturnType<typeof planRun>>

/**
 * Everything a process is started with but the session, the files' paths and its budget:
 * options are fixed for the client, so the plan's varying parts (the tools, the policy,
 * `--json-schema`) and the environment of now stand for its argv; the bridge's tools stand for
 * its config. The budget stays out: what the conversation has left shrinks every turn, and a
 * process given the rest at its start, counting its own spend, already stops at the same total.
 */
export const liveKey = (env: LocalEnv, plan: RunPlan) =>
  JSON.stringify([
    plan.cli,
    plan.policy,
    plan.mounted ? plan.toolSet.tools.map((t) => [t.name, t.description, t.inputSchema, t.needsApproval === true]) : [],
    plan.permissionPromptTool ?? null,
    plan.jsonSchema ?? null,
    env.runEnv()
  ])

/** What a run is started with besides its plan. */
export interface RunStart {
  readonly sessionId: Option.Option<string>
  readonly fork: boolean
  readonly streamInput: boolean
  readonly budgetUsd: number | undefined
}

/**
 * The run's command, argv and environment, and its bridge run if the tools are mounted. What it
 * acquires lives in the current scope: the policy's settings file, the run's own bridge token
 * (`openRun`: when the scope closes the bridge closes the run's sessions and interrupts the tool
 * calls it started; until then they are traced under the span current here) and the 0600 MCP
 * config. The scope is one run's, or a kept-alive CLI's.
 */
export const prepareRun = Effect.fnUntraced(function*(env: LocalEnv, plan: RunPlan, turn: RunStart) {
  const { options } = env
  const { permissionPromptTool, permissions, policy, running } = plan
  const policyArgs = yield* policyArguments(
    env,
    serverAllowRules(hidePermissionTool(policy, permissionPromptTool)),
    plan.mounted ? plan.toolSet.tools : []
  )
  // The file goes first (finalizers run in reverse), then the run's token.
  const runAccess = plan.mounted && Option.isSome(running) ? yield* running.value.openRun : undefined
  // One 0600 file for every server: the bridge's token and the application's headers and env
  // stay out of argv.
  const servers: Record<string, unknown> = {
    ...(runAccess === undefined ? {} : runAccess.mcpConfig.mcpServers),
    ...(permissions === undefined ? {} : permissions.mcpConfig.mcpServers)
  }
  for (const [name, server] of Object.entries(options.mcpServers ?? {})) {
    if (policy.mountedServers.includes(name)) servers[name] = mcpConfigEntry(server)
  }
  const mcpConfigPath = Object.keys(servers).length > 0
    ? yield* env.secretFile.writeScoped(`${JSON.stringify({ mcpServers: servers }, null, 2)}\n`).pipe(
      Effect.mapError(configError)
    )
    : undefined
  const runOptions: RunOptions = {
    command: env.binary,
    args: buildArgs(options, {
      ...turn,
      mcpConfigPath,
      policy,
      policyArgs,
      jsonSchema: plan.jsonSchema,
      permissionPromptTool,
      hookEvents: ClaudeHooks.entries(options.hooks).length > 0 && CliVersion.supports(plan.cli, "hookEvents")
    }),
    // Read at each start: the allow-list of the environment of now.
    env: env.runEnv(),
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    ...(options.killGrace === undefined ? {} : { killGrace: options.killGrace })
  }
  return { runOptions, bridgeRun: runAccess }
})
