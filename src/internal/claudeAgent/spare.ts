/**
 * `ClaudeAgent`'s spare CLIs (`ClaudeProcessPool`'s `spares`): a CLI started by the Agent SDK's
 * `prewarm()` before its conversation exists, claimed by a brand-new kept-alive conversation of
 * the same start configuration with `SpareProcess.claim()`, which then gets its own tool server.
 *
 * **Details**
 *
 * `prewarm()` (SDK 0.3.335, alpha) runs everything of a start but the session: process, config,
 * auth, tools, hooks and `canUseTool` registration, the initialize handshake. What it was given is
 * fixed for the spare's life, so a spare is keyed by all of it (the SDK options the client would
 * start a query with: executable, model, environment, tool policy, budget, settings; a
 * `canUseTool` by its presence only). It is started without the client's tool server: the
 * conversation that claims it builds its own and hands it over with `setMcpServers` before its
 * first message, so a spare never carries another conversation's tools. The `canUseTool` it was
 * started with forwards to the conversation that claimed it (it denies before that). Its session
 * is the new one the claim opens; `resume` cannot be decided ahead, so a spare serves only
 * conversations without a session.
 *
 * Not eligible (the conversation starts cold): a client with `hooks` or its own `mcpServers`, a
 * session store (the SDK's mirror is the client's), `extraOptions` holding callbacks, and tools
 * that `needsApproval` (their gate is a settings-file hook of the client) — all of them would be
 * fixed in the spare with one client's callbacks or credentials.
 */
import type * as AgentSdk from "@anthropic-ai/claude-agent-sdk"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as ToolPolicy from "../../registry/ToolPolicy.ts"
import type * as Pool from "../../services/ClaudeProcessPool.ts"
import type * as Tool from "../../services/Tool.ts"
import {
  boundedPolicy,
  queryOptions,
  type QuerySetup,
  resolvePolicy,
  type Started,
  writeSettingsFile
} from "./query.ts"
import { makeToolServer, reap, signalGroup, type SpawnedCli } from "./sdk.ts"

/** How long a claimed spare may take to accept its conversation and tool server before a cold start instead. */
const ClaimTimeout = Duration.seconds(30)

/** A query on a claimed spare, and the spare's permit (now the conversation's). */
export interface Claimed {
  readonly started: Started
  readonly permit: Pool.Permit
}

/** A spare as the pool parks it: alive until claimed, stopped or exited. */
interface AgentSpare extends Pool.SpareProcess {
  /**
   * Hands the spare to its conversation, in the current scope (the conversation's: closing it
   * stops the process, which lives in the pool's): the claim with `prompt`, a tool server of its
   * own for `toolSet`, and its `canUseTool`. None when the spare refused (it is then closed).
   */
  readonly adopt: (params: {
    readonly prompt: AsyncIterable<AgentSdk.SDKUserMessage>
    readonly toolSet: Tool.ToolSet
    readonly canUseTool: AgentSdk.CanUseTool | undefined
  }) => Effect.Effect<Option.Option<Claimed>, never, Scope.Scope>
}

/** Whether `value` holds a function anywhere (callbacks are one client's, not a configuration). */
const holdsFunction = (value: unknown, seen: Set<unknown> = new Set()): boolean => {
  if (typeof value === "function") return true
  if (typeof value !== "object" || value === null || seen.has(value)) return false
  seen.add(value)
  return Object.values(value).some((inner) => holdsFunction(inner, seen))
}

/** Whether a spare can serve a conversation of this client with `toolSet` (see the module's notes). */
const eligible = (setup: QuerySetup, toolSet: Tool.ToolSet) =>
  setup.store === undefined && setup.options.hooks === undefined && Object.keys(setup.appServers).length === 0 &&
  !holdsFunction(setup.options.extraOptions) && !toolSet.tools.some((tool) => tool.needsApproval === true)

