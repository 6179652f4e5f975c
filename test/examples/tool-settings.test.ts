import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as SqlClient from "effect/sql/SqlClient"
import { execFileSync } from "node:child_process"
import * as nodeFs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as SqliteClient from "../../src/layers/SqliteClient.ts"

const testFolder = Effect.acquireRelease(
  Effect.sync(() => nodeFs.mkdtempSync(path.join(os.tmpdir(), "tool-settings-example-"))),
  (dir) => Effect.sync(() => nodeFs.rmSync(dir, { recursive: true, force: true }))
)

const runExample = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  execFileSync(process.execPath, ["--import", "tsx", "examples/tool-settings.ts", ...args], {
    env: { ...process.env, ...env },
    encoding: "utf8",
    timeout: 60_000
  })

describe("examples/tool-settings.ts", () => {
  it.effect(
    "stores the toggles in the given SQLite file and prints the CLI flags they become",
    () =>
      Effect.gen(function*() {
        const folder = yield* testFolder
        const file = path.join(folder, "agents.sqlite")
        // A private data directory, so a mistake in the path handling cannot touch the user's.
        const env = { XDG_DATA_HOME: path.join(folder, "xdg"), HOME: folder }
        const first = runExample([file], env)
        assert.include(first, "created docs-writer: disabledTools = []")
        assert.include(first, "after toggles: disabledTools = [\"Bash\",\"mcp__docs__*\"]")
        assert.include(first, "Shell: Shell commands off")
        assert.include(first, "Write files on")
        const flagsLine = first.split("\n").find((l) => l.startsWith("claude flags: "))
        assert.isDefined(flagsLine)
        const flags = JSON.parse(flagsLine!.slice("claude flags: ".length)) as Array<string>
        assert.strictEqual(flags[0], "--disallowedTools")
        const disallowed = flags[1]!.split(",")
        for (const tool of ["Bash", "BashOutput", "mcp__docs__*", "WebSearch", "EnterWorktree"]) {
          assert.include(disallowed, tool)
        }
        assert.notInclude(disallowed, "Read")
        // On by the agent's settings, but withheld: a headless session cannot answer their prompts.
        for (const tool of ["Write", "Edit"]) assert.include(disallowed, tool)
        assert.include(
          first,
          "withheld on this session: AskUserQuestion, Bash, Edit, EnterPlanMode, ExitPlanMode, Write"
        )
        assert.deepStrictEqual(flags.slice(2), ["--allowedTools", "mcp__gtb__*"])

        const rows = yield* Effect.provide(
          Effect.flatMap(
            SqlClient.SqlClient,
            (sql) => sql<{ id: string; disabled_tools: string }>`SELECT id, disabled_tools FROM agents`
          ),
          SqliteClient.layer({ filename: file })
        )
        // node:sqlite returns rows with a null prototype: compare them as plain objects.
        assert.deepStrictEqual(rows.map((row) => ({ ...row })), [{
          id: "docs-writer",
          disabled_tools: "[\"Bash\",\"mcp__docs__*\"]"
        }])

        // Again, with the path from the environment: the agent exists, the outcome is the same.
        const second = runExample([], { ...env, AGENT_SETTINGS_DB: file })
        assert.include(second, "created docs-writer: disabledTools = []")
        assert.strictEqual(second.split("\n").find((l) => l.startsWith("claude flags: ")), flagsLine)
        assert.isFalse(nodeFs.existsSync(path.join(folder, "xdg")), "the default data directory was not used")
        assert.include(second, `database: ${file}\n`)
      }),
    180_000
  )

  it.effect(
    "without a file it says where the database is, and leaves nothing in the home directory",
    () =>
      Effect.gen(function*() {
        const folder = yield* testFolder
        const tmp = path.join(folder, "tmp")
        nodeFs.mkdirSync(tmp)
        const home = path.join(folder, "home")
        nodeFs.mkdirSync(home)
        const env = { XDG_DATA_HOME: path.join(home, ".local", "share"), HOME: home, TMPDIR: tmp }
        const output = execFileSync(process.execPath, ["--import", "tsx", "examples/tool-settings.ts"], {
          env: {
            ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== "AGENT_SETTINGS_DB")),
            ...env
          },
          encoding: "utf8",
          timeout: 60_000
        })
        const line = output.split("\n").find((l) => l.startsWith("database: "))
        assert.isDefined(line)
        assert.include(line!, tmp)
        assert.include(line!, "temporary, removed on exit")
        assert.include(output, "claude flags: ")
        assert.deepStrictEqual(nodeFs.readdirSync(home), [], "nothing was written into HOME")
        // (tsx keeps its own cache there.)
        assert.deepStrictEqual(
          nodeFs.readdirSync(tmp).filter((e) => e.startsWith("tool-settings-")),
          [],
          "the temporary database was removed"
        )
      }),
    120_000
  )
})
