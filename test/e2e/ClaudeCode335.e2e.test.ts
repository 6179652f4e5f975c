/**
 * What Claude Code 2.1.335 (Agent SDK 0.3.335) brought, on both providers against the real binary:
 * the `Interrupt` hook event, and `resume_target_not_found` as a typed `SessionNotFoundError`.
 */
import { expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { randomUUID } from "node:crypto"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as ClaudeAgent from "../../src/layers/ClaudeAgent.ts"
import * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import { ChatClient, ProviderError } from "../../src/services/ChatClient.ts"
import type { ClaudeCodeOptions } from "../../src/services/ClaudeCodeOptions.ts"
import type * as ClaudeHooks from "../../src/services/ClaudeHooks.ts"
import { ClaudeLive, ClaudeLiveError } from "../../src/services/ClaudeLive.ts"
import { claudeBinary, oldestClaudeBinary, type Sandbox, sandbox } from "../support/claudeCli.ts"
import { localServices, requestTimeout } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

/** "story" streams a little and then hangs (a turn mid-text); anything else is echoed. */
const model = (req: Fake.FakeRequest): Fake.FakeReply =>
  Fake.lastUserText(req).includes("story")
    ? { text: "Once upon a time, in a land far away", breakMidway: "hang" }
    : { text: `You said: ${Fake.lastUserLine(req)}` }

/** Options both providers take. */
type Options = ClaudeCodeOptions & { readonly keepAlive?: boolean }

type Provider = (box: Sandbox, options: Options) => Layer.Layer<ChatClient | ClaudeLive>

const providers: ReadonlyArray<readonly [string, Provider]> = [
  [
    "ClaudeAgent",
    (box, options) => ClaudeAgent.layer({ cwd: box.cwd, env: box.env, requestTimeout, ...options }).pipe(Layer.orDie)
  ],
  [
    "ClaudeLocal",
    (box, options) =>
      ClaudeLocal.layer({ binary: claudeBinary, cwd: box.cwd, env: box.env, requestTimeout, ...options }).pipe(
        Layer.provide(localServices(box)),
        Layer.orDie
      )
  ]
]

/** A fresh client of `provider` in `box`: its ChatClient and ClaudeLive. */
const clientIn = (provider: Provider, box: Sandbox, options: Options) =>
  Effect.map(
    Layer.build(Layer.fresh(provider(box, options))),
    (ctx) => ({ chat: Context.get(ctx, ChatClient), live: Context.get(ctx, ClaudeLive) })
  )

/** Waits (polling) until `done` holds, for at most 30 s. */
const until = (done: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 600 && !done(); i++) yield* Effect.sleep("50 millis")
    expect(done()).toBe(true)
  })

const allText = (req: Fake.FakeRequest | undefined) => JSON.stringify(req?.body.messages ?? [])

for (const [name, provider] of providers) {
  describeWithClaude(`${name} on claude 2.1.335`, () => {
    it.live(
      "the Interrupt hook fires once when ClaudeLive.interrupt stops a kept-alive turn",
      () =>
        Effect.gen(function*() {
          const api = yield* Fake.make(model)
          const box = yield* sandbox(api.url)
          const seen: Array<ClaudeHooks.Input<"Interrupt">> = []
          const { chat, live } = yield* clientIn(provider, box, {
            keepAlive: true,
            hooks: { Interrupt: [{ run: (input) => Effect.sync(() => (seen.push(input), {})) }] }
          })
          expect(yield* chat.chat("hello")).toBe("You said: hello")
          const turn = yield* Effect.forkChild(chat.chat("Tell me a story"))
          yield* until(() => allText(api.messageRequests().at(-1)).includes("Tell me a story"))
          yield* Effect.sleep("500 millis")
          yield* live.interrupt
          const exit = yield* Fiber.await(turn)
          const error = Exit.isFailure(exit) ? Option.getOrUndefined(Exit.findErrorOption(exit)) : undefined
          expect(error).toBeInstanceOf(ClaudeLiveError)
          expect((error as ClaudeLiveError).reason._tag).toBe("Interrupted")
          yield* until(() => seen.length > 0)
          expect(seen[0]).toMatchObject({ hook_event_name: "Interrupt", source: "user", reason: "stop", via: "client" })
          // The next turn runs on, and an uninterrupted turn fires no Interrupt.
          expect(yield* chat.chat("And now?")).toBe("You said: And now?")
          expect(seen).toHaveLength(1)
          console.log(`${name}: Interrupt hook input ${JSON.stringify({ ...seen[0], transcript_path: "…" })}`)
        }),
      { timeout: 180_000 }
    )

    it.live(
      "resuming a session id that does not exist is a SessionNotFoundError naming it, before any model call",
      () =>
        Effect.gen(function*() {
          const api = yield* Fake.make(model)
          const box = yield* sandbox(api.url)
          const missing = randomUUID()
          const { chat } = yield* clientIn(provider, box, { resume: missing })
          const error = yield* Effect.flip(chat.chat("hello"))
          expect(error).toBeInstanceOf(ProviderError)
          const reason = (error as ProviderError).reason
          expect(reason).toMatchObject({ _tag: "SessionNotFoundError", sessionId: missing })
          expect(error.message).toContain(missing)
          expect((error as ProviderError).isRetryable).toBe(false)
          expect(api.messageRequests()).toHaveLength(0)
        }),
      { timeout: 120_000 }
    )
  })
}

