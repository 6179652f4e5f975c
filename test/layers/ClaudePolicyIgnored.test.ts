/**
 * Opt-outs the policy cannot apply as written are never dropped on the providers: ClaudeLocal
 * (the CLI's argv, on a scripted subprocess) and ClaudeAgent (the SDK's options, on a scripted
 * SDK) log one warning per entry once, put them on the turn's span, show them through
 * `ClaudeSession.toolPolicy`, and refuse them at layer build with `strict`.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as ClaudeAgent from "../../src/layers/ClaudeAgent.ts"
import * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import * as NodeSecretFile from "../../src/layers/NodeSecretFile.ts"
import * as TestSubprocess from "../../src/layers/TestSubprocess.ts"
import { ChatClient, type ProviderError } from "../../src/services/ChatClient.ts"
import { ClaudeSession } from "../../src/services/ClaudeCodeOptions.ts"
import * as Sdk from "../support/fakeAgentSdk.ts"
import { makeRecorder } from "../support/recordingTracer.ts"

const initLine = JSON.stringify({ type: "system", subtype: "init", session_id: "s-1", mcp_servers: [] })
const resultLine = JSON.stringify({
  type: "result",
  subtype: "success",
  is_error: false,
  result: "ok",
  session_id: "s-1"
})

/** The four typos. */
const typos = ["Bsh", "WebSerch", "edit", "Bash(rm:*)"]
const expectedWarnings = [
  "tool policy: Bsh is not a tool the registry knows: did you mean Bash?",
  "tool policy: WebSerch is not a tool the registry knows: did you mean WebSearch?",
  "tool policy: edit is not a tool the registry knows: did you mean Edit? Tool names are case-sensitive.",
  "tool policy: \"Bash(rm:*)\" is not a tool name: use letters, digits, _ - . / and the wildcard *"
]

const localLayer = (options: ClaudeLocal.Options) =>
  ClaudeLocal.layer({ cliVersion: "2.1.332", ...options }).pipe(
    Layer.provideMerge(Layer.merge(
      TestSubprocess.layer(() => Effect.succeed({ exitCode: 0, stdout: `${initLine}\n${resultLine}\n`, stderr: "" })),
      NodeSecretFile.layer()
    ))
  )

const agentLayer = (options: ClaudeAgent.Options) => {
  Sdk.script(async function*() {
    yield JSON.parse(initLine)
    yield JSON.parse(resultLine)
  })
  return ClaudeAgent.layer({ sdkSpecifier: Sdk.specifier, killGrace: "100 millis", ...options })
}

const providers = [
  { name: "ClaudeLocal", layer: (toolPolicy: ClaudeLocal.ToolPolicyInput) => localLayer({ toolPolicy }) },
  { name: "ClaudeAgent", layer: (toolPolicy: ClaudeLocal.ToolPolicyInput) => agentLayer({ toolPolicy }) }
] as const

/** Builds the provider, runs two turns; the warnings logged, the turn spans' attribute, the session's policy. */
const twoTurns = (layer: Layer.Layer<ChatClient | ClaudeSession, ProviderError>) =>
  Effect.gen(function*() {
    const warnings: Array<string> = []
    const logger = Logger.layer([
      Logger.make(({ logLevel, message }) => {
        if (logLevel === "Warn") warnings.push(String(Array.isArray(message) ? message[0] : message))
      })
    ])
    const recorder = makeRecorder()
    const policy = yield* Effect.gen(function*() {
      const ctx = yield* Layer.build(layer)
      const chat = Context.get(ctx, ChatClient)
      yield* chat.chat("one")
      yield* chat.chat("two")
      return yield* Context.get(ctx, ClaudeSession).toolPolicy
    }).pipe(Effect.scoped, Effect.provide(logger), Effect.withTracer(recorder.tracer))
    const spans = recorder.find((s) => s.attributes.has("tool_policy.ignored"))
    return { warnings, policy, spanValues: spans.map((s) => s.attributes.get("tool_policy.ignored")) }
  })

describe("the providers surface opt-outs they could not apply", () => {
  for (const provider of providers) {
    it.live(`${provider.name}: one warning per typo, once across turns; on each turn's span; on ClaudeSession`, () =>
      Effect.gen(function*() {
        const { policy, spanValues, warnings } = yield* twoTurns(provider.layer({ disabledTools: typos }))
        expect(warnings.filter((w) => w.startsWith("tool policy:"))).toEqual(expectedWarnings)
        expect(policy.ignored.map((i) => [i.entry, i.kind, i.suggestion])).toEqual([
          ["Bsh", "unknown", "Bash"],
          ["WebSerch", "unknown", "WebSearch"],
          ["edit", "unknown", "Edit"],
          ["Bash(rm:*)", "malformed", undefined]
        ])
        expect(spanValues.length).toBeGreaterThanOrEqual(2)
        for (const value of spanValues) expect(value).toEqual(typos)
        // The typos turned nothing the registry knows off: the names pass through as written.
        expect(policy.disallowedTools).toContain("Bsh")
      }))

    it.live(`${provider.name}: strict makes them a config error when the layer is built`, () =>
      Effect.gen(function*() {
        const exit = yield* Layer.build(provider.layer({ disabledTools: typos, strict: true })).pipe(
          Effect.scoped,
          Effect.exit
        )
        expect(Exit.isFailure(exit)).toBe(true)
        const error = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail") : undefined
        const failure = error?._tag === "Fail" ? (error.error as ProviderError) : undefined
        expect(failure?.reason._tag).toBe("ConfigurationError")
        expect(failure?.message).toContain("toolPolicy.strict: 4 opt-outs cannot be applied as written")
        expect(failure?.message).toContain("did you mean Bash?")
      }))

    it.live(`${provider.name}: a list over the bounds is a config error at build, with a short message`, () =>
      Effect.gen(function*() {
        const many = Array.from({ length: 100_000 }, (_, i) => `mcp__x__t${i}`)
        const exit = yield* Layer.build(provider.layer({ disabledTools: many })).pipe(Effect.scoped, Effect.exit)
        const error = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail") : undefined
        const failure = error?._tag === "Fail" ? (error.error as ProviderError) : undefined
        expect(failure?.reason._tag).toBe("ConfigurationError")
        expect(failure?.message).toContain("at most 1000 opt-outs")
        expect(failure!.message.length).toBeLessThan(300)
      }))

    it.live(`${provider.name}: a clean policy logs nothing and its spans carry no ignored entries`, () =>
      Effect.gen(function*() {
        const { policy, spanValues, warnings } = yield* twoTurns(provider.layer({ disabledTools: ["Bash"] }))
        expect(warnings.filter((w) => w.startsWith("tool policy:"))).toEqual([])
        expect(spanValues).toEqual([])
        expect(policy.ignored).toEqual([])
      }))
  }
})
