/**
 * An ordered chain of providers behind one ChatClient: when the active provider is overloaded or
 * unreachable, the next one takes over — with the tools re-applied and the conversation so far
 * replayed. The active provider only moves forward.
 *
 * See {@link layer} for an example.
 *
 * @summary An ordered chain of providers behind one `ChatClient`: the next takes over when one is down.
 * @group Chat providers
 * @since 0.1.0
 * @module
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import { streamOf } from "../internal/chat/loopClient.ts"
import { anything, requirePrompt } from "../internal/chat/media.ts"
import {
  ChatClient,
  type ChatClientService,
  type ChatError,
  Exhausted,
  FallbackError,
  NoneBuilt,
  NoProviders,
  ProviderFailure,
  RefusedAfterToolRun,
  Usage
} from "../services/ChatClient.ts"
import * as Content from "../services/Content.ts"
import * as Tool from "../services/Tool.ts"

/**
 * A provider of the chain: its name (for logs and the hook) and its layer.
 *
 * @category models
 * @since 1.0.0
 */
export interface Provider<E = never, R = never> {
  /** Shown in logs, in `FallbackError` messages and to `onFailover`. */
  readonly name: string
  /** Built when the fallback layer is built, in its scope. */
  readonly layer: Layer.Layer<ChatClient, E, R>
}

/**
 * What the failover policy decides for an error of the active provider.
 *
 * @category models
 * @since 1.0.0
 */
export type Decision = "failover" | "fatal"

/**
 * Statuses worth another provider: timeouts, rate limits, server errors and Anthropic's 529.
 *
 * @category config
 * @since 1.0.0
 */
export const failoverStatuses: ReadonlySet<number> = new Set([408, 429, 500, 502, 503, 504, 529])

/**
 * The default policy: fail over on a `ProviderError` whose reason is a `TimeoutError`,
 * `StalledError` or `NetworkError` (whatever its `transient`), a `RateLimitError` of a spent
 * Claude plan window (it has `resetsAt`: a subscription CLI falls back to the next provider), or
 * a `RateLimitError`, `QuotaExhaustedError`, `InternalProviderError`, `InvalidRequestError` or `UnknownError` with one
 * of the statuses above
 * (the same reasons without a status, such as a stream's error event, are fatal), and on media the
 * provider cannot send (`UnsupportedContentError`, raised before any request: the next provider
 * may take it); everything else (other 4xx, `ProcessError`, `InvalidResponseError`,
 * `ConfigurationError`, bad input) is fatal. An `AuthenticationError` (a rejected key, a CLI not
 * logged in) is fatal too: it is a configuration mistake that would otherwise be hidden behind
 * the next provider on every call; a policy that wants the failover returns `"failover"` for
 * `reason._tag === "AuthenticationError"`. Interruption is never seen by a policy: it always ends
 * the call.
 *
 * @category utils
 * @since 1.0.0
 */
export const defaultPolicy = (error: ProviderFailure): Decision => {
  if (error._tag === "UnsupportedContentError") return "failover"
  if (error._tag !== "ProviderError") return "fatal"
  switch (error.reason._tag) {
    case "TimeoutError":
    case "StalledError":
    case "NetworkError":
      return "failover"
    case "RateLimitError":
      // A spent plan window (`resetsAt`) passes on another provider at once.
      return error.reason.resetsAt !== undefined ||
          (error.reason.status !== undefined && failoverStatuses.has(error.reason.status))
        ? "failover"
        : "fatal"
    case "QuotaExhaustedError":
    case "InternalProviderError":
    case "InvalidRequestError":
    case "UnknownError":
      return error.reason.status !== undefined && failoverStatuses.has(error.reason.status) ? "failover" : "fatal"
    default:
      return "fatal"
  }
}

/**
 * Options of {@link make} and {@link layer}.
 *
 * @category config
 * @since 1.0.0
 */
export interface Options {
  /** Replaces {@link defaultPolicy}. */
  readonly policy?: ((error: ProviderFailure) => Decision) | undefined
  /**
   * Refuse to fail over once a tool has run in the current call: replaying the call on the next
   * provider would run its side effects again. Default false.
   */
  readonly strictToolContext?: boolean | undefined
  /** Called on every failover, before the next provider is tried. */
  readonly onFailover?:
    | ((from: string, to: string, reason: ProviderFailure) => Effect.Effect<void>)
    | undefined
}

