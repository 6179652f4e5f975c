import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Ref from "effect/Ref"
import * as References from "effect/References"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { readdirSync, readFileSync, readlinkSync } from "node:fs"
import { connect } from "node:net"
import * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import * as Fallback from "../../src/layers/Fallback.ts"
import * as NodeSecretFile from "../../src/layers/NodeSecretFile.ts"
import * as Scripted from "../../src/layers/Scripted.ts"
import * as TestSubprocess from "../../src/layers/TestSubprocess.ts"
import {
  AuthenticationError,
  ChatClient,
  type ChatClientService,
  InternalProviderError,
  InvalidRequestError,
  InvalidResponseError,
  MaxStepsError,
  NetworkError,
  ProviderError,
  type ProviderErrorReason,
  RateLimitError,
  StalledError,
  TimeoutError,
  UnknownError,
  Usage
} from "../../src/services/ChatClient.ts"
import { SessionStoreError, StoreUnavailable } from "../../src/services/ClaudeSessionStore.ts"
import type { TurnRequest } from "../../src/services/ModelTurn.ts"
import * as Tool from "../../src/services/Tool.ts"

/** A scripted provider that records what it was asked. */
const recorded = (name: string, script: ReadonlyArray<Scripted.ScriptedTurn>) => {
  const requests: Array<TurnRequest> = []
  let n = 0
  const layer = Scripted.layer({
    name,
    respond: (request) =>
      Effect.sync(() => {
        requests.push(request)
        return script[Math.min(n++, script.length - 1)]!
      })
  })
  return { name, layer, requests }
}

const fallback = (
  providers: ReadonlyArray<{ name: string; layer: Layer.Layer<ChatClient> }>,
  options?: Fallback.Options
) => Fallback.layer(providers, options)

const run = <A, E, LE>(
  layer: Layer.Layer<ChatClient, LE>,
  body: (chat: ChatClientService) => Effect.Effect<A, E>
) => Effect.flatMap(ChatClient, body).pipe(Effect.provide(layer))

const networkError = (provider: string) =>
  new ProviderError({ provider, reason: new NetworkError({ message: "connect ECONNREFUSED" }) })

