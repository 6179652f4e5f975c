/**
 * `ClaudeLive` for `ClaudeAgent` with `keepAlive`: each control is the kept-alive SDK `Query`'s own
 * method (`interrupt`, `setModel`, `setPermissionMode`, `setMaxThinkingTokens`, `getContextUsage`,
 * `mcpServerStatus`); `steer` is a user message with a `priority` written into the query's
 * streaming input. Settings are remembered and told to a query started later. On a fresh query
 * per turn the settings become the next query's options; the rest is `NotKeptAlive`.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { ChatError } from "../../services/ChatClient.ts"
import {
  ClaudeLiveError,
  type ClaudeLiveErrorReason,
  type ClaudeLiveService,
  ContextUsage,
  Interrupted,
  InterruptedTool,
  McpServerStatus,
  NoProcess,
  NoRunningTurn,
  NotKeptAlive,
  Rejected,
  type SteerWhen
} from "../../services/ClaudeLive.ts"
import { applyOverrides, type Overrides } from "../claude/overrides.ts"
import type * as UserMessage from "../claude/userMessage.ts"
import { interruptTurn, type KeepAlive, type LiveQuery } from "./live.ts"
import type { QuerySetup, Started } from "./query.ts"
import { provider } from "./sdk.ts"
import type { Transcript } from "./turn.ts"

const fail = (reason: ClaudeLiveErrorReason) => Effect.fail(new ClaudeLiveError({ provider, reason }))

/** The turn ended by our own interrupt: its partial answer and the tools it called. */
export const interruptedError = (serverName: string) => (transcript: Transcript) => {
  const prefix = `mcp__${serverName}__`
  return new ClaudeLiveError({
    provider,
    reason: new Interrupted({
      answer: transcript.lastText ?? "",
      tools: (transcript.toolUses ?? []).map((use) =>
        new InterruptedTool({
          id: use.id,
          name: use.name.startsWith(prefix) ? use.name.slice(prefix.length) : use.name,
          ...(use.isError === undefined ? {} : { isError: use.isError })
        })
      ),
      ...(transcript.result?.terminal_reason == null ? {} : { terminalReason: transcript.result.terminal_reason }),
      ...(transcript.result?.session_id === undefined ? {} : { sessionId: transcript.result.session_id })
    })
  })
}

/** A `Query` method's promise as an effect; a rejection is the CLI refusing the control. */
const call = <A>(control: string, run: () => Promise<A>) =>
  Effect.tryPromise({
    try: run,
    catch: (e) => new ClaudeLiveError({ provider, reason: new Rejected({ control, error: String(e) }) })
  })

const decoded = <S extends Schema.Top>(control: string, schema: S) => (answer: unknown) =>
  Schema.decodeUnknownEffect(schema)(answer).pipe(
    Effect.mapError((e) => new ClaudeLiveError({ provider, reason: new Rejected({ control, error: e.message }) }))
  ) as Effect.Effect<S["Type"], ClaudeLiveError>

/** Tells `started` every setting in `overrides`. */
const tell = Effect.fnUntraced(function*(started: Started, overrides: Overrides) {
  const q = started.controls
  if (overrides.model !== undefined) yield* call("setModel", () => q.setModel(overrides.model ?? undefined))
  if (overrides.permissionMode !== undefined) {
    const mode = overrides.permissionMode
    yield* call("setPermissionMode", () => q.setPermissionMode(mode as Parameters<typeof q.setPermissionMode>[0]))
  }
  if (overrides.maxThinkingTokens !== undefined) {
    const tokens = overrides.maxThinkingTokens
    yield* call("setMaxThinkingTokens", () => q.setMaxThinkingTokens(tokens))
  }
})

/** How a steered message is checked and built: as the client's turns are (`userMessage.ts`). */
export interface Steering {
  /** Refuses a text the CLI would interpret (an executable too old for verbatim prompts). */
  readonly check: (input: UserMessage.Input) => Effect.Effect<void, ChatError>
  readonly message: (input: UserMessage.Input, delivery: UserMessage.Delivery) => UserMessage.UserMessage
}

