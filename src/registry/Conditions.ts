/**
 * Runtime conditions that `conditional` tools depend on, computed once per session build (they
 * must stay cheap: a few `stat`s).
 *
 * @since 0.1.0
 * @module
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as Effect from "effect/Effect"

/** Condition name → value; the shape `PolicyContext.conditions` takes. */
export type Conditions = Readonly<Record<string, boolean>>

/**
 * Computes every condition this library knows. `workspace-has-git`: `cwd` or one of its
 * ancestors has a `.git` entry (a directory, or the file a linked worktree has). A `stat` that
 * fails (permissions) counts as "no", which keeps the worktree tools hidden rather than broken.
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