const add = Tool.make("add", {
  description: "Adds",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

describe("Fallback", () => {
  it.effect("the primary answers when it can; the others are not called", () =>
    Effect.gen(function*() {
      const a = recorded("a", [Scripted.text("from a")])
      const b = recorded("b", [Scripted.text("from b")])
      expect(yield* run(fallback([a, b]), (chat) => chat.chat("hi"))).toBe("from a")
      expect(b.requests.length).toBe(0)
    }))

  it.effect("advances on 429 and on a network error", () =>
    Effect.gen(function*() {
      const a = recorded("a", [Scripted.fail(Scripted.httpError(429, "a"))])
      const b = recorded("b", [Scripted.fail(networkError("b"))])
      const c = recorded("c", [Scripted.text("from c")])
      expect(yield* run(fallback([a, b, c]), (chat) => chat.chat("hi"))).toBe("from c")
      expect([a.requests.length, b.requests.length, c.requests.length]).toEqual([1, 1, 1])
    }))

  it.effect("401 does not advance", () =>
    Effect.gen(function*() {
      const a = recorded("a", [Scripted.fail(Scripted.httpError(401, "a"))])
      const b = recorded("b", [Scripted.text("from b")])
      const error = yield* Effect.flip(run(fallback([a, b]), (chat) => chat.chat("hi")))
      expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "AuthenticationError" }, status: 401 })
      expect(b.requests.length).toBe(0)
    }))

  it.effect("an auth error without a status (a CLI not logged in) is fatal too; a policy may fail over on it", () =>
    Effect.gen(function*() {
      const notLoggedIn = new ProviderError({ provider: "a", reason: new AuthenticationError({ message: "log in" }) })
      expect(Fallback.defaultPolicy(notLoggedIn)).toBe("fatal")
      // Even with a status the default policy would otherwise fail over on.
      expect(
        Fallback.defaultPolicy(
          new ProviderError({ provider: "a", reason: new AuthenticationError({ status: 503, message: "x" }) })
        )
      ).toBe("fatal")
      const a = recorded("a", [Scripted.fail(notLoggedIn)])
      const b = recorded("b", [Scripted.text("from b")])
      const lenient = fallback([a, b], {
        policy: (
          e
        ) => (e._tag === "ProviderError" && e.reason._tag === "AuthenticationError"
          ? "failover"
          : Fallback.defaultPolicy(e))
      })
      expect(yield* run(lenient, (chat) => chat.chat("hi"))).toBe("from b")
    }))

  it.effect("all exhausted: the error carries every provider's error, in order", () =>
    Effect.gen(function*() {
      const a = recorded("a", [Scripted.fail(Scripted.httpError(503, "a"))])
      const b = recorded("b", [Scripted.fail(Scripted.httpError(529, "b"))])
      const error = yield* Effect.flip(run(fallback([a, b]), (chat) => chat.chat("hi")))
      expect(error._tag).toBe("FallbackError")
      if (error._tag !== "FallbackError") return
      expect(error.reason._tag).toBe("Exhausted")
      expect(error.errors.map((e) => e._tag === "ProviderError" && [e.provider, e.status])).toEqual([
        ["a", 503],
        ["b", 529]
      ])
      expect(error.message).toBe("Every provider failed: a (status 503); b (status 529)")
    }))

  it.effect("on failover the transcript is replayed, buffered text kept and tools re-applied", () =>
    Effect.gen(function*() {
      const a = recorded("a", [Scripted.text("Paris"), Scripted.fail(Scripted.httpError(500, "a"))])
      const b = recorded("b", [
        Scripted.toolCalls({ name: "add", arguments: { a: 1, b: 2 } }),
        Scripted.text("3, and the capital is Paris")
      ])
      const answer = yield* run(fallback([a, b]), (chat) =>
        Effect.gen(function*() {
          yield* chat.setTools([add])
          expect(yield* chat.chat("Capital of France?")).toBe("Paris")
          yield* chat.add("Please be brief.")
          return yield* chat.chat("What is 1 + 2?")
        }))
      expect(answer).toBe("3, and the capital is Paris")
      const first = b.requests[0]!
      expect(first.tools.map((t) => t.name)).toEqual(["add"])
      expect(first.history).toEqual([{
        role: "user",
        content: "Earlier in this conversation (replayed after switching providers):\n\n" +
          "User: Capital of France?\n\nAssistant: Paris\n\nPlease be brief.\n\nWhat is 1 + 2?"
      }])
      const toolMessage = b.requests[1]!.history.at(-1)!
      expect(toolMessage.role === "tool" && toolMessage.results[0]!.content).toBe("3")
    }))

  it.effect("usage sums every provider", () =>
    Effect.gen(function*() {
      const a = recorded("a", [
        Scripted.text("one", Usage.of({ inputTokens: 1, outputTokens: 2 })),
        Scripted.fail(Scripted.httpError(429, "a"))
      ])
      const b = recorded("b", [Scripted.text("two", Usage.of({ inputTokens: 10, outputTokens: 20, costUsd: 0.5 }))])
      const usage = yield* run(fallback([a, b]), (chat) =>
        Effect.gen(function*() {
          yield* chat.chat("1")
          yield* chat.chat("2")
          return yield* chat.usage
        }))
      expect(usage).toMatchObject({ inputTokens: 11, outputTokens: 22, totalTokens: 33, costUsd: 0.5 })
    }))

  it.effect("the active provider only moves forward", () =>
    Effect.gen(function*() {
      const a = recorded("a", [Scripted.fail(Scripted.httpError(503, "a")), Scripted.text("a is back")])
      const b = recorded("b", [Scripted.text("b1"), Scripted.text("b2")])
      const answers = yield* run(fallback([a, b]), (chat) => Effect.all([chat.chat("1"), chat.chat("2")]))
      expect(answers).toEqual(["b1", "b2"])
      expect(a.requests.length).toBe(1)
    }))

  it.live("interruption is terminal: no failover", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const a = {
        name: "a",
        layer: Scripted.layer({ respond: () => Effect.andThen(Deferred.succeed(started, undefined), Effect.never) })
      }
      const b = recorded("b", [Scripted.text("from b")])
      const exit = yield* run(fallback([a, b]), (chat) =>
        Effect.gen(function*() {
          const fiber = yield* Effect.forkChild(chat.chat("hi"))
          yield* Deferred.await(started)
          // On Effect 4 Fiber.interrupt returns void: the exit comes from Fiber.await.
          yield* Fiber.interrupt(fiber)
          return yield* Fiber.await(fiber)
        }))
      expect(Exit.hasInterrupts(exit)).toBe(true)
      expect(b.requests.length).toBe(0)
    }))

  it.effect("strict tool context refuses to fail over after a tool ran", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make(0)
      const sideEffect = Tool.make("charge_card", {
        description: "Charges a card",
        parameters: {},
        handler: () => Effect.as(Ref.update(ran, (n) => n + 1), "charged")
      })
      const a = recorded("a", [
        Scripted.toolCalls({ name: "charge_card" }),
        Scripted.fail(Scripted.httpError(503, "a"))
      ])
      const b = recorded("b", [Scripted.toolCalls({ name: "charge_card" }), Scripted.text("done")])
      const error = yield* Effect.flip(
        run(fallback([a, b], { strictToolContext: true }), (chat) =>
          Effect.andThen(chat.setTools([sideEffect]), chat.chat("charge it")))
      )
      expect(error).toMatchObject({ _tag: "FallbackError", reason: { _tag: "RefusedAfterToolRun" } })
      expect(b.requests.length).toBe(0)
      expect(yield* Ref.get(ran)).toBe(1)
    }))

  it.effect("without strict mode the same failure fails over", () =>
    Effect.gen(function*() {
      const a = recorded("a", [
        Scripted.toolCalls({ name: "add", arguments: { a: 1, b: 1 } }),
        Scripted.fail(Scripted.httpError(503, "a"))
      ])
      const b = recorded("b", [Scripted.text("done")])
      expect(yield* run(fallback([a, b]), (chat) => Effect.andThen(chat.setTools([add]), chat.chat("go")))).toBe(
        "done"
      )
    }))

  it.effect("a custom policy can make anything fatal", () =>
    Effect.gen(function*() {
      const a = recorded("a", [Scripted.fail(Scripted.httpError(503, "a"))])
      const b = recorded("b", [Scripted.text("from b")])
      const error = yield* Effect.flip(run(fallback([a, b], { policy: () => "fatal" }), (chat) => chat.chat("hi")))
      expect(error).toMatchObject({ _tag: "ProviderError", status: 503 })
      expect(b.requests.length).toBe(0)
    }))

  it.effect("ask fails over too, and onFailover and the warning name providers and a category only", () =>
    Effect.gen(function*() {
      const hooks: Array<string> = []
      const logs: Array<string> = []
      const a = recorded("a", [
        Scripted.fail(
          new ProviderError({
            provider: "a",
            reason: new RateLimitError({ status: 429, message: "secret detail sk-123" })
          })
        )
      ])
      const b = recorded("b", [Scripted.structured({ n: 4 })])
      const value = yield* run(
        fallback([a, b], {
          onFailover: (from, to, reason) => Effect.sync(() => hooks.push(`${from}->${to}:${reason._tag}`))
        }),
        (chat) => chat.ask("n?", Schema.Struct({ n: Schema.Number }))
      ).pipe(
        Effect.provide(Logger.layer([
          Logger.make((o) => {
            const annotations = o.fiber.getRef(References.CurrentLogAnnotations)
            const message = Array.isArray(o.message) ? o.message.map(String).join(" ") : String(o.message)
            logs.push(`${message} ${JSON.stringify(annotations, Object.keys(annotations).sort())}`)
          })
        ]))
      )
      expect(value).toEqual({ n: 4 })
      expect(hooks).toEqual(["a->b:ProviderError"])
      expect(logs).toEqual(["Fallback: switching provider {\"from\":\"a\",\"reason\":\"status 429\",\"to\":\"b\"}"])
      expect(logs.join("")).not.toContain("sk-123")
    }))

  it.effect("no providers is a typed error at construction", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(run(Fallback.layer([]), (chat) => chat.chat("hi")))
      expect(error).toMatchObject({ _tag: "FallbackError", reason: { _tag: "NoProviders" } })
    }))

  it.live("closing the fallback's scope releases every provider (a ClaudeLocal bridge port closes)", () =>
    Effect.gen(function*() {
      const claude = {
        name: "claude-local",
        layer: ClaudeLocal.layer({}).pipe(
          Layer.provide(TestSubprocess.layer([])),
          Layer.provide(NodeSecretFile.layer()),
          Layer.orDie
        )
      }
      const b = recorded("b", [Scripted.text("b")])
      const scope = yield* Scope.make()
      const chat = Context.get(yield* Layer.buildWithScope(fallback([claude, b]), scope), ChatClient)
      const before = listeningPorts()
      // The active provider is ClaudeLocal: setting tools starts its bridge.
      yield* chat.setTools([add])
      const opened = listeningPorts().filter((p) => !before.includes(p))
      expect(opened.length).toBe(1)
      expect(yield* refuses(opened[0]!)).toBe(false)
      yield* Scope.close(scope, Exit.void)
      expect(yield* refuses(opened[0]!)).toBe(true)
    }))
})