/** The controls of a ClaudeAgent client; `applySettings` goes into the kept-alive query's setup. */
export const makeControls = (keepAlive: boolean, steering: Steering) => {
  const overrides: Overrides = {}
  let live: KeepAlive | undefined
  const running = (): LiveQuery | undefined => live?.current()

  const applySettings = (started: Started) =>
    tell(started, overrides).pipe(
      Effect.catch((e) =>
        Effect.logWarning("claude CLI refused a live setting").pipe(Effect.annotateLogs({ error: e.message }))
      )
    )

  const needsLive = (control: string) => fail(new NotKeptAlive({ control }))

  /** `setup` with the settings changed so far: what a query started now is given. */
  const withOverrides = (setup: QuerySetup): QuerySetup => {
    const options = applyOverrides(setup.options, overrides)
    if (options === setup.options) return setup
    const { permissionMode } = overrides
    return {
      ...setup,
      ...(permissionMode === undefined ? {} : { permissionMode: permissionMode as QuerySetup["permissionMode"] }),
      options
    }
  }

  const setting = (control: string, change: Overrides) =>
    Effect.suspend(() => {
      Object.assign(overrides, change)
      if (!keepAlive) return Effect.void
      const q = running()
      return q === undefined ? Effect.void : tell(q, change)
    }).pipe(Effect.withSpan(`ClaudeLive.${control}`))

  const query = <A>(control: string, run: (q: LiveQuery) => Effect.Effect<A, ClaudeLiveError>) =>
    Effect.suspend(() => {
      if (!keepAlive) return needsLive(control)
      const q = running()
      return q === undefined ? fail(new NoProcess({ control })) : run(q)
    }).pipe(Effect.withSpan(`ClaudeLive.${control}`))

  /**
   * Writes `text` into the running turn through the query's streaming input, built by the one
   * user-message builder (verbatim unless `trustedPrompts`); the turn reads on until the CLI has
   * finished it too.
   */
  const steer = Effect.fn("ClaudeLive.steer")(function*(
    text: string,
    options?: { readonly when?: SteerWhen | undefined }
  ) {
    if (!keepAlive) return yield* needsLive("steer")
    const q = running()
    const turn = q?.running
    if (q === undefined || turn === undefined) return yield* fail(new NoRunningTurn({ control: "steer" }))
    const input = { prompt: text }
    yield* steering.check(input).pipe(
      Effect.catch((e) => fail(new Rejected({ control: "steer", error: e.message })))
    )
    const uuid = crypto.randomUUID()
    // The turn may have ended while the version was checked; a turn being stopped drops what is
    // queued, so a message steered into it now would be lost.
    if (q.running !== turn || turn.interrupted) return yield* fail(new NoRunningTurn({ control: "steer" }))
    turn.pending.add(uuid)
    q.send(steering.message(input, { uuid, priority: options?.when ?? "next" }))
  })

  const service: ClaudeLiveService = {
    interrupt: query("interrupt", (q) => {
      if (q.running === undefined) return fail(new NoRunningTurn({ control: "interrupt" }))
      q.running.interrupted = true
      return interruptTurn(q).pipe(
        Effect.mapError((e) =>
          new ClaudeLiveError({ provider, reason: new Rejected({ control: "interrupt", error: String(e.cause) }) })
        )
      )
    }),
    steer,
    setModel: (model) => setting("setModel", { model: model ?? null }),
    setPermissionMode: (mode) => setting("setPermissionMode", { permissionMode: mode }),
    setMaxThinkingTokens: (tokens) => setting("setMaxThinkingTokens", { maxThinkingTokens: tokens ?? null }),
    contextUsage: query(
      "contextUsage",
      (q) =>
        call("contextUsage", () => q.controls.getContextUsage({ detail: "summary" })).pipe(
          Effect.flatMap(decoded("contextUsage", ContextUsage))
        )
    ),
    mcpStatus: query(
      "mcpStatus",
      (q) =>
        call("mcpStatus", () => q.controls.mcpServerStatus()).pipe(
          Effect.flatMap(decoded("mcpStatus", Schema.Array(McpServerStatus)))
        )
    )
  }
  return {
    service,
    applySettings,
    withOverrides,
    /** The kept-alive query the controls act on (set once it is built). */
    attach: (keptAlive: KeepAlive) => {
      live = keptAlive
    }
  }
}
