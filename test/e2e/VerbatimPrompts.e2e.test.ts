/**
 * Prompt text is data: on the real claude, through both providers, fresh and kept-alive, a user's
 * `@file` never makes the CLI read that file into the model request, and a slash command reaches
 * the model as text. The fake Messages API logs every request body, which is what is asserted on.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import type { ChatClientService } from "../../src/services/ChatClient.ts"
import * as Content from "../../src/services/Content.ts"
import { claudeBinary, oldestClaudeBinary, type Sandbox, sandbox } from "../support/claudeCli.ts"
import { agentClient, localClient } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"
import { pngBytes } from "../support/media.ts"

const relativeSecret = "TOPSECRET-RELATIVE-9f1c"
const absoluteSecret = "TOPSECRET-ABSOLUTE-77ab"

/** The fake model: a StructuredOutput call where the run offers one (`ask`), else "ok". */
const model = (req: Fake.FakeRequest): Fake.FakeReply =>
  (req.body.tools ?? []).some((t) => t.name === "StructuredOutput")
    ? { toolUses: [{ name: "StructuredOutput", input: { answer: "seen" } }] }
    : { text: "ok" }

/** A sandbox with a secret in the CLI's working directory and one elsewhere, named by absolute path. */
const withSecrets = Effect.gen(function*() {
  const api = yield* Fake.make(model)
  const box = yield* sandbox(api.url)
  writeFileSync(join(box.cwd, "secret.txt"), relativeSecret)
  const absolute = join(box.dir, "elsewhere.txt")
  writeFileSync(absolute, absoluteSecret)
  return { api, box, absolute }
})

const everything = (api: Fake.FakeMessagesApi) => JSON.stringify(api.messageRequests().map((r) => r.body))
const lastText = (api: Fake.FakeMessagesApi) => Fake.lastUserText(api.messageRequests().at(-1)!)

/** With `trustedPrompts` the CLI reads the prompt as typed text: the mentioned file reaches the model. */
const expandsWhenTrusted = (client: (box: Sandbox) => Effect.Effect<ChatClientService, never, Scope.Scope>) =>
  Effect.gen(function*() {
    const { api, box } = yield* withSecrets
    const chat = yield* client(box)
    yield* chat.chat("Summarize @secret.txt please")
    expect(everything(api)).toContain(relativeSecret)
  })

type Client = (
  box: Sandbox,
  options: { readonly trustedPrompts?: boolean }
) => Effect.Effect<ChatClientService, never, Scope.Scope>

const clients: ReadonlyArray<{ readonly name: string; readonly client: Client }> = [
  { name: "ClaudeLocal", client: (box, o) => localClient(box, { binary: claudeBinary, ...o }) },
  {
    name: "ClaudeLocal keepAlive",
    client: (box, o) => localClient(box, { binary: claudeBinary, keepAlive: true, ...o })
  },
  { name: "ClaudeAgent", client: (box, o) => agentClient(box, o) },
  { name: "ClaudeAgent keepAlive", client: (box, o) => agentClient(box, { keepAlive: true, ...o }) }
]

describeWithClaude("verbatim prompts on the real claude 2.1.332", () => {
  describe.each(clients)("$name", ({ client }) => {
    it.live(
      "no @file reaches the model, slash commands arrive as text, also with an image and on ask",
      () =>
        Effect.gen(function*() {
          const { absolute, api, box } = yield* withSecrets
          const chat = yield* client(box, {})
          const mention = `Summarize @secret.txt and @${absolute} please`
          expect(yield* chat.chat(mention)).toBe("ok")
          expect(lastText(api)).toContain(mention)

          for (const command of ["/cost", "/context"]) {
            const before = api.messageRequests().length
            expect(yield* chat.chat(command)).toBe("ok")
            // A command the CLI ran itself would make no model call.
            expect(api.messageRequests().length).toBeGreaterThan(before)
            expect(Fake.lastUserLine(api.messageRequests().at(-1)!)).toBe(command)
          }

          yield* chat.chat([
            Content.text("What is in @secret.txt and this image?"),
            Content.image(pngBytes, "image/png")
          ])
          const asked = yield* chat.ask(`Read @${absolute}`, Schema.Struct({ answer: Schema.String }))
          expect(asked).toEqual({ answer: "seen" })

          const sent = everything(api)
          expect(sent).not.toContain(relativeSecret)
          expect(sent).not.toContain(absoluteSecret)
          expect(sent).toContain("What is in @secret.txt and this image?")
          expect(sent).toContain(`Read @${absolute}`)
        }),
      { timeout: 180_000 }
    )

    it.live(
      "with trustedPrompts the CLI expands @file as typed text",
      () => expandsWhenTrusted((box) => client(box, { trustedPrompts: true })),
      { timeout: 120_000 }
    )
  })
})

describe.each([false, true])("claude 2.0.0, which ignores client_composed (keepAlive %s)", (keepAlive) => {
  const oldClient = (box: Sandbox, trustedPrompts = false) =>
    localClient(box, { binary: oldestClaudeBinary, keepAlive, trustedPrompts })

  it.live(
    "refuses a prompt it would interpret, before any model call, keeps added text, and runs a plain one",
    () =>
      Effect.gen(function*() {
        const { absolute, api, box } = yield* withSecrets
        const chat = yield* oldClient(box)
        for (
          const prompt of [
            `Summarize @${absolute}`,
            "/cost",
            [Content.text("See @secret.txt"), Content.image(pngBytes, "image/png")]
          ]
        ) {
          const error = yield* Effect.flip(chat.chat(prompt))
          expect(error).toMatchObject({
            _tag: "ProviderError",
            reason: { _tag: "ConfigurationError" },
            isRetryable: false
          })
          expect(error.message).toContain("2.1.248")
          expect(error.message).toContain("trustedPrompts")
        }
        const refusedAsk = yield* Effect.flip(chat.ask("About @secret.txt?", Schema.Struct({ answer: Schema.String })))
        expect(refusedAsk).toMatchObject({ _tag: "ProviderError", reason: { _tag: "ConfigurationError" } })
        expect(api.messageRequests().filter((r) => r.body["max_tokens"] !== 1)).toHaveLength(0)
        yield* chat.add("context first")
        yield* Effect.flip(chat.chat("Now @secret.txt"))

        expect(yield* chat.chat("What is 2 + 2? Mail bob at example.com")).toBe("ok")
        // The refused turns lost nothing the application added.
        expect(lastText(api)).toContain("context first")
        expect(everything(api)).not.toContain(relativeSecret)
      }),
    { timeout: 180_000 }
  )

  it.live(
    "with trustedPrompts it runs the prompt as the CLI reads it",
    () => expandsWhenTrusted((box) => oldClient(box, true)),
    { timeout: 120_000 }
  )
})
