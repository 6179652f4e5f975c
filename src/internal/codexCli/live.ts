/**
 * `CodexCli` with `keepAlive`: one `codex app-server` per client holding the conversation's thread,
 * a `turn/start` per turn. The process starts on the first turn with the `exec` path's settings
 * (isolation, bridge, compiled policy, provider, skills off) and is replaced when a turn needs
 * another one (its key: the tool set, the policy and the skills it was started with), after a
 * failed turn, and when it died; its replacement continues the thread with `thread/resume`. It
 * stops when the client's scope closes, and the bridge credential in its environment with it.
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { identity } from "effect/Function"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as path from "node:path"
import {
  ConfigurationError,
  InvalidResponseError,
  ProcessError,
  type ProviderError,
  reasonFromHttpStatus
} from "../../services/ChatClient.ts"
import type { McpBridgeRun, McpBridgeService } from "../../services/McpBridge.ts"
import type { RunOptions, SubprocessService } from "../../services/Subprocess.ts"
import type { Emit } from "../chat/loopClient.ts"
import { bounded, type RunInput, type RunOutcome, withTurnTimeout } from "../claude/session.ts"
import * as AppServer from "./appServer.ts"
import * as Args from "./args.ts"
import { isObject } from "./events.ts"
import { makeTurnReader, type TurnOutcome } from "./notifications.ts"
import * as Run from "./run.ts"
import * as Skills from "./skills.ts"

/** What a turn runs with, decided before any process starts. */
export interface TurnPlan {
  readonly bridge: Option.Option<McpBridgeService>
  readonly mounted: boolean
  readonly policy: Args.PolicySwitches | undefined
  readonly skillFiles: ReadonlyArray<string>
  /** What a process started for this plan was given: a kept-alive server serves only turns with its key. */
  readonly key: string
}

/** What a process is started with. */
export interface Prepared {
  readonly runOptions: Omit<RunOptions, "input" | "stdin">
  /** The bridge run whose credential the process holds, when your tools are mounted. */
  readonly access: McpBridgeRun | undefined
}

/** One kept-alive `codex app-server` and its thread. */
export interface LiveServer {
  readonly key: string
  readonly threadId: string
  readonly alive: () => boolean
  /** One `turn/start` with the prompt as a text item; its notifications go to `emit` as they come. */
  readonly turn: (
    text: string,
    outputSchema: unknown,
    emit: Emit | undefined
  ) => Effect.Effect<TurnOutcome, AppServer.RpcFailure | AppServer.ServerEnded>
  /** Whether the process reached the bridge: its MCP startup said "ready", or it opened a session. */
  readonly reachedBridge: Effect.Effect<boolean>
  /**
   * After a turn's fiber was interrupted: `turn/interrupt`, then waits up to `within` for the
   * turn's end. True when the process is ready for the next turn.
   */
  readonly settle: (within: Duration.Input) => Effect.Effect<boolean>
  /** Stops the process and releases its files and bridge credential. */
  readonly close: Effect.Effect<void>
}

/** The turn's plan: the policy is compiled (a refusal fails here, before any process starts). */
export const planTurn = Effect.fnUntraced(function*(env: Run.CodexEnv) {
  const policy = Run.compilePolicy(env.options, env.serverName)
  if (Result.isFailure(policy)) return yield* Effect.fail(policy.failure)
  const bridge = env.bridge()
  const tools = env.tools().tools
  const mounted = Option.isSome(bridge) && tools.length > 0
  const skillFiles = env.options.loadSkills === true
    ? []
    : yield* Effect.sync(() => Skills.skillFiles(Skills.roots(env.codexHome, env.home, env.cwd)))
  // The CLI lists a server's tools once, when it connects: another tool set needs another process.
  const key = JSON.stringify({
    policy: policy.success,
    mounted,
    skillFiles,
    tools: tools.map((tool) => [tool.name, tool.description])
  })
  const plan: TurnPlan = { bridge, mounted, policy: policy.success, skillFiles, key }
  return plan
})

