import { expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import type { ChatEvent } from "../../src/services/ChatEvent.ts"
import { type Sandbox, sandbox } from "../support/claudeCli.ts"
import { agentClient, localClient } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

/**
 * A model that delegates to a foreground subagent, which reads `a.txt` and reports back: the main
 * agent calls `Agent`; the subagent (its conversation opens with "sub-task") calls `Read`, then
 * answers from the file; the main agent answers once the report is back. Decided on the whole
 * conversation: the CLI may add a reminder message after a tool result.
 */
const delegatingApi = (box: () => Sandbox) =>
  Fake.make((req) => {
    const messages = req.body.messages ?? []
    const all = JSON.stringify(messages)
    if (JSON.stringify(messages[0] ?? "").includes("sub-task")) {
      return all.includes("hello from a file")
        ? { text: "the file greets" }
        : { toolUses: [{ name: "Read", input: { file_path: join(box().cwd, "a.txt") } }] }
    }
    return all.includes("the file greets") ? { text: "delegated and done" } : {
      toolUses: [{
        name: "Agent",
        input: {
          description: "Read the file",
          prompt: "sub-task: read a.txt",
          subagent_type: "general-purpose",
          run_in_background: false
        }
      }]
    }
  })

/** What a subagent turn streamed, on either provider. */
const expectSubagentActivity = (events: ReadonlyArray<ChatEvent>) => {
  const agent = events.find((e) => e._tag === "AgentToolStart" && e.name === "Agent")
  expect(agent).toBeDefined()
  const agentId = agent!._tag === "AgentToolStart" ? agent!.id : ""
  expect(events.find((e) => e._tag === "TaskStarted")).toMatchObject({
    toolCallId: agentId,
    description: "Read the file",
    subagentType: "general-purpose"
  })
  expect(events.find((e) => e._tag === "TaskEnded")).toMatchObject({
    toolCallId: agentId,
    status: "completed",
    summary: "the file greets"
  })
  // The subagent's Read is parented to the Agent call; the Agent call itself has no parent.
  const reads = events.filter((e) => (e._tag === "AgentToolStart" || e._tag === "AgentToolEnd") && e.name === "Read")
  expect(reads).toMatchObject([
    { _tag: "AgentToolStart", parentToolCallId: agentId },
    { _tag: "AgentToolEnd", parentToolCallId: agentId, isError: false }
  ])
  expect(agent).not.toHaveProperty("parentToolCallId")
  expect(events.at(-1)).toMatchObject({ _tag: "Complete", text: "delegated and done" })
}

describeWithClaude("Agent activity in chatStream with the real claude binary", () => {
  it.live(
    "ClaudeLocal: a subagent's task, its parented tools, and the Agent call's streamed arguments",
    () =>
      Effect.gen(function*() {
        // The fake answers with a path in the sandbox, made after it (the sandbox needs its URL).
        const made: { box?: Sandbox } = {}
        const api = yield* delegatingApi(() => made.box!)
        const box = made.box = yield* sandbox(api.url)
        writeFileSync(join(box.cwd, "a.txt"), "hello from a file\n")
        const chat = yield* localClient(box)
        const events = [...yield* Stream.runCollect(chat.chatStream("delegate the reading"))]
        expectSubagentActivity(events)
        const deltas = events.filter((e) => e._tag === "ToolInputDelta")
        expect(deltas.length).toBeGreaterThan(1)
        expect(JSON.parse(deltas.map((d) => d._tag === "ToolInputDelta" ? d.delta : "").join(""))).toMatchObject({
          prompt: "sub-task: read a.txt"
        })
      }),
    180_000
  )

  it.live("ClaudeAgent: a subagent's task and its parented tools", () =>
    Effect.gen(function*() {
      // The fake answers with a path in the sandbox, made after it (the sandbox needs its URL).
      const made: { box?: Sandbox } = {}
      const api = yield* delegatingApi(() => made.box!)
      const box = made.box = yield* sandbox(api.url)
      writeFileSync(join(box.cwd, "a.txt"), "hello from a file\n")
      const chat = yield* agentClient(box)
      expectSubagentActivity([...yield* Stream.runCollect(chat.chatStream("delegate the reading"))])
    }), 180_000)
})
