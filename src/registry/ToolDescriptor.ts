/**
 * The declarative description of one Claude Code tool (SDK built-in or in-process MCP tool):
 * how it is shown, whether an agent may use it, and how it is named on the wire. Plain data with
 * an Effect Schema, so registries coming from files or settings are validated, not trusted.
 *
 * @summary The declarative description of one Claude Code tool: display, availability, wire name.
 * @group Claude Code tool policy
 * @since 0.1.0
 * @module
 */
import * as Schema from "effect/Schema"

/**
 * Settings-UI sections, in display order.
 *
 * @category schemas
 * @since 1.0.0
 */
export const Category = Schema.Literals(["shell", "file", "search", "orchestration", "media", "context"])
/**
 * @category models
 * @since 1.0.0
 */
export type Category = typeof Category.Type

/**
 * Display order of the categories (the order of the literal above).
 *
 * @category models
 * @since 1.0.0
 */
export const categoryOrder: ReadonlyArray<Category> = Category.literals

/**
 * `user`: shown and toggleable · `internal`: always on, hidden · `conditional`: on iff a runtime
 * condition holds, hidden · `disabled`: always blocked · `gated`: always on and hidden like
 * `internal`, but never auto-approved — each call is left to the permission mode or the
 * `canUseTool` callback (the design's `install_skill`). For built-in tools, which are never on the
 * auto-approve list, `gated` and `internal` behave alike.
 *
 * @category schemas
 * @since 1.0.0
 */
export const Exposure = Schema.Literals(["user", "internal", "conditional", "disabled", "gated"])
/**
 * @category models
 * @since 1.0.0
 */
export type Exposure = typeof Exposure.Type

/**
 * `sdk`: a Claude Code built-in (bare name) · `mcp`: a tool served by an MCP server.
 *
 * @category schemas
 * @since 1.0.0
 */
export const Kind = Schema.Literals(["sdk", "mcp"])
/**
 * @category models
 * @since 1.0.0
 */
export type Kind = typeof Kind.Type

/**
 * A condition name such as `workspace-has-git` (which names are known is the registry's call).
 *
 * @category schemas
 * @since 1.0.0
 */
export const ConditionName = Schema.String.check(
  Schema.isPattern(/^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/),
  Schema.isMaxLength(64)
)

/**
 * A pair-group name such as `bash` or `planMode` (which names are known is the registry's call).
 *
 * @category schemas
 * @since 1.0.0
 */
export const PairGroupName = Schema.String.check(Schema.isPattern(/^[A-Za-z][A-Za-z0-9-]*$/), Schema.isMaxLength(64))

/**
 * An MCP server name. No `__` and no leading/trailing `_`, so `mcp__<server>__<wire>` splits
 * back unambiguously, and nothing a shell or the CLI's comma/space splitting could misread.
 *
 * @category schemas
 * @since 1.0.0
 */
export const McpServerName = Schema.String.check(
  Schema.isPattern(/^[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*$/),
  Schema.isMaxLength(64)
)

/**
 * An MCP tool's wire name: the tool-name rule shared by the model APIs and MCP clients.
 *
 * @category schemas
 * @since 1.0.0
 */
export const McpWireName = Schema.String.check(Schema.isPattern(/^[a-zA-Z0-9_-]{1,64}$/))

/**
 * An SDK built-in's runtime name, as `disallowedTools` and hook matchers spell it.
 *
 * @category models
 * @since 1.0.0
 */
export const SdkToolNamePattern = /^[A-Za-z][A-Za-z0-9_]{0,63}$/

/**
 * An i18n message key.
 *
 * @category schemas
 * @since 1.0.0
 */
export const MessageKey = Schema.String.check(Schema.isPattern(/^[A-Za-z0-9_.-]{1,128}$/))

/**
 * The runtime name of an MCP tool.
 *
 * @category utils
 * @since 1.0.0
 */
export const mcpToolName = (server: string, wire: string): string => `mcp__${server}__${wire}`

const Fields = Schema.Struct({
  /** Runtime name, also the id written to `disabledTools`: SDK bare name or `mcp__<server>__<wire>`. */
  name: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200)),
  category: Category,
  exposure: Exposure,
  /** Required iff `exposure` is `conditional`. */
  condition: Schema.optionalKey(ConditionName),
  /** Members of a pair group are enabled and disabled together. */
  pairGroup: Schema.optionalKey(PairGroupName),
  kind: Kind,
  /** `sdk` only: `true` when the tool is a member of the SDK's typed `ToolInputSchemas` union. */
  sdkTyped: Schema.optionalKey(Schema.Boolean),
  /** `mcp` only (required there). */
  mcpServer: Schema.optionalKey(McpServerName),
  /** `mcp` only (required there). */
  mcpWireName: Schema.optionalKey(McpWireName),
  /** The tool needs someone to answer it (a question, a plan approval): blocked on headless turns. */
  interactive: Schema.optionalKey(Schema.Boolean),
  /**
   * Claude Code asks for permission before each call: `edit` unless the permission mode is
   * `acceptEdits`, `always` unless it is `bypassPermissions` (`auto` decides each call itself).
   * On a headless session no one answers, so such a tool is withheld (see `ToolPolicy.withheld`)
   * unless the application decides prompts (`canUseTool`) or auto-approves it (`allowedTools`).
   */
  asks: Schema.optionalKey(Schema.Literals(["edit", "always"])),
  labelKey: MessageKey,
  descriptionKey: MessageKey,
  /** One line saying why the tool has this classification. */
  reason: Schema.optionalKey(Schema.String)
})

/**
 * One tool. The per-entry cross-field rules are checked here and reported on the offending field;
 * rules about the set (unique names, known groups/conditions) are `Registry`'s.
 *
 * @category schemas
 * @since 1.0.0
 */
export const ToolDescriptor = Fields.check(
  Schema.makeFilter((d) => {
    const issues: Array<Schema.FilterIssue> = []
    const issue = (field: string, message: string) => issues.push({ path: [field], issue: message })
    if (d.exposure === "conditional" && d.condition === undefined) {
      issue("condition", "a conditional tool needs a condition")
    }
    if (d.exposure !== "conditional" && d.condition !== undefined) {
      issue("condition", `only conditional tools have a condition (exposure is ${d.exposure})`)
    }
    if (d.kind === "sdk") {
      if (!SdkToolNamePattern.test(d.name)) issue("name", `an sdk tool name must match ${SdkToolNamePattern}`)
      if (d.mcpServer !== undefined) issue("mcpServer", "only mcp tools have an mcpServer")
      if (d.mcpWireName !== undefined) issue("mcpWireName", "only mcp tools have an mcpWireName")
    } else {
      if (d.sdkTyped !== undefined) issue("sdkTyped", "only sdk tools have sdkTyped")
      if (d.mcpServer === undefined) issue("mcpServer", "an mcp tool needs an mcpServer")
      if (d.mcpWireName === undefined) issue("mcpWireName", "an mcp tool needs an mcpWireName")
      if (d.mcpServer !== undefined && d.mcpWireName !== undefined) {
        const expected = mcpToolName(d.mcpServer, d.mcpWireName)
        if (d.name !== expected) issue("name", `an mcp tool must be named ${expected}`)
      }
    }
    return issues
  }, { identifier: "ToolDescriptor" })
)

/**
 * A validated descriptor.
 *
 * @category models
 * @since 1.0.0
 */
export type ToolDescriptor = typeof ToolDescriptor.Type

/**
 * The input form of a descriptor (what catalogs and applications write).
 *
 * @category models
 * @since 1.0.0
 */
export type ToolDescriptorInput = typeof ToolDescriptor.Encoded
