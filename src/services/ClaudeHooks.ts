/**
 * Claude Code hooks as Effects, on both Claude providers: a typed record of the events an
 * application needs first, each hook an Effect from the event's decoded input to its output.
 *
 * **Details**
 *
 * `ClaudeAgent` hands them to the Agent SDK as hook callbacks; `ClaudeLocal` serves them as HTTP
 * hooks from a loopback bridge of its own (bearer-token authenticated, 127.0.0.1 only) and writes
 * them into the `--settings` file of every run, so they also fire on a resumed session. Either way
 * they run beside the tool policy's own hook and permission lists, never replacing them: the CLI
 * runs every matching hook of an event, and a `deny` from any of them blocks the call, so a hook
 * can add a denial but never lift the policy's.
 *
 * The input and output fields keep Claude Code's own names (`tool_name`, `permissionDecision`),
 * so its hook documentation reads as is. An output's event-specific fields (those Claude Code
 * takes in `hookSpecificOutput`) are given flat; the library nests them.
 *
 * **Gotchas**
 *
 * - A hook's Effect runs in the context of the fiber that built the provider's layer (its
 *   services and references: log annotations, tracer, log level), whichever turn it fires in. Its failure,
 *   its defect or an input that does not decode is a non-blocking hook error: it is logged as a
 *   warning, the CLI logs it too and carries on as if the hook had said nothing.
 * - `timeout` is in seconds, as Claude Code's; a hook that runs longer is interrupted. Time in a
 *   hook does not count toward the provider's `stallTimeout`.
 *
 * @summary Claude Code hooks as Effects with Schema-typed input and output per event, on both Claude providers.
 * @group Chat providers
 * @since 2.0.0
 * @module
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

const base = {
  hook_event_name: Schema.String,
  session_id: Schema.String,
  transcript_path: Schema.String,
  cwd: Schema.String,
  permission_mode: Schema.optionalKey(Schema.String)
}

const toolCall = { ...base, tool_name: Schema.String, tool_input: Schema.Unknown, tool_use_id: Schema.String }

/**
 * `PreToolUse`: before a tool runs.
 *
 * @category schemas
 * @since 2.0.0
 */
export const PreToolUseInput = Schema.Struct(toolCall)

/**
 * `PostToolUse`: after a tool ran; `tool_response` is what it returned.
 *
 * @category schemas
 * @since 2.0.0
 */
export const PostToolUseInput = Schema.Struct({ ...toolCall, tool_response: Schema.Unknown })

/**
 * `PostToolUseFailure`: after a tool failed.
 *
 * @category schemas
 * @since 2.0.0
 */
export const PostToolUseFailureInput = Schema.Struct({
  ...toolCall,
  error: Schema.String,
  is_interrupt: Schema.optionalKey(Schema.Boolean)
})

/**
 * `UserPromptSubmit`: a user prompt, before the model sees it.
 *
 * @category schemas
 * @since 2.0.0
 */
export const UserPromptSubmitInput = Schema.Struct({ ...base, prompt: Schema.String })

/**
 * `Stop`: the agent is about to end its turn.
 *
 * @category schemas
 * @since 2.0.0
 */
export const StopInput = Schema.Struct({
  ...base,
  stop_hook_active: Schema.Boolean,
  last_assistant_message: Schema.optionalKey(Schema.String)
})

/**
 * `SessionStart`: a session starts (`source`: `startup`, `resume`, `clear`, `compact`, `fork`).
 *
 * **Gotchas**
 *
 * Checked on claude 2.1.335, in the `-p` runs both providers start. Claude Code skips HTTP hooks
 * for SessionStart, so `ClaudeLocal` writes this one as a command hook (this Node, forwarding the
 * input to its hooks bridge, the token read from a 0600 file): it fires with `startup`, then
 * `resume` on each later turn's CLI. On `ClaudeAgent` it does not fire: Claude Code runs
 * SessionStart before the Agent SDK's `initialize` registers its callbacks. There a
 * `type: "command"` SessionStart hook in a settings file the run loads (`settingSources`) does.
 *
 * @category schemas
 * @since 2.0.0
 */
export const SessionStartInput = Schema.Struct({
  ...base,
  source: Schema.String,
  model: Schema.optionalKey(Schema.String)
})

/**
 * `SessionEnd`: a session ends.
 *
 * @category schemas
 * @since 2.0.0
 */
export const SessionEndInput = Schema.Struct({ ...base, reason: Schema.String })

/**
 * `Notification`: the CLI notifies the user.
 *
 * @category schemas
 * @since 2.0.0
 */
export const NotificationInput = Schema.Struct({
  ...base,
  message: Schema.String,
  title: Schema.optionalKey(Schema.String),
  notification_type: Schema.String
})

/**
 * `PermissionDenied`: a tool call was refused; `reason` says why.
 *
 * @category schemas
 * @since 2.0.0
 */
export const PermissionDeniedInput = Schema.Struct({ ...toolCall, reason: Schema.String })

