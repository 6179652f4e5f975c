/**
 * The resolved policy as `claude` CLI arguments, and split between bounded arguments and a
 * `--settings` file when its lists are long. Re-exported by `registry/ToolPolicy.ts`.
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type { ToolPolicy } from "./model.ts"

/**
 * `claude` CLI arguments. Each list is one comma-joined argument, so a following positional
 * (the prompt) cannot be swallowed by the variadic flag; empty lists are omitted.
 *
 * @category utils
 * @since 1.0.0
 */
export const toCliFlags = (policy: ToolPolicy): ReadonlyArray<string> => [
  ...(policy.disallowedTools.length > 0 ? ["--disallowedTools", policy.disallowedTools.join(",")] : []),
  ...(policy.allowedTools.length > 0 ? ["--allowedTools", policy.allowedTools.join(",")] : [])
]

/**
 * A policy too large for any command line and settings file the CLI accepts. Split the agent's
 * opt-outs with wildcards (`mcp__<server>__*`) instead of naming every tool.
 *
 * @category errors
 * @since 1.0.0
 */
export class PolicyTooLargeError extends Schema.TaggedError<PolicyTooLargeError>()("PolicyTooLargeError", {
  /** Entries in the disallow- and allow-lists. */
  entries: Schema.Number,
  /** Bytes the lists need. */
  bytes: Schema.Number,
  /** Bytes that fit (settings file plus command line). */
  limit: Schema.Number
}) {
  /** Says how large, and what to do. */
  override get message(): string {
    return `The tool policy has ${this.entries} entries (${this.bytes} bytes), more than the ${this.limit} bytes the ` +
      "claude CLI can take in a settings file and on its command line; replace long lists of names with " +
      "wildcards such as mcp__<server>__*"
  }
}

/**
 * Where long lists go; every limit is in bytes.
 *
 * @category models
 * @since 1.0.0
 */
export interface ArgvBounds {
  /** Largest single argument (Linux refuses arguments over 128 KiB with E2BIG). Default 96 KiB. */
  readonly argBytes?: number
  /** Largest total of the list arguments on the command line. Default 1 MiB. */
  readonly inlineBytes?: number
  /** Largest settings file (claude 2.1.332 refuses files over 2 MiB). Default 2,000,000. */
  readonly settingsBytes?: number
}

/**
 * Default {@link ArgvBounds}: 96 KiB per argument, 1 MiB in argv, 2,000,000 bytes in the settings file.
 *
 * @category config
 * @since 1.0.0
 */
export const defaultArgvBounds: Required<ArgvBounds> = {
  argBytes: 96 * 1024,
  inlineBytes: 1024 * 1024,
  settingsBytes: 2_000_000
}

/**
 * A policy split between command-line arguments and a `--settings` file.
 *
 * @category models
 * @since 1.0.0
 */
export interface BoundedPolicy {
  /** `--disallowedTools` arguments, each at most `argBytes` when joined with commas. */
  readonly disallowedChunks: ReadonlyArray<ReadonlyArray<string>>
  /** The `--allowedTools` list (empty when it went to the settings file). */
  readonly allowedTools: ReadonlyArray<string>
  /** The settings the CLI reads with `--settings <file>` (`permissions.deny`/`allow`), when the lists are long. */
  readonly settings: {
    readonly permissions: { readonly deny: ReadonlyArray<string>; readonly allow: ReadonlyArray<string> }
  } | undefined
}

const joinedBytes = (names: ReadonlyArray<string>): number => {
  let n = names.length === 0 ? 0 : -1
  for (const s of names) n += Buffer.byteLength(s) + 1
  return n
}

/**
 * Keeps the command line bounded however long the policy is: short lists stay arguments; when a
 * list would not fit in one argument, the allow-list and as much of the disallow-list as fits go
 * to a settings file (`permissions.allow` / `permissions.deny`, which the CLI merges with its
 * flags), and the rest of the disallow-list follows in arguments of at most `argBytes`, up to
 * `inlineBytes` in all. With the defaults that is about 3 MB of names (some 150,000 names of 18
 * characters); beyond it a `PolicyTooLargeError`.
 *
 * @category utils
 * @since 1.0.0
 */
export const boundPolicy = (
  policy: ToolPolicy,
  bounds: ArgvBounds = {}
): Result.Result<BoundedPolicy, PolicyTooLargeError> => {
  const { argBytes, inlineBytes, settingsBytes } = { ...defaultArgvBounds, ...bounds }
  const deny = policy.disallowedTools
  const allow = policy.allowedTools
  const chunk = (names: ReadonlyArray<string>, budget: number) => {
    const chunks: Array<Array<string>> = []
    let current: Array<string> = []
    let size = -1
    let total = 0
    for (const name of names) {
      const bytes = Buffer.byteLength(name) + 1
      if (current.length > 0 && size + bytes > argBytes) {
        chunks.push(current)
        current = []
        size = -1
      }
      current.push(name)
      size += bytes
      total += bytes
      if (size > argBytes || total > budget) return undefined
    }
    if (current.length > 0) chunks.push(current)
    return chunks
  }
  if (joinedBytes(deny) <= argBytes && joinedBytes(allow) <= argBytes) {
    return Result.succeed({ disallowedChunks: deny.length > 0 ? [deny] : [], allowedTools: allow, settings: undefined })
  }
  const tooLarge = () =>
    Result.fail(
      new PolicyTooLargeError({
        entries: deny.length + allow.length,
        bytes: joinedBytes(deny) + joinedBytes(allow),
        limit: settingsBytes + inlineBytes
      })
    )
  // JSON overhead: the envelope, quotes, commas and escapes (names are plain ASCII after validation).
  let used = 64 + joinedBytes(allow) + 2 * allow.length
  if (used > settingsBytes) return tooLarge()
  let inFile = 0
  while (inFile < deny.length) {
    const bytes = JSON.stringify(deny[inFile]).length + 1
    if (used + bytes > settingsBytes) break
    used += bytes
    inFile++
  }
  const rest = chunk(deny.slice(inFile), inlineBytes)
  if (rest === undefined) return tooLarge()
  return Result.succeed({
    disallowedChunks: rest,
    allowedTools: [],
    settings: { permissions: { deny: deny.slice(0, inFile), allow } }
  })
}

/**
 * The CLI arguments of a bounded policy; `settingsPath` is where its `settings` were written.
 *
 * @category utils
 * @since 1.0.0
 */
export const toBoundedCliFlags = (bounded: BoundedPolicy, settingsPath: string | undefined): ReadonlyArray<string> => [
  ...(settingsPath === undefined ? [] : ["--settings", settingsPath]),
  ...bounded.disallowedChunks.flatMap((names) => ["--disallowedTools", names.join(",")]),
  ...(bounded.allowedTools.length > 0 ? ["--allowedTools", bounded.allowedTools.join(",")] : [])
]
