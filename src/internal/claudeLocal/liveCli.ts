/**
 * A kept-alive `claude -p --input-format stream-json` process: one CLI that answers turn after
 * turn, each turn a user message written to its stdin and read back up to its `result` line.
 *
 * A `LiveCli` is a small resource of its own (its process, and whatever files its arguments name,
 * live in its own scope), so that something other than one client can own it later: `LiveSlot`
 * keeps at most one per conversation and replaces it when what it was started with (its `key`)
 * no longer matches the turn, when its session is not the conversation's, or when it died.
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { identity } from "effect/Function"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Pool from "../../services/ClaudeProcessPool.ts"
import type { RunOptions, SubprocessError, SubprocessService } from "../../services/Subprocess.ts"
import type * as UserMessage from "../claude/userMessage.ts"

/** How the process's output ended: its exit code, or the error that ended the stream. */
export interface Ended {
  readonly _tag: "Ended"
  /** 0 after a clean exit; undefined when the process was stopped by us or could not run. */
  readonly exitCode: number | undefined
  readonly stderr: string
  readonly error: SubprocessError | undefined
}

/** What one turn read: its lines, up to and including the result line, and how it stopped. */
export interface TurnOutput {
  readonly lines: ReadonlyArray<string>
  /** Set when the process's output ended before the turn's result line. */
  readonly ended: Ended | undefined
  /** Whether `interrupt` was asked during the turn: only then is an `error_during_execution` result ours. */
  readonly interrupted: boolean
}

/** The CLI's answer to a control request: its `response` payload, its refusal, or none (it ended). */
export type ControlAnswer =
  | { readonly _tag: "Success"; readonly response: unknown }
  | { readonly _tag: "Error"; readonly error: string }
  | { readonly _tag: "Ended" }

/** One live CLI process. */
export interface LiveCli {
  /** What it was started with (argv without `--resume`, environment, tools); a turn needing another key needs another process. */
  readonly key: string
  /** The session it carries on: the one it resumed, then the one its last result named. */
  readonly sessionId: () => Option.Option<string>
  /** True until the first result of a process started with `--fork-session`: it has not forked yet. */
  readonly forks: () => boolean
  /** False once its output has ended (it exited, was killed, or was closed). */
  readonly alive: () => boolean
  /**
   * Writes `message` (built by `claudeUserMessage`, the only builder) and reads the turn's lines, handing each to `onLine` as it
   * arrives, up to the result line (or the end of the output). An interrupted turn leaves unread
   * lines behind: the caller must then `close` this process (`LiveSlot` does).
   */
  readonly turn: <E>(
    message: UserMessage.UserMessage,
    onLine: (line: string) => Effect.Effect<void, E>
  ) => Effect.Effect<TurnOutput, E>
  /**
   * Sends a `control_request` (`{subtype, …}`) and waits for its `control_response`, matched by
   * request id (the answers never reach a turn's lines).
   */
  readonly control: (
    request: { readonly subtype: string; readonly [k: string]: unknown }
  ) => Effect.Effect<ControlAnswer>
  /**
   * Asks the CLI to stop the running turn (dropping queued messages); the turn then reads to the
   * CLI's result and reports `interrupted`. None when no turn runs.
   */
  readonly interrupt: Effect.Effect<Option.Option<ControlAnswer>>
  /**
   * Writes `message` (with a `uuid` and a `priority`) into the running turn, which then also reads
   * what it causes; false when no turn runs.
   */
  readonly steer: (message: UserMessage.UserMessage) => Effect.Effect<boolean>
  /**
   * After a turn's fiber was interrupted: asks the CLI to stop that turn and reads its remaining
   * lines, up to `within`. True when the process is ready for the next turn (nothing was running,
   * or the turn ended in time); false means it must be closed.
   */
  readonly settle: (within: Duration.Input) => Effect.Effect<boolean>
  /** Stops the process (SIGTERM, then SIGKILL after the grace) and releases what its scope holds. */
  readonly close: Effect.Effect<void>
  /** Restarts its idle clock in the process pool (if any) before it is handed out for a turn. */
  readonly touch: Effect.Effect<void>
  /**
   * A spare's adoption by its conversation: runs `adopt` in the process's scope (what it acquires,
   * such as the conversation's bridge run, lives exactly as long as the process), hands the CLI
   * the servers it returns with `mcp_set_servers` (their credentials go over stdin, never argv;
   * the answer is not waited for: the next turn's init line shows the servers' state), and from
   * then on carries `key` and runs each turn inside `aroundTurn`. False when the CLI has ended:
   * the caller then closes it.
   */
  readonly claim: <E>(key: string, adopt: Effect.Effect<Adoption, E, Scope.Scope>) => Effect.Effect<boolean, E>
}

