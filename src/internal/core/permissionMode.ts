/**
 * Claude Code's permission modes: one definition for the registry (`ToolPolicy.PermissionMode`
 * re-exports it unchanged) and the services (`ClaudeLive.setPermissionMode`), which may not
 * import the registry. Depends on nothing of `src/`.
 */
import * as Schema from "effect/Schema"

/**
 * A Claude Code permission mode: the values `claude --permission-mode` accepts (2.1.x: `acceptEdits`,
 * `auto`, `bypassPermissions`, `manual`, `dontAsk`, `plan`, and `default`, which it still takes;
 * `manual` is its newer name for `default`).
 *
 * **Details**
 *
 * The one definition of the modes: `ClaudeLocal`'s `permissionMode` option and `CLAUDE_PERMISSION_MODE`
 * take these; `ClaudeAgent` takes {@link AgentSdkPermissionMode}, the subset the Agent SDK types.
 * Decoding an unknown mode fails with a `SchemaError` listing the accepted ones.
 *
 * **Example** (Checking a mode from a settings file)
 *
 * ```ts
 * import { Schema } from "effect"
 * import { ToolPolicy } from "effect-chat-bridge"
 *
 * const mode = Schema.decodeUnknownSync(ToolPolicy.PermissionMode)("plan")
 * ```
 *
 * @since 2.0.0
 * @category schemas
 */
export const PermissionMode = Schema.Literals([
  "default",
  "acceptEdits",
  "auto",
  "bypassPermissions",
  "dontAsk",
  "plan",
  "manual"
])

/**
 * The type of {@link PermissionMode}.
 *
 * @since 2.0.0
 * @category models
 */
export type PermissionMode = typeof PermissionMode.Type
