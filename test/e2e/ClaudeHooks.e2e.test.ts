import { expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { readFileSync } from "node:fs"
import * as ClaudeCodeCatalog from "../../src/registry/ClaudeCodeCatalog.ts"
import * as Registry from "../../src/registry/Registry.ts"
import type { ChatClientService } from "../../src/services/ChatClient.ts"
import type { ClaudeCodeOptions } from "../../src/services/ClaudeCodeOptions.ts"
import * as Tool from "../../src/services/Tool.ts"
import { claudeProcessesIn, sandbox } from "../support/claudeCli.ts"
import { agentClient, localClient, recordingSecretFile } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

const sub = (ran: { count: number }) =>
  Tool.make("sub", {
    description: "Subtracts b from a",
    parameters: { a: Schema.Number, b: Schema.Number },
    handler: ({ a, b }) => Effect.sync(() => (ran.count++, a - b))
  })

const add = Tool.make("add", {
  description: "Adds two numbers",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

/** The model makes `calls` one after another, then answers "done". */
const inTurn = (...calls: ReadonlyArray<Fake.ToolUse>) =>
  Fake.make((req) => {
    const answered = (req.body.messages ?? []).filter((m) => JSON.stringify(m.content).includes("\"tool_result\""))
    const next = calls[answered.length]
    return next === undefined ? { text: "done" } : { toolUses: [next] }
  })

/** Where a hook runs: set when the client is built, and otherwise when a turn runs. */
const Where = Context.Reference<string>("test/ClaudeHooks/Where", { defaultValue: () => "nowhere" })

/** Every tool result the model was sent, in order. */
const resultsSeen = (api: Fake.FakeMessagesApi) => api.messageRequests().flatMap(Fake.toolResults)

const preToolUse = (decision: "allow" | "deny", seen: Array<string>) => async (input: { hook_event_name: string }) => {
  if ("tool_name" in input) seen.push(`${decision}:${String(input.tool_name)}`)
  return {
    hookSpecificOutput: {
      hookEventName: "PreToolUse" as const,
      permissionDecision: decision,
      permissionDecisionReason: `the ${decision} hook`
    }
  }
}

describeWithClaude("hooks on ClaudeAgent with the real claude binary", () => {
  it.live(
    "extraOptions.hooks survive the policy's PreToolUse hook; a deny among matching hooks wins over an allow",
    () =>
      Effect.gen(function*() {
        let confirmed = 0
        const api = yield* inTurn(
          { name: "mcp__gtb__confirm", input: {} },
          { name: "mcp__gtb__add", input: { a: 2, b: 3 } }
        )
        const box = yield* sandbox(api.url)
        // An interactive tool under bypassPermissions: the policy installs its headless PreToolUse hook.
        const registry = yield* Registry.make([
          ...ClaudeCodeCatalog.descriptors,
          Registry.mcpTool({ server: "gtb", wireName: "confirm", category: "orchestration", interactive: true })
        ])
        const confirm = Tool.make("confirm", {
          description: "Asks the user to confirm",
          parameters: {},
          handler: () => Effect.sync(() => ++confirmed)
        })
        const seen: Array<string> = []
        const chat = yield* agentClient(box, {
          // The CLI refuses bypassPermissions as root unless it is told it runs in a sandbox.
          env: { ...box.env, IS_SANDBOX: "1" },
          permissionMode: "bypassPermissions",
          toolPolicy: { registry },
          allowPermissionDenials: true,
          extraOptions: {
            hooks: {
              PreToolUse: [
                { matcher: "mcp__gtb__.*", hooks: [preToolUse("allow", seen)] },
                { matcher: "mcp__gtb__add", hooks: [preToolUse("deny", seen)] }
              ]
            }
          }
        })
        const session = yield* chat.setTools([confirm, add])
        void session
        expect(yield* chat.chat("confirm, then add 2 and 3")).toBe("done")
        expect(seen.sort()).toEqual(["allow:mcp__gtb__add", "allow:mcp__gtb__confirm", "deny:mcp__gtb__add"])
        const [confirmedResult, added] = resultsSeen(api)
        expect(confirmed).toBe(1)
        expect(confirmedResult).toMatchObject({ content: "1", is_error: false })
        expect(added!.is_error).toBe(true)
        expect(added!.content).toContain("the deny hook")
      }),
    { timeout: 120_000 }
  )
})

type MakeClient = (
  box: Effect.Success<ReturnType<typeof sandbox>>,
  options: ClaudeCodeOptions & { readonly allowPermissionDenials?: boolean; readonly keepAlive?: boolean }
) => Effect.Effect<ChatClientService, never, Scope.Scope>

const providers: ReadonlyArray<readonly [string, MakeClient]> = [
  ["ClaudeAgent", (box, options) => agentClient(box, options)],
  ["ClaudeLocal", (box, options) => localClient(box, options)]
]

for (const [name, makeClient] of providers) {
  describeWithClaude(`typed hooks on ${name} with the real claude binary`, () => {
    it.live(
      "a hook's deny blocks, the policy's still holds against a hook's allow, a failing hook does not block, PostToolUse sees the result",
      () =>
        Effect.gen(function*() {
          const api = yield* inTurn(
            { name: "mcp__gtb__add", input: { a: 2, b: 3 } },
            { name: "mcp__gtb__sub", input: { a: 5, b: 1 } },
            { name: "Bash", input: { command: "echo hi" } }
          )
          const box = yield* sandbox(api.url)
          const seen: Array<string> = []
          const responses: Array<readonly [string, unknown]> = []
          const ran = { count: 0 }
          const chat = yield* makeClient(box, {
            allowPermissionDenials: true,
            hooks: {
              PreToolUse: [
                {
                  run: (input) =>
                    Effect.sync(() => {
                      seen.push(input.tool_name)
                      return { permissionDecision: "allow" as const }
                    })
                },
                {
                  matcher: "mcp__gtb__sub",
                  run: () =>
                    Effect.succeed({ permissionDecision: "deny", permissionDecisionReason: "no subtraction today" })
                },
                { matcher: "mcp__gtb__add", run: () => Effect.fail("the hook is broken") }
              ],
              PostToolUse: [{
                run: (input) => Effect.sync(() => (responses.push([input.tool_name, input.tool_response]), {}))
              }]
            }
          })
          yield* chat.setTools([add, sub(ran)])
          expect(yield* chat.chat("add, subtract, then run a command")).toBe("done")
          const [added, subtracted, bashed] = resultsSeen(api)
          // The failing hook is a non-blocking error: the call ran.
          expect(added).toMatchObject({ content: "5", is_error: false })
          expect(subtracted!.is_error).toBe(true)
          expect(subtracted!.content).toContain("no subtraction today")
          expect(ran.count).toBe(0)
          // The policy withholds Bash on a headless run; the hook's allow does not bring it back.
          expect(bashed!.is_error).toBe(true)
          expect(seen).toContain("mcp__gtb__add")
          expect(seen).toContain("mcp__gtb__sub")
          expect(responses.map(([tool]) => tool)).toEqual(["mcp__gtb__add"])
          expect(JSON.stringify(responses[0])).toContain("5")
        }),
      { timeout: 180_000 }
    )

    it.live(
      "a hook at work is not a stalled run: a hook longer than stallTimeout lets the turn finish",
      () =>
        Effect.gen(function*() {
          const api = yield* inTurn({ name: "mcp__gtb__add", input: { a: 1, b: 1 } })
          const box = yield* sandbox(api.url)
          const chat = yield* makeClient(box, {
            stallTimeout: "2 seconds",
            hooks: {
              UserPromptSubmit: [{ run: () => Effect.as(Effect.sleep("4 seconds"), {}) }],
              Stop: [{ run: () => Effect.as(Effect.sleep("4 seconds"), {}) }]
            }
          })
          yield* chat.setTools([add])
          expect(yield* chat.chat("add 1 and 1")).toBe("done")
          expect(resultsSeen(api)).toEqual([expect.objectContaining({ content: "2", is_error: false })])
        }),
      { timeout: 120_000 }
    )

    it.live("a hook runs in the context that built the client, not the turn's", () =>
      Effect.gen(function*() {
        const api = yield* inTurn({ name: "mcp__gtb__add", input: { a: 1, b: 2 } })
        const box = yield* sandbox(api.url)
        const where: Array<string> = []
        const record = Effect.gen(function*() {
          where.push(yield* Where)
          return {}
        })
        const chat = yield* makeClient(box, {
          hooks: { PreToolUse: [{ run: () => record }], PostToolUse: [{ run: () => record }] }
        }).pipe(Effect.provideService(Where, "layer"))
        yield* chat.setTools([add])
        expect(yield* chat.chat("add 1 and 2").pipe(Effect.provideService(Where, "turn"))).toBe("done")
        expect(where).toEqual(["layer", "layer"])
      }), { timeout: 120_000 })

    it.live(
      "the application's hooks show in chatStream on ClaudeLocal, not as the Agent SDK's callbacks",
      () =>
        Effect.gen(function*() {
          const api = yield* inTurn({ name: "mcp__gtb__add", input: { a: 1, b: 2 } })
          const box = yield* sandbox(api.url)
          const chat = yield* makeClient(box, {
            hooks: { PreToolUse: [{ matcher: "mcp__gtb__add", run: () => Effect.succeed({}) }] }
          })
          yield* chat.setTools([add])
          const events = yield* Stream.runCollect(chat.chatStream("add 1 and 2"))
          const hooks = events.filter((e) => e._tag === "HookStarted" || e._tag === "HookFinished")
            .filter((e) => e.hookEvent === "PreToolUse")
          expect(events.at(-1)?._tag).toBe("Complete")
          expect(resultsSeen(api)[0]).toMatchObject({ content: "3", is_error: false })
          if (name === "ClaudeAgent") {
            // The SDK asks for hook events, but the CLI reports none for the SDK's own callbacks.
            expect(hooks).toEqual([])
            return
          }
          expect(hooks.map((e) => e._tag)).toEqual(["HookStarted", "HookFinished"])
          expect(hooks[0]!.hookId).toBe(hooks[1]!.hookId)
          expect(hooks[0]!.hookName).toContain("mcp__gtb__add")
        }),
      { timeout: 120_000 }
    )

    it.live("hooks fire on every turn of a kept-alive CLI", () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(() => ({ text: "ok" }))
        const box = yield* sandbox(api.url)
        const prompts: Array<string> = []
        const chat = yield* makeClient(box, {
          keepAlive: true,
          hooks: { UserPromptSubmit: [{ run: (input) => Effect.sync(() => (prompts.push(input.prompt), {})) }] }
        })
        expect(yield* chat.chat("one")).toBe("ok")
        expect(yield* chat.chat("two")).toBe("ok")
        expect(prompts.map((p) => p.split("\n").at(-1))).toEqual(["one", "two"])
      }), { timeout: 120_000 })

    it.live("hooks fire on the resumed session of the next turn", () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(() => ({ text: "ok" }))
        const box = yield* sandbox(api.url)
        const prompts: Array<string> = []
        const chat = yield* makeClient(box, {
          allowPermissionDenials: true,
          hooks: {
            UserPromptSubmit: [{ run: (input) => Effect.sync(() => (prompts.push(input.prompt), {})) }]
          }
        })
        expect(yield* chat.chat("first")).toBe("ok")
        expect(yield* chat.chat("second")).toBe("ok")
        expect(prompts.map((p) => p.split("\n").at(-1))).toEqual(["first", "second"])
        // The second turn is a new CLI resuming the first one's session.
        expect(JSON.stringify(api.messageRequests().at(-1)!.body.messages)).toContain("first")
      }), { timeout: 180_000 })
  })
}

