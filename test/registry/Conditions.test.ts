import * as NodeServices from "@effect/platform-node/NodeServices"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Conditions from "../../src/registry/Conditions.ts"

const withTempDir = <A, E>(f: (dir: string) => Effect.Effect<A, E, NodeServices.NodeServices>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "conditions-"))),
    f,
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  ).pipe(Effect.provide(NodeServices.layer))

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

// ClaudeLocal's and ClaudeAgent's tests reach it too; here the Node form is tested on its own.
describe("detectNodeConditions", () => {
  it.effect("a given workspace-has-git wins; otherwise it is detected on the real file system, given values kept", () =>
    withTempDir((dir) =>
      Effect.gen(function*() {
        fs.mkdirSync(path.join(dir, ".git"))
        expect(yield* Conditions.detectNodeConditions({ cwd: dir, given: { "workspace-has-git": false } })).toEqual({
          "workspace-has-git": false
        })
        expect(yield* Conditions.detectNodeConditions({ cwd: dir, given: { "agent-has-channel": true } })).toEqual({
          "workspace-has-git": true,
          "agent-has-channel": true
        })
        const plain = path.join(dir, "..", `${path.basename(dir)}-plain`)
        fs.mkdirSync(plain)
        try {
          const detected = yield* Conditions.detectNodeConditions({ cwd: plain })
          expect(Object.keys(detected)).toEqual(["workspace-has-git"])
        } finally {
          fs.rmSync(plain, { recursive: true, force: true })
        }
        const here = yield* Conditions.detectNodeConditions({})
        expect(typeof here["workspace-has-git"]).toBe("boolean")
      })
    ))
})