/**
 * Checked on 2.1.335: in `-p` runs Claude Code skips HTTP hooks for SessionStart (and Setup), so
 * ClaudeLocal serves a SessionStart hook as a command that forwards to its hooks bridge; it runs
 * SessionStart before the Agent SDK's `initialize` registers its callbacks (also with
 * `--await-initialize`), so on ClaudeAgent a typed SessionStart hook does not fire, while a
 * `type: "command"` hook from a settings file does.
 */
const sessionStartFires: Record<string, ReadonlyArray<string>> = {
  ClaudeLocal: ["startup", "resume"],
  ClaudeAgent: []
}

describeWithClaude("SessionStart in -p runs on claude 2.1.335", () => {
  for (const [name, provider] of providers) {
    it.live(
      `${name}: typed SessionStart hooks fire as documented; a command hook from the project settings does`,
      () =>
        Effect.gen(function*() {
          const api = yield* Fake.make(model)
          const box = yield* sandbox(api.url)
          const log = join(box.dir, "session-start.jsonl")
          mkdirSync(join(box.cwd, ".claude"))
          writeFileSync(
            join(box.cwd, ".claude", "settings.json"),
            JSON.stringify({
              hooks: { SessionStart: [{ hooks: [{ type: "command", command: `cat >> '${log}'; echo >> '${log}'` }] }] }
            })
          )
          const typed: Array<ClaudeHooks.Input<"SessionStart">> = []
          const { chat } = yield* clientIn(provider, box, {
            settingSources: ["project"],
            hooks: { SessionStart: [{ run: (input) => Effect.sync(() => (typed.push(input), {})) }] }
          })
          expect(yield* chat.chat("hello")).toBe("You said: hello")
          expect(yield* chat.chat("again")).toBe("You said: again")
          expect(typed.map((input) => input.source)).toEqual(sessionStartFires[name])
          for (const input of typed) expect(input).toMatchObject({ hook_event_name: "SessionStart", cwd: box.cwd })
          const sources = readFileSync(log, "utf8").split("\n").filter((l) => l.trim() !== "").map((l) =>
            (JSON.parse(l) as { readonly source: string }).source
          )
          // Without keepAlive each turn is a new CLI: the second one resumes the first one's session.
          expect(sources).toEqual(["startup", "resume"])
        }),
      { timeout: 180_000 }
    )
  }
})

describeWithClaude("ClaudeLocal on the oldest supported claude (2.0.0)", () => {
  it.live(
    "resuming a session id that does not exist is a SessionNotFoundError too (read from its stderr)",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const box = yield* sandbox(api.url)
        const missing = randomUUID()
        const { chat } = yield* clientIn(
          (b, options) =>
            ClaudeLocal.layer({ binary: oldestClaudeBinary, cwd: b.cwd, env: b.env, requestTimeout, ...options }).pipe(
              Layer.provide(localServices(b)),
              Layer.orDie
            ),
          box,
          { resume: missing }
        )
        const error = yield* Effect.flip(chat.chat("hello"))
        expect(error).toMatchObject({
          _tag: "ProviderError",
          reason: { _tag: "SessionNotFoundError", sessionId: missing }
        })
        expect(api.messageRequests()).toHaveLength(0)
      }),
    { timeout: 120_000 }
  )

  it.live(
    "an Interrupt hook is a ConfigurationError naming 2.1.335, before any model call",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const box = yield* sandbox(api.url)
        const { chat } = yield* clientIn(
          (b, options) =>
            ClaudeLocal.layer({ binary: oldestClaudeBinary, cwd: b.cwd, env: b.env, requestTimeout, ...options }).pipe(
              Layer.provide(localServices(b)),
              Layer.orDie
            ),
          box,
          { hooks: { Interrupt: [{ run: () => Effect.succeed({}) }] } }
        )
        const error = yield* Effect.flip(chat.chat("hello"))
        expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "ConfigurationError" } })
        expect(error.message).toContain("2.1.335")
        expect(error.message).toContain("2.0.0")
        expect(api.messageRequests()).toHaveLength(0)
      }),
    { timeout: 120_000 }
  )
})