/** A reason category safe to log: a status or a reason's tag, never the provider's message. */
const category = (error: ProviderFailure): string =>
  error._tag === "ProviderError"
    ? error.status !== undefined ? `status ${error.status}` : error.reason._tag
    : error._tag

const flatten = (error: ChatError): ReadonlyArray<ProviderFailure> =>
  error._tag === "FallbackError" ? error.errors : [error]

interface Exchange {
  readonly prompt: Content.Prompt
  readonly answer: string
}

const TranscriptHeading = "Earlier in this conversation (replayed after switching providers):"

/**
 * Renders the conversation so far for a provider that has not seen it. Images and documents of
 * earlier prompts are replayed as parts, each after the text of the prompt it came with.
 */
const renderTranscript = (exchanges: ReadonlyArray<Exchange>): Content.Prompt => {
  if (!exchanges.some((e) => Content.hasMedia(e.prompt))) {
    return `${TranscriptHeading}\n\n` +
      exchanges.map((e) => `User: ${Content.textOf(e.prompt)}\n\nAssistant: ${e.answer}`).join("\n\n")
  }
  return [
    Content.text(TranscriptHeading),
    ...exchanges.flatMap((e) => [
      Content.text(`User: ${Content.textOf(e.prompt)}`),
      ...Content.partsOf(e.prompt).filter((p) => p.type !== "text"),
      Content.text(`Assistant: ${e.answer}`)
    ])
  ]
}

/**
 * Builds the chain from already-built clients. The clients' resources belong to whoever built
 * them; {@link layer} builds them in the fallback's scope. Fails with `FallbackError`
 * (`NoProviders`) when `providers` is empty.
 *
 * @category constructors
 * @since 1.0.0
 */
