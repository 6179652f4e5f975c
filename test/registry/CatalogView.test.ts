import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"
import * as CatalogView from "../../src/registry/CatalogView.ts"
import * as ClaudeCodeCatalog from "../../src/registry/ClaudeCodeCatalog.ts"
import * as CodexCliCatalog from "../../src/registry/CodexCliCatalog.ts"
import * as GeminiCliCatalog from "../../src/registry/GeminiCliCatalog.ts"
import * as Registry from "../../src/registry/Registry.ts"
import { categoryOrder } from "../../src/registry/ToolDescriptor.ts"

const here = path.dirname(fileURLToPath(import.meta.url))
const registry = ClaudeCodeCatalog.registry

describe("CatalogView", () => {
  it("shows only user tools, categories in display order, one entry per pair group", () => {
    const sections = CatalogView.view(registry, { disabledTools: [] })
    expect(sections.map((s) => s.category)).toEqual(["shell", "file", "search", "orchestration"])
    expect(sections.map((s) => [s.label, s.entries.map((e) => e.id)])).toEqual([
      ["Shell", ["group:bash"]],
      ["Files", ["Read", "Edit", "Write"]],
      ["Search", ["Glob", "Grep"]],
      ["Orchestration", ["Workflow"]]
    ])
    const bash = sections[0]!.entries[0]!
    expect(bash).toMatchObject({ tools: ["Bash"], pairGroup: "bash", label: "Shell commands", enabled: true })
  })

  it("localizes with English fallback, for shipped and application keys", () => {
    const extra = Registry.unsafeMake([
      ...ClaudeCodeCatalog.descriptors,
      Registry.mcpTool({ server: "memory", wireName: "recall", category: "context" }),
      Registry.mcpTool({ server: "memory", wireName: "forget", category: "context" })
    ])
    const messages = {
      en: { "tools.mcp.memory.recall.label": "Recall", "tools.mcp.memory.recall.description": "Recall a memory." },
      "zh-CN": { "tools.mcp.memory.recall.label": "回忆" }
    }
    const zh = CatalogView.view(extra, { disabledTools: ["Read"] }, { locale: "zh-cn", messages })
    expect(zh[1]!.label).toBe("文件")
    expect(zh[1]!.entries[0]).toMatchObject({ id: "Read", label: "读取文件", enabled: false })
    const context = zh.find((s) => s.category === "context")!
    expect(context.label).toBe("上下文")
    expect(context.entries.map((e) => [e.label, e.description])).toEqual([
      ["回忆", "Recall a memory."],
      ["mcp__memory__forget", ""]
    ])
    expect(CatalogView.view(registry, { disabledTools: [] }, { locale: "zh-TW" })[0]!.entries[0]!.label).toBe(
      "Shell 指令"
    )
    expect(CatalogView.view(registry, { disabledTools: [] }, { locale: "fr" })[0]!.entries[0]!.label).toBe(
      "Shell commands"
    )
  })

  it("switch states map back to disabledTools, keeping mcp opt-outs", () => {
    const previous = ["Read", "mcp__docs__*"]
    expect(CatalogView.toDisabledTools(registry, { "group:bash": false, Read: true, Glob: false }, previous)).toEqual([
      "Bash",
      "Glob",
      "mcp__docs__*"
    ])
    expect(CatalogView.toDisabledTools(registry, {}, previous)).toEqual(["Read", "mcp__docs__*"])
  })

  it("view → switches → disabledTools round-trips the catalog's part", () => {
    const userTools = registry.descriptors.filter((d) => d.exposure === "user").map((d) => d.name)
    fc.assert(fc.property(fc.subarray(userTools), (disabled) => {
      const switches = Object.fromEntries(
        CatalogView.view(registry, { disabledTools: disabled }).flatMap((s) => s.entries.map((e) => [e.id, e.enabled]))
      )
      expect(CatalogView.toDisabledTools(registry, switches, [])).toEqual([...disabled].sort())
    }))
  })
})

