/**
 * Which `claude` CLI versions `ClaudeLocal` supports, and which of the flags it relies on exist in
 * which version. The version is read from `claude --version`; each feature names the first release
 * that has it, so a caller asks `supports(version, "jsonSchema")` instead of comparing numbers.
 *
 * Every "since" below was checked against the published `@anthropic-ai/claude-code` packages (the
 * flag in `--help` or in the CLI's source), and the e2e suite runs against the oldest supported
 * release and the pinned one.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { ConfigurationError, ProviderError } from "../../services/ChatClient.ts"

/** A released CLI version. */
export interface CliVersion {
  readonly major: number
  readonly minor: number
  readonly patch: number
}

/** The oldest CLI `ClaudeLocal` runs on. Older ones fail at the first turn with a `config` error. */
export const MinimumVersion = "2.0.0"

/** The CLI the test suite pins (the Agent SDK's own binary). */
export const PinnedVersion = "2.1.335"

/** The command that upgrades a user's CLI. */
export const UpgradeCommand = "npm install -g @anthropic-ai/claude-code@latest"

/**
 * The CLI features `ClaudeLocal` (and its options) rely on, with the first version that has each.
 * Features whose `since` equals {@link MinimumVersion} exist on every supported CLI and are listed
 * so that code adding a flag can still consult the table.
 */
export const Features = {
  /** `--strict-mcp-config`: ignore every MCP config but the one given. */
  strictMcpConfig: { since: "2.0.0", what: "--strict-mcp-config" },
  /** `--include-partial-messages`: token deltas as `stream_event` lines (`chatStream`). */
  partialMessages: { since: "2.0.0", what: "--include-partial-messages" },
  /** `--setting-sources user,project,local`: which settings files the CLI loads (`""`: none). */
  settingSources: { since: "2.0.0", what: "--setting-sources" },
  /** `--settings <file-or-json>`: extra settings (such as permission rules) for this run. */
  settingsFlag: { since: "2.0.0", what: "--settings" },
  /** `--input-format stream-json`: several user messages over one process's stdin. */
  streamJsonInput: { since: "2.0.0", what: "--input-format stream-json" },
  /** `--allowedTools mcp__<server>`: every tool of one MCP server (the form `ClaudeLocal` sends). */
  mcpServerAllowRule: { since: "2.0.0", what: "--allowedTools mcp__<server>" },
  /** `--permission-mode` acceptEdits, bypassPermissions, default, plan. */
  basicPermissionModes: { since: "2.0.0", what: "--permission-mode acceptEdits|bypassPermissions|default|plan" },
  /** `--json-schema`: the answer as `structured_output`, forced by a StructuredOutput tool (`ask`). */
  jsonSchema: { since: "2.0.45", what: "--json-schema" },
  /** `alwaysLoad` in an MCP server entry: its tools are in the first request, not behind tool search. */
  alwaysLoad: { since: "2.1.86", what: "alwaysLoad in --mcp-config" },
  /** `--tools`: restrict the built-in tool set to the listed tools. */
  toolsFlag: { since: "2.0.31", what: "--tools" },
  /** `--permission-mode dontAsk`: deny whatever is not allowed instead of asking. */
  dontAskMode: { since: "2.0.44", what: "--permission-mode dontAsk" },
  /** `--max-budget-usd`: stop a run once it has spent this much (the `maxBudgetUsd` option). */
  maxBudgetFlag: { since: "2.0.30", what: "--max-budget-usd (the maxBudgetUsd option)" },
  /** `--effort <level>`: how much effort the model spends (the `effort` option). */
  effortFlag: { since: "2.1.38", what: "--effort (the effort option)" },
  /** `--thinking` / `--max-thinking-tokens` (the `thinking` and `maxThinkingTokens` options; checked on 2.1.332). */
  thinkingFlags: { since: "2.1.332", what: "--thinking (the thinking and maxThinkingTokens options)" },
  /** `--plugin-dir` / `--plugin-dir-no-mcp` (the `plugins` option; checked on 2.1.332). */
  pluginDirFlags: { since: "2.1.332", what: "--plugin-dir-no-mcp (the plugins option)" },
  /** `client_composed` on a user message: its text reaches the model as written (no `@` files, no slash commands). */
  verbatimPrompts: { since: "2.1.248", what: "client_composed user messages (prompt text passed verbatim)" },
  /**
   * The `Interrupt` hook event. An older CLI never fires it, and 2.0.0 drops a settings file that
   * names an event it does not know, the tool policy's rules in it included.
   */
  interruptHook: { since: "2.1.335", what: "the Interrupt hook event (hooks.Interrupt)" },
  /**
   * `--include-hook-events`: every hook's start and end in the output (`HookStarted` /
   * `HookFinished`). Checked on 2.1.335; 2.0.0 has no such flag. Without it a run still works,
   * its stream only shows fewer hook events.
   */
  hookEvents: { since: "2.1.335", what: "--include-hook-events" }
} as const

/** A feature of {@link Features}. */
export type Feature = keyof typeof Features

/** Reads `2.1.332 (Claude Code)` (or a bare `2.1.332`); none when there is no version in it. */
export const parse = (text: string): Option.Option<CliVersion> => {
  const m = /(\d+)\.(\d+)\.(\d+)/.exec(text)
  return m === null ? Option.none() : Option.some({ major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]) })
}

const parseKnown = (text: string): CliVersion => Option.getOrThrow(parse(text))

/** Negative when `a` is older than `b`, zero when equal, positive when newer. */
export const compare = (a: CliVersion, b: CliVersion): number =>
  a.major - b.major || a.minor - b.minor || a.patch - b.patch

/** `2.1.332`. */
export const format = (v: CliVersion): string => `${v.major}.${v.minor}.${v.patch}`

/** Whether `version` has `feature`. */
export const supports = (version: CliVersion, feature: Feature): boolean =>
  compare(version, parseKnown(Features[feature].since)) >= 0

/**
 * A `config` error for a feature the installed CLI lacks: names the feature, the version that
 * has it, the installed one and the upgrade command.
 */
export const unsupported = (provider: string, version: CliVersion, feature: Feature, why?: string) =>
  new ProviderError({
    provider,
    reason: new ConfigurationError({
      message: `${why ?? Features[feature].what} needs claude ${Features[feature].since} or newer; the installed ` +
        `claude is ${format(version)}. Upgrade it with \`${UpgradeCommand}\` (or \`claude update\`).`
    })
  })

/** Fails with a `config` error when `version` is older than {@link MinimumVersion}. */
export const requireSupported = (provider: string, version: CliVersion): Effect.Effect<CliVersion, ProviderError> =>
  compare(version, parseKnown(MinimumVersion)) >= 0
    ? Effect.succeed(version)
    : Effect.fail(
      new ProviderError({
        provider,
        reason: new ConfigurationError({
          message: `The installed claude CLI is ${format(version)}; effect-chat-bridge needs ${MinimumVersion} or ` +
            `newer. Upgrade it with \`${UpgradeCommand}\` (or \`claude update\`).`
        })
      })
    )
