/**
 * The tool catalog as a settings UI shows it: categories in display order, only `user` tools, one
 * switch per pair group, localized labels — and the way back from switch states to the agent's
 * `disabledTools`.
 *
 * @summary The tool catalog as a settings UI shows it (categories, switches, labels) and back to `disabledTools`.
 * @group Claude Code tool policy
 * @since 0.1.0
 * @module
 */
import * as en from "./i18n/en.ts"
import * as reasons from "./i18n/reasons.ts"
import * as zhCN from "./i18n/zh-CN.ts"
import * as zhTW from "./i18n/zh-TW.ts"
import type * as Registry from "./Registry.ts"
import { type Category, categoryOrder, type ToolDescriptor } from "./ToolDescriptor.ts"
import { type AgentToolSettings, type IgnoredOptOut, type PolicyContext, resolveValidated } from "./ToolPolicy.ts"

/**
 * The locales shipped with the catalog.
 *
 * @category models
 * @since 1.0.0
 */
export type Locale = "en" | "zh-CN" | "zh-TW"

/**
 * Message catalogs by locale; `en` is every other locale's fallback.
 *
 * @category models
 * @since 1.0.0
 */
export const locales: Readonly<Record<Locale, Readonly<Record<string, string>>>> = {
  en: en.messages,
  "zh-CN": zhCN.messages,
  "zh-TW": zhTW.messages
}

/**
 * Applications' own messages (e.g. for their MCP tools), by locale.
 *
 * @category models
 * @since 1.0.0
 */
export type ExtraMessages = Readonly<Record<string, Readonly<Record<string, string>>>>

/**
 * Picks a shipped locale for a tag such as `zh-cn` or `zh-TW`; anything else is `en`.
 *
 * @category utils
 * @since 1.0.0
 */
export const resolveLocale = (tag: string): Locale => {
  const lower = tag.toLowerCase()
  for (const l of Object.keys(locales) as Array<Locale>) if (l.toLowerCase() === lower) return l
  return "en"
}

/**
 * The message for `key` in `locale`, then in English; `undefined` when neither has it.
 *
 * @category utils
 * @since 1.0.0
 */
export const translate = (key: string, locale: string, extra: ExtraMessages = {}): string | undefined => {
  const l = resolveLocale(locale)
  return extra[locale]?.[key] ?? extra[l]?.[key] ?? locales[l][key] ?? extra["en"]?.[key] ?? locales.en[key]
}

const reasonTranslations: Readonly<Record<Locale, Readonly<Record<string, string>>>> = {
  en: {},
  "zh-CN": reasons.zhCN,
  "zh-TW": reasons.zhTW
}

/**
 * A tool's reason as a screen shows it, and the locale its text is in.
 *
 * @category models
 * @since 1.0.0
 */
export interface Reason {
  readonly text: string
  readonly locale: Locale
}

/**
 * Why a tool without a switch is on or off (its descriptor's `reason`) in `locale`, or in English
 * when that locale has no translation of it; `undefined` for a tool without a reason.
 *
 * @category utils
 * @since 1.0.0
 */
export const reasonOf = (descriptor: ToolDescriptor, locale: string): Reason | undefined => {
  if (descriptor.reason === undefined) return undefined
  const l = resolveLocale(locale)
  const translated = reasonTranslations[l][descriptor.reason]
  return translated === undefined ? { text: descriptor.reason, locale: "en" } : { text: translated, locale: l }
}

/**
 * One switch.
 *
 * @category models
 * @since 1.0.0
 */
export interface CatalogEntry {
  /** `group:<pairGroup>` for a pair group, else the tool name. */
  readonly id: string
  /** The `user` tools the switch toggles together. */
  readonly tools: ReadonlyArray<string>
  /** The pair group the entry stands for, if any. */
  readonly pairGroup?: string
  /** The i18n key of `label`. */
  readonly labelKey: string
  /** The i18n key of `description`. */
  readonly descriptionKey: string
  /** The switch's label in the requested locale. */
  readonly label: string
  /** The switch's description in the requested locale. */
  readonly description: string
  /** No tool of the entry is opted out by the agent. */
  readonly enabled: boolean
  /**
   * With `options.session`: why the session withholds the entry's tools even when enabled (a
   * headless run nobody can approve them on; `ToolPolicy.withheld`'s reason, in English).
   */
  readonly withheld?: string
}

/**
 * One category section.
 *
 * @category models
 * @since 1.0.0
 */
export interface CatalogSection {
  /** The section's category. */
  readonly category: Category
  /** The category's label in the requested locale. */
  readonly label: string
  /** The switches of the section, in registry order. */
  readonly entries: ReadonlyArray<CatalogEntry>
}

interface Slot {
  readonly id: string
  readonly category: Category
  readonly pairGroup: string | undefined
  readonly labelKey: string
  readonly descriptionKey: string
  readonly fallbackLabel: string
  readonly tools: Array<string>
}

/**
 * The switches of a registry, before any agent or locale: one per pair group or lone `user` tool.
 *
 * @category utils
 * @since 1.0.0
 */
