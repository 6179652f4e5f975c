/**
 * A model API the real `claude` cannot reach: the turn fails with a retryable `ProviderError` of
 * kind `network` that keeps the CLI's words and names what to check (it was a `process` error
 * saying "reported an error (success)"). Both providers, the CLI's own retries turned off.
 */
import { expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { createServer } from "node:net"
import { sandbox } from "../support/claudeCli.ts"
import { agentClient, localClient } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"

/** A loopback port nothing listens on: bound once by us, then closed. */
const closedPort = Effect.callback<number>((resume) => {
  const server = createServer()
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

describeWithClaude("a model API the claude CLI cannot reach", () => {
  const cases = [
    ["ClaudeLocal", localClient],
    ["ClaudeAgent", agentClient]
  ] as const
  for (const [name, client] of cases) {
    it.live(
      `${name}: a retryable network ProviderError with the CLI's reason and what to check`,
      () =>
        Effect.gen(function*() {
          const port = yield* closedPort
          const box = yield* sandbox(`http://127.0.0.1:${port}`)
          const chat = yield* client({ ...box, env: { ...box.env, CLAUDE_CODE_MAX_RETRIES: "0" } })
          const error = yield* Effect.flip(chat.chat("hello"))
          expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "NetworkError" }, isRetryable: true })
          expect(error.message).toMatch(/could not reach the model's API \(API Error: Connection refused.*ECONNREFUSED/)
          expect(error.message).toContain("ANTHROPIC_BASE_URL")
          expect(error.message).not.toContain("(success)")
        }).pipe(Effect.scoped),
      120_000
    )
  }
})
