import { expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as ClaudeCodeCatalog from "../../src/registry/ClaudeCodeCatalog.ts"
import * as Registry from "../../src/registry/Registry.ts"
import * as Tool from "../../src/services/Tool.ts"
import { sandbox } from "../support/claudeCli.ts"
import { agentClient } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

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