/** Inodes of the sockets this process holds open (so other processes' ports never count). */
const ownSocketInodes = (): Set<string> => {
  const inodes = new Set<string>()
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`)
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1]
      if (inode !== undefined) inodes.add(inode)
    } catch {
      // Closed while we looked.
    }
  }
  return inodes
}

/** Ports this process listens on at 127.0.0.1, from /proc/net/tcp. */
const listeningPorts = (): Array<number> => {
  const own = ownSocketInodes()
  return readFileSync("/proc/net/tcp", "utf8")
    .split("\n")
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((cols) => cols[3] === "0A" && cols[1]?.startsWith("0100007F:") && own.has(cols[9] ?? ""))
    .map((cols) => parseInt(cols[1]!.split(":")[1]!, 16))
}

const refuses = (port: number) =>
  Effect.callback<boolean>((resume) => {
    const socket = connect(port, "127.0.0.1")
    socket.on("connect", () => {
      socket.destroy()
      resume(Effect.succeed(false))
    })
    socket.on("error", () => resume(Effect.succeed(true)))
  })

describe("Fallback: errors other than ProviderError, nested chains", () => {
  const Answer = Schema.Struct({ n: Schema.Number })

  it("the default policy: timeouts, network and retryable statuses fail over; anything else is fatal", () => {
    const kind = (reason: ProviderErrorReason) => new ProviderError({ provider: "p", reason })
    const message = "m"
    expect(Fallback.defaultPolicy(kind(new TimeoutError({ message })))).toBe("failover")
    expect(Fallback.defaultPolicy(kind(new NetworkError({ message, transient: false })))).toBe("failover")
    expect(Fallback.defaultPolicy(kind(new StalledError({ message })))).toBe("failover")
    expect(Fallback.defaultPolicy(kind(new InternalProviderError({ message, status: 503 })))).toBe("failover")
    expect(Fallback.defaultPolicy(kind(new InvalidRequestError({ message, status: 400 })))).toBe("fatal")
    expect(Fallback.defaultPolicy(kind(new InternalProviderError({ message })))).toBe("fatal")
    // A spent Claude plan window fails over even when the CLI gave no status.
    const resetsAt = DateTime.makeUnsafe(0)
    expect(Fallback.defaultPolicy(kind(new RateLimitError({ message, resetsAt, window: "five_hour" })))).toBe(
      "failover"
    )
    expect(Fallback.defaultPolicy(kind(new RateLimitError({ message })))).toBe("fatal")
    expect(Fallback.defaultPolicy(kind(new UnknownError({ message })))).toBe("fatal")
    expect(Fallback.defaultPolicy(kind(new InvalidResponseError({ message })))).toBe("fatal")
    expect(Fallback.defaultPolicy(new MaxStepsError({ maxSteps: 3, message: "too many" }))).toBe("fatal")
    // The store holds the conversation, not the provider: another provider would not fix it.
    const store = new SessionStoreError({ operation: "append", reason: new StoreUnavailable({ message: "m" }) })
    expect(Fallback.defaultPolicy(store)).toBe("fatal")
  })

  it.effect("an answer that does not decode is fatal by default: the next provider is not asked", () =>
    Effect.gen(function*() {
      const a = recorded("a", [Scripted.structured({ n: "not a number" })])
      const b = recorded("b", [Scripted.structured({ n: 1 })])
      const error = yield* Effect.flip(run(fallback([a, b]), (chat) => chat.ask("n?", Answer)))
      expect(error._tag).toBe("StructuredOutputError")
      expect(b.requests).toHaveLength(0)
    }))

  it.effect("a policy may fail over on it; the log names the error's tag as the reason", () =>
    Effect.gen(function*() {
      const logs: Array<unknown> = []
      const a = recorded("a", [Scripted.structured({ n: "not a number" })])
      const b = recorded("b", [Scripted.structured({ n: 1 })])
      const value = yield* run(fallback([a, b], { policy: () => "failover" }), (chat) => chat.ask("n?", Answer)).pipe(
        Effect.provide(Logger.layer([
          Logger.make((o) => {
            logs.push({ ...o.fiber.getRef(References.CurrentLogAnnotations) })
          })
        ]))
      )
      expect(value).toEqual({ n: 1 })
      expect(logs).toEqual([{ from: "a", to: "b", reason: "StructuredOutputError" }])
    }))

  it.effect("a nested chain that is exhausted ends the outer chain too, with the inner errors", () =>
    Effect.gen(function*() {
      const a = recorded("a", [Scripted.fail(Scripted.httpError(503, "a"))])
      const b = recorded("b", [Scripted.fail(Scripted.httpError(529, "b"))])
      const c = recorded("c", [Scripted.text("from c")])
      const inner = { name: "inner", layer: Layer.orDie(fallback([a, b])) }
      const error = yield* Effect.flip(run(fallback([inner, c]), (chat) => chat.chat("hi")))
      expect(error).toMatchObject({ _tag: "FallbackError", reason: { _tag: "Exhausted" } })
      if (error._tag === "FallbackError") {
        expect(error.errors.map((e) => e._tag === "ProviderError" && e.provider)).toEqual(["a", "b"])
      }
      expect(c.requests).toHaveLength(0)
    }))
})
