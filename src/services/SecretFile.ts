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
 * The fresh directory for a secret could not be created. Not retryable: a missing or read-only
 * parent stays so.
 *
 * @since 2.0.0
 * @category errors
 */
export class CreateDirectory extends Schema.TaggedError<CreateDirectory>(
  "effect-chat-bridge/SecretFileError/CreateDirectory"
)("CreateDirectory", {
  /** The parent the directory was to be made in. */
  path: Schema.String,
  /** What failed, with the path; never the contents. */
  message: Schema.String
}) {
  /** Never retryable. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The secret file could not be written, or its mode set or read back. Not retryable.
 *
 * @since 2.0.0
 * @category errors
 */
export class Write extends Schema.TaggedError<Write>("effect-chat-bridge/SecretFileError/Write")("Write", {
  /** The file that could not be written. */
  path: Schema.String,
  /** What failed, with the path; never the contents. */
  message: Schema.String
}) {
  /** Never retryable. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The file or its directory does not have the owner-only mode that was asked for (a file system
 * that ignores modes): the secret is not written there. Not retryable.
 *
 * @since 2.0.0
 * @category errors
 */
export class InsecureMode extends Schema.TaggedError<InsecureMode>("effect-chat-bridge/SecretFileError/InsecureMode")(
  "InsecureMode",
  {
    /** The file or directory with the wrong mode. */
    path: Schema.String,
    /** The permission bits found on disk. */
    mode: Schema.Number,
    /** The permission bits that were asked for (`0o600` for the file, `0o700` for its directory). */
    expected: Schema.Number,
    /** What was found, with the path. */
    message: Schema.String
  }
) {
  /** Never retryable: the file system keeps ignoring modes. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * Which step of writing a secret file failed.
 *
 * @since 2.0.0
 * @category schemas
 */
export const SecretFileErrorReason: Schema.Union<[typeof CreateDirectory, typeof Write, typeof InsecureMode]> = Schema
  .Union([CreateDirectory, Write, InsecureMode])

/**
 * The type of {@link SecretFileErrorReason}.
 *
 * @since 2.0.0
 * @category models
 */
export type SecretFileErrorReason = typeof SecretFileErrorReason.Type

/**
 * A secret file could not be created safely: the directory or file could not be made, the write
 * failed, or the permissions on disk are not the owner-only ones that were asked for. Select a
 * reason with `Effect.catchReason("SecretFileError", "InsecureMode", …)`.
 *
 * @since 2.0.0
 * @category errors
 */
export class SecretFileError extends Schema.TaggedError<SecretFileError>()("SecretFileError", {
  /** Which step failed and why. */
  reason: SecretFileErrorReason
}) {
  /** The reason's message. */
  override get message(): string {
    return this.reason.message
  }

  /** Whether trying again may succeed; the reason decides (no reason is retryable today). */
  get isRetryable(): boolean {
    return this.reason.isRetryable
  }
}

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