/** What a spare of this client is started with, but for the per-process parts (controller, spawner, files). */
const plan = Effect.fnUntraced(function*(setup: QuerySetup, toolSet: Tool.ToolSet, budgetUsd: number | undefined) {
  const { mounted, policy } = yield* resolvePolicy(setup, toolSet)
  const { bounded, sandbox } = yield* boundedPolicy(setup.options, policy)
  const fileSettings = bounded.settings === undefined && sandbox === undefined
    ? undefined
    : { ...bounded.settings, ...(sandbox === undefined ? {} : { sandbox }) }
  const parked = (perProcess: {
    readonly settingsPath: string | undefined
    readonly canUseTool: AgentSdk.CanUseTool | undefined
    readonly controller: AbortController
    readonly onSpawn: (cli: SpawnedCli) => void
  }) =>
    queryOptions(setup.options, {
      params: {
        prompt: "",
        resume: Option.none(),
        fork: false,
        responseFormat: undefined,
        partialMessages: true,
        budgetUsd
      },
      policy,
      // No tool server: the conversation that claims the spare hands over its own.
      fromPolicy: ToolPolicy.toAgentSdkOptions(policy, {
        permissionMode: setup.permissionMode,
        headless: true,
        mcpServers: {}
      }),
      bounded,
      ...perProcess
    })
  // Parked in the SDK's private folder under the config home: the session's folder (its CLAUDE.md,
  // git context, project settings, SessionStart hooks) is the claim's (`cwd` stays in the key).
  const options = (perProcess: Parameters<typeof parked>[0]): AgentSdk.Options => {
    const { cwd: _, ...rest } = parked(perProcess)
    return rest
  }
  const { abortController: _, settings: __, spawnClaudeCodeProcess: ___, ...fixed } = parked({
    settingsPath: undefined,
    canUseTool: setup.options.canUseTool === undefined ? undefined : deny,
    controller: new AbortController(),
    onSpawn: () => {}
  })
  // Callbacks count by their presence (the policy's hook is a function of the policy, in the key).
  // The SDK's first query sets its own version in this process's environment, which the CLI's is
  // copied from: the same for every CLI of the SDK, so not part of the key.
  const { CLAUDE_AGENT_SDK_VERSION: ____, ...env } = fixed.env ?? {}
  const key = JSON.stringify(
    [
      "claude-agent",
      setup.options.sdkSpecifier ?? null,
      setup.options.cwd ?? process.cwd(),
      { ...fixed, env },
      fileSettings ?? null
    ],
    (_, value) => typeof value === "function" ? "[function]" : value
  )
  return { key, mounted, fileSettings, options }
})

/** A spare's start configuration: its key, and its SDK options given the per-process parts. */
type Plan = Effect.Success<ReturnType<typeof plan>>

/** The answer of a spare's `canUseTool` while no conversation owns it (nothing runs then). */
const deny: AgentSdk.CanUseTool = () =>
  Promise.resolve({ behavior: "deny", message: "This claude CLI is a spare: no conversation owns it yet" })

