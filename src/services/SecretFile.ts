/**
 * Short-lived files for secrets (bearer tokens, MCP configs) that must reach a child process
 * without ever appearing in its argv or environment: the child gets a path, the secret stays on
 * disk only as long as the scope that wrote it.
 *
 * @summary Short-lived 0600 files that hand secrets to a child process without argv or environment.
 * @group Processes & files
 * @since 0.1.0
 * @module
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"

/**
 * A secret file could not be created safely: the directory or file could not be made, the write
 * failed, or the permissions on disk are not the owner-only ones that were asked for.
 *
 * @category errors
 * @since 1.0.0
 */
export class SecretFileError extends Schema.TaggedError<SecretFileError>()("SecretFileError", {
  /** Which step failed. */
  reason: Schema.Literals(["CreateDirectory", "Write", "InsecureMode"]),
  /** What failed, with the path; never the contents. */
  message: Schema.String
}) {}

/**
 * The SecretFile service.
 *
 * @category models
 * @since 1.0.0
 */
export interface SecretFileService {
  /**
   * Writes `contents` (UTF-8) to a fresh file with mode 0600 inside a fresh directory with mode
   * 0700, whatever the process umask, and returns the file's path once it is completely written.
   * The file and its directory are removed when the scope closes — after success, failure or
   * interruption. A removal failure is logged as a warning, never raised over the caller's result.
   */
  readonly writeScoped: (contents: string) => Effect.Effect<string, SecretFileError, Scope.Scope>
}

/**
 * Writes secrets to owner-only temporary files that live as long as a scope.
 *
 * @category services
 * @since 1.0.0
 */
export class SecretFile extends Context.Service<SecretFile, SecretFileService>()("effect-chat-bridge/SecretFile") {}

/**
 * Writes `contents` to a scoped secret file with the `SecretFile` service in context; returns its
 * path. See {@link SecretFileService.writeScoped}.
 *
 * @category accessors
 * @since 1.0.0
 */
export const writeScoped: (
  contents: string
) => Effect.Effect<string, SecretFileError, SecretFile | Scope.Scope> = Effect.fn("SecretFile.writeScoped")(
  function*(contents: string) {
    const service = yield* SecretFile
    return yield* service.writeScoped(contents)
  }
)