/** What a claimed spare is handed: its conversation's MCP servers and what each turn runs inside. */
export interface Adoption {
  readonly servers: Readonly<Record<string, unknown>>
  readonly aroundTurn?: LiveRunOptions["aroundTurn"]
}

/**
 * What a live CLI is started with: its run options and, optionally, what each of its turns runs
 * inside — the bridge run's `withRunSpan`, so that a turn's tool calls join that turn's trace
 * rather than the one the process was started in.
 */
export interface LiveRunOptions extends RunOptions {
  readonly aroundTurn?: (<A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>) | undefined
}

const isResult = (line: string) => {
  // Cheap pre-check: only lines that could be a result are parsed.
  if (!line.includes("\"result\"")) return false
  try {
    const json: unknown = JSON.parse(line)
    return typeof json === "object" && json !== null && (json as { type?: unknown }).type === "result"
  } catch {
    return false
  }
}

/** A `control_response` line: its request id and answer. */
const controlResponseOf = (line: string): { readonly id: string; readonly answer: ControlAnswer } | undefined => {
  if (!line.includes("\"control_response\"")) return undefined
  try {
    const json = JSON.parse(line) as {
      type?: unknown
      response?: { subtype?: unknown; request_id?: unknown; response?: unknown; error?: unknown }
    }
    const r = json.response
    if (json.type !== "control_response" || typeof r?.request_id !== "string") return undefined
    return {
      id: r.request_id,
      answer: r.subtype === "success"
        ? { _tag: "Success", response: r.response }
        : { _tag: "Error", error: typeof r.error === "string" ? r.error : JSON.stringify(r.error ?? r) }
    }
  } catch {
    return undefined
  }
}

/** A `command_lifecycle` line (claude 2.1.x reports the progress of each user message with a `uuid`). */
const lifecycleOf = (line: string): { readonly uuid: string; readonly state: string } | undefined => {
  if (!line.includes("\"command_lifecycle\"")) return undefined
  try {
    const json = JSON.parse(line) as { type?: unknown; command_uuid?: unknown; state?: unknown }
    return json.type === "command_lifecycle" && typeof json.command_uuid === "string" &&
        typeof json.state === "string"
      ? { uuid: json.command_uuid, state: json.state }
      : undefined
  } catch {
    return undefined
  }
}

/**
 * The turn being read: the user messages written into it (by uuid) that the CLI has not finished,
 * whether the CLI reports their progress at all (older CLIs do not: the first result ends the
 * turn), whether a result was read, and whether we asked to interrupt it.
 */
interface OpenTurn {
  readonly pending: Set<string>
  tracked: boolean
  resulted: boolean
  interrupted: boolean
}

const sessionOf = (line: string): string | undefined => {
  try {
    const id = (JSON.parse(line) as { session_id?: unknown }).session_id
    return typeof id === "string" ? id : undefined
  } catch {
    return undefined
  }
}

/**
 * Starts a live CLI in a scope of its own, forked from `parent`. `prepare` runs in that scope, so
 * what it acquires (the MCP config's secret file) lives exactly as long as the process; it returns
 * the run options (`input` is supplied here) and what each turn runs inside. The process is
 * spawned by a fiber of that scope, without waiting for it: its start-up overlaps whatever the
 * caller does next.
 */
