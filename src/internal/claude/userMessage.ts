/**
 * The one place that builds the user messages a Claude Code run sends: `ClaudeLocal`'s stdin
 * (fresh runs and kept-alive CLIs alike, always `--input-format stream-json`) and `ClaudeAgent`'s
 * streamed SDK messages. Nothing else may write a user turn, so no path can skip what is decided
 * here: whether the CLI may interpret the text.
 *
 * By default the text is data. The CLI would otherwise read `@path` as "attach this file" (even
 * when the policy disables `Read`), run a leading `/command` locally, and expand `@server:uri`
 * and `@agent-…` mentions; on claude ≥ 2.1.248 a message marked `client_composed` is delivered as
 * written. Older CLIs ignore the mark, so a text they would interpret is refused there (fail
 * closed) unless the application opts in with `trustedPrompts`.
 */
import * as Effect from "effect/Effect"
import { ConfigurationError, ProviderError } from "../../services/ChatClient.ts"
import type { Part } from "../../services/Content.ts"
import { contentBlock } from "../http/anthropicWire.ts"
import * as CliVersion from "./cliVersion.ts"

/** The flags that make `claude -p` read stream-json user messages from stdin. */
export const streamJsonInputFlags: ReadonlyArray<string> = ["--input-format", "stream-json"]

/** What a turn says: its text, its parts when it carries media, and text the library appends. */
export interface Input {
  readonly prompt: string
  readonly parts?: ReadonlyArray<Part> | undefined
  /** The library's own addition (the answer's JSON Schema for a CLI without `--json-schema`). */
  readonly extraText?: string | undefined
}

/** A stream-json / Agent SDK user message. */
export interface UserMessage {
  readonly type: "user"
  readonly message: {
    readonly role: "user"
    readonly content: string | Array<ReturnType<typeof contentBlock>[number]>
  }
  readonly parent_tool_use_id: null
  /** The CLI delivers the text as written: no file mentions, no slash commands (claude ≥ 2.1.248). */
  readonly client_composed?: true
  /**
   * A kept-alive CLI reports the message's progress by this id (`command_lifecycle` lines:
   * queued, started, completed, cancelled), so a reader knows when every message it wrote is done.
   */
  readonly uuid?: Uuid
  /** Written while a turn runs: fold it into that turn (`next`), queue it (`later`) or replace the turn (`now`). */
  readonly priority?: "next" | "later" | "now"
}

/** A message id, as the CLI and the Agent SDK type it (`crypto.randomUUID()` gives one). */
export type Uuid = `${string}-${string}-${string}-${string}-${string}`

/** What a kept-alive CLI's user message carries besides its content. */
export interface Delivery {
  readonly uuid?: Uuid | undefined
  readonly priority?: "next" | "later" | "now" | undefined
}

const content = (input: Input): UserMessage["message"]["content"] => {
  if (input.parts === undefined) {
    return input.extraText === undefined ? input.prompt : `${input.prompt}\n\n${input.extraText}`
  }
  const extra = input.extraText === undefined ? [] : [{ type: "text" as const, text: input.extraText }]
  return [...input.parts.flatMap(contentBlock), ...extra]
}

/**
 * The user message of a turn (or of a steer: `delivery`); `verbatim` marks it so the CLI interprets
 * none of its text.
 */
export const make = (input: Input, verbatim: boolean, delivery: Delivery = {}): UserMessage => ({
  type: "user",
  message: { role: "user", content: content(input) },
  parent_tool_use_id: null,
  ...(verbatim ? { client_composed: true as const } : {}),
  ...(delivery.uuid === undefined ? {} : { uuid: delivery.uuid }),
  ...(delivery.priority === undefined ? {} : { priority: delivery.priority })
})

/** {@link make} as one stdin line. */
export const line = (input: Input, verbatim: boolean): string => `${JSON.stringify(make(input, verbatim))}\n`

const texts = (input: Input): ReadonlyArray<string> =>
  input.parts === undefined
    ? [input.prompt]
    : input.parts.flatMap((part) => (part.type === "text" ? [part.text] : []))

/**
 * What a CLI that ignores `client_composed` could interpret in the user's text: a leading `/`
 * (slash command) or any `@` (file, resource and agent mentions). Broader than claude 2.0.0's own
 * rules (`/` first, `@` after a space or at the start, in the last text block) on purpose: the
 * versions between may have added more, and a refusal here costs an upgrade, not a leaked file.
 */
export const interpretable = (input: Input): string | undefined => {
  for (const text of texts(input)) {
    if (text.trimStart().startsWith("/")) return "a leading `/` (a slash command)"
    if (text.includes("@")) return "an `@` (a file or resource mention)"
  }
  return undefined
}

/**
 * Whether `cli` keeps `input` verbatim; `trusted` (the `trustedPrompts` option) lets the CLI
 * interpret it. A CLI that would interpret it fails the turn with a `config` error naming the
 * version needed and the opt-in, before anything runs.
 */
export const requireVerbatim = (
  provider: string,
  cli: CliVersion.CliVersion,
  input: Input,
  trusted: boolean
): Effect.Effect<void, ProviderError> => {
  if (trusted || CliVersion.supports(cli, "verbatimPrompts")) return Effect.void
  const found = interpretable(input)
  return found === undefined ? Effect.void : Effect.fail(
    new ProviderError({
      provider,
      reason: new ConfigurationError({
        message: `The prompt contains ${found}, which claude ${CliVersion.format(cli)} would interpret rather than ` +
          `send as text; claude ${CliVersion.Features.verbatimPrompts.since} or newer passes it verbatim. Upgrade ` +
          `with \`${CliVersion.UpgradeCommand}\` (or \`claude update\`), or set \`trustedPrompts: true\` if the ` +
          "prompts come from a trusted operator."
      })
    })
  )
}
