/**
 * `GeminiCli` with `keepAlive`: one `gemini --acp` per conversation holding one ACP session, a
 * `session/prompt` per turn. The process starts on the first turn and is replaced when a turn
 * needs another one (its key: the tool set and the policy it was started with), after a failed
 * turn, and when it died; its replacement continues the session with `session/load`. It stops
 * when the client's scope closes, or once no turn ran for `idleTimeout`. The bridge's bearer
 * still travels only in `session/new` (or `session/load`) on stdin.
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberHandle from "effect/FiberHandle"
import { identity } from "effect/Function"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import {
  ConfigurationError,
  InvalidResponseError,
  ProcessError,
  type ProviderError
} from "../../services/ChatClient.ts"
import type { SessionStoreError } from "../../services/ClaudeSessionStore.ts"
import type { RunOptions, SubprocessError, SubprocessService } from "../../services/Subprocess.ts"
import type { Emit } from "../chat/loopClient.ts"
import { bounded, type RunInput, withTurnTimeout } from "../claude/session.ts"
import * as Acp from "./acp.ts"
import * as Run from "./run.ts"

/** How the process's output ended. */
export interface Ended {
  /** Undefined when the process was stopped by us or could not run. */
  readonly exitCode: number | undefined
  readonly stderr: string
  readonly error: SubprocessError | undefined
}

/** A request the process never answered: its output ended first. */
export interface AcpEnded {
  readonly _tag: "AcpEnded"
  readonly ended: Ended
  /** True when nothing of the prompt had arrived: the process was already gone when it was sent. */
  readonly silent: boolean
}

/** One kept-alive `gemini --acp` and its session. */
export interface LiveAcp {
  /** What it was started with ({@link Run.TurnPlan.key}). */
  readonly key: string
  readonly sessionId: string
  /** False once its output ended. */
  readonly alive: () => boolean
  /** One `session/prompt`: the updates go to `emit` as they arrive. */
  readonly prompt: (
    blocks: ReadonlyArray<string>,
    emit: Emit | undefined
  ) => Effect.Effect<Acp.AcpOutcome, Acp.AcpFailure | AcpEnded>
  /**
   * After a prompt's fiber was interrupted: `session/cancel`, then waits up to `within` for the
   * prompt's answer. True when the process is ready for the next prompt.
   */
  readonly settle: (within: Duration.Input) => Effect.Effect<boolean>
  /** Stops the process (after `settle` since its last answer) and releases its files and credential. */
  readonly close: Effect.Effect<void>
}

/** What a process is started with: its run options and the MCP servers of its session. */
export interface Prepared {
  readonly runOptions: Omit<RunOptions, "input" | "stdin">
  readonly mcpServers: ReadonlyArray<Acp.AcpMcpServer>
  /** What each prompt runs inside: the bridge run's span, so that a turn's tool calls join its trace. */
  readonly aroundTurn?: (<A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>) | undefined
}

/**
 * Starts a process in a scope of its own, forked from `parent`, and opens its session (new, or
 * `resume` loaded). `prepare` runs in that scope, so its files and bridge credential live exactly
 * as long as the process.
 */