export const start = Effect.fnUntraced(function*<E>(params: {
  readonly subprocess: SubprocessService
  readonly parent: Scope.Scope
  readonly key: string
  readonly resume: Option.Option<string>
  /** Whether the process was started with `--fork-session` (its first result names the new session). */
  readonly fork?: boolean | undefined
  readonly prepare: Effect.Effect<LiveRunOptions, E, Scope.Scope>
  readonly pool?: Option.Option<Pool.ClaudeProcessPoolService> | undefined
  /** A spare of the pool: its permit never waits, and it serves a conversation once `claim`ed. */
  readonly spare?: boolean | undefined
}): Effect.fn.Return<LiveCli, E | Pool.ProcessPoolTimeoutError> {
  const scope = yield* Scope.fork(params.parent, "sequential")

  const close = Scope.close(scope, Exit.void)
  // ClaudeProcessPool: a permit for as long as the process lives; eviction closes it.
  const permit = yield* Pool.acquireFrom(params.pool ?? Option.none(), close, { spare: params.spare }).pipe(
    Scope.provide(scope),
    Effect.onError(() => close)
  )
  const { aroundTurn: startedAround = identity, ...runOptions } = yield* params.prepare.pipe(
    Scope.provide(scope),
    Effect.onError(() => close)
  )
  // A spare gets both when claimed.
  let key = params.key
  let aroundTurn = startedAround
  // `end` (not shutdown) on close: the stdin stream finishes, so the CLI reads EOF.
  const input = yield* Queue.unbounded<string, Cause.Done>()
  const output = yield* Queue.unbounded<string | Ended>()
  let session = params.resume
  let forking = params.fork === true
  let ended: Ended | undefined
  const end = (e: Ended) =>
    Effect.suspend(() => {
      if (ended !== undefined) return Effect.void
      ended = e
      const unanswered = [...asked.values()]
      asked.clear()
      return Effect.andThen(
        Effect.forEach(unanswered, (d) => Deferred.succeed(d, { _tag: "Ended" } as const), { discard: true }),
        Queue.offer(output, e)
      )
    })
  const stopped = end({ _tag: "Ended", exitCode: undefined, stderr: "", error: undefined })
  // Runs after the reader is interrupted (finalizers run in reverse): also when it never started.
  yield* Scope.addFinalizer(scope, stopped)
  // Control answers go to whoever asked (by request id); every other line to the turn.
  const asked = new Map<string, Deferred.Deferred<ControlAnswer>>()
  let nextRequest = 0
  const route = (line: string) => {
    const answer = controlResponseOf(line)
    if (answer === undefined) return Queue.offer(output, line)
    const waiting = asked.get(answer.id)
    asked.delete(answer.id)
    return waiting === undefined ? Effect.void : Deferred.succeed(waiting, answer.answer)
  }
  yield* params.subprocess.stream({ ...runOptions, input: Stream.fromQueue(input) }).pipe(
    Stream.runForEach(route),
    Effect.matchCauseEffect({
      onSuccess: () => end({ _tag: "Ended", exitCode: 0, stderr: "", error: undefined }),
      onFailure: (cause) => {
        const error = Option.getOrUndefined(Cause.findErrorOption(cause))
        return end({
          _tag: "Ended",
          exitCode: error?.reason._tag === "Exited" ? error.reason.exitCode : undefined,
          stderr: error !== undefined && "stderrTail" in error.reason ? error.reason.stderrTail : "",
          error
        })
      }
    }),
    // Closing the scope interrupts the reader, which terminates the process group; a turn
    // still waiting then sees the end instead of waiting forever.
    Effect.onInterrupt(() => stopped),
    Effect.forkIn(scope)
  )
  yield* Scope.addFinalizer(scope, Queue.end(input))

  let open: OpenTurn | undefined

  /** Sends a `control_request`; its answer completes the returned Deferred (`Ended` if the CLI ends first). */
  const ask = Effect.fnUntraced(function*(request: { readonly subtype: string; readonly [k: string]: unknown }) {
    const answer = yield* Deferred.make<ControlAnswer>()
    if (ended !== undefined) {
      yield* Deferred.succeed(answer, { _tag: "Ended" })
      return answer
    }
    const id = `ecb-${++nextRequest}`
    asked.set(id, answer)
    yield* Queue.offer(input, `${JSON.stringify({ type: "control_request", request_id: id, request })}\n`)
    return answer
  })

  const control = (request: { readonly subtype: string; readonly [k: string]: unknown }) =>
    Effect.flatMap(ask(request), Deferred.await)

  /** Reads one line of the open turn; true once the turn is over. */
  const step = (turn: OpenTurn, line: string) => {
    const lifecycle = lifecycleOf(line)
    if (lifecycle !== undefined && turn.pending.has(lifecycle.uuid)) {
      turn.tracked = true
      if (lifecycle.state === "completed" || lifecycle.state === "cancelled") turn.pending.delete(lifecycle.uuid)
    } else if (isResult(line)) {
      const id = sessionOf(line)
      if (id !== undefined) session = Option.some(id)
      forking = false
      turn.resulted = true
      // After our interrupt the first result ends the turn (queued messages were dropped).
      if (turn.interrupted || !turn.tracked) return true
    }
    return turn.resulted && turn.pending.size === 0
  }

  /** Reads the open turn's lines to its end; `Ended` when the output ended first. */
  const readTurn = Effect.fnUntraced(
    function*<E2>(turn: OpenTurn, onLine: (line: string) => Effect.Effect<void, E2>) {
      const lines: Array<string> = []
      for (;;) {
        const next = yield* Queue.take(output)
        if (typeof next !== "string") {
          open = undefined
          return { lines, ended: next, interrupted: turn.interrupted } satisfies TurnOutput
        }
        lines.push(next)
        yield* onLine(next)
        if (step(turn, next)) {
          open = undefined
          return { lines, ended: undefined, interrupted: turn.interrupted } satisfies TurnOutput
        }
      }
    }
  )

  const turn = <E2>(message: UserMessage.UserMessage, onLine: (line: string) => Effect.Effect<void, E2>) =>
    permit.busy(aroundTurn(Effect.gen(function*() {
      if (ended !== undefined) return { lines: [], ended, interrupted: false } satisfies TurnOutput
      const current: OpenTurn = {
        pending: new Set(message.uuid === undefined ? [] : [message.uuid]),
        tracked: false,
        resulted: false,
        interrupted: false
      }
      open = current
      yield* Queue.offer(input, `${JSON.stringify(message)}\n`)
      return yield* readTurn(current, onLine)
    })))

  const interrupt = Effect.suspend(() => {
    const current = open
    if (current === undefined) return Effect.succeedNone
    current.interrupted = true
    return Effect.asSome(control({ subtype: "interrupt", cancel_queued: true }))
  })

  const steer = (message: UserMessage.UserMessage) =>
    Effect.suspend(() => {
      const current = open
      // A turn being stopped drops what is queued (`cancel_queued`): a message steered now would be lost.
      if (current === undefined || ended !== undefined || current.interrupted) return Effect.succeed(false)
      if (message.uuid !== undefined) current.pending.add(message.uuid)
      return Effect.as(Queue.offer(input, `${JSON.stringify(message)}\n`), true)
    })

  const settle = (within: Duration.Input) =>
    Effect.suspend(() => {
      const current = open
      if (current === undefined) return Effect.succeed(ended === undefined)
      return Effect.andThen(interrupt, readTurn(current, () => Effect.void)).pipe(
        Effect.map((read) => read.ended === undefined),
        // Run from a finalizer (uninterruptible): the bound must still be able to stop the wait.
        Effect.interruptible,
        Effect.timeoutOrElse({ duration: within, orElse: () => Effect.succeed(false) })
      )
    })

  const claim = Effect.fnUntraced(function*<E2>(claimedKey: string, adopt: Effect.Effect<Adoption, E2, Scope.Scope>) {
    const adopted = yield* adopt.pipe(Scope.provide(scope))
    // Not waited for: the first user message follows it on stdin at once. The CLI applies the
    // servers before it reads on (2.1.335 holds its input loop for `mcp_set_servers`), and that
    // turn's init line shows whether they connected: a refused or failed server fails the turn
    // (as a cold start whose bridge failed does) rather than letting it run without its tools.
    // Measured: it halves what a spare's first turn costs over a later turn (~300 → ~150 ms).
    if (Object.keys(adopted.servers).length > 0) {
      yield* ask({ subtype: "mcp_set_servers", servers: adopted.servers })
    }
    key = claimedKey
    if (adopted.aroundTurn !== undefined) aroundTurn = adopted.aroundTurn
    yield* permit.claim
    return ended === undefined
  })

  return {
    get key() {
      return key
    },
    sessionId: () => session,
    forks: () => forking,
    alive: () => ended === undefined && !permit.evicted(),
    turn,
    control,
    interrupt,
    steer,
    settle,
    close,
    touch: permit.touch,
    claim
  } satisfies LiveCli
})

