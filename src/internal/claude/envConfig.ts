/**
 * The `CLAUDE_*` environment variables both Claude providers read (`ClaudeLocal.configFromEnv`,
 * `ClaudeAgent.configFromEnv`): one reader, so the two agree on names, formats and errors. Each
 * provider maps the result onto its own options (the binary is `binary` on one,
 * `pathToClaudeCodeExecutable` on the other) and passes the permission modes it accepts.
 */
import * as Config from "effect/Config"
import type * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import type * as Schema from "effect/Schema"

/** What the variables say; `undefined` where a variable is not set. */
export interface ClaudeEnv<Mode> {
  /** `CLAUDE_BINARY`: the executable. */
  readonly binary: string | undefined
  /** `CLAUDE_MODEL`. */
  readonly model: string | undefined
  /** `CLAUDE_SYSTEM_PROMPT`. */
  readonly systemPrompt: string | undefined
  /** `CLAUDE_CWD`. */
  readonly cwd: string | undefined
  /** `CLAUDE_REQUEST_TIMEOUT`: a duration such as `5 minutes`. */
  readonly requestTimeout: Duration.Input | undefined
  /** `CLAUDE_PERMISSION_MODE`: one of `modes`. */
  readonly permissionMode: Mode | undefined
}

const optional = <A>(config: Config.Config<A>): Config.Config<A | undefined> =>
  Config.map(Config.option(config), Option.getOrUndefined)

/** The variables, all optional; a malformed one (a duration, a mode not in `modes`) is a `ConfigError` naming it. */
export const claudeEnv = <Mode extends string>(
  modes: Schema.ConstraintCodec<Mode, unknown>
): Config.Config<ClaudeEnv<Mode>> =>
  Config.all({
    binary: optional(Config.String("CLAUDE_BINARY")),
    model: optional(Config.String("CLAUDE_MODEL")),
    systemPrompt: optional(Config.String("CLAUDE_SYSTEM_PROMPT")),
    cwd: optional(Config.String("CLAUDE_CWD")),
    requestTimeout: optional<Duration.Input>(Config.Duration("CLAUDE_REQUEST_TIMEOUT")),
    permissionMode: optional(Config.schema(modes, "CLAUDE_PERMISSION_MODE"))
  })

/** Options minus `undefined` values, so explicit overrides never blank out configured ones. */
export const defined = <T extends object>(options: T): Partial<T> =>
  Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as Partial<T>