export const start = Effect.fnUntraced(function*<E>(params: {
  readonly subprocess: SubprocessService
  readonly parent: Scope.Scope
  readonly key: string
  readonly cwd: string
  readonly resume: string | undefined
  readonly prepare: Effect.Effect<Prepared, E, Scope.Scope>
  /** Time the CLI gets after an answer to write its session file before it may be stopped. */
  readonly settle: Duration.Input
}): Effect.fn.Return<LiveAcp, E | Acp.AcpFailure | AcpEnded> {
  const scope = yield* Scope.fork(params.parent, "sequential")
  const close = Scope.close(scope, Exit.void)
  const { aroundTurn = identity, mcpServers, runOptions } = yield* params.prepare.pipe(
    Scope.provide(scope),
    Effect.onError(() => close)
  )
  const input = yield* Queue.unbounded<string, Cause.Done>()
  const endedSignal = yield* Deferred.make<Ended>()
  const waiting = new Map<
    number,
    { readonly method: string; readonly answer: Deferred.Deferred<unknown, Acp.AcpFailure | AcpEnded> }
  >()
  let nextId = 0
  let ended: Ended | undefined
  let onUpdate: ((update: Acp.Json) => Effect.Effect<void>) | undefined
  let open: Deferred.Deferred<unknown, Acp.AcpFailure | AcpEnded> | undefined
  let heard = false
  let answeredAt = 0

  const end = (e: Ended) =>
    Effect.suspend(() => {
      if (ended !== undefined) return Effect.void
      ended = e
      const unanswered = [...waiting.values()]
      waiting.clear()
      const failure: AcpEnded = { _tag: "AcpEnded", ended: e, silent: !heard }
      return Effect.andThen(
        Effect.forEach(unanswered, (w) => Deferred.fail(w.answer, failure), { discard: true }),
        Deferred.succeed(endedSignal, e)
      )
    })
  const stopped = end({ exitCode: undefined, stderr: "", error: undefined })
  yield* Scope.addFinalizer(scope, stopped)

  const send = (line: string) => Effect.asVoid(Queue.offer(input, line))
  const request = (method: string, params: unknown) =>
    Effect.suspend(() => {
      if (ended !== undefined) {
        return Effect.fail<AcpEnded>({ _tag: "AcpEnded", ended, silent: true })
      }
      const id = ++nextId
      const answer = Deferred.makeUnsafe<unknown, Acp.AcpFailure | AcpEnded>()
      waiting.set(id, { method, answer })
      if (method === "session/prompt") open = answer
      return Effect.andThen(send(Acp.rpc(id, method, params)), Deferred.await(answer))
    })

  const route = (raw: string): Effect.Effect<void> => {
    const message = Acp.parse(raw)
    if (message === undefined) return Effect.void
    const method = message["method"]
    const params = message["params"]
    if (typeof method === "string") {
      if (method === "session/update" && Acp.isObject(params) && Acp.isObject(params["update"])) {
        heard = true
        return onUpdate === undefined ? Effect.void : onUpdate(params["update"])
      }
      if (message["id"] === undefined) return Effect.void
      return send(
        method === "session/request_permission"
          ? Acp.reply(message["id"], { result: Acp.refusal(params) })
          : Acp.reply(message["id"], { error: { code: -32601, message: `${method} is not offered by this client` } })
      )
    }
    const id = Number(message["id"])
    const asked = waiting.get(id)
    if (asked === undefined) return Effect.void
    waiting.delete(id)
    heard = true
    const error = message["error"]
    return Effect.asVoid(
      Acp.isObject(error)
        ? Deferred.fail(asked.answer, Acp.failureOf(asked.method, error))
        : Deferred.succeed(asked.answer, message["result"])
    )
  }

  yield* params.subprocess.stream({ ...runOptions, input: Stream.fromQueue(input) }).pipe(
    Stream.runForEach(route),
    Effect.matchCauseEffect({
      onSuccess: () => end({ exitCode: 0, stderr: "", error: undefined }),
      onFailure: (cause) => {
        const error = Option.getOrUndefined(Cause.findErrorOption(cause))
        return end({
          exitCode: error?.reason._tag === "Exited" ? error.reason.exitCode : undefined,
          stderr: error !== undefined && "stderrTail" in error.reason ? error.reason.stderrTail : "",
          error
        })
      }
    }),
    // Closing the scope interrupts the reader, which stops the process group.
    Effect.onInterrupt(() => stopped),
    Effect.forkIn(scope)
  )
  // Runs before the reader is interrupted (finalizers run in reverse): the CLI writes its session
  // file shortly after an answer, and with an MCP server connected it never exits on its own.
  yield* Scope.addFinalizer(
    scope,
    Effect.suspend(() => {
      const wait = Duration.toMillis(params.settle) - (Date.now() - answeredAt)
      return ended !== undefined || wait <= 0 ? Effect.void : Effect.sleep(Duration.millis(wait))
    }).pipe(Effect.andThen(Queue.end(input)))
  )

  /** `effect`, or the process's end if that comes first. */
  const orEnded = <A, E2>(effect: Effect.Effect<A, E2>) =>
    Effect.raceFirst(
      effect,
      Effect.flatMap(
        Deferred.await(endedSignal),
        (e) => Effect.fail<AcpEnded>({ _tag: "AcpEnded", ended: e, silent: false })
      )
    )

  const openSession = Effect.gen(function*() {
    yield* request("initialize", { protocolVersion: 1, clientCapabilities: {} })
    const session = { cwd: params.cwd, mcpServers }
    if (params.resume === undefined) {
      const result = yield* request("session/new", session)
      const id = Acp.isObject(result) ? result["sessionId"] : undefined
      if (typeof id === "string") return id
      return yield* Effect.fail<Acp.AcpFailure>({
        _tag: "AcpFailure",
        method: "session/new",
        code: undefined,
        message: "no sessionId in the answer"
      })
    }
    // `session/load` replays the history as updates after its answer; the command list the CLI
    // schedules behind the replay says it is over (no replayed chunk may reach the first turn).
    const replayed = yield* Deferred.make<void>()
    onUpdate = (
      update
    ) => (Acp.isReplayEnd(update) ? Effect.asVoid(Deferred.succeed(replayed, undefined)) : Effect.void)
    yield* request("session/load", { ...session, sessionId: params.resume })
    yield* orEnded(Deferred.await(replayed))
    return params.resume
  }).pipe(Effect.ensuring(Effect.sync(() => (onUpdate = undefined))), Effect.onError(() => close))
  const sessionId = yield* openSession

  const prompt = (blocks: ReadonlyArray<string>, emit: Emit | undefined) =>
    Effect.suspend(() => {
      const reader = Acp.makeUpdateReader(emit)
      onUpdate = reader.onUpdate
      heard = false
      return request("session/prompt", Acp.promptParams(sessionId, blocks)).pipe(
        Effect.map((result) => {
          answeredAt = Date.now()
          return reader.outcome(sessionId, result)
        }),
        Effect.ensuring(Effect.sync(() => (onUpdate = undefined)))
      )
    })

  const settle = (within: Duration.Input) =>
    Effect.suspend(() => {
      // The prompt's answer, unless it came: an interrupted fiber leaves the prompt running in the CLI.
      const answer = open
      if (answer === undefined || Deferred.isDoneUnsafe(answer) || ended !== undefined) {
        return Effect.succeed(ended === undefined)
      }
      return send(`${JSON.stringify({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId } })}\n`).pipe(
        Effect.andThen(Deferred.await(answer)),
        Effect.as(true),
        Effect.catch(() => Effect.succeed(false)),
        // Run from a finalizer (uninterruptible): the bound must still be able to stop the wait.
        Effect.interruptible,
        Effect.timeoutOrElse({ duration: within, orElse: () => Effect.succeed(false) })
      )
    })

  const live: LiveAcp = {
    key: params.key,
    sessionId,
    alive: () => ended === undefined,
    prompt: (blocks, emit) => aroundTurn(prompt(blocks, emit)),
    settle,
    close
  }
  return live
})

