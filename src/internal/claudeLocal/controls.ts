/**
 * `ClaudeLive` for `ClaudeLocal`: with `keepAlive`, each control is a `control_request` to the
 * conversation's live CLI (`liveCli.ts`); settings (model, permission mode, thinking budget) are
 * also remembered and replayed on a CLI started later, so a replaced process keeps them. On a fresh
 * CLI per turn, settings become the next run's flags and the rest is `NotKeptAlive`.
 *
 * Through the cluster: `ClaudeConversation`'s control RPCs (not persisted) reach the hosting
 * runner, whose handler calls `liveOf(client)` (`internal/claude/conversation.ts`) of the hosted
 * client; they are `Rpc.fork`ed past the entity's `concurrency: 1`, which keeps serialising turns.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import {
  ClaudeLiveError,
  type ClaudeLiveErrorReason,
  type ClaudeLiveService,
  ContextUsage,
  Interrupted,
  InterruptedTool,
  McpServerStatus,
  NoAnswer,
  NoProcess,
  NoRunningTurn,
  NotKeptAlive,
  Rejected
} from "../../services/ClaudeLive.ts"
import { applyOverrides, type Overrides } from "../claude/overrides.ts"
import type { ParsedRun } from "../claude/streamJson.ts"
import * as UserMessage from "../claude/userMessage.ts"
import { provider } from "./args.ts"
import type * as LiveCli from "./liveCli.ts"
import type { LocalEnv } from "./plan.ts"

/** How long a control waits for the CLI's answer (a context count waits for the running turn). */
const ControlTimeout = Duration.seconds(30)

const fail = (reason: ClaudeLiveErrorReason) => Effect.fail(new ClaudeLiveError({ provider, reason }))

export type { Overrides } from "../claude/overrides.ts"

/** `env` with the overrides as options: what a fresh run is started with. */
export const withOverrides = (env: LocalEnv, overrides: Overrides): LocalEnv => {
  const options = applyOverrides(env.options, overrides)
  return options === env.options ? env : { ...env, options }
}

/** The control requests that put `settings` into a CLI. */
const requestsFor = (settings: Overrides) => [
  ...(settings.model === undefined ? [] : [{ subtype: "set_model", model: settings.model }]),
  ...(settings.permissionMode === undefined ? [] : [{ subtype: "set_permission_mode", mode: settings.permissionMode }]),
  ...(settings.maxThinkingTokens === undefined ? [] : [{
    subtype: "set_max_thinking_tokens",
    max_thinking_tokens: settings.maxThinkingTokens
  }])
]

/** A control's answer as its payload, or the reason it has none. */
const answered = (control: string) => (answer: LiveCli.ControlAnswer) => {
  switch (answer._tag) {
    case "Success":
      return Effect.succeed(answer.response)
    case "Error":
      return fail(new Rejected({ control, error: answer.error }))
    case "Ended":
      return fail(new NoAnswer({ control, detail: "the CLI ended" }))
  }
}

type Request = { readonly subtype: string; readonly [k: string]: unknown }

const ask = (cli: LiveCli.LiveCli, control: string, request: Request) =>
  cli.control(request).pipe(
    Effect.timeoutOrElse({
      duration: ControlTimeout,
      orElse: () => fail(new NoAnswer({ control, detail: `no answer within ${Duration.format(ControlTimeout)}` }))
    }),
    Effect.flatMap(answered(control))
  )

const decoded = <S extends Schema.Top>(control: string, schema: S) => (response: unknown) =>
  Schema.decodeUnknownEffect(schema)(response).pipe(
    Effect.mapError((e) => new ClaudeLiveError({ provider, reason: new NoAnswer({ control, detail: e.message }) }))
  ) as Effect.Effect<S["Type"], ClaudeLiveError>

const McpStatusAnswer = Schema.Struct({ mcpServers: Schema.Array(McpServerStatus) })

/**
 * The turn ended by our own interrupt: its partial answer and the tools it called (the bridge's
 * without their prefix, as in chat events).
 */
export const interruptedError = (env: LocalEnv, parsed: ParsedRun) =>
  new ClaudeLiveError({
    provider,
    reason: new Interrupted({
      answer: parsed.lastText ?? "",
      tools: parsed.toolUses.map((use) =>
        new InterruptedTool({
          id: use.id,
          name: use.name.startsWith(env.toolPrefix) ? use.name.slice(env.toolPrefix.length) : use.name,
          ...(use.isError === undefined ? {} : { isError: use.isError })
        })
      ),
      ...(parsed.result?.terminal_reason == null ? {} : { terminalReason: parsed.result.terminal_reason }),
      ...(parsed.result?.session_id === undefined ? {} : { sessionId: parsed.result.session_id })
    })
  })

