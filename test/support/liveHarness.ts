/**
 * What the live-control e2e suites (`ClaudeLocalLive`, `ClaudeAgentLive`) share: the scripted
 * model, the bridge tools that block or take long (recording whether they were interrupted), the
 * check that a turn failed with `Interrupted`, and the probe that the CLI process stayed the same.
 */
import { expect } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import type { ChatClientService } from "../../src/services/ChatClient.ts"
import { ClaudeLiveError, type ClaudeLiveService, type Interrupted } from "../../src/services/ClaudeLive.ts"
import * as Tool from "../../src/services/Tool.ts"
import { claudeProcessesIn, type Sandbox, sandbox } from "./claudeCli.ts"
import * as Fake from "./FakeMessagesApi.ts"

/**
 * The scripted model: "story" streams a little and then hangs (so a turn is mid-text); "slow",
 * "steady" and "wait" call the bridge tools of those names; a tool result is answered with its
 * text; "write <path>" calls `Write`; anything else is echoed.
 */
export const model = (req: Fake.FakeRequest): Fake.FakeReply => {
  const results = Fake.toolResults(req)
  if (results.length > 0) return { text: `after tool: ${results.map((r) => r.content).join(" | ")}` }
  const last = Fake.lastUserText(req)
  if (last.includes("story")) return { text: "Once upon a time, in a land far away", breakMidway: "hang" }
  for (const name of ["slow", "steady", "wait"]) {
    if (last.includes(name)) return { toolUses: [{ name: `mcp__gtb__${name}`, input: {} }] }
  }
  const write = /write (\S+)/.exec(Fake.lastUserLine(req))
  if (write !== null) return { toolUses: [{ name: "Write", input: { file_path: write[1], content: "hello" } }] }
  return { text: `You said: ${Fake.lastUserLine(req)}` }
}

/** The fake Messages API with {@link model}, and a sandbox for the CLI pointed at it. */
export const fixture = Effect.gen(function*() {
  const api = yield* Fake.make(model)
  const box = yield* sandbox(api.url)
  return { api, box }
})

/** Waits (polling) until `done` holds, for at most 30 s. */
export const until = (done: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 600 && !done(); i++) yield* Effect.sleep("50 millis")
    expect(done()).toBe(true)
  })

/** The `Interrupted` reason a turn failed with. */
export const interruptedOf = <A>(exit: Exit.Exit<A, unknown>): Interrupted => {
  const error = Exit.isFailure(exit) ? Option.getOrUndefined(Exit.findErrorOption(exit)) : undefined
  expect(error).toBeInstanceOf(ClaudeLiveError)
  const reason = (error as ClaudeLiveError).reason
  expect(reason._tag).toBe("Interrupted")
  return reason as Interrupted
}

/** Every message of a request, as JSON text (to look for a word anywhere in the history). */
export const allText = (req: Fake.FakeRequest | undefined) => JSON.stringify(req?.body.messages ?? [])

/** A tool that blocks until `gate` opens, telling `started` when it runs. */
export const waitTool = (started: Deferred.Deferred<void>, gate: Deferred.Deferred<void>) =>
  Tool.make("wait", {
    description: "Waits for the operator",
    parameters: {},
    handler: () =>
      Deferred.succeed(started, undefined).pipe(Effect.andThen(Deferred.await(gate)), Effect.as("released"))
  })

/** A tool that takes `duration`, and how its run ended (told by its own finalizer). */
export interface SlowTool {
  readonly tool: Tool.Tool
  /** Opens when the handler starts. */
  readonly started: Deferred.Deferred<void>
  /** Completed by the handler's finalizer: `interrupted` or `finished`. */
  readonly ended: Deferred.Deferred<"interrupted" | "finished">
}

/** A real slow bridge tool named `name` (see {@link SlowTool}); `uninterruptible` as `Tool.make`'s option. */
export const slowTool = (
  name: string,
  options: { readonly duration?: Duration.Input; readonly uninterruptible?: boolean } = {}
): Effect.Effect<SlowTool> =>
  Effect.gen(function*() {
    const started = yield* Deferred.make<void>()
    const ended = yield* Deferred.make<"interrupted" | "finished">()
    const tool = Tool.make(name, {
      description: "Takes a long time",
      parameters: {},
      uninterruptible: options.uninterruptible,
      handler: () =>
        Deferred.succeed(started, undefined).pipe(
          Effect.andThen(Effect.sleep(options.duration ?? "60 seconds")),
          Effect.as("finished"),
          Effect.onExit((exit) => Deferred.succeed(ended, Exit.hasInterrupts(exit) ? "interrupted" : "finished"))
        )
    })
    return { tool, started, ended }
  })

/** The one claude CLI running in `box` (a kept-alive conversation's). */
export const onlyProcess = (box: Sandbox): number => {
  const pids = claudeProcessesIn(box.cwd)
  expect(pids).toHaveLength(1)
  return pids[0]!
}

/** Checks that the CLI running in `box` is still process `pid`, alone. */
export const expectSameProcess = (box: Sandbox, pid: number) => expect(claudeProcessesIn(box.cwd)).toEqual([pid])

/**
 * Under `acceptEdits` the model's `Write` runs; after `setPermissionMode("plan")` on the same
 * process the same call is refused and nothing is written.
 */
export const expectPermissionModeSwitch = (box: Sandbox, chat: ChatClientService, live: ClaudeLiveService) =>
  Effect.gen(function*() {
    const first = join(box.cwd, "first.txt")
    yield* chat.chat(`Please write ${first}`)
    expect(readFileSync(first, "utf8")).toBe("hello")
    const pid = onlyProcess(box)
    // Plan mode edits nothing: the same tool call is now refused, on the running CLI.
    yield* live.setPermissionMode("plan")
    expectSameProcess(box, pid)
    const second = join(box.cwd, "second.txt")
    const refused = yield* Effect.flip(chat.chat(`Please write ${second}`))
    expect(refused._tag).toBe("PermissionDeniedError")
    expect(existsSync(second)).toBe(false)
  })

/**
 * Interrupting a kept-alive turn's fiber mid-answer stops the CLI's turn politely within `bound`
 * ms: the next turn runs on the same process and its request holds the earlier turns.
 */
export const expectPoliteFiberStop = (
  api: Fake.FakeMessagesApi,
  box: Sandbox,
  chat: ChatClientService,
  bound: number
) =>
  Effect.gen(function*() {
    yield* chat.chat("Remember the word: pineapple.")
    const pid = onlyProcess(box)
    const turn = yield* Effect.forkChild(chat.chat("Tell me a story"))
    yield* until(() => allText(api.messageRequests().at(-1)).includes("Tell me a story"))
    yield* Effect.sleep("500 millis")
    const t0 = Date.now()
    yield* Fiber.interrupt(turn)
    const took = Date.now() - t0
    expect(took).toBeLessThan(bound)
    expect(yield* chat.chat("Still there?")).toBe("You said: Still there?")
    expectSameProcess(box, pid)
    const history = allText(api.messageRequests().at(-1))
    expect(history).toContain("pineapple")
    expect(history).toContain("Tell me a story")
    return took
  })