/** Starts a spare in the pool's `scope`, its permit a spare's (it never waits). */
const startSpare = (
  setup: QuerySetup,
  planned: Plan,
  pool: Pool.ClaudeProcessPoolService
): Pool.SpareStart<AgentSpare> =>
(poolScope: Scope.Scope) =>
  Effect.gen(function*() {
    const scope = yield* Scope.fork(poolScope, "sequential")
    const close = Scope.close(scope, Exit.void)
    return yield* Effect.gen(function*() {
      const permit = yield* pool.acquire(close, { spare: true })
      const sdk = yield* setup.sdk
      const controller = new AbortController()
      let cli: SpawnedCli | undefined
      // Set once `prewarm()` resolves; the finalizer may run before.
      const prewarmed: { spare?: AgentSdk.SpareProcess } = {}
      let ended = false
      let claimed = false
      yield* Effect.addFinalizer(() =>
        Effect.suspend(() => {
          ended = true
          controller.abort()
          prewarmed.spare?.close()
          return cli === undefined ? Effect.void : reap(cli, setup.grace)
        })
      )
      const settingsPath = planned.fileSettings === undefined
        ? undefined
        : yield* writeSettingsFile(planned.fileSettings)
      // The conversation's `canUseTool`, once one claims the spare.
      let owner: AgentSdk.CanUseTool | undefined
      const options = planned.options({
        settingsPath,
        canUseTool: setup.options.canUseTool === undefined
          ? undefined
          : (toolName, input, context) => (owner ?? deny)(toolName, input, context),
        controller,
        onSpawn: (spawned) => {
          cli = spawned
          // Spawned after the spare was stopped (the start was interrupted): it goes at once.
          if (ended) signalGroup(spawned.child, "SIGKILL")
        }
      })
      // Parked at once, before `prewarm()` resolves (it waits for the CLI's initialize): a claim
      // meanwhile waits for it, which is still sooner than a cold start.
      const prewarming = sdk.prewarm({ options }).then((spare) => {
        prewarmed.spare = spare
        if (ended) spare.close()
        void spare.exited.then(() => (ended = true), () => (ended = true))
        return spare
      })
      // Its failure is read below (and by a claim); never an unhandled rejection.
      prewarming.catch(() => undefined)
      // A spare that did not start gives its permit back (from the pool's scope: not its own).
      yield* Effect.forkIn(
        Effect.tryPromise(() => prewarming).pipe(
          Effect.catch((error) =>
            Effect.andThen(
              Effect.logDebug("spare claude CLI not started").pipe(Effect.annotateLogs({ error: String(error) })),
              Effect.andThen(Effect.sync(() => (ended = true)), close)
            )
          )
        ),
        poolScope
      )
      yield* permit.touch

      const adopt: AgentSpare["adopt"] = Effect.fnUntraced(function*({ canUseTool, prompt, toolSet }) {
        claimed = true
        yield* Effect.addFinalizer(() => close)
        owner = canUseTool
        const query = yield* Effect.tryPromise(() => prewarming).pipe(
          Effect.timeout(ClaimTimeout),
          Effect.flatMap((parked) =>
            Effect.try(() => ({
              parked,
              query: parked.claim({ prompt, options: { cwd: setup.options.cwd ?? process.cwd() } })
            }))
          ),
          Effect.option
        )
        if (Option.isNone(query)) return yield* Effect.as(close, Option.none<Claimed>())
        const { parked } = query.value
        const servers = planned.mounted
          ? { [setup.serverName]: yield* makeToolServer(setup.serverName, toolSet, controller.signal, setup.runSlot) }
          : {}
        // Both go to the CLI at once (claim, then the servers); the first message waits for them:
        // sent before the answer, it finds the in-process server still `pending` (checked on
        // 2.1.335: its connection takes round trips through the SDK), and the turn fails.
        const accepted = yield* Effect.tryPromise(async () => {
          const [, set] = await Promise.all([
            parked.claimed,
            Object.keys(servers).length === 0 ? undefined : query.value.query.setMcpServers(servers)
          ])
          return set === undefined || Object.keys(set.errors).length === 0
        }).pipe(
          Effect.timeoutOrElse({ duration: ClaimTimeout, orElse: () => Effect.succeed(false) }),
          Effect.catch(() => Effect.succeed(false))
        )
        if (!accepted) return yield* Effect.as(close, Option.none<Claimed>())
        yield* permit.claim
        const iterator = query.value.query[Symbol.asyncIterator]()
        let pull: Promise<IteratorResult<AgentSdk.SDKMessage, void>> | undefined
        const started: Started = {
          next: () => (pull ??= iterator.next()),
          take: () => {
            pull = undefined
          },
          controller,
          cli: () => cli,
          mounted: planned.mounted,
          controls: query.value.query
        }
        return Option.some({ started, permit })
      })

      return { alive: () => !ended && !claimed && !permit.evicted(), close, adopt } satisfies AgentSpare
    }).pipe(Scope.provide(scope), Effect.onError(() => close))
  })

/**
 * For a brand-new kept-alive conversation's first query: a spare of its configuration, claimed
 * and handed `prompt` and the client's tool server (`currentSetup()`: the client's setup of now), when the pool keeps spares and the client
 * allows one; none when it cannot (the query starts cold, as before). The caller's scope is the
 * conversation's query scope.
 */
export const claim = (
  currentSetup: () => QuerySetup,
  pool: Option.Option<Pool.ClaudeProcessPoolService>
):
  | ((
    prompt: AsyncIterable<AgentSdk.SDKUserMessage>,
    budgetUsd: number | undefined
  ) => Effect.Effect<Option.Option<Claimed>, never, Scope.Scope>)
  | undefined =>
{
  if (Option.isNone(pool) || pool.value.spares === 0) return undefined
  const spares = pool.value
  return Effect.fnUntraced(function*(prompt, budgetUsd) {
    // The settings changed through ClaudeLive so far are the configuration's too.
    const setup = currentSetup()
    const toolSet = yield* setup.tools
    if (!eligible(setup, toolSet)) return Option.none()
    if (Option.isNone(yield* Effect.option(setup.sdk))) return Option.none()
    const planned = yield* Effect.option(plan(setup, toolSet, budgetUsd))
    if (Option.isNone(planned)) return Option.none()
    const spare = yield* spares.claimSpare(planned.value.key, startSpare(setup, planned.value, spares))
    if (Option.isNone(spare)) return Option.none()
    return yield* spare.value.adopt({ prompt, toolSet, canUseTool: yield* setup.canUseTool })
  })
}