/** A kept-alive process that ended before answering: why, and that the next turn starts anew. */
const endedEarly = (e: AcpEnded): ProviderError => {
  if (e.ended.error !== undefined && e.ended.error.reason._tag !== "Exited") return Run.fromSubprocess(e.ended.error)
  const stderr = bounded(e.ended.stderr.trim(), 1_000)
  return Run.fail(
    new ProcessError({
      message: `The kept-alive Gemini CLI ended before answering (${
        e.ended.exitCode === undefined ? "stopped" : `exit code ${e.ended.exitCode}`
      })${stderr === "" ? "" : `: ${stderr}`}; the next turn starts a new one`,
      ...(e.ended.exitCode === undefined ? {} : { exitCode: e.ended.exitCode })
    })
  )
}

/**
 * How long an interrupted turn may take to stop politely (`session/cancel`, then the prompt's
 * answer) before its process is stopped instead.
 */
const PoliteStop = Duration.seconds(3)

/** Time the CLI gets after an answer to finish writing its session file. */
const SessionSettle = Duration.seconds(1)

/** How long a kept CLI may sit idle (no turn running) before it is stopped: 5 minutes. */
export const DefaultIdleTimeout = Duration.minutes(5)

/** `idleTimeout` as a duration, or the refusal of one that is not a duration of zero or more. */
const idleTimeoutOf = (input: Duration.Input | undefined) => {
  const idle = Duration.fromInput(input ?? DefaultIdleTimeout)
  return Option.isSome(idle) && Duration.isGreaterThanOrEqualTo(idle.value, Duration.zero)
    ? Effect.succeed(idle.value)
    : Effect.fail(
      Run.fail(
        new ConfigurationError({ message: `GeminiCli idleTimeout must be a duration ≥ 0, got ${String(input)}` })
      )
    )
}

