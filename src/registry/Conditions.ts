/**
 * Runtime conditions that `conditional` tools depend on, computed once per session build (they
 * must stay cheap: a few `stat`s).
 *
 * The library evaluates `workspace-has-git`. `agent-has-channel` is known to every registry but
 * evaluated by the application (it owns the channels) and passed in `PolicyContext.conditions`
 * (or a provider's `toolPolicy.conditions`); a condition nobody passes counts as false. An
 * application declares conditions of its own with `Registry.make(descriptors, { conditions })`
 * and passes their values the same way.
 *
 * @summary Runtime conditions (`workspace-has-git`, your own) that `conditional` tools depend on.
 * @group Claude Code tool policy
 * @since 0.1.0
 * @module
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Path from "effect/Path"

/**
 * Condition name → value; the shape `PolicyContext.conditions` takes.
 *
 * @category models
 * @since 1.0.0
 */
export type Conditions = Readonly<Record<string, boolean>>

/**
 * Computes every condition this library knows. `workspace-has-git`: `cwd` or one of its
 * ancestors has a `.git` entry (a directory, or the file a linked worktree has). A `stat` that
 * fails (permissions) counts as "no", which keeps the worktree tools hidden rather than broken.
 *
 * @category utils
 * @since 1.0.0
 */
export const detectConditions: (options: {
  readonly cwd: string
}) => Effect.Effect<Conditions, never, FileSystem.FileSystem | Path.Path> = Effect.fn("Conditions.detectConditions")(
  function*(options) {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    let dir = path.resolve(options.cwd)
    let hasGit = false
    for (;;) {
      if (yield* fs.exists(path.join(dir, ".git")).pipe(Effect.orElseSucceed(() => false))) {
        hasGit = true
        break
      }
      const parent = path.dirname(dir)
      if (parent === dir) break
      dir = parent
    }
    return { "workspace-has-git": hasGit }
  }
)

/**
 * The conditions of a session in `cwd` (default: the process's working directory): the values
 * the caller gives win, every other condition the library knows is detected on the real file
 * system. What ClaudeLocal and ClaudeAgent use, so worktree tools are on in a git workspace
 * without the caller passing anything; conditions of the application's own (such as
 * `agent-has-channel`) come only from `given`.
 *
 * @category utils
 * @since 1.0.0
 */
export const detectNodeConditions = (options: {
  readonly cwd?: string | undefined
  readonly given?: Conditions | undefined
}): Effect.Effect<Conditions> => {
  const given = options.given ?? {}
  if (given["workspace-has-git"] !== undefined) return Effect.succeed(given)
  return detectConditions({ cwd: options.cwd ?? process.cwd() }).pipe(
    Effect.map((detected): Conditions => ({ ...detected, ...given })),
    Effect.provide(NodeFileSystem.layer),
    Effect.provide(NodePath.layer)
  )
}
