/**
 * The application's hooks (`ClaudeHooks`) as Agent SDK hook callbacks, run in the context of
 * the fiber that makes them (the layer's).
 */
import type * as AgentSdk from "@anthropic-ai/claude-agent-sdk"
import * as Effect from "effect/Effect"
import * as ClaudeHooks from "../../services/ClaudeHooks.ts"
import type * as Stall from "../claude/stall.ts"

/** A callback: the hook's answer, or a rejection (a non-blocking hook error for the CLI). */
const callback = (
  event: ClaudeHooks.HookEvent,
  hook: ClaudeHooks.Hook<ClaudeHooks.HookEvent>,
  runPromise: <A, E>(effect: Effect.Effect<A, E>, options?: { readonly signal?: AbortSignal }) => Promise<A>,
  waits: Stall.PermissionWaits
): AgentSdk.HookCallback =>
async (input, _toolUseId, { signal }) =>
  // The SDK aborts `signal` when the CLI gives up on the hook: the Effect is interrupted then. A
  // hook at work is the application deciding, not the run going silent (`stallTimeout`).
  (await runPromise(waits.around(ClaudeHooks.answer(event, hook, input)), { signal })) as AgentSdk.HookJSONOutput

/** The SDK's `hooks` option for the application's hooks; undefined when there are none. */
export const sdkHooks = (
  hooks: ClaudeHooks.Hooks | undefined,
  waits: Stall.PermissionWaits
): Effect.Effect<AgentSdk.Options["hooks"]> =>
  Effect.map(Effect.context<never>(), (context) => {
    const all = ClaudeHooks.entries(hooks)
    if (all.length === 0) return undefined
    const runPromise = Effect.runPromiseWith(context)
    const out: Partial<Record<AgentSdk.HookEvent, Array<AgentSdk.HookCallbackMatcher>>> = {}
    for (const [event, hook] of all) {
      ;(out[event] ??= []).push({
        ...(hook.matcher === undefined ? {} : { matcher: hook.matcher }),
        ...(hook.timeout === undefined ? {} : { timeout: hook.timeout }),
        hooks: [callback(event, hook, runPromise, waits)]
      })
    }
    return out
  })
