/**
 * The runner's side of `ClaudeConversation`: registers the entity with this runner's `Sharding`
 * and hosts the conversations whose shards it owns.
 *
 * **Details**
 *
 * A conversation's client (`ClaudeLocal.make` or `ClaudeAgent.make`, kept alive by default) is
 * built on its first turn here, from the options and tools your `conversation` function gives for
 * its id, and resumes the CLI session the conversation's last finished turn left in the
 * `ClaudeSessionStore` — so any runner can host any conversation. After `maxIdleTime` without a
 * turn the entity is passivated: its scope closes and its CLI stops. Bound the live CLIs of one
 * runner by providing a `ClaudeProcessPool`; with its `spares`, the runner also keeps CLIs ready for
 * the first turns of the new `ClaudeLocal` conversations it will host. Turns run one at a time; live controls (`Interrupt`,
 * `Steer`, …) run beside the turn on the hosted client's `ClaudeLive`.
 *
 * **Gotchas**
 *
 * Delivery is at least once: a turn whose runner died before replying runs again on the next one.
 * Wrap tools with side effects in `context.idempotent` so a re-run replays their stored result.
 *
 * @summary The runner's side: hosts the conversations whose shards this runner owns.
 * @group Cluster
 * @since 1.0.0
 * @module
 */
import * as Entity from "effect/cluster/Entity"
import type * as Sharding from "effect/cluster/Sharding"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Rpc from "effect/rpc/Rpc"
import type * as Scope from "effect/Scope"
import * as McpServerSdk from "../internal/agentCli/mcpServerSdk.ts"
import { askRawOf, type SessionClient } from "../internal/claude/conversation.ts"
import * as Host from "../internal/cluster/host.ts"
import * as Metrics from "../internal/cluster/metrics.ts"
import { ConfigurationError, ProviderError } from "../services/ChatClient.ts"
import { ClaudeConversation } from "../services/ClaudeConversation.ts"
import { ClaudeSessionStore } from "../services/ClaudeSessionStore.ts"

export type { ConversationContext, ConversationSetup, HostedOptions } from "../internal/cluster/host.ts"

/**
 * Options of {@link layer}.
 *
 * @category config
 * @since 1.0.0
 */
export interface Options<O extends Host.HostedOptions, RM, E, R> {
  /** Builds the conversation's client: `ClaudeLocal.make` or `ClaudeAgent.make`. */
  readonly make: (options?: O) => Effect.Effect<SessionClient, never, RM>
  /**
   * The options and tools of a conversation, from its id. `resume`, `snapshot`, `forkSession`
   * and `projectKey` are the runner's; `keepAlive` defaults to `true`. A failure fails the turn
   * with `ConversationSetupError`, before anything runs.
   */
  readonly conversation: (
    context: Host.ConversationContext
  ) => Effect.Effect<Host.ConversationSetup<NoInfer<O>, R>, E, R>
  /** Idle time after which a conversation's entity stops (and its CLI with it). Default 5 minutes. */
  readonly maxIdleTime?: Duration.Input | undefined
  /** The session store's project key for transcripts and records. Default `"default"`. */
  readonly projectKey?: string | undefined
}

/**
 * The default of {@link Options.maxIdleTime}.
 *
 * @category config
 * @since 1.0.0
 */
export const DefaultMaxIdleTime: Duration.Input = "5 minutes"

/**
 * Conversations whose entity is active on this runner, labelled `runner`.
 *
 * @category utils
 * @since 1.0.0
 */
export const conversations = Metrics.conversations
/**
 * Conversations taken over from a runner that did not stop them cleanly, labelled `runner`.
 *
 * @category utils
 * @since 1.0.0
 */
export const failovers = Metrics.failovers
/**
 * Turns delivered again after their runner died before finishing them, labelled `runner`.
 *
 * @category utils
 * @since 1.0.0
 */
export const redeliveredTurns = Metrics.redeliveredTurns
/**
 * Seconds per session store call of hosted conversations, labelled `operation` and `runner`.
 *
 * @category utils
 * @since 1.0.0
 */
export const storeLatency = Metrics.storeLatency

const isRawAnswer = (value: unknown): value is { readonly text: string; readonly structured?: unknown } =>
  typeof value === "object" && value !== null && typeof (value as { text?: unknown }).text === "string"

