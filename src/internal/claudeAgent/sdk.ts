/**
 * The private parts of the ClaudeAgent provider: loading the optional Agent SDK, the in-process
 * MCP server that serves a tool set over the SDK's control channel, the explicit environment
 * handed to the CLI, and a spawner that keeps hold of the CLI process so it can be killed.
 */
import type * as AgentSdk from "@anthropic-ai/claude-agent-sdk"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import type * as Scope from "effect/Scope"
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import { ConfigurationError, ProviderError } from "../../services/ChatClient.ts"
import * as Tool from "../../services/Tool.ts"
import { shuttingDown, trackGroup } from "../agentCli/exitCleanup.ts"
import * as McpServerSdk from "../agentCli/mcpServerSdk.ts"
import { mcpContent } from "../agentCli/mediaMcp.ts"
import type * as Telemetry from "../chat/telemetry.ts"

export type AgentSdkModule = typeof AgentSdk

export const provider = "claude-agent"

export const AgentSdkPackage = "@anthropic-ai/claude-agent-sdk"

export const sdkInstallHint = (specifier: string, cause: string) =>
  `The Claude Agent SDK (${specifier}) could not be loaded: ${cause}. It is an optional peer dependency of ` +
  `effect-chat-bridge/claude-agent: install it with \`npm install ${AgentSdkPackage}\` (it ships the claude ` +
  "binary), then log in with `claude` once or set ANTHROPIC_API_KEY."

const describe = (u: unknown) => (u instanceof Error ? u.message : String(u))

/**
 * Imports the Agent SDK at run time, so that the library loads without it. A missing package is a
 * `ConfigurationError` ProviderError saying how to install it.
 */
export const loadAgentSdk = (specifier: string = AgentSdkPackage): Effect.Effect<AgentSdkModule, ProviderError> =>
  Effect.tryPromise({
    try: () => import(specifier) as Promise<AgentSdkModule>,
    catch: (e) =>
      new ProviderError({
        provider,
        reason: new ConfigurationError({ message: sdkInstallHint(specifier, describe(e)) })
      })
  }).pipe(
    Effect.filterOrFail(
      (sdk) => typeof sdk.query === "function",
      () =>
        new ProviderError({
          provider,
          reason: new ConfigurationError({
            message: sdkInstallHint(specifier, "the module has no `query` export")
          })
        })
    )
  )

/** `_meta` key that keeps a tool in the model's context instead of behind tool search. */
export const AlwaysLoadMeta = "anthropic/alwaysLoad"

/**
 * A fresh in-process MCP server for one query, serving `set` with each tool's own JSON Schema
 * (through the low-level request handlers: no Zod). Every call runs through `executeTool` on a
 * fiber of this scope; it is interrupted when the CLI cancels the call (the request's abort
 * signal), when `abort` fires, or when the scope closes.
 */
export const makeToolServer = Effect.fnUntraced(
  function*(
    serverName: string,
    set: Tool.ToolSet,
    abort: AbortSignal,
    runSlot?: Telemetry.RunSlot
  ): Effect.fn.Return<AgentSdk.McpSdkServerConfigWithInstance, never, Scope.Scope> {
    // Loaded on first use: the SDK (and the zod, ajv it pulls) stays out of the main entry's import.
    const [{ CallToolRequestSchema, ListToolsRequestSchema }, McpServer] = yield* Effect.all([
      McpServerSdk.load,
      McpServerSdk.loadMcpServer
    ])
    const runFork = yield* FiberSet.makeRuntime<never, Tool.ToolResult, never>()
    const listing = set.tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: tool.inputSchema,
      _meta: { [AlwaysLoadMeta]: true }
    }))
    // An McpServer whose high-level registry stays empty, so only our handlers answer; it is the
    // instance type the SDK's config names.
    const mcp = new McpServer({ name: serverName, version: "0.1.0" }, { capabilities: { tools: {} } })
    mcp.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listing }))
    mcp.server.setRequestHandler(CallToolRequestSchema, (request, extra): Promise<CallToolResult> => {
      const call = new Tool.ToolCall(
        { id: String(extra.requestId), name: request.params.name, arguments: request.params.arguments ?? {} },
        { disableChecks: true }
      )
      const execute = Tool.executeTool(set, call)
      const fiber = runFork(runSlot === undefined ? execute : runSlot.apply(execute))
      const signals = [extra.signal, abort]
      const onAbort = () => fiber.interruptUnsafe()
      for (const signal of signals) {
        if (signal.aborted) onAbort()
        else signal.addEventListener("abort", onAbort, { once: true })
      }
      return new Promise((resolve, reject) => {
        fiber.addObserver((exit) => {
          for (const signal of signals) signal.removeEventListener("abort", onAbort)
          if (Exit.isSuccess(exit)) {
            resolve({ content: mcpContent(exit.value), isError: exit.value.isError })
          } else {
            reject(new Error(`Tool call ${call.name} was cancelled`))
          }
        })
      })
    })
    yield* Effect.addFinalizer(() => Effect.promise(() => mcp.close().catch(() => undefined)))
    return { type: "sdk", name: serverName, instance: mcp }
  }
)