/** The controls of a client that runs a fresh CLI per turn: settings wait for the next run. */
export const freshControls = (overrides: Overrides): ClaudeLiveService => {
  const needsLive = (control: string) => fail(new NotKeptAlive({ control }))
  return {
    interrupt: needsLive("interrupt"),
    steer: () => needsLive("steer"),
    setModel: (model) => Effect.sync(() => void (overrides.model = model ?? null)),
    setPermissionMode: (mode) => Effect.sync(() => void (overrides.permissionMode = mode)),
    setMaxThinkingTokens: (tokens) => Effect.sync(() => void (overrides.maxThinkingTokens = tokens ?? null)),
    contextUsage: needsLive("contextUsage"),
    mcpStatus: needsLive("mcpStatus")
  }
}

/** The controls of a kept-alive client, and `applySettings` for each CLI a turn runs on. */
export const liveControls = (env: LocalEnv, slot: LiveCli.LiveSlot, overrides: Overrides) => {
  // What each process was told so far: a new one is told everything before its first turn.
  const applied = new WeakMap<LiveCli.LiveCli, Overrides>()
  const running = () => {
    const cli = slot.current()
    return cli !== undefined && cli.alive() ? cli : undefined
  }

  const applySettings = Effect.fnUntraced(function*(cli: LiveCli.LiveCli) {
    const told = applied.get(cli) ?? {}
    const missing: Overrides = {}
    for (const key of ["model", "permissionMode", "maxThinkingTokens"] as const) {
      if (overrides[key] !== undefined && told[key] !== overrides[key]) {
        Object.assign(missing, { [key]: overrides[key] })
      }
    }
    for (const request of requestsFor(missing)) yield* ask(cli, request.subtype, request)
    applied.set(cli, { ...told, ...missing })
  })

  /** Remembers a setting and, when a CLI runs, tells it now. */
  const setting = Effect.fnUntraced(function*(change: Overrides) {
    Object.assign(overrides, change)
    const cli = running()
    if (cli !== undefined) yield* applySettings(cli)
  })

  const query = <S extends Schema.Top>(control: string, request: Request, schema: S) =>
    Effect.suspend(() => {
      const cli = running()
      return cli === undefined
        ? fail(new NoProcess({ control }))
        : Effect.flatMap(ask(cli, control, request), decoded(control, schema))
    })

  const interrupt = Effect.suspend(() => {
    const cli = running()
    if (cli === undefined) return fail(new NoRunningTurn({ control: "interrupt" }))
    return cli.interrupt.pipe(
      Effect.timeoutOrElse({
        duration: ControlTimeout,
        orElse: () => Effect.succeed(Option.none<LiveCli.ControlAnswer>())
      }),
      Effect.flatMap(Option.match({
        onNone: () => fail(new NoRunningTurn({ control: "interrupt" })),
        onSome: (answer) => Effect.asVoid(answered("interrupt")(answer))
      }))
    )
  }).pipe(Effect.withSpan("ClaudeLive.interrupt"))

  const steer = Effect.fn("ClaudeLive.steer")(function*(
    text: string,
    options?: { readonly when?: "next" | "later" | "now" | undefined }
  ) {
    const cli = running()
    if (cli === undefined) return yield* fail(new NoRunningTurn({ control: "steer" }))
    const input = { prompt: text }
    yield* Effect.flatMap(
      env.cliVersion,
      (version) => UserMessage.requireVerbatim(provider, version, input, env.options.trustedPrompts === true)
    ).pipe(
      Effect.catch((e) => fail(new Rejected({ control: "steer", error: e.message })))
    )
    const message = UserMessage.make(input, env.options.trustedPrompts !== true, {
      uuid: crypto.randomUUID(),
      priority: options?.when ?? "next"
    })
    if (!(yield* cli.steer(message))) return yield* fail(new NoRunningTurn({ control: "steer" }))
  })

  const service: ClaudeLiveService = {
    interrupt,
    steer,
    setModel: (model) => setting({ model: model ?? null }).pipe(Effect.withSpan("ClaudeLive.setModel")),
    setPermissionMode: (mode) =>
      setting({ permissionMode: mode }).pipe(Effect.withSpan("ClaudeLive.setPermissionMode")),
    setMaxThinkingTokens: (tokens) =>
      setting({ maxThinkingTokens: tokens ?? null }).pipe(Effect.withSpan("ClaudeLive.setMaxThinkingTokens")),
    contextUsage: query("contextUsage", { subtype: "get_context_usage", detail: "summary" }, ContextUsage).pipe(
      Effect.withSpan("ClaudeLive.contextUsage")
    ),
    mcpStatus: query("mcpStatus", { subtype: "mcp_status" }, McpStatusAnswer).pipe(
      Effect.map((answer) => answer.mcpServers),
      Effect.withSpan("ClaudeLive.mcpStatus")
    )
  }
  return { service, applySettings }
}