/**
 * A process's run options for `plan`, in the caller's scope: its instructions file in a private
 * directory, and a bridge credential of its own in its environment only.
 */
export const prepareProcess = Effect.fnUntraced(function*(env: Run.CodexEnv, plan: TurnPlan) {
  const runDir = yield* Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(env.dir, "live-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )
  const { systemPrompt } = env.options
  const instructionsFile = systemPrompt === undefined ? undefined : path.join(runDir, "instructions.md")
  if (instructionsFile !== undefined) yield* Run.writePrivate(instructionsFile, `${systemPrompt}`)
  const secrets: Record<string, string> = {}
  const access = plan.mounted && Option.isSome(plan.bridge) ? yield* plan.bridge.value.openRun : undefined
  if (access !== undefined) secrets[Args.BridgeTokenVar] = Redacted.value(access.token)
  const args = Args.appServerArgs(env.options, {
    serverName: env.serverName,
    bridgeUrl: access === undefined ? undefined : Option.getOrUndefined(plan.bridge)?.url,
    cwd: env.cwd,
    instructionsFile,
    skillFiles: plan.skillFiles,
    policy: plan.policy
  })
  const prepared: Prepared = {
    runOptions: {
      command: env.options.binary ?? "codex",
      args,
      env: Run.runEnv(env, secrets),
      cwd: env.cwd,
      ...(env.options.killGrace === undefined ? {} : { killGrace: env.options.killGrace })
    },
    access
  }
  return prepared
})

/**
 * Starts a process in a scope of its own, forked from `parent`, and opens its thread (new, or
 * `resume`'s). `prepare` runs in that scope, so its files and bridge credential live exactly as
 * long as the process.
 */
export const start = Effect.fnUntraced(function*<E>(params: {
  readonly subprocess: SubprocessService
  readonly parent: Scope.Scope
  readonly key: string
  readonly serverName: string
  readonly resume: string | undefined
  readonly settings: AppServer.ThreadSettings
  readonly prepare: Effect.Effect<Prepared, E, Scope.Scope>
}): Effect.fn.Return<LiveServer, E | AppServer.RpcFailure | AppServer.ServerEnded> {
  const scope = yield* Scope.fork(params.parent, "sequential")
  const close = Scope.close(scope, Exit.void)
  let active:
    | { readonly reader: ReturnType<typeof makeTurnReader>; readonly started: Deferred.Deferred<string> }
    | undefined
  let bridgeStatus: string | undefined
  const listener: AppServer.Listener = (method, message) => {
    if (method === "mcpServer/startupStatus/updated" && message["name"] === params.serverName) {
      bridgeStatus = String(message["status"])
    }
    // The turn's id, also for a turn whose caller left before `turn/start`'s answer came.
    if (method === "turn/started" && active !== undefined && isObject(message["turn"])) {
      Deferred.doneUnsafe(active.started, Exit.succeed(String(message["turn"]["id"])))
    }
    return active === undefined ? Effect.void : active.reader.onNotification(method, message)
  }
  // Whatever stops the opening (a failure, the turn's timeout or interruption) stops the process.
  const { access, connection, threadId } = yield* Effect.gen(function*() {
    const { access, runOptions } = yield* params.prepare
    const connection = yield* AppServer.connect(params.subprocess, runOptions)
    connection.listen(listener)
    const threadId = yield* connection.orEnded(AppServer.openThread(connection, params.resume, params.settings))
    return { access, connection, threadId }
  }).pipe(Scope.provide(scope), Effect.onError(() => close))

  const turn = (text: string, outputSchema: unknown, emit: Emit | undefined) =>
    Effect.suspend(() => {
      const reader = makeTurnReader(threadId, params.serverName, emit)
      const started = Deferred.makeUnsafe<string>()
      active = { reader, started }
      connection.quiet()
      return connection.request("turn/start", {
        threadId,
        input: [{ type: "text", text, text_elements: [] }],
        ...(outputSchema === undefined ? {} : { outputSchema })
      }).pipe(
        Effect.flatMap((result) => {
          const answered = isObject(result) && isObject(result["turn"]) ? result["turn"]["id"] : undefined
          if (typeof answered === "string") Deferred.doneUnsafe(started, Exit.succeed(answered))
          return connection.orEnded(Deferred.await(reader.finished))
        }),
        Effect.map(reader.outcome),
        // The turn may still run until `settle` stops it: its events no longer reach the caller.
        Effect.onInterrupt(() => Effect.sync(reader.mute))
      )
    })

  const settle = (within: Duration.Input) =>
    Effect.suspend(() => {
      const turn = active
      if (turn === undefined || Deferred.isDoneUnsafe(turn.reader.finished) || !connection.alive()) {
        return Effect.succeed(connection.alive())
      }
      return Deferred.await(turn.started).pipe(
        Effect.flatMap((turnId) => connection.request("turn/interrupt", { threadId, turnId })),
        Effect.andThen(connection.orEnded(Deferred.await(turn.reader.finished))),
        Effect.as(true),
        Effect.catch(() => Effect.succeed(false)),
        // Run from a finalizer (uninterruptible): the bound must still be able to stop the wait.
        Effect.interruptible,
        Effect.timeoutOrElse({ duration: within, orElse: () => Effect.succeed(false) })
      )
    })

  const live: LiveServer = {
    key: params.key,
    threadId,
    alive: connection.alive,
    turn: (text, outputSchema, emit) =>
      (access === undefined ? identity : access.withRunSpan)(turn(text, outputSchema, emit)),
    reachedBridge: Effect.suspend(() =>
      bridgeStatus === "ready" || access === undefined
        ? Effect.succeed(true)
        : Effect.map(access.sessionCount, (open) => open > 0)
    ),
    settle,
    close
  }
  return live
})

/** A protocol failure, or a process that ended before answering, as the turn's error. */
const toProviderError = (e: AppServer.RpcFailure | AppServer.ServerEnded): ProviderError => {
  if (e._tag === "RpcFailure") {
    return Run.fail(
      e.method === "thread/resume"
        ? new ConfigurationError({
          message: `Codex CLI could not resume the thread (${e.message}); resume needs the same \`home\``
        })
        : new InvalidResponseError({ message: `Codex CLI failed ${e.method}: ${e.message}` })
    )
  }
  if (e.ended.error !== undefined && e.ended.error.reason._tag !== "Exited") return Run.fromSubprocess(e.ended.error)
  const stderr = bounded(e.ended.stderr.trim(), 1_000)
  return Run.fail(
    new ProcessError({
      message: `The kept-alive Codex CLI ended before answering (${
        e.ended.exitCode === undefined ? "stopped" : `exit code ${e.ended.exitCode}`
      })${stderr === "" ? "" : `: ${stderr}`}; the next turn starts a new one`,
      ...(e.ended.exitCode === undefined ? {} : { exitCode: e.ended.exitCode })
    })
  )
}

/** How the turn ended, as its error if it did not complete; a bridge never reached fails it too. */
const judge = Effect.fnUntraced(function*(env: Run.CodexEnv, server: LiveServer, outcome: TurnOutcome) {
  if (outcome.failure !== undefined) {
    const { httpStatus, message } = outcome.failure
    return yield* Run.fail(
      httpStatus === undefined || /\bstatus \d{3}\b/.test(message)
        ? Run.failureReason(message)
        : reasonFromHttpStatus({ status: httpStatus, message: `Codex CLI: ${message}` })
    )
  }
  if (outcome.status === "interrupted") {
    return yield* Run.fail(new InvalidResponseError({ message: "Codex CLI interrupted the turn" }))
  }
  if (!outcome.bridgeCalled && !(yield* server.reachedBridge)) {
    return yield* Run.fail(
      new ConfigurationError({
        message: `Codex CLI could not use the tool server (MCP server ${env.serverName}); refusing an answer ` +
          "given without tools. Its stderr says why (a proxy in between, a changed bearer variable in `env`)"
      })
    )
  }
})

/** Counts the turn's usage and gives the conversation its outcome. */
const finishTurn = Effect.fnUntraced(function*(
  env: Run.CodexEnv,
  input: RunInput,
  threadId: string,
  outcome: TurnOutcome
) {
  yield* input.recordResult({
    type: "result",
    is_error: false,
    result: outcome.text,
    session_id: threadId,
    permission_denials: [],
    ...(outcome.usage === undefined ? {} : { usage: Run.turnUsage(env, threadId, outcome.usage) })
  })
  const result: RunOutcome = {
    text: outcome.text,
    structured: undefined,
    sessionId: threadId,
    activity: outcome.activity
  }
  return result
})

/**
 * How long an interrupted turn may take to stop politely (`turn/interrupt`, then its end)
 * before its process is stopped instead.
 */
const PoliteStop = Duration.seconds(3)

/** The kept-alive client's run: its processes live in `parent` (the client's scope). */
export const makeLive = (env: Run.CodexEnv, parent: Scope.Scope) => {
  let current: LiveServer | undefined
  const drop = Effect.suspend(() => {
    const ending = current
    current = undefined
    return ending === undefined ? Effect.void : ending.close
  })

  /** The process for a turn: the current one when it is alive, has the plan's key and holds `sessionId`. */
  const acquire = Effect.fnUntraced(function*(plan: TurnPlan, sessionId: Option.Option<string>) {
    const server = current
    if (
      server !== undefined && server.alive() && server.key === plan.key && Option.isSome(sessionId) &&
      server.threadId === sessionId.value
    ) return { server, reused: true }
    yield* drop
    const resume = Option.getOrUndefined(sessionId)
    // A thread this client did not run yet: its usage counts from what its earlier turns used.
    yield* Run.rememberThread(env, resume)
    const started = yield* start({
      subprocess: env.subprocess,
      parent,
      key: plan.key,
      serverName: env.serverName,
      resume,
      settings: { cwd: env.cwd, model: env.options.model, sandbox: Args.sandboxOf(env.options, plan.policy) },
      prepare: prepareProcess(env, plan)
    })
    current = started
    return { server: started, reused: false }
  })

  /** One turn; a kept process that died while idle (killed, crashed) is replaced once, transparently. */
  const attempt = (
    input: RunInput,
    plan: TurnPlan,
    retry: boolean
  ): Effect.Effect<{ server: LiveServer; outcome: TurnOutcome }, AppServer.RpcFailure | AppServer.ServerEnded> =>
    Effect.flatMap(
      acquire(plan, input.sessionId),
      ({ reused, server }) =>
        server.turn(input.prompt, input.responseFormat?.schema, input.emit).pipe(
          Effect.map((outcome) => ({ server, outcome })),
          Effect.catch((e) =>
            retry && reused && e._tag === "ServerEnded" && e.silent
              ? Effect.andThen(drop, attempt(input, plan, false))
              : Effect.fail(e)
          )
        )
    )

  /**
   * After a failed turn: an interrupted fiber interrupts the turn and keeps the process when it
   * ends in time (the conversation then continues its thread); anything else stops it (the next
   * turn resumes the thread in a new one).
   */
  const afterFailure = <E>(input: RunInput, cause: Cause.Cause<E>) =>
    Effect.gen(function*() {
      const server = current
      if (Cause.hasInterruptsOnly(cause) && server !== undefined && (yield* server.settle(PoliteStop))) {
        if (input.stopped !== undefined) yield* input.stopped(server.threadId)
        return
      }
      yield* drop
    })

  const run = Effect.fnUntraced(function*(input: RunInput) {
    // Refused before a process is started, and without dropping the running one.
    const plan = yield* planTurn(env)
    const { outcome, server } = yield* attempt(input, plan, true).pipe(
      Effect.mapError(toProviderError),
      Effect.tap(({ outcome, server }) => judge(env, server, outcome)),
      withTurnTimeout(Run.provider, env.options.requestTimeout ?? Run.DefaultRequestTimeout),
      Effect.onError((cause) => afterFailure(input, cause))
    )
    return yield* finishTurn(env, input, server.threadId, outcome)
  })

  return { run, drop }
}
