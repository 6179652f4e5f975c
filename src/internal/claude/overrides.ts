/**
 * The settings changed through `ClaudeLive` (model, permission mode, thinking budget), kept for
 * every CLI a conversation starts from now on, and how they become a run's options: one
 * bookkeeping for both Claude providers' controls (`claudeLocal/controls.ts`,
 * `claudeAgent/controls.ts`).
 */

/** The settings a caller changed through `ClaudeLive`. */
export interface Overrides {
  /** `null`: back to the CLI's default. */
  model?: string | null
  permissionMode?: string
  /** `null`: back to the default budget. */
  maxThinkingTokens?: number | null
}

/** The options of a Claude provider that an override replaces. */
interface Overridable {
  readonly model?: string | undefined
  readonly permissionMode?: unknown
  readonly env?: Readonly<Record<string, string | undefined>> | undefined
}

/** `options` with `overrides` applied: what a run (or query) started now is given. */
export const applyOverrides = <O extends Overridable>(options: O, overrides: Overrides): O => {
  const { maxThinkingTokens, model, permissionMode } = overrides
  if (model === undefined && permissionMode === undefined && maxThinkingTokens === undefined) return options
  const { model: _, ...rest } = options
  // The permission mode is a string the CLI itself checks (it refuses an unknown one).
  return {
    ...rest,
    ...(model === undefined ? (options.model === undefined ? {} : { model: options.model }) : model === null ? {} : {
      model
    }),
    ...(permissionMode === undefined ? {} : { permissionMode }),
    ...(maxThinkingTokens === undefined ? {} : {
      env: { ...options.env, MAX_THINKING_TOKENS: maxThinkingTokens === null ? undefined : String(maxThinkingTokens) }
    })
  } as unknown as O
}