/**
 * `Interrupt`: an interrupt ended the main conversation's turn (claude 2.1.335 and newer; older
 * CLIs never fire it). Fires once per interrupted turn, not when the work goes on by itself or
 * Claude Code is exiting.
 *
 * **Details**
 *
 * - `source`: who stopped the turn. `user` is a person or any client that does not say who it is
 *   (`ClaudeLive.interrupt`, the Agent SDK's `interrupt()`); `session` another session's Claude;
 *   `system` a PermissionRequest hook, a plugin, a permission check or a service acting by itself.
 * - `reason`: `stop` (an interrupt request, Esc, Ctrl+C), `permission_denied`, `rewind` or `other`.
 * - `via`: `terminal` or `client` (an app, an SDK program), where Claude Code knows it.
 *
 * @category schemas
 * @since 2.1.0
 */
export const InterruptInput = Schema.Struct({
  ...base,
  source: Schema.Literals(["user", "session", "system"]),
  reason: Schema.Literals(["stop", "permission_denied", "rewind", "other"]),
  via: Schema.optionalKey(Schema.Literals(["terminal", "client"]))
})

const common = {
  /** `false` stops the agent after this hook (`stopReason` says why). */
  continue: Schema.optionalKey(Schema.Boolean),
  stopReason: Schema.optionalKey(Schema.String),
  suppressOutput: Schema.optionalKey(Schema.Boolean),
  /** A message shown to the user. */
  systemMessage: Schema.optionalKey(Schema.String)
}
const context = { additionalContext: Schema.optionalKey(Schema.String) }
const block = { decision: Schema.optionalKey(Schema.Literal("block")), reason: Schema.optionalKey(Schema.String) }

/**
 * What a `PreToolUse` hook answers: `permissionDecision` `deny` blocks the call (its reason goes
 * to the model), `allow` skips the permission prompt (never the policy's lists), `ask`, `defer`.
 *
 * @category schemas
 * @since 2.0.0
 */
export const PreToolUseOutput = Schema.Struct({
  ...common,
  ...context,
  permissionDecision: Schema.optionalKey(Schema.Literals(["allow", "deny", "ask", "defer"])),
  permissionDecisionReason: Schema.optionalKey(Schema.String),
  updatedInput: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown))
})

/**
 * What a `PostToolUse` hook answers: `decision: "block"` tells the model `reason`;
 * `updatedMCPToolOutput` replaces an MCP tool's result.
 *
 * @category schemas
 * @since 2.0.0
 */
export const PostToolUseOutput = Schema.Struct({
  ...common,
  ...block,
  ...context,
  updatedMCPToolOutput: Schema.optionalKey(Schema.Unknown)
})

/**
 * What a `PostToolUseFailure` hook answers.
 *
 * @category schemas
 * @since 2.0.0
 */
export const PostToolUseFailureOutput = Schema.Struct({ ...common, ...context })

/**
 * What a `UserPromptSubmit` hook answers: `decision: "block"` drops the prompt.
 *
 * @category schemas
 * @since 2.0.0
 */
export const UserPromptSubmitOutput = Schema.Struct({ ...common, ...block, ...context })

/**
 * What a `Stop` hook answers: `decision: "block"` makes the agent go on, told `reason`.
 *
 * @category schemas
 * @since 2.0.0
 */
export const StopOutput = Schema.Struct({ ...common, ...block })

/**
 * What a `SessionStart` hook answers.
 *
 * @category schemas
 * @since 2.0.0
 */
export const SessionStartOutput = Schema.Struct({ ...common, ...context })

/**
 * What a `SessionEnd` hook answers.
 *
 * @category schemas
 * @since 2.0.0
 */
export const SessionEndOutput = Schema.Struct(common)

/**
 * What a `Notification` hook answers.
 *
 * @category schemas
 * @since 2.0.0
 */
export const NotificationOutput = Schema.Struct({ ...common, ...context })

/**
 * What a `PermissionDenied` hook answers: `retry: true` lets the model try again.
 *
 * @category schemas
 * @since 2.0.0
 */
export const PermissionDeniedOutput = Schema.Struct({ ...common, retry: Schema.optionalKey(Schema.Boolean) })

/**
 * What an `Interrupt` hook answers: nothing, since Claude Code ignores its output (the turn has
 * already ended). The hook is for watching: logging, metrics, releasing what the turn held.
 *
 * @category schemas
 * @since 2.1.0
 */
export const InterruptOutput = Schema.Struct({})

/**
 * Each event's input and output schemas. `Interrupt` needs claude 2.1.335 or newer (an older CLI
 * never fires it).
 *
 * @category schemas
 * @since 2.0.0
 */
export const events = {
  PreToolUse: { input: PreToolUseInput, output: PreToolUseOutput },
  PostToolUse: { input: PostToolUseInput, output: PostToolUseOutput },
  PostToolUseFailure: { input: PostToolUseFailureInput, output: PostToolUseFailureOutput },
  UserPromptSubmit: { input: UserPromptSubmitInput, output: UserPromptSubmitOutput },
  Stop: { input: StopInput, output: StopOutput },
  SessionStart: { input: SessionStartInput, output: SessionStartOutput },
  SessionEnd: { input: SessionEndInput, output: SessionEndOutput },
  Notification: { input: NotificationInput, output: NotificationOutput },
  PermissionDenied: { input: PermissionDeniedInput, output: PermissionDeniedOutput },
  Interrupt: { input: InterruptInput, output: InterruptOutput }
} as const

