/**
 * Safe, honest defaults on the pinned real `claude` binary against the local fake Messages API
 * (issue 43): a headless run offers the model only tools it can be allowed to use, and opt-outs
 * the policy cannot apply are warned about — the model's `tools` list is the proof.
 */
import { expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import type * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import { sandbox } from "../support/claudeCli.ts"
import { localSession } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

const toolNames = (req: Fake.FakeRequest) => (req.body.tools ?? []).map((t) => t.name)

/** One turn on a fresh ClaudeLocal; the first request's tools, the session's policy and the warnings. */
const firstTurn = (options: ClaudeLocal.Options) =>
  Effect.gen(function*() {
    const warnings: Array<string> = []
    const logger = Logger.layer([
      Logger.make(({ logLevel, message }) => {
        if (logLevel === "Warn") warnings.push(String(Array.isArray(message) ? message[0] : message))
      })
    ])
    const api = yield* Fake.make(() => ({ text: "ok" }))
    const box = yield* sandbox(api.url)
    const { chat, session } = yield* localSession(box, { requestTimeout: "120 seconds", ...options }).pipe(
      Effect.provide(logger)
    )
    expect(yield* chat.chat("hi").pipe(Effect.provide(logger))).toBe("ok")
    const policy = yield* session.toolPolicy
    return { offered: toolNames(api.messageRequests()[0]!), policy, warnings }
  })

describeWithClaude("ClaudeLocal's defaults on the real claude binary", () => {
  it.live(
    "no toolPolicy: Bash, Edit and Write are not offered (no one could approve them); Read, Glob, Grep are",
    () =>
      Effect.gen(function*() {
        const { offered, policy } = yield* firstTurn({})
        for (const gone of ["Bash", "BashOutput", "Edit", "Write", "AskUserQuestion"]) {
          expect(offered).not.toContain(gone)
        }
        for (const kept of ["Read", "Glob", "Grep"]) expect(offered).toContain(kept)
        expect(policy.withheld.map((w) => w.tool)).toEqual(expect.arrayContaining(["Bash", "Edit", "Write"]))
        // The model is offered nothing the policy disallows.
        expect(offered.filter((n) => policy.disallowedTools.includes(n))).toEqual([])
      }),
    { timeout: 180_000 }
  )

  it.live(
    "the issue's four typos: a warning each, and the tool list is what the policy says (they turn nothing off)",
    () =>
      Effect.gen(function*() {
        const { offered, policy, warnings } = yield* firstTurn({
          // Bash and Edit approved, so the list shows whether the typos turned them off.
          toolPolicy: { disabledTools: ["Bsh", "WebSerch", "edit", "Bash(rm:*)"], allowedTools: ["Bash", "Edit"] }
        })
        expect(warnings.filter((w) => w.startsWith("tool policy:"))).toEqual([
          "tool policy: Bsh is not a tool the registry knows: did you mean Bash?",
          "tool policy: WebSerch is not a tool the registry knows: did you mean WebSearch?",
          "tool policy: edit is not a tool the registry knows: did you mean Edit? Tool names are case-sensitive.",
          "tool policy: \"Bash(rm:*)\" is not a tool name: use letters, digits, _ - . / and the wildcard *"
        ])
        expect(policy.ignored.map((i) => i.entry)).toEqual(["Bsh", "WebSerch", "edit", "Bash(rm:*)"])
        expect(offered).toContain("Bash")
        expect(offered).toContain("Edit")
        expect(offered).not.toContain("Write")
        expect(offered).not.toContain("WebSearch")
        expect(offered.filter((n) => policy.disallowedTools.includes(n))).toEqual([])
      }),
    { timeout: 180_000 }
  )
})