export const make: (
  providers: ReadonlyArray<{ readonly name: string; readonly client: ChatClientService }>,
  options?: Options
) => Effect.Effect<ChatClientService, FallbackError> = Effect.fnUntraced(
  function*(
    providers: ReadonlyArray<{ readonly name: string; readonly client: ChatClientService }>,
    options: Options = {}
  ) {
    if (providers.length === 0) {
      return yield* new FallbackError({
        reason: new NoProviders({ message: "A fallback chain needs at least one provider" })
      })
    }
    const policy = options.policy ?? defaultPolicy
    const active = yield* Ref.make(0)
    const exchanges = yield* Ref.make<ReadonlyArray<Exchange>>([])
    const pending = yield* Ref.make<ReadonlyArray<Content.Prompt>>([])
    const tools = yield* Ref.make<Tool.ToolSet>(Tool.empty)
    // Each provider checks media against its own limits; the chain only refuses empty prompts.
    const media = anything("fallback")
    /** Providers that already have the current tools and the conversation. */
    const synced = yield* Ref.make<ReadonlySet<number>>(new Set([0]))
    const toolRan = yield* Ref.make(false)
    const lock = yield* Semaphore.make(1)

    // Tools report that they ran, so strict mode can tell whether a replay would repeat them.
    const observed = (set: Tool.ToolSet): ReadonlyArray<Tool.Tool> =>
      set.tools.map((tool) => ({ ...tool, run: (input) => Effect.andThen(Ref.set(toolRan, true), tool.run(input)) }))

    /** Brings provider `i` up to date before its first call: tools, transcript, buffered text. */
    const sync = Effect.fnUntraced(function*(i: number) {
      if ((yield* Ref.get(synced)).has(i)) return
      const client = providers[i]!.client
      yield* client.setTools(observed(yield* Ref.get(tools)))
      const history = yield* Ref.get(exchanges)
      if (history.length > 0) yield* client.add(renderTranscript(history))
      for (const text of yield* Ref.get(pending)) yield* client.add(text)
      yield* Ref.update(synced, (s) => new Set([...s, i]))
    })

    /** Runs `call` on the active provider, moving forward through the chain while the policy allows. */
    const withFailover = Effect.fnUntraced(function*<A>(
      call: (client: ChatClientService) => Effect.Effect<A, ChatError>,
      /** Set once output reached the caller: from then on a failure is final. */
      committed?: Ref.Ref<boolean>
    ) {
      yield* Ref.set(toolRan, false)
      const errors: Array<ProviderFailure> = []
      const tried: Array<string> = []
      let i = yield* Ref.get(active)
      while (true) {
        const provider = providers[i]!
        const attempt = yield* Effect.result(Effect.andThen(sync(i), call(provider.client)))
        if (Result.isSuccess(attempt)) return attempt.success
        const failure = attempt.failure
        const failures = flatten(failure)
        errors.push(...failures)
        tried.push(`${provider.name} (${failures.map(category).join(", ")})`)
        const last = failures[failures.length - 1]!
        if (failure._tag === "FallbackError" || policy(last) === "fatal") return yield* failure
        if (committed !== undefined && (yield* Ref.get(committed))) return yield* failure
        if (options.strictToolContext === true && (yield* Ref.get(toolRan))) {
          return yield* new FallbackError({
            reason: new RefusedAfterToolRun({
              errors,
              message: `${provider.name} failed (${category(last)}) after a tool ran; not replaying on another provider`
            })
          })
        }
        if (i + 1 >= providers.length) {
          return yield* new FallbackError({
            reason: new Exhausted({ errors, message: `Every provider failed: ${tried.join("; ")}` })
          })
        }
        const next = providers[i + 1]!
        yield* Effect.logWarning("Fallback: switching provider").pipe(
          Effect.annotateLogs({ from: provider.name, to: next.name, reason: category(last) })
        )
        if (options.onFailover) yield* options.onFailover(provider.name, next.name, last)
        i += 1
        yield* Ref.set(active, i)
      }
    })

    const finish = (prompt: Content.Prompt, answer: string) =>
      Effect.andThen(
        Ref.update(exchanges, (e) => [...e, { prompt, answer }]),
        Ref.set(pending, [])
      )

    const add = Effect.fn("ChatClient.add")(function*(prompt: Content.Prompt) {
      yield* requirePrompt("added message", prompt, media)
      yield* lock.withPermits(1)(Effect.gen(function*() {
        const i = yield* Ref.get(active)
        yield* Effect.andThen(sync(i), providers[i]!.client.add(prompt))
        yield* Ref.update(pending, (p) => [...p, prompt])
      }))
    })

    const chat = Effect.fn("ChatClient.chat")(function*(prompt: Content.Prompt) {
      yield* requirePrompt("prompt", prompt, media)
      return yield* lock.withPermits(1)(
        Effect.tap(withFailover((client) => client.chat(prompt)), (answer) => finish(prompt, answer))
      )
    })

    // Fails over only before the first text delta or tool call reached the consumer.
    const chatStream = (prompt: Content.Prompt) =>
      streamOf((emit) =>
        Effect.gen(function*() {
          yield* requirePrompt("prompt", prompt, media)
          const visible = yield* Ref.make(false)
          const relay = (client: ChatClientService) =>
            Stream.runFoldEffect(client.chatStream(prompt), () => "", (text, event) => {
              if (event._tag === "Complete") return Effect.succeed(event.text)
              const shown = event._tag === "TextDelta" || event._tag === "ToolCallStart" ||
                event._tag === "ReasoningDelta" || event._tag === "AgentToolStart" || event._tag === "ToolInputDelta"
              return Effect.as(Effect.andThen(shown ? Ref.set(visible, true) : Effect.void, emit(event)), text)
            })
          return yield* lock.withPermits(1)(
            Effect.tap(withFailover(relay, visible), (answer) => finish(prompt, answer))
          )
        })
      ).pipe(Stream.withSpan("ChatClient.chatStream", { attributes: { "chat.provider": "fallback" } }))

    const ask = Effect.fn("ChatClient.ask")(function*<A, I>(question: Content.Prompt, schema: Schema.Codec<A, I>) {
      yield* requirePrompt("question", question, media)
      return yield* lock.withPermits(1)(
        Effect.tap(
          withFailover((client) => client.ask(question, schema)),
          (answer) => finish(question, JSON.stringify(answer) ?? String(answer))
        )
      )
    })

    const setTools = Effect.fn("ChatClient.setTools")(function*<R>(list: ReadonlyArray<Tool.Tool<R>>) {
      const set = yield* Tool.capture(list)
      yield* lock.withPermits(1)(Effect.gen(function*() {
        const i = yield* Ref.get(active)
        yield* providers[i]!.client.setTools(observed(set))
        yield* Ref.set(tools, set)
        // Providers further down get the new set when they take over.
        yield* Ref.set(
          synced,
          new Set(Array.from({ length: i + 1 }, (_, n) => n))
        )
      }))
    })

    const usage = Effect.map(
      Effect.forEach(providers, (p) => p.client.usage),
      (all) => all.reduce(Usage.add, Usage.empty)
    )

    return { add, chat, chatStream, ask, setTools, usage } satisfies ChatClientService
  }
)