/**
 * The hook events the library types.
 *
 * @category models
 * @since 2.0.0
 */
export type HookEvent = keyof typeof events

/**
 * The decoded input of an event's hook.
 *
 * @category models
 * @since 2.0.0
 */
export type Input<E extends HookEvent> = (typeof events)[E]["input"]["Type"]

/**
 * What an event's hook answers (`{}` says nothing).
 *
 * @category models
 * @since 2.0.0
 */
export type Output<E extends HookEvent> = (typeof events)[E]["output"]["Type"]

/**
 * One hook of an event.
 *
 * @category models
 * @since 2.0.0
 */
export interface Hook<E extends HookEvent> {
  /** Which tools (a regex over tool names, as Claude Code's matchers). Default: all. Tool events only. */
  readonly matcher?: string | undefined
  /** Seconds the CLI waits for the hook. Default: the CLI's (60 s). */
  readonly timeout?: number | undefined
  /** The hook; a failure or defect is a non-blocking hook error (see the module's notes). */
  readonly run: (input: Input<E>) => Effect.Effect<Output<E>, unknown>
}

/**
 * The `hooks` option of `ClaudeLocal` and `ClaudeAgent`: hooks by event, run in order of the
 * array (the CLI may run an event's matching hooks concurrently).
 *
 * **Example** (Refusing one tool, watching results)
 *
 * ```ts
 * import { Effect } from "effect"
 * import type { ClaudeHooks } from "effect-chat-bridge"
 *
 * const hooks: ClaudeHooks.Hooks = {
 *   PreToolUse: [{
 *     matcher: "Bash",
 *     run: () => Effect.succeed({ permissionDecision: "deny", permissionDecisionReason: "no shell here" })
 *   }],
 *   PostToolUse: [{ run: (input) => Effect.as(Effect.log(input.tool_name, input.tool_response), {}) }]
 * }
 * ```
 *
 * @category models
 * @since 2.0.0
 */
export type Hooks = { readonly [E in HookEvent]?: ReadonlyArray<Hook<E>> | undefined }

/**
 * A hook that did not answer: its input did not decode, its output did not encode, or it failed
 * or died. The CLI treats it as a non-blocking hook error.
 *
 * @category errors
 * @since 2.0.0
 */
export class HookError extends Schema.TaggedError<HookError>()("HookError", {
  /** The event of the hook. */
  event: Schema.String,
  /** What went wrong. */
  message: Schema.String
}) {}

/** The output fields Claude Code reads at the top level; the others go into `hookSpecificOutput`. */
const topLevel = new Set(["continue", "stopReason", "suppressOutput", "systemMessage", "decision", "reason"])

/**
 * An output as Claude Code reads it: the event-specific fields nested in `hookSpecificOutput`.
 *
 * @category utils
 * @since 2.0.0
 */
export const toWire = (event: HookEvent, output: Readonly<Record<string, unknown>>): Record<string, unknown> => {
  const wire: Record<string, unknown> = {}
  const specific: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(output)) {
    if (value === undefined) continue
    if (topLevel.has(key)) wire[key] = value
    else specific[key] = value
  }
  if (Object.keys(specific).length > 0) wire["hookSpecificOutput"] = { hookEventName: event, ...specific }
  return wire
}

/**
 * Runs one hook on a raw input from the CLI: decodes it, runs the hook, encodes its answer for
 * the CLI. Every way it can go wrong is a {@link HookError}, logged as a warning.
 *
 * @category utils
 * @since 2.0.0
 */
export const answer = Effect.fn("ClaudeHooks.answer")(function*<E extends HookEvent>(
  event: E,
  hook: Hook<E>,
  raw: unknown
) {
  const schemas = events[event]
  const fail = (what: string) => (cause: Cause.Cause<unknown>) =>
    Effect.fail(new HookError({ event, message: `${what}: ${Cause.pretty(cause)}` }))
  const input = yield* Schema.decodeUnknownEffect(schemas.input)(raw).pipe(
    Effect.catchCause(fail(`The ${event} hook input did not decode`))
  )
  const output = yield* Effect.suspend(() => hook.run(input as Input<E>)).pipe(
    Effect.catchCause(fail(`The ${event} hook failed`))
  )
  const encoded = yield* Schema.encodeUnknownEffect(schemas.output)(output).pipe(
    Effect.catchCause(fail(`The ${event} hook answered what its schema refuses`))
  )
  return toWire(event, encoded as Record<string, unknown>)
}, Effect.tapError((e) => Effect.logWarning(e.message)))

/**
 * Each configured hook with its event, in order.
 *
 * @category utils
 * @since 2.0.0
 */
export const entries = (hooks: Hooks | undefined): ReadonlyArray<readonly [HookEvent, Hook<HookEvent>]> =>
  (Object.keys(events) as Array<HookEvent>).flatMap((event) =>
    (hooks?.[event] ?? []).map((hook) => [event, hook as Hook<HookEvent>] as const)
  )