/**
 * The kept-alive client's run: its processes and idle timer live in `parent` (the client's scope).
 * Turns never overlap (the conversation runs one at a time), so only the idle timer races a turn:
 * a turn first stops the timer, waiting for a stop already under way to finish.
 */
export const makeLive = Effect.fnUntraced(function*(env: Run.GeminiEnv, parent: Scope.Scope) {
  const idleTimer = yield* FiberHandle.make<void, never>().pipe(Scope.provide(parent))
  let current: LiveAcp | undefined
  const drop = Effect.suspend(() => {
    const ending = current
    current = undefined
    return ending === undefined ? Effect.void : ending.close
  })

  /** The process for a turn: the current one when it is alive, has the plan's key and carries `sessionId`. */
  const acquire = Effect.fnUntraced(function*(plan: Run.TurnPlan, sessionId: Option.Option<string>) {
    const cli = current
    if (
      cli !== undefined && cli.alive() && cli.key === plan.key && Option.isSome(sessionId) &&
      cli.sessionId === sessionId.value
    ) return { cli, reused: true }
    yield* drop
    const resume = Option.getOrUndefined(sessionId)
    if (resume !== undefined) yield* Run.prepareResume(env, resume)
    const started = yield* start({
      subprocess: env.subprocess,
      parent,
      key: plan.key,
      cwd: env.cwd,
      resume,
      prepare: Run.prepareProcess(env, plan),
      settle: SessionSettle
    })
    current = started
    return { cli: started, reused: false }
  })

  /**
   * After a failed turn: an interrupted fiber cancels the prompt and keeps the process when it
   * answers in time; anything else stops it (the next turn loads the session in a new one).
   */
  const afterFailure = <E>(cause: Cause.Cause<E>) =>
    Effect.gen(function*() {
      const cli = current
      if (Cause.hasInterruptsOnly(cause) && cli !== undefined && (yield* cli.settle(PoliteStop))) return
      yield* drop
    })

  /** One prompt; a kept process that died while idle (killed, crashed) is replaced once, transparently. */
  const attempt = (
    input: RunInput,
    plan: Run.TurnPlan,
    retry: boolean
  ): Effect.Effect<Acp.AcpOutcome, Acp.AcpFailure | AcpEnded | SessionStoreError> =>
    Effect.flatMap(
      acquire(plan, input.sessionId),
      ({ cli, reused }) =>
        cli.prompt(Run.blocksOf(input), input.emit).pipe(
          Effect.catch((e) =>
            retry && reused && e._tag === "AcpEnded" && e.silent
              ? Effect.andThen(drop, attempt(input, plan, false))
              : Effect.fail(e)
          )
        )
    )

  /**
   * After a turn: the process left (if any) is stopped once idle for `idle`, its session file
   * written first (`close` waits for it as on the client's close).
   */
  const armIdle = (idle: Duration.Duration) =>
    Effect.suspend(() =>
      current === undefined || !Duration.isFinite(idle)
        ? Effect.void
        : Effect.asVoid(FiberHandle.run(idleTimer, Effect.andThen(Effect.sleep(idle), Effect.uninterruptible(drop))))
    )

  const run = Effect.fnUntraced(
    function*(input: RunInput) {
      // Refused before a process is started, and without dropping the running one.
      const plan = yield* Run.planTurn(env, input)
      const idle = yield* idleTimeoutOf(env.options.idleTimeout)
      yield* FiberHandle.clear(idleTimer)
      const outcome = yield* attempt(input, plan, true).pipe(
        Effect.mapError((e) => e._tag === "AcpFailure" ? Run.fromAcp(e) : e._tag === "AcpEnded" ? endedEarly(e) : e),
        withTurnTimeout(Run.provider, env.options.requestTimeout ?? Run.DefaultRequestTimeout),
        Effect.onError(afterFailure),
        Effect.ensuring(armIdle(idle))
      )
      if (outcome.stopReason === "cancelled") {
        return yield* Run.fail(new InvalidResponseError({ message: "Gemini CLI cancelled the prompt" }))
      }
      return yield* Run.finishTurn(input, outcome)
    }
  )

  return { run, drop }
})
