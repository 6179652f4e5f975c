/**
 * `ClaudeLocal`'s spare CLIs (`ClaudeProcessPool`'s `spares`): a kept-alive CLI started before its
 * conversation exists, with everything that cannot change later but without tools or session,
 * claimed by a brand-new conversation of the same start configuration.
 *
 * **Details**
 *
 * Checked on claude 2.1.332: a `-p --input-format stream-json` CLI started with
 * `--strict-mcp-config` and no `--mcp-config` answers a `mcp_set_servers` control request before
 * its first user message (`{added: ["gtb"], errors: {}}`), connects the bridge there (the next
 * turn's init line says `connected`, `source: "dynamic"`), honours `alwaysLoad` (the tool is in
 * the first request's tool list) and the `--allowedTools mcp__gtb` rule given at start. So a spare
 * gets its conversation's own bridge run (a per-run bearer token) at claim, over stdin, and never
 * holds another conversation's credential. Its session is the one the CLI opened at start, empty
 * until the first message: the conversation adopts it from its first result. `--resume` cannot be
 * decided ahead, so a spare serves only conversations without a session.
 *
 * A new spare is warmed with a `get_context_usage` control request (2.1.335): the CLI's first user
 * message otherwise pays ~0.3–0.5 s of one-time work (system prompt, context) between its
 * `requesting` status and the API request; after the warm-up its first message costs about what a
 * later one does. The control request writes nothing to the session file.
 *
 * The claim does not wait for the `mcp_set_servers` answer: the first message follows it on stdin
 * (2.1.335 applies the servers before it reads on), which saves that round trip.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import type * as Pool from "../../services/ClaudeProcessPool.ts"
import { buildArgs, serverAllowRules } from "./args.ts"
import * as LiveCli from "./liveCli.ts"
import { type LocalEnv, policyArguments, type RunPlan } from "./plan.ts"

/** How long a new spare's warm-up may take (its fiber's bound; the spare serves meanwhile). */
const WarmUpTimeout = Duration.seconds(30)

/** How long a claimed spare may take to accept its conversation's servers before a cold start instead. */
const ClaimTimeout = Duration.seconds(30)

/**
 * Whether a spare can serve this plan: nothing per conversation is in its argv or files. A
 * permission prompt bridge or hooks bridge (their tokens are the client's, in argv-named files;
 * tools that need approval are gated by a hook on it), the application's own MCP servers, and a
 * first turn with `--json-schema` start cold.
 */
const eligible = (env: LocalEnv, plan: RunPlan) =>
  plan.permissions === undefined && plan.jsonSchema === undefined && plan.schemaText === undefined &&
  env.options.hooks === undefined && Object.keys(env.options.mcpServers ?? {}).length === 0 &&
  !plan.toolSet.tools.some((tool) => tool.needsApproval === true)

/** The argv of a spare: a new session, no MCP config, and the plan's policy. */
const spareArgs = (env: LocalEnv, plan: RunPlan, budgetUsd: number | undefined, policyArgs?: ReadonlyArray<string>) =>
  buildArgs(env.options, {
    sessionId: Option.none(),
    mcpConfigPath: undefined,
    policy: plan.policy,
    policyArgs,
    jsonSchema: undefined,
    streamInput: true,
    budgetUsd
  })

/**
 * The start configuration a spare is keyed by: binary, cwd, CLI version, argv (options, policy,
 * budget) and environment. The tools are not in it: they come with the conversation's bridge.
 */
const spareKey = (env: LocalEnv, plan: RunPlan, budgetUsd: number | undefined, runEnv: unknown) =>
  JSON.stringify([
    "claude-local",
    env.binary,
    env.options.cwd ?? null,
    plan.cli,
    spareArgs(env, plan, budgetUsd),
    // Settings-file content the argv does not show.
    env.options.sandbox ?? null,
    runEnv
  ])

