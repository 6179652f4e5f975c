/**
 * Gemini CLI's `--policy` file. In a turn the CLI refuses (headless: silently drops) tools that
 * need a confirmation, MCP tools included; a policy rule with `decision = "allow"` lets one through.
 * This module only renders rules: which rules an agent's settings give is the registry's concern.
 */

/**
 * One `[[rule]]` of a Gemini CLI policy file.
 *
 * @category models
 * @since 2.2.0
 */
export interface PolicyRule {
  /** The tool, as the CLI names it (an MCP tool by its name on its server). */
  readonly toolName: string
  /** The MCP server the tool is on; absent for the CLI's built-in tools. */
  readonly mcpName?: string | undefined
  /** What the CLI does with a call. */
  readonly decision: "allow" | "deny" | "ask_user"
  /** Higher wins when rules overlap. */
  readonly priority?: number | undefined
}

/** A TOML basic string: JSON's escaping is a subset TOML accepts for these characters. */
const tomlString = (value: string) => JSON.stringify(value)

/** The rules as a policy file's TOML text. */
export const render = (rules: ReadonlyArray<PolicyRule>): string =>
  rules.map((rule) =>
    [
      "[[rule]]",
      ...(rule.mcpName === undefined ? [] : [`mcpName = ${tomlString(rule.mcpName)}`]),
      `toolName = ${tomlString(rule.toolName)}`,
      `decision = ${tomlString(rule.decision)}`,
      ...(rule.priority === undefined ? [] : [`priority = ${rule.priority}`])
    ].join("\n")
  ).join("\n\n") + "\n"

/** Rules allowing exactly `tools` on the bridge's server. */
export const allowBridgeTools = (serverName: string, tools: ReadonlyArray<string>): ReadonlyArray<PolicyRule> =>
  tools.map((toolName) => ({ mcpName: serverName, toolName, decision: "allow" as const }))