export const slots = (registry: Registry.Registry): ReadonlyArray<Slot> => {
  const out: Array<Slot> = []
  const byGroup = new Map<string, Slot>()
  for (const d of registry.descriptors) {
    if (d.exposure !== "user") continue
    if (d.pairGroup !== undefined) {
      const existing = byGroup.get(d.pairGroup)
      if (existing !== undefined) {
        existing.tools.push(d.name)
        continue
      }
    }
    const slot: Slot = {
      id: d.pairGroup === undefined ? d.name : `group:${d.pairGroup}`,
      category: d.category,
      pairGroup: d.pairGroup,
      labelKey: d.labelKey,
      descriptionKey: d.descriptionKey,
      fallbackLabel: d.name,
      tools: [d.name]
    }
    if (d.pairGroup !== undefined) byGroup.set(d.pairGroup, slot)
    out.push(slot)
  }
  return out
}

/**
 * The tools the agent's opt-outs turn off, as the policy reads them (wildcards such as `mcp__*`
 * or `mcp__docs__r*` included), with every condition true so that only opt-outs count.
 */
const optedOut = (registry: Registry.Registry, agent: AgentToolSettings): ReadonlySet<string> => {
  const conditions: Record<string, boolean> = {}
  for (const c of registry.conditions) conditions[c] = true
  const off = new Set(resolveValidated(registry, agent, { conditions, headless: false }).disallowedTools)
  for (const n of resolveValidated(registry, { disabledTools: [] }, { conditions, headless: false }).disallowedTools) {
    if (!agent.disabledTools.includes(n)) off.delete(n)
  }
  return off
}

/**
 * The agent's opt-outs that the policy does not apply as written (malformed, naming always-on
 * tools, or wildcards expanded around always-on tools) or that name a built-in the registry does
 * not know (with a `suggestion`), for a settings screen to show.
 *
 * @category utils
 * @since 1.0.0
 */
export const issues = (registry: Registry.Registry, agent: AgentToolSettings): ReadonlyArray<IgnoredOptOut> =>
  resolveValidated(registry, agent, { conditions: {}, headless: false }).ignored

const withheldOf = (tools: ReadonlyArray<string>, withheld: ReadonlyMap<string, string>) => {
  const reason = tools.map((t) => withheld.get(t)).find((r) => r !== undefined)
  return reason === undefined ? {} : { withheld: reason }
}

/**
 * The catalog for `agent` in `locale` (English fallback, then the tool name); with `session`,
 * switches whose tools that session withholds say why.
 *
 * @category utils
 * @since 1.0.0
 */
export const view = (
  registry: Registry.Registry,
  agent: AgentToolSettings,
  options: {
    readonly locale?: string
    readonly messages?: ExtraMessages
    /** The session the agent runs in (e.g. `{ conditions: {}, headless: true }`), to mark withheld switches. */
    readonly session?: PolicyContext
  } = {}
): ReadonlyArray<CatalogSection> => {
  const locale = options.locale ?? "en"
  const extra = options.messages ?? {}
  const disabled = optedOut(registry, agent)
  const withheld = new Map(
    options.session === undefined
      ? []
      : resolveValidated(registry, agent, options.session).withheld.map((w) => [w.tool, w.reason] as const)
  )
  const all = slots(registry)
  return categoryOrder.flatMap((category) => {
    const entries = all
      .filter((s) => s.category === category)
      .map((s): CatalogEntry => ({
        id: s.id,
        tools: [...s.tools],
        ...(s.pairGroup === undefined ? {} : { pairGroup: s.pairGroup }),
        labelKey: s.labelKey,
        descriptionKey: s.descriptionKey,
        label: translate(s.labelKey, locale, extra) ?? s.fallbackLabel,
        description: translate(s.descriptionKey, locale, extra) ?? "",
        enabled: !s.tools.some((t) => disabled.has(t)),
        ...withheldOf(s.tools, withheld)
      }))
    if (entries.length === 0) return []
    return [{ category, label: translate(`category.${category}`, locale, extra) ?? category, entries }]
  })
}

/**
 * The inverse of `view`: applies switch states (entry id → on) to the previous `disabledTools`.
 * Switches not mentioned keep their state, and entries the catalog does not own (`mcp__…`
 * opt-outs and wildcards) are kept, so saving the settings dialog never loses them.
 *
 * @category utils
 * @since 1.0.0
 */
export const toDisabledTools = (
  registry: Registry.Registry,
  switches: Readonly<Record<string, boolean>>,
  previous: ReadonlyArray<string> = []
): ReadonlyArray<string> => {
  const out = new Set(previous)
  for (const slot of slots(registry)) {
    const on = Object.prototype.hasOwnProperty.call(switches, slot.id) ? switches[slot.id] : undefined
    if (on === undefined) continue
    for (const tool of slot.tools) {
      if (on) out.delete(tool)
      else out.add(tool)
    }
  }
  return [...out].sort()
}
