import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Conditions from "../../src/registry/Conditions.js"

const withTempDir = <A, E>(f: (dir: string) => Effect.Effect<A, E, NodeContext.NodeContext>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "conditions-"))),
    f,
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  ).pipe(Effect.provide(NodeContext.layer))

describe("detectConditions", () => {
  it.effect("workspace-has-git is false without .git, true with a .git dir in cwd or an ancestor, or a .git file", () =>
    withTempDir((dir) =>
      Effect.gen(function*() {
        const nested = path.join(dir, "repo", "src", "deep")
        fs.mkdirSync(nested, { recursive: true })
        expect(yield* Conditions.detectConditions({ cwd: nested })).toEqual({ "workspace-has-git": false })
        fs.mkdirSync(path.join(dir, "repo", ".git"))
        expect(yield* Conditions.detectConditions({ cwd: nested })).toEqual({ "workspace-has-git": true })
        const worktree = path.join(dir, "wt")
        fs.mkdirSync(worktree)
        fs.writeFileSync(path.join(worktree, ".git"), "gitdir: ../repo/.git/worktrees/wt\n")
        expect(yield* Conditions.detectConditions({ cwd: worktree })).toEqual({ "workspace-has-git": true })
        expect(yield* Conditions.detectConditions({ cwd: path.join(dir, "missing") })).toEqual({
          "workspace-has-git": false
        })
      })
    ))
})
