/**
 * ChatClients on the real `claude` binary inside a {@link Sandbox}: `ClaudeLocal` with the Node
 * subprocess and secret files kept in the sandbox (the `ClaudeAgent` helpers join them here).
 * Each lives in the caller's Scope; a test that closes a client itself runs the builder under
 * `Scope.provide(scope)`.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { readFileSync } from "node:fs"
import * as ClaudeAgent from "../../src/layers/ClaudeAgent.ts"
import * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import * as NodeSecretFile from "../../src/layers/NodeSecretFile.ts"
import * as NodeSubprocess from "../../src/layers/NodeSubprocess.ts"
import { ChatClient, type ChatClientService } from "../../src/services/ChatClient.ts"
import { ClaudeSession, type ClaudeSessionService } from "../../src/services/ClaudeCodeOptions.ts"
import * as Pool from "../../src/services/ClaudeProcessPool.ts"
import { SecretFile } from "../../src/services/SecretFile.ts"
import type { Subprocess } from "../../src/services/Subprocess.ts"
import * as Tool from "../../src/services/Tool.ts"
import { claudeBinary, claudeProcessesIn, type Sandbox } from "./claudeCli.ts"

/** The parts of a sandbox a client runs in (a test that never starts the CLI may pass made-up ones). */
export type ClientBox = Pick<Sandbox, "cwd" | "env" | "secrets">

/** Services a test puts under a client. */
export interface AgentWiring {
  /** The pool the client's CLIs take their permits from; none bounds nothing. */
  readonly pool?: Pool.ClaudeProcessPoolService
}

/** Services a test puts under the local client. */
export interface LocalWiring extends AgentWiring {
  /** Instead of the Node secret files in `box.secrets`, e.g. {@link recordingSecretFile}. */
  readonly secretFile?: Layer.Layer<SecretFile>
}

/** A Claude Code client with its session. */
export interface ClaudeClient {
  readonly chat: ChatClientService
  readonly session: ClaudeSessionService
}

/** Long enough for a cold CLI on a busy machine, short enough that a hung run fails the test. */
export const requestTimeout = "60 seconds"

/** `layer`, taking its CLIs' permits from `pool` when one is given. */
export const withPool = <A, E, R>(layer: Layer.Layer<A, E, R>, pool: Pool.ClaudeProcessPoolService | undefined) =>
  pool === undefined ? layer : layer.pipe(Layer.provide(Layer.succeed(Pool.ClaudeProcessPool, pool)))

/**
 * Real secret files in `box.secrets`, each one's contents kept in `written` for the test to read
 * (and first passed through `alter`, which is how a test tampers with a config).
 */
export const recordingSecretFile = (box: ClientBox, alter: (contents: string) => string = (c) => c) => {
  const written: Array<string> = []
  const layer: Layer.Layer<SecretFile> = Layer.effect(
    SecretFile,
    Effect.gen(function*() {
      const real = yield* SecretFile
      return SecretFile.of({
        writeScoped: (contents: string) => {
          written.push(contents)
          return real.writeScoped(alter(contents))
        }
      })
    })
  ).pipe(Layer.provide(NodeSecretFile.layer({ directory: box.secrets })))
  return { layer, written } as const
}

/** What `ClaudeLocal` runs on: Node subprocesses, and secret files in `box.secrets`. */
export const localServices = (
  box: ClientBox,
  secretFile: Layer.Layer<SecretFile> = NodeSecretFile.layer({ directory: box.secrets })
): Layer.Layer<Subprocess | SecretFile> => Layer.merge(NodeSubprocess.layer, secretFile)

/** `ClaudeLocal` on the pinned binary (unless `options.binary` says otherwise) in `box`. */
const localLayer = (
  box: ClientBox,
  options: ClaudeLocal.Options = {},
  wiring: LocalWiring = {}
): Layer.Layer<ChatClient | ClaudeSession> =>
  withPool(
    ClaudeLocal.layer({ binary: claudeBinary, cwd: box.cwd, env: box.env, requestTimeout, ...options }).pipe(
      Layer.provide(localServices(box, wiring.secretFile)),
      Layer.orDie
    ),
    wiring.pool
  )

/**
 * A client and its session from `layer`, open until the caller's Scope closes. Built fresh
 * (`Layer.fresh`): on Effect 4 a layer built once is memoized, and every call here is a new client.
 */
export const sessionOf = (
  layer: Layer.Layer<ChatClient | ClaudeSession>
): Effect.Effect<ClaudeClient, never, Scope.Scope> =>
  Effect.map(
    Layer.build(Layer.fresh(layer)),
    (ctx) => ({ chat: Context.get(ctx, ChatClient), session: Context.get(ctx, ClaudeSession) })
  )

/** The ChatClient of a {@link ClaudeClient}. */
export const chatOf = Effect.map(({ chat }: ClaudeClient): ChatClientService => chat)

/** A `ClaudeLocal` client and its session, open until the caller's Scope closes. */
export const localSession = (
  box: ClientBox,
  options?: ClaudeLocal.Options,
  wiring?: LocalWiring
): Effect.Effect<ClaudeClient, never, Scope.Scope> => sessionOf(localLayer(box, options, wiring))

/** {@link localSession}'s ChatClient. */
export const localClient = (...args: Parameters<typeof localSession>) => chatOf(localSession(...args))

/** `ClaudeAgent` on the SDK's binary in `box`. */
const agentLayer = (
  box: ClientBox,
  options: ClaudeAgent.Options = {},
  wiring: AgentWiring = {}
): Layer.Layer<ChatClient | ClaudeSession> =>
  withPool(Layer.orDie(ClaudeAgent.layer({ cwd: box.cwd, env: box.env, requestTimeout, ...options })), wiring.pool)

/** A `ClaudeAgent` client and its session, open until the caller's Scope closes. */
export const agentSession = (
  box: ClientBox,
  options?: ClaudeAgent.Options,
  wiring?: AgentWiring
): Effect.Effect<ClaudeClient, never, Scope.Scope> => sessionOf(agentLayer(box, options, wiring))

/** {@link agentSession}'s ChatClient. */
export const agentClient = (...args: Parameters<typeof agentSession>) => chatOf(agentSession(...args))

/**
 * An application tool `lookup` that, whenever it runs, records the command lines of the claude
 * processes then in `cwd()` (to check what a running CLI's argv shows); it answers `answer(city)`.
 */
export const cmdlineRecordingLookup = (cwd: () => string, answer: (city: string) => string) => {
  const cmdlines: Array<string> = []
  const tool = Tool.make("lookup", {
    description: "Looks a city up",
    parameters: { city: Schema.String },
    handler: ({ city }) =>
      Effect.sync(() => {
        for (const pid of claudeProcessesIn(cwd())) {
          cmdlines.push(readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " "))
        }
        return answer(city)
      })
  })
  return { tool, cmdlines }
}
