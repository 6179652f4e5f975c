/**
 * `ask` with a schema the model never meets, on the real `claude`: after the CLI's own retries it
 * is a `StructuredOutputError` saying what to do, with what the model last tried and why the CLI
 * refused it (it was an empty `ProviderError` before). ClaudeLocal fresh and kept alive, and ClaudeAgent.
 */
import { expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { sandbox } from "../support/claudeCli.ts"
import { agentClient, localClient } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

const City = Schema.Struct({ city: Schema.String, population: Schema.Number })

/** Always answers with a StructuredOutput call whose `population` is a string: never valid. */
const stubborn = (req: Fake.FakeRequest): Fake.FakeReply =>
  (req.body.tools ?? []).some((t) => t.name === "StructuredOutput")
    ? { toolUses: [{ name: "StructuredOutput", input: { city: "Lisbon", population: "many" } }] }
    : { text: "Lisbon has many people." }

describeWithClaude("ask when the model never meets the schema", () => {
  const cases = [
    ["ClaudeLocal", (box: Parameters<typeof localClient>[0]) => localClient(box)],
    ["ClaudeLocal keepAlive", (box: Parameters<typeof localClient>[0]) => localClient(box, { keepAlive: true })],
    ["ClaudeAgent", (box: Parameters<typeof agentClient>[0]) => agentClient(box)]
  ] as const
  for (const [name, client] of cases) {
    it.live(`${name}: StructuredOutputError with the last attempt and the CLI's reason`, () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(stubborn)
        const box = yield* sandbox(api.url)
        const chat = yield* client(box)
        const error = yield* Effect.flip(chat.ask("How many people live in Lisbon?", City))
        expect(error._tag).toBe("StructuredOutputError")
        expect(error.message).toContain("error_max_structured_output_retries")
        expect(error.message).toContain("Loosen the schema")
        expect(error.message).toContain("population")
        expect(error._tag === "StructuredOutputError" ? error.answer : "").toContain("\"population\":\"many\"")
        expect(api.messageRequests().length).toBeGreaterThan(1)
      }).pipe(Effect.scoped), 120_000)
  }
})