/** Starts a spare in the pool's `scope`, its permit a spare's (it never waits). */
const startSpare = (
  env: LocalEnv,
  plan: RunPlan,
  budgetUsd: number | undefined,
  runEnv: Record<string, string | undefined>,
  pool: Pool.ClaudeProcessPoolService
): Pool.SpareStart<LiveCli.LiveCli> =>
(scope: Scope.Scope) =>
  LiveCli.start({
    subprocess: env.subprocess,
    parent: scope,
    key: "spare",
    resume: Option.none(),
    pool: Option.some(pool),
    spare: true,
    prepare: Effect.map(policyArguments(env, serverAllowRules(plan.policy), []), (policyArgs) => ({
      command: env.binary,
      args: spareArgs(env, plan, budgetUsd, policyArgs),
      env: runEnv,
      ...(env.options.cwd === undefined ? {} : { cwd: env.options.cwd }),
      ...(env.options.killGrace === undefined ? {} : { killGrace: env.options.killGrace })
    }))
  }).pipe(
    // Parked at once: a claim during the warm-up queues behind it on the CLI's stdin.
    Effect.tap((cli) => Effect.forkIn(warmUp(cli), scope)),
    Effect.tap((cli) => cli.touch)
  )

/**
 * A new spare's warm-up: a `get_context_usage` control request makes the CLI do at start the work
 * it otherwise does on its first message (system prompt, context, tool list; ~0.3–0.5 s measured
 * on 2.1.335), without a turn, an API request or a line in the session file. The answer is not
 * needed: a CLI that refuses it or takes too long serves as it is.
 */
const warmUp = (cli: LiveCli.LiveCli) =>
  cli.control({ subtype: "get_context_usage" }).pipe(
    Effect.timeoutOrElse({ duration: WarmUpTimeout, orElse: () => Effect.void }),
    Effect.asVoid
  )

/**
 * Hands a claimed spare its conversation: the bridge run (a token of its own, in the process's
 * scope), `key`, and a finalizer in the client's scope (the process lives in the pool's). A spare
 * that has ended (or does not take its conversation in time) is closed, and the turn starts cold;
 * one that refuses the servers fails its first turn on the init line's server status.
 */
const adopt = (env: LocalEnv, plan: RunPlan, key: string, cli: LiveCli.LiveCli) =>
  cli.claim(
    key,
    Effect.gen(function*() {
      const run = plan.mounted && Option.isSome(plan.running) ? yield* plan.running.value.openRun : undefined
      return { servers: run?.mcpConfig.mcpServers ?? {}, aroundTurn: run?.withRunSpan }
    })
  ).pipe(
    Effect.timeoutOrElse({ duration: ClaimTimeout, orElse: () => Effect.succeed(false) }),
    Effect.flatMap((accepted) =>
      accepted
        ? Effect.as(Scope.addFinalizer(env.scope, cli.close), Option.some(cli))
        : Effect.as(cli.close, Option.none())
    )
  )

/**
 * For a brand-new conversation's first CLI: a spare of its configuration, adopted, when the pool
 * keeps spares and the plan allows one; undefined when it cannot (the turn starts cold, as before).
 */
export const claimSpare = (
  env: LocalEnv,
  plan: RunPlan,
  key: string,
  budgetUsd: number | undefined,
  pool: Option.Option<Pool.ClaudeProcessPoolService>
): Effect.Effect<Option.Option<LiveCli.LiveCli>> | undefined => {
  if (Option.isNone(pool) || pool.value.spares === 0 || !eligible(env, plan)) return undefined
  const spares = pool.value
  // Only when the slot has to start a CLI; the environment is read once, so the key and the spare
  // started for it carry the same one.
  return Effect.suspend(() => {
    const runEnv = env.runEnv()
    return spares.claimSpare(spareKey(env, plan, budgetUsd, runEnv), startSpare(env, plan, budgetUsd, runEnv, spares))
  }).pipe(
    Effect.flatMap(Option.match({
      onNone: () => Effect.succeedNone,
      onSome: (cli) => adopt(env, plan, key, cli)
    }))
  )
}