const describeBuildError = (error: unknown): string =>
  typeof error === "object" && error !== null && "message" in error ? String(error.message) : String(error)

const isProviderFailure = Schema.is(ProviderFailure)

/** No member could be built: one error naming every member and its reason, in the chain's order. */
const noneBuilt = (failed: ReadonlyArray<{ readonly name: string; readonly error: unknown }>) =>
  new FallbackError({
    reason: new NoneBuilt({
      errors: failed.flatMap(({ error }) => (isProviderFailure(error) ? [error] : [])),
      message: `No provider of the fallback chain could be built: ${
        failed.map(({ error, name }) => `${name}: ${describeBuildError(error)}`).join("; ")
      }`
    })
  })

/**
 * A ChatClient over `providers`, tried in order. Every provider is built in the fallback's scope,
 * so closing the fallback closes all of them. A provider whose layer fails to build (a missing
 * key, a bad base URL) is left out of the chain with a warning naming it and why; building fails
 * with `FallbackError` only when none builds (`NoneBuilt`, naming each provider and its reason)
 * or when the list is empty (`NoProviders`).
 *
 * **Details**
 *
 * A call fails with the active provider's error when the policy calls it fatal, and with
 * `FallbackError` when every provider failed (`Exhausted`, each error in order) or, with
 * `strictToolContext`, when a tool had already run (`RefusedAfterToolRun`).
 *
 * **Example** (Anthropic first, OpenAI when it fails)
 *
 * ```ts
 * import { Effect } from "effect"
 * import { ClaudeApi, Fallback, OpenAi } from "effect-chat-bridge"
 *
 * const Chat = Fallback.layer([
 *   { name: "anthropic", layer: ClaudeApi.layerFromEnv() },
 *   { name: "openai", layer: OpenAi.layerFromEnv() }
 * ], {
 *   onFailover: (from, to, reason) => Effect.logInfo(`${from} -> ${to}: ${reason._tag}`)
 * })
 * ```
 *
 * @category layers
 * @since 1.0.0
 */
export const layer = <E, R>(
  providers: ReadonlyArray<Provider<E, R>>,
  options: Options = {}
): Layer.Layer<ChatClient, FallbackError, R> =>
  Layer.effect(
    ChatClient,
    Effect.gen(function*() {
      const scope: Scope.Scope = yield* Effect.scope
      const built = yield* Effect.forEach(providers, (p) =>
        Effect.result(Effect.map(Layer.buildWithScope(p.layer, scope), (ctx) => ({
          name: p.name,
          client: Context.get(ctx, ChatClient)
        }))))
      const clients = built.flatMap((r) => (Result.isSuccess(r) ? [r.success] : []))
      const failed = built.flatMap((
        r,
        i
      ) => (Result.isFailure(r) ? [{ name: providers[i]!.name, error: r.failure }] : []))
      // A chain is usable while one member is: a member without its key (say) is left out, loudly.
      if (clients.length === 0 && failed.length > 0) {
        return yield* noneBuilt(failed)
      }
      for (const { error, name } of failed) {
        yield* Effect.logWarning(`Fallback: provider ${name} could not be built and is left out of the chain`).pipe(
          Effect.annotateLogs({ provider: name, error: describeBuildError(error) })
        )
      }
      return yield* make(clients, options)
    })
  )