describe("i18n completeness", () => {
  const expectedKeys = [
    ...categoryOrder.map((c) => `category.${c}`),
    ...registry.descriptors.flatMap((d) => [d.labelKey, d.descriptionKey]),
    ...GeminiCliCatalog.registry.descriptors.flatMap((d) => [d.labelKey, d.descriptionKey]),
    ...CodexCliCatalog.registry.descriptors.flatMap((d) => [d.labelKey, d.descriptionKey])
  ]

  it("descriptor keys are distinct", () => {
    expect(new Set(expectedKeys).size).toBe(expectedKeys.length)
  })

  for (const locale of ["en", "zh-CN", "zh-TW"] as const) {
    it(`${locale}: every key present, no extra keys, no empty messages`, () => {
      const messages = CatalogView.locales[locale]
      expect(Object.keys(messages).sort()).toEqual([...expectedKeys].sort())
      for (const [key, text] of Object.entries(messages)) expect(text.trim(), key).not.toBe("")
    })

    it(`${locale}: no key is written twice in the source`, () => {
      const file = path.resolve(here, `../../src/registry/i18n/${locale}.ts`)
      const source = ts.createSourceFile(file, fs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true)
      const keys: Array<string> = []
      const visit = (node: ts.Node): void => {
        if (ts.isPropertyAssignment(node) && (ts.isStringLiteral(node.name) || ts.isIdentifier(node.name))) {
          keys.push(node.name.text)
        }
        ts.forEachChild(node, visit)
      }
      visit(source)
      expect(keys.length).toBe(expectedKeys.length)
      expect(keys.filter((k, i) => keys.indexOf(k) !== i)).toEqual([])
    })
  }

  it("Chinese locales are translated, not copies of English", () => {
    for (const locale of ["zh-CN", "zh-TW"] as const) {
      const same = Object.entries(CatalogView.locales[locale]).filter(([k, v]) => v === CatalogView.locales.en[k])
      expect(same.length, locale).toBeLessThan(12)
    }
    expect(CatalogView.locales["zh-CN"]["tools.Skill.label"]).toBe("技能")
  })

  it("every reason of the catalog is translated into both Chinese locales; a reason without one stays English", () => {
    const all = [
      ...registry.descriptors,
      ...GeminiCliCatalog.registry.descriptors,
      ...CodexCliCatalog.registry.descriptors
    ]
    for (const d of all.filter((d) => d.reason !== undefined)) {
      expect(CatalogView.reasonOf(d, "en"), d.name).toEqual({ text: d.reason, locale: "en" })
      for (const locale of ["zh-CN", "zh-TW"] as const) {
        const reason = CatalogView.reasonOf(d, locale)
        expect(reason?.locale, `${d.name} in ${locale}`).toBe(locale)
        expect(reason?.text, `${d.name} in ${locale}`).toMatch(/[\u4e00-\u9fff]/)
      }
    }
    const webFetch = registry.descriptors.find((d) => d.name === "WebFetch")!
    expect(CatalogView.reasonOf(webFetch, "zh-tw")).toEqual({
      text: "有自己網路工具的應用程式透過 MCP 提供它們",
      locale: "zh-TW"
    })
    // An application's reason (or one the catalog changed) is shown as written, never a stale translation.
    expect(CatalogView.reasonOf({ ...webFetch, reason: "our proxy serves the web" }, "zh-CN")).toEqual({
      text: "our proxy serves the web",
      locale: "en"
    })
    expect(CatalogView.reasonOf(registry.descriptors.find((d) => d.reason === undefined)!, "zh-CN")).toBeUndefined()
  })
})

describe("CatalogView.translate", () => {
  it("application messages for a locale the library does not ship are used for that exact tag", () => {
    const messages = { fr: { "tools.Bash.label": "Commandes shell" }, en: { "app.only": "App text" } }
    expect(CatalogView.translate("tools.Bash.label", "fr", messages)).toBe("Commandes shell")
    // Other keys fall back to English (shipped, then the application's English).
    expect(CatalogView.translate("tools.Read.label", "en")).toBeDefined()
    expect(CatalogView.translate("tools.Read.label", "fr", messages)).toBe(
      CatalogView.translate("tools.Read.label", "en")
    )
    expect(CatalogView.translate("app.only", "zh-CN", messages)).toBe("App text")
    expect(CatalogView.translate("no.such.key", "fr", messages)).toBeUndefined()
  })
})

describe("CatalogView: wildcards and issues", () => {
  const app = Registry.unsafeMake([
    ...ClaudeCodeCatalog.descriptors,
    Registry.mcpTool({ server: "notes", wireName: "read", category: "context" }),
    Registry.mcpTool({ server: "notes", wireName: "write", category: "context" }),
    Registry.mcpTool({ server: "skills", wireName: "search_skills", category: "context", exposure: "internal" }),
    Registry.mcpTool({ server: "skills", wireName: "install_skill", category: "context", exposure: "gated" })
  ])
  const enabled = (disabledTools: ReadonlyArray<string>) =>
    Object.fromEntries(
      CatalogView.view(app, { disabledTools }).flatMap((s) => s.entries).map((e) => [e.id, e.enabled])
    )

  it("switches follow the CLI's wildcard reading of the opt-outs", () => {
    expect(enabled(["mcp__notes__w*"])).toMatchObject({ mcp__notes__read: true, mcp__notes__write: false })
    expect(enabled(["mcp__*"])).toMatchObject({ mcp__notes__read: false, mcp__notes__write: false, Read: true })
    expect(enabled(["Wri*"])).toMatchObject({ Write: false, Read: true })
    expect(enabled([])).toMatchObject({ Write: true, "group:bash": true })
  })

  it("gated and internal tools get no switch; issues lists what the policy does not apply", () => {
    const ids = CatalogView.view(app, { disabledTools: [] }).flatMap((s) => s.entries).map((e) => e.id)
    expect(ids).not.toContain("mcp__skills__install_skill")
    expect(ids).not.toContain("mcp__skills__search_skills")
    expect(CatalogView.issues(app, { disabledTools: ["Agent", "mcp__*", "a b", "Bash"] }).map((i) => [i.entry, i.kind]))
      .toEqual([["Agent", "always-on"], ["mcp__*", "partly-applied"], ["a b", "malformed"]])
  })
})