/**
 * At most one live CLI for one conversation. `use` hands out the current one when it is alive,
 * has the turn's key and carries the conversation's session; otherwise it closes it and starts a
 * new one that resumes the session. Callers serialise their calls (the session shell's lock).
 */
export interface LiveSlot {
  /** The live CLI for a turn with `key`, continuing `sessionId` (in a new session with `fork`). */
  readonly use: <E>(
    key: string,
    sessionId: Option.Option<string>,
    prepare: (resume: Option.Option<string>, fork: boolean) => Effect.Effect<LiveRunOptions, E, Scope.Scope>,
    fork?: boolean,
    spare?: Effect.Effect<Option.Option<LiveCli>> | undefined
  ) => Effect.Effect<LiveCli, E | Pool.ProcessPoolTimeoutError>
  /** The pool the slot's processes take their permits from (and a new conversation its spare). */
  readonly pool: Option.Option<Pool.ClaudeProcessPoolService>
  /** The current live CLI, if any. */
  readonly current: () => LiveCli | undefined
  /** Stops the current live CLI; the next `use` starts a new one. */
  readonly drop: Effect.Effect<void>
}

const sameSession = Option.makeEquivalence<string>((a, b) => a === b)

/** A slot whose processes live in `parent` (closing it stops them), each holding a permit of `pool` if given. */
export const makeSlot = (
  subprocess: SubprocessService,
  parent: Scope.Scope,
  pool: Option.Option<Pool.ClaudeProcessPoolService> = Option.none()
): LiveSlot => {
  let current: LiveCli | undefined
  const drop = Effect.suspend(() => {
    const ending = current
    current = undefined
    return ending === undefined ? Effect.void : ending.close
  })
  const use = Effect.fnUntraced(
    function*<E>(
      key: string,
      sessionId: Option.Option<string>,
      prepare: (resume: Option.Option<string>, fork: boolean) => Effect.Effect<LiveRunOptions, E, Scope.Scope>,
      fork = false,
      spare?: Effect.Effect<Option.Option<LiveCli>>
    ) {
      const cli = current
      const forking = fork && Option.isSome(sessionId)
      if (
        cli !== undefined && cli.alive() && cli.key === key && cli.forks() === forking &&
        sameSession(cli.sessionId(), sessionId)
      ) return yield* Effect.as(cli.touch, cli)
      yield* drop
      // A brand-new conversation (no session to resume) may take a spare of the pool.
      const claimed = spare === undefined || Option.isSome(sessionId) ? Option.none() : yield* spare
      if (Option.isSome(claimed)) {
        current = claimed.value
        yield* claimed.value.touch
        return claimed.value
      }
      const started = yield* start({
        subprocess,
        parent,
        key,
        resume: sessionId,
        fork: forking,
        prepare: prepare(sessionId, forking),
        pool
      })
      current = started
      // Started: from now on the pool may count it idle (and reclaim it for a waiting turn).
      yield* started.touch
      return started
    }
  )
  return { use, pool, current: () => current, drop }
}