const StderrTail = 4_000
/** The grace a CLI gets once the process received a termination signal: it goes with us anyway. */
const ShutdownGraceMs = 200

/** The CLI process of one query, as spawned for the SDK. */
export interface SpawnedCli {
  readonly child: ChildProcessWithoutNullStreams
  /** The last few KB of its stderr. */
  readonly stderr: () => string
  /** Stops the exit-time cleanup from killing its group (once the group is gone). */
  readonly untrack: () => void
}

/**
 * A `spawnClaudeCodeProcess` that starts the CLI as the leader of its own process group (so the
 * whole tree can be signalled) and reports it through `onSpawn`.
 */
export const spawner =
  (onSpawn: (cli: SpawnedCli) => void) => (options: AgentSdk.SpawnOptions): AgentSdk.SpawnedProcess => {
    const env: Record<string, string> = {}
    for (const [k, v] of Object.entries(options.env)) if (v !== undefined) env[k] = v
    const child = spawn(options.command, options.args, {
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
      env,
      stdio: ["pipe", "pipe", "pipe"],
      detached: true
    })
    let tail = ""
    child.stderr.setEncoding("utf8")
    child.stderr.on("data", (chunk: string) => {
      tail = (tail + chunk).slice(-StderrTail)
    })
    // The SDK fires this after its own graceful close window.
    options.signal.addEventListener("abort", () => signalGroup(child, "SIGTERM"), { once: true })
    // Killed when this process goes without running finalizers (Ctrl-C, SIGTERM, exit, SIGKILL).
    const untrack = child.pid === undefined ? () => {} : trackGroup(child.pid)
    onSpawn({ child, stderr: () => tail, untrack })
    return child
  }

const running = (child: ChildProcessWithoutNullStreams) => child.exitCode === null && child.signalCode === null

/** Signals the process group led by `child` (the CLI and anything it started). */
export const signalGroup = (child: ChildProcessWithoutNullStreams, signal: NodeJS.Signals) => {
  if (child.pid === undefined) return
  try {
    process.kill(-child.pid, signal)
  } catch {
    // The group is gone already.
  }
}

/**
 * Waits up to `ms` for `child` to exit; true if it did. Plain callbacks and a timer, no
 * interruption, so it works the same inside a finalizer of a fiber being interrupted.
 */
const exitWithin = (child: ChildProcessWithoutNullStreams, ms: number) =>
  Effect.callback<boolean>((resume) => {
    if (!running(child)) return resume(Effect.succeed(true))
    const started = Date.now()
    // Once the process got a termination signal the CLI goes with it anyway: a short grace only.
    const limit = () => shuttingDown() ? Math.min(ms, ShutdownGraceMs) : ms
    const onExit = () => {
      clearInterval(timer)
      resume(Effect.succeed(true))
    }
    const timer = setInterval(() => {
      if (Date.now() - started < limit()) return
      clearInterval(timer)
      child.off("exit", onExit)
      resume(Effect.succeed(running(child) === false))
    }, Math.min(ms, ShutdownGraceMs / 4))
    child.once("exit", onExit)
  })

/**
 * Ends the CLI: waits `grace` for it to exit on its own (the SDK closed its stdin), then SIGTERM,
 * then SIGKILL; finally SIGKILL to the group, for anything the CLI left behind.
 */
export const reap = Effect.fnUntraced(function*(cli: SpawnedCli, grace: number): Effect.fn.Return<void> {
  const { child } = cli
  if (!(yield* exitWithin(child, grace))) {
    signalGroup(child, "SIGTERM")
    if (!(yield* exitWithin(child, grace))) {
      signalGroup(child, "SIGKILL")
      yield* exitWithin(child, 2_000)
    }
  }
  signalGroup(child, "SIGKILL")
  cli.untrack()
})