const noRawAsk = new ProviderError({
  provider: "claude-cluster",
  reason: new ConfigurationError({
    message: "The runner's `make` did not build a ClaudeLocal or ClaudeAgent client, which `ask` needs; " +
      "pass ClaudeLocal.make or ClaudeAgent.make"
  })
})

/**
 * Registers `ClaudeConversation` on this runner. Needs `Sharding` (a runner layer from
 * `ClaudeCluster`), the `ClaudeSessionStore` every runner shares, and what `make` and
 * `conversation` need (for `ClaudeLocal.make`: `NodeSubprocess.layer` and `NodeSecretFile.layer()`).
 *
 * @category layers
 * @since 1.0.0
 */
export const layer = <O extends Host.HostedOptions, RM, E, R>(
  options: Options<O, RM, E, R>
): Layer.Layer<never, never, Sharding.Sharding | ClaudeSessionStore | Exclude<RM | R, Scope.Scope>> =>
  Layer.merge(entityLayer(options), preloadBridgeSdk)

/**
 * The tool bridge's MCP SDK, loaded in the background when the runner starts: loaded by the first
 * conversation with tools instead, it put 0.3–2 s (the machine's load decides) into every failover,
 * since the runner taking a conversation over had often hosted none yet.
 */
const preloadBridgeSdk = Layer.effectDiscard(Effect.forkScoped(McpServerSdk.load))

const entityLayer = <O extends Host.HostedOptions, RM, E, R>(options: Options<O, RM, E, R>) =>
  ClaudeConversation.toLayer(
    Effect.gen(function*() {
      const address = yield* Entity.CurrentAddress
      const host = yield* Host.make({ ...options, projectKey: options.projectKey ?? "default" }, {
        conversationId: address.entityId,
        runner: String(yield* Entity.CurrentRunnerAddress),
        store: yield* ClaudeSessionStore
      })
      return ClaudeConversation.of({
        Chat: ({ payload }) =>
          host.runTurn(
            payload.turnId,
            (client) => client.chat(payload.prompt),
            (reply) => typeof reply === "string" ? Option.some(reply) : Option.none()
          ),
        Ask: ({ payload }) =>
          host.runTurn(
            payload.turnId,
            (client) => {
              const askRaw = askRawOf(client)
              return askRaw === undefined
                ? Effect.fail(noRawAsk)
                : askRaw(payload.prompt, { name: payload.format.name, schema: payload.format.schema as never })
            },
            (reply) => isRawAnswer(reply) ? Option.some(reply) : Option.none()
          ),
        ChatStream: ({ payload }) => host.streamTurn(payload.turnId, (client) => client.chatStream(payload.prompt)),
        Usage: () => host.usage,
        // Controls bypass the entity's one-at-a-time mailbox (`Rpc.fork`): an interrupt must not
        // queue behind the turn it stops. Turns stay serialised (concurrency 1 applies to them).
        Interrupt: () => Rpc.fork(host.control((live) => live.interrupt)),
        Steer: ({ payload }) => Rpc.fork(host.control((live) => live.steer(payload.text, { when: payload.when }))),
        SetModel: ({ payload }) => Rpc.fork(host.control((live) => live.setModel(payload.model))),
        SetPermissionMode: ({ payload }) => Rpc.fork(host.control((live) => live.setPermissionMode(payload.mode))),
        SetMaxThinkingTokens: ({ payload }) =>
          Rpc.fork(host.control((live) => live.setMaxThinkingTokens(payload.tokens))),
        ContextUsage: () => Rpc.fork(host.control((live) => live.contextUsage)),
        McpStatus: () => Rpc.fork(host.control((live) => live.mcpStatus)),
        // Decisions resume the parked session: turns of the conversation, queued like one.
        Approve: ({ payload }) =>
          host.decide("approve", payload.approvalId, (approvals) =>
            approvals.approve(
              payload.approvalId,
              payload.updatedInput === undefined ? undefined : { updatedInput: payload.updatedInput }
            )),
        Deny: ({ payload }) =>
          host.decide("deny", payload.approvalId, (approvals) => approvals.deny(payload.approvalId, payload.reason)),
        ListApprovals: () => Rpc.fork(host.listApprovals)
      })
    }),
    { maxIdleTime: options.maxIdleTime ?? DefaultMaxIdleTime, concurrency: 1 }
  ) as Layer.Layer<never, never, Sharding.Sharding | ClaudeSessionStore | Exclude<RM | R, Scope.Scope>>
