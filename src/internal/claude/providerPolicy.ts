/**
 * The tool policy as a Claude provider (`ClaudeLocal`, `ClaudeAgent`) holds it: the agent's
 * opt-outs checked once when the client is built (the bounds, and `strict`), then resolved for
 * each turn's servers. Opt-outs the policy cannot apply as written (`policy.ignored`) are never
 * dropped: each is a warning in the log once per distinct report, the turn's span carries them,
 * and `ClaudeSession.toolPolicy` shows the policy with them. With `strict` they are a `config`
 * error instead.
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as ClaudeCodeCatalog from "../../registry/ClaudeCodeCatalog.ts"
import * as Conditions from "../../registry/Conditions.ts"
import type * as Registry from "../../registry/Registry.ts"
import * as ToolPolicy from "../../registry/ToolPolicy.ts"
import { ConfigurationError, ProviderError } from "../../services/ChatClient.ts"
import * as Extensions from "./extensions.ts"
import type { ToolPolicyInput } from "./options.ts"

/** What a provider reads from its options. */
export interface PolicyInput {
  readonly provider: string
  readonly registry: Registry.Registry
  readonly disabledTools: ReadonlyArray<string>
  readonly conditions: Conditions.Conditions
  readonly permissionMode: ToolPolicy.PermissionMode | undefined
  /** A permission prompt can be answered (`canUseTool`), so tools that ask may still run. */
  readonly canUseTool: boolean
  /** Built-in tools the application auto-approves (`toolPolicy.allowedTools`). */
  readonly allowedTools: ReadonlyArray<string> | undefined
  /** Refuse the policy when any opt-out is in `ignored`. */
  readonly strict: boolean
  /** The servers every turn mounts (the application's), for the check at build. */
  readonly servers: ReadonlyArray<string>
  /** The typed extension options whose tools the policy decides too (see `extensions.ts`). */
  readonly extensions?: Extensions.Extensions | undefined
}

/** A provider's policy: the turn's resolution and the failure every turn gets when refused. */
export interface ProviderPolicy {
  /** The policy of a turn with these extra servers; logs and annotates what it could not apply. */
  readonly resolve: (mcpServers: ReadonlyArray<string>) => Effect.Effect<ToolPolicy.ToolPolicy, ProviderError>
  /** The failure of every turn when the opt-outs were refused at build; none otherwise. */
  readonly refused: ProviderError | undefined
}

const configError = (provider: string, message: string) =>
  new ProviderError({ provider, reason: new ConfigurationError({ message }) })

const contextOf = (input: PolicyInput, mcpServers: ReadonlyArray<string>): ToolPolicy.PolicyContext => ({
  conditions: input.conditions,
  headless: true,
  ...(input.permissionMode === undefined ? {} : { permissionMode: input.permissionMode }),
  ...(input.canUseTool ? { canUseTool: true } : {}),
  ...(input.allowedTools === undefined || input.allowedTools.length === 0 ? {} : { allowedTools: input.allowedTools }),
  ...(mcpServers.length > 0 ? { mcpServers } : {})
})

const strictError = (provider: string, ignored: ReadonlyArray<ToolPolicy.IgnoredOptOut>) =>
  configError(
    provider,
    `toolPolicy.strict: ${ignored.length} opt-out${ignored.length === 1 ? "" : "s"} cannot be applied as written: ${
      ignored.map((i) => i.message).join("; ")
    }`
  )

/** One warning per entry, with what a log search needs. */
const logIgnored = (provider: string, ignored: ReadonlyArray<ToolPolicy.IgnoredOptOut>) =>
  Effect.forEach(ignored, (i) =>
    Effect.logWarning(`tool policy: ${i.message}`).pipe(
      Effect.annotateLogs({
        provider,
        entry: i.entry,
        kind: i.kind,
        ...(i.suggestion === undefined ? {} : { suggestion: i.suggestion })
      })
    ), { discard: true })

/**
 * Checks the opt-outs (a list over the bounds, or any `ignored` entry under `strict`, refuses the
 * policy) and logs what was ignored. Never fails: a refusal is kept in `refused`, for the layer
 * to fail its build with and for every turn of a client built with `make`.
 */
export const make = Effect.fnUntraced(function*(input: PolicyInput): Effect.fn.Return<ProviderPolicy> {
  const { provider } = input
  const extend = Extensions.extendPolicy(input.extensions ?? {})
  const checked = Result.map(
    ToolPolicy.resolveToolPolicy(
      input.registry,
      { disabledTools: input.disabledTools },
      contextOf(input, input.servers)
    ),
    extend
  )
  const invalid = Extensions.invalid(input.extensions ?? {})
  const refused = invalid !== undefined
    ? configError(provider, invalid)
    : Result.isFailure(checked)
    ? configError(provider, `toolPolicy: ${checked.failure.message}`)
    : input.strict && checked.success.ignored.length > 0
    ? strictError(provider, checked.success.ignored)
    : undefined
  const logged = new Set<string>()
  const report = (ignored: ReadonlyArray<ToolPolicy.IgnoredOptOut>) => {
    if (ignored.length === 0) return Effect.void
    const key = JSON.stringify(ignored)
    if (logged.has(key)) return Effect.void
    logged.add(key)
    return logIgnored(provider, ignored)
  }
  if (refused === undefined && Result.isSuccess(checked)) yield* report(checked.success.ignored)
  const agent = { disabledTools: input.disabledTools }
  return {
    refused,
    resolve: Effect.fnUntraced(function*(mcpServers: ReadonlyArray<string>) {
      if (refused !== undefined) return yield* refused

      const policy = extend(ToolPolicy.resolveValidated(input.registry, agent, contextOf(input, mcpServers)))
      if (policy.ignored.length > 0) {
        if (input.strict) return yield* strictError(provider, policy.ignored)
        yield* report(policy.ignored)
        yield* Effect.annotateCurrentSpan("tool_policy.ignored", policy.ignored.map((i) => i.entry))
      }
      return policy
    })
  }
})

/** What both Claude providers' options say about their tool policy. */
export interface ProviderOptions extends Extensions.Extensions {
  readonly cwd?: string | undefined
  readonly canUseTool?: unknown
  readonly toolPolicy?: ToolPolicyInput | undefined
}

/**
 * {@link make} from a provider's options: the registry (Claude Code's catalog unless given), the
 * opt-outs, the conditions (detected from `cwd` unless given) and the session's mode and servers.
 */
export const fromOptions = (
  provider: string,
  options: ProviderOptions,
  session: { readonly permissionMode: ToolPolicy.PermissionMode | undefined; readonly servers: ReadonlyArray<string> }
): Effect.Effect<ProviderPolicy> =>
  Effect.flatMap(
    Conditions.detectNodeConditions({ cwd: options.cwd, given: options.toolPolicy?.conditions }),
    (conditions) =>
      make({
        provider,
        registry: options.toolPolicy?.registry ?? ClaudeCodeCatalog.registry,
        disabledTools: options.toolPolicy?.disabledTools ?? [],
        allowedTools: options.toolPolicy?.allowedTools,
        conditions,
        permissionMode: session.permissionMode,
        canUseTool: options.canUseTool !== undefined,
        strict: options.toolPolicy?.strict === true,
        servers: session.servers,
        extensions: options
      })
  )