/** What `ClaudeLocal` writes into its settings file for the hooks. */
interface Settings {
  readonly hooks?: {
    readonly PreToolUse: ReadonlyArray<{
      readonly matcher?: string
      readonly hooks: ReadonlyArray<{ readonly url: string; readonly headers: { readonly Authorization: string } }>
    }>
  }
}

describeWithClaude("ClaudeLocal's HTTP hooks with the real claude binary", () => {
  it.live(
    "the hooks reach the CLI in the 0600 settings file with the hooks bridge's token, never in argv",
    () =>
      Effect.gen(function*() {
        const api = yield* inTurn({ name: "mcp__gtb__probe", input: {} })
        const box = yield* sandbox(api.url)
        const { layer: secretFile, written } = recordingSecretFile(box)
        let argv: Array<string> = []
        const probe = Tool.make("probe", {
          description: "Reads the running CLI's argv",
          parameters: {},
          handler: () =>
            Effect.sync(() => {
              argv = claudeProcessesIn(box.cwd).map((pid) => readFileSync(`/proc/${pid}/cmdline`, "utf8"))
              return "ok"
            })
        })
        let fired = 0
        const chat = yield* localClient(box, {
          hooks: {
            PreToolUse: [{ matcher: "mcp__gtb__probe", timeout: 30, run: () => Effect.sync(() => (fired++, {})) }]
          }
        }, { secretFile })
        yield* chat.setTools([probe])
        expect(yield* chat.chat("probe")).toBe("done")
        expect(fired).toBe(1)
        const settings = written.map((w) => JSON.parse(w) as Settings).find((w) => w.hooks !== undefined)
        const [matcher] = settings!.hooks!.PreToolUse
        expect(matcher!.matcher).toBe("mcp__gtb__probe")
        const [hook] = matcher!.hooks
        expect(hook).toMatchObject({ type: "http", timeout: 30 })
        expect(hook!.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/hooks\/0$/)
        const token = hook!.headers.Authorization.replace(/^Bearer /, "")
        expect(token.length).toBeGreaterThan(40)
        expect(argv.length).toBeGreaterThan(0)
        for (const line of argv) expect(line).not.toContain(token)
        expect(argv.some((line) => line.includes("--settings"))).toBe(true)
      }),
    { timeout: 120_000 }
  )
})
