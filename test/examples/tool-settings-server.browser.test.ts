/**
 * The settings page in a real headless Chromium, driven by playwright-core (which never
 * downloads a browser of its own). Which Chromium, without root and without a download at run
 * time: `test/support/chromium.ts` (`CHROMIUM_PATH`, a system Chrome or Chromium, or the one the
 * npm package `@sparticuz/chromium` ships), shared with the chat page's browser test.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { BrowserContext, Page } from "playwright-core"
import type { Screen } from "../../examples/tool-settings-server.ts"
import { launch } from "../support/chromium.ts"
import { type RunningServer, send, startServer } from "./toolSettingsServerSupport.ts"

const screenshot = path.resolve("artifacts", "tool-settings-server.png")

const folder = fs.mkdtempSync(path.join(os.tmpdir(), "tool-settings-browser-"))
const database = path.join(folder, "agents.sqlite")
let server: RunningServer | undefined
let browser: BrowserContext | undefined

// Generous: the first run unpacks a bundled Chromium (~200 MB), and the machine is shared.
beforeAll(async () => {
  server = await startServer(database)
  browser = await launch(folder)
}, 300_000)

afterAll(async () => {
  await browser?.close()
  await server?.close()
  fs.rmSync(folder, { recursive: true, force: true })
}, 120_000)

const artifact = (name: string) => {
  fs.mkdirSync(path.resolve("artifacts"), { recursive: true })
  return path.resolve("artifacts", name)
}

/** A page on a new agent of its own, in English, once its first render is done. */
const openAgent = async (agentId: string, prepare: (page: Page) => Promise<void> = async () => {}) => {
  expect((await send(server!.url, "POST", "/api/agents", { agentId })).status).toBe(201)
  const page = await browser!.newPage()
  await prepare(page)
  await page.goto(`${server!.url}/?agent=${agentId}&locale=en`)
  await page.locator("body[data-ready=true]").waitFor()
  return page
}

/** A promise and the function that settles it: holds a routed request until the test lets it go. */
const gate = () => {
  let open = () => {}
  const opened = new Promise<void>((resolve) => (open = resolve))
  return { open, opened }
}

const isScreenRequest = (url: URL) => url.pathname.startsWith("/api/agents/") && !url.pathname.includes("/switches/")
const isSwitchRequest = (url: URL) => url.pathname.includes("/switches/")

const row = (page: Page, entry: string) => page.locator(`label.row[data-entry="${entry}"]`)
const toggle = (page: Page, entry: string) => page.locator(`input[role="switch"][data-switch="${entry}"]`)

describe("examples/tool-settings-server.ts in headless Chromium", () => {
  it(
    "toggles a pair group, switches to zh-CN, and after a reload shows the stored switch, the labels and the flags",
    async () => {
      const page = await browser!.newPage()
      const errors: Array<string> = []
      page.on("pageerror", (e) => errors.push(e.message))

      await page.goto(`${server!.url}/`)
      // The page sets data-ready once its first render from the API is done.
      await page.locator("body[data-ready=true]").waitFor()
      expect(await page.locator("html").getAttribute("lang")).toBe("en")
      expect(await row(page, "group:notes").locator(".label").textContent()).toBe("Notes")
      expect(await toggle(page, "group:notes").isChecked()).toBe(true)
      expect(await page.locator("#flags").textContent()).toContain(
        "--allowedTools mcp__gtb__*,mcp__notes__read_note,mcp__notes__write_note"
      )

      // The notes pair group: one switch for both MCP tools.
      await toggle(page, "group:notes").click()
      // Rendered from the server's answer: the stored opt-outs now list both tools.
      await page.locator("#disabled-tools", { hasText: "mcp__notes__read_note\nmcp__notes__write_note" }).waitFor()
      expect(await toggle(page, "group:notes").isChecked()).toBe(false)

      await page.locator("#locale").selectOption("zh-CN")
      await page.waitForURL(/[?&]locale=zh-CN/)
      expect(await page.locator("#title").textContent()).toBe("工具设置")

      // A reload, against a new server process state on the same SQLite file: what shows is what
      // was stored, not what the page remembered.
      const port = server!.port
      await server!.close()
      server = await startServer(database, port)
      await page.reload()
      await page.locator("body[data-ready=true]").waitFor()

      expect(await page.locator("html").getAttribute("lang")).toBe("zh-CN")
      expect(await page.locator("#title").textContent()).toBe("工具设置")
      expect(await page.locator("#locale").inputValue()).toBe("zh-CN")
      expect(await toggle(page, "group:notes").isChecked()).toBe(false)
      expect(await toggle(page, "group:bash").isChecked()).toBe(true)
      expect(await row(page, "group:notes").locator(".label").textContent()).toBe("笔记")
      expect(await row(page, "group:notes").locator(".name").textContent()).toBe(
        "mcp__notes__read_note + mcp__notes__write_note"
      )
      expect(await row(page, "group:bash").locator(".label").textContent()).toBe("Shell 命令")
      expect(await page.locator("section[data-category=file] h2").textContent()).toBe("文件")
      expect(await page.locator("[data-tool=WebFetch] .note").textContent()).toBe("始终不可用")
      // Why, in the page's language too (the catalog translates its reasons), marked as such.
      const reason = page.locator("[data-tool=WebFetch] .reason")
      expect(await reason.textContent()).toBe("有自己网络工具的应用通过 MCP 提供它们")
      expect(await reason.getAttribute("lang")).toBe("zh-CN")
      expect(await page.locator("[data-tool=EnterWorktree] .note").textContent()).toBe("仅当 workspace-has-git")
      expect(await page.locator("[data-tool=BashOutput] .note").textContent()).toBe("由 Claude Code 管理")
      expect(await page.locator("[data-tool=AskUserQuestion] .note").textContent()).toBe(
        "需要有人回答：在 claude -p 中关闭"
      )

      const flags = (await page.locator("#flags").textContent())!.split("\n")
      expect(flags).toHaveLength(2)
      expect(flags[0]!.startsWith("--disallowedTools ")).toBe(true)
      expect(flags[0]!.split(" ")[1]!.split(",")).toEqual(
        expect.arrayContaining(["mcp__notes__read_note", "mcp__notes__write_note", "WebFetch", "EnterWorktree"])
      )
      expect(flags[0]).not.toMatch(/\bBash\b/)
      expect(flags[1]).toBe("--allowedTools mcp__gtb__*")
      expect(await page.locator("#disabled-tools").textContent()).toBe("mcp__notes__read_note\nmcp__notes__write_note")
      expect(await page.locator("#error").textContent()).toBe("")
      expect(errors).toEqual([])

      // The machine may have no CJK fonts: the screenshot is taken in English.
      await page.locator("#locale").selectOption("en")
      await page.waitForURL(/[?&]locale=en/)
      expect(await page.locator("#title").textContent()).toBe("Tool settings")
      fs.mkdirSync(path.dirname(screenshot), { recursive: true })
      await page.screenshot({ path: screenshot, fullPage: true })
      expect(fs.statSync(screenshot).size).toBeGreaterThan(10_000)
      console.log(`screenshot: ${screenshot}`)
    },
    240_000
  )

  it(
    "shows the switches first and the flags beside them without scrolling, on a wide and a narrow screen",
    async () => {
      const page = await openAgent("layout")
      await page.setViewportSize({ width: 1000, height: 900 })
      expect(await page.evaluate(() => window.scrollY)).toBe(0)

      // Every switch comes before the first group of tools without one, which start collapsed.
      const order = await page.evaluate(() => {
        const switches = Array.from(document.querySelectorAll("input[role=\"switch\"]"))
        const groups = Array.from(document.querySelectorAll("details"))
        return {
          switches: switches.length,
          groups: groups.map((d) => [d.dataset["group"], d.open]),
          allBefore: switches.every((s) =>
            groups.every((d) => (s.compareDocumentPosition(d) & Node.DOCUMENT_POSITION_FOLLOWING) !== 0)
          ),
          toolsOutsideGroups: document.querySelectorAll("[data-tool]:not(details [data-tool])").length,
          groupsWithCategory: document.querySelectorAll("details[data-category], details [data-category]").length
        }
      })
      const data = (await send(server!.url, "GET", "/api/agents/layout")).json as Screen
      expect(order.switches).toBe(data.sections.flatMap((s) => s.switches).length)
      expect(await page.locator("details [data-tool]").count()).toBe(data.sections.flatMap((s) => s.fixed).length)
      expect(order.groups).toEqual([["internal", false], ["session", false], ["disabled", false]])
      expect(order.allBefore).toBe(true)
      expect(order.toolsOutsideGroups).toBe(0)
      expect(order.groupsWithCategory).toBe(0)
      expect(await page.locator("[data-tool=WebFetch]").isVisible()).toBe(false)

      const inViewport = async (selector: string) => {
        const box = (await page.locator(selector).boundingBox())!
        const viewport = page.viewportSize()!
        return box.y >= 0 && box.x >= 0 && box.y + box.height <= viewport.height && box.x + box.width <= viewport.width
      }
      expect(await inViewport("#flags")).toBe(true)
      expect(await inViewport("#copy")).toBe(true)
      await page.screenshot({ path: artifact("tool-settings-server-wide.png") })

      // The header's controls share one bottom line.
      const bottoms = await Promise.all(
        ["#agent", "#locale", "#new-agent-id", "#create"].map(async (s) => {
          const box = (await page.locator(s).boundingBox())!
          return Math.round(box.y + box.height)
        })
      )
      expect(new Set(bottoms).size).toBe(1)

      // A flip shows in the flags, still in view.
      expect(await page.locator("#flags").textContent()).not.toMatch(/--disallowedTools \S*\bBash\b/)
      await toggle(page, "group:bash").click()
      await page.locator("#flags", { hasText: /--disallowedTools \S*\bBash\b/ }).waitFor()
      expect(await inViewport("#flags")).toBe(true)

      // Narrow: one column, the flags stuck to the bottom of the screen, at most 45% of its height.
      await page.setViewportSize({ width: 600, height: 900 })
      const aside = (await page.locator("aside").boundingBox())!
      expect(aside.y).toBeGreaterThan(0)
      expect(aside.y + aside.height).toBeLessThanOrEqual(900.5)
      expect(aside.height).toBeLessThanOrEqual(0.45 * 900 + 0.5)
      const flags = (await page.locator("#flags").boundingBox())!
      expect(flags.y).toBeGreaterThanOrEqual(aside.y)
      expect(flags.y).toBeLessThan(900)
      const main = (await page.locator("main").boundingBox())!
      expect(Math.abs(main.x - aside.x)).toBeLessThan(1)
      await page.screenshot({ path: artifact("tool-settings-server-narrow.png") })
      await page.close()
    },
    120_000
  )

  it("expands Never available and shows each reason as text, and keeps it open across a save", async () => {
    const page = await openAgent("reasons")
    const never = page.locator("details[data-group=disabled]")
    expect(await never.locator("summary").textContent()).toMatch(/^Never available \(\d+\)/)
    await never.locator("summary").click()
    const webFetch = page.locator("[data-tool=WebFetch]")
    expect(await webFetch.locator(".reason").isVisible()).toBe(true)
    expect(await webFetch.locator(".reason").textContent()).toBe("an app with its own web tools serves them over MCP")
    expect(await webFetch.locator(".note").textContent()).toBe("never available")
    expect(await webFetch.locator(".badge").textContent()).toBe("off")
    expect(await webFetch.locator(".name").textContent()).toBe("WebFetch")

    // Tools the catalog gives no reason for get one from what the screen knows.
    await page.locator("details[data-group=internal] summary").click()
    expect(await page.locator("[data-tool=TaskGet] .reason").textContent()).toBe(
      "goes with TaskCreate, TaskUpdate, TaskList, TaskStop"
    )
    expect(await page.locator("[data-tool=TaskGet] .badge").textContent()).toBe("on")
    expect(await page.locator("details[data-group=internal] [data-tool=AskUserQuestion]").count()).toBe(0)
    await page.locator("details[data-group=session] summary").click()
    expect(await page.locator("[data-tool=AskUserQuestion] .reason").textContent()).toBe(
      "asks the user and waits; a headless claude -p run has no one to answer"
    )
    expect(await page.locator("[data-tool=EnterWorktree] .reason").textContent()).toBe(
      "workspace-has-git does not hold in this session; asks the user and waits; a headless claude -p run has no one to answer; goes with ExitWorktree"
    )
    expect(await page.locator("[data-tool=EnterWorktree] .badge").textContent()).toBe("off")

    await toggle(page, "Read").click()
    await page.locator("#disabled-tools", { hasText: "Read" }).waitFor()
    expect(await page.locator("details[open]").evaluateAll((ds) => ds.map((d) => d.dataset["group"]))).toEqual([
      "internal",
      "session",
      "disabled"
    ])
    expect(await webFetch.locator(".reason").isVisible()).toBe(true)

    const file = artifact("tool-settings-server-expanded.png")
    await page.screenshot({ path: file, fullPage: true })
    expect(fs.statSync(file).size).toBeGreaterThan(10_000)
    await page.close()
  }, 120_000)

  it("says Loading… until the screen has come, and Saving… with the switches held while a flip is stored", async () => {
    expect((await send(server!.url, "POST", "/api/agents", { agentId: "slow" })).status).toBe(201)
    const page = await browser!.newPage()
    const screen = gate()
    await page.route(isScreenRequest, async (route) => {
      await screen.opened
      await route.continue()
    })
    await page.goto(`${server!.url}/?agent=slow&locale=en`, { waitUntil: "commit" })
    await page.locator("#loading").waitFor({ state: "visible" })
    expect(await page.locator("#loading").textContent()).toBe("Loading…")
    expect(await page.locator("body").getAttribute("data-state")).toBe("loading")
    expect(await page.locator("#saving").isVisible()).toBe(false)
    screen.open()
    await page.locator("body[data-ready=true]").waitFor()
    expect(await page.locator("#loading").isVisible()).toBe(false)
    expect(await page.locator("body").getAttribute("data-state")).toBe("ready")
    await page.unroute(isScreenRequest)

    const save = gate()
    await page.route(isSwitchRequest, async (route) => {
      await save.opened
      await route.continue()
    })
    await toggle(page, "Grep").click()
    await page.locator("#saving").waitFor({ state: "visible" })
    expect(await page.locator("#saving").textContent()).toBe("Saving…")
    expect(await toggle(page, "Read").isDisabled()).toBe(true)
    expect(await toggle(page, "Grep").isDisabled()).toBe(true)
    save.open()
    await page.locator("body[data-state=ready]").waitFor()
    expect(await page.locator("#saving").isVisible()).toBe(false)
    expect(await toggle(page, "Grep").isDisabled()).toBe(false)
    expect(await toggle(page, "Grep").isChecked()).toBe(false)
    expect(await page.locator("#disabled-tools").textContent()).toBe("Grep")
    await page.close()
  }, 120_000)

  it("puts a switch back when its save fails, says why, and stores it on Retry", async () => {
    const page = await openAgent("flaky")
    await page.locator("details[data-group=disabled] summary").click()
    const before = await page.locator("#flags").textContent()
    expect(before).not.toMatch(/\bWrite\b/)
    await page.route(isSwitchRequest, (route) =>
      route.fulfill({
        status: 500,
        contentType: "application/json",
        body: JSON.stringify({ error: "the settings database is locked; try again" })
      }))
    await toggle(page, "Write").click()
    await page.locator("#error", { hasText: "the settings database is locked; try again" }).waitFor()
    expect(await page.locator("body").getAttribute("data-state")).toBe("error")
    // The stored screen again: the switch is back on and the flags are unchanged.
    expect(await toggle(page, "Write").isChecked()).toBe(true)
    expect(await toggle(page, "Write").isDisabled()).toBe(false)
    expect(await page.locator("#flags").textContent()).toBe(before)
    expect(await page.locator("#retry").isVisible()).toBe(true)
    expect(await page.locator("#error #retry").count()).toBe(0)
    expect(await page.locator("details[data-group=disabled]").getAttribute("open")).not.toBeNull()
    const file = artifact("tool-settings-server-error.png")
    await page.screenshot({ path: file })
    expect(fs.statSync(file).size).toBeGreaterThan(10_000)

    await page.unroute(isSwitchRequest)
    await page.locator("#retry").click()
    await page.locator("#flags", { hasText: /--disallowedTools \S*\bWrite\b/ }).waitFor()
    expect(await page.locator("#error").textContent()).toBe("")
    expect(await page.locator("#retry").isVisible()).toBe(false)
    expect(await toggle(page, "Write").isChecked()).toBe(false)
    expect(await page.locator("#disabled-tools").textContent()).toBe("Write")

    // A failed change of language leaves the screen, the picker and the URL in English.
    await page.route(isScreenRequest, (route) => route.fulfill({ status: 503, body: "" }))
    await page.locator("#locale").selectOption("zh-CN")
    await page.locator("#error", { hasText: "the server answered 503" }).waitFor()
    expect(await page.locator("#locale").inputValue()).toBe("en")
    expect(await page.locator("html").getAttribute("lang")).toBe("en")
    expect(new URL(page.url()).searchParams.get("locale")).toBe("en")
    await page.unroute(isScreenRequest)
    await page.locator("#retry").click()
    await page.waitForURL(/[?&]locale=zh-CN/)
    expect(await page.locator("#title").textContent()).toBe("工具设置")
    expect(await page.locator("#error").textContent()).toBe("")
    await page.close()
  }, 120_000)

  it(
    "shows what a plain ClaudeLocal session withholds: Bash locked off with why, and a normal switch with canUseTool",
    async () => {
      // The server's default session: no canUseTool, the default permission mode.
      const plain = await startServer(path.join(folder, "plain.sqlite"), 0, {})
      try {
        const page = await browser!.newPage()
        const errors: Array<string> = []
        page.on("pageerror", (e) => errors.push(e.message))
        await page.goto(`${plain.url}/?agent=assistant&locale=en`)
        await page.locator("body[data-ready=true]").waitFor()

        const bash = row(page, "group:bash")
        expect(await bash.getAttribute("class")).toContain("withheld")
        expect(await bash.locator(".held").textContent()).toBe("Needs approval")
        expect(await bash.locator(".held").isVisible()).toBe(true)
        expect(await bash.locator(".withheld-reason").textContent()).toBe(
          "Claude Code asks before each Bash call, and no one can answer on this headless claude -p run (permission mode default, no canUseTool, not in allowedTools)"
        )
        expect(await bash.locator(".withheld-reason").isVisible()).toBe(true)
        expect(await bash.locator(".withheld-hint").textContent()).toBe(
          "To offer it: decide calls with canUseTool, allow it with toolPolicy.allowedTools, or use permission mode bypassPermissions"
        )
        expect(await toggle(page, "group:bash").isDisabled()).toBe(true)
        expect(await toggle(page, "group:bash").isChecked()).toBe(false)
        expect(await toggle(page, "Edit").isDisabled()).toBe(true)
        expect(await row(page, "Edit").locator(".withheld-hint").textContent()).toMatch(/permission mode acceptEdits$/)
        expect(await toggle(page, "Read").isDisabled()).toBe(false)
        expect(await row(page, "Read").locator(".held").count()).toBe(0)
        // The flags box says exactly what the server's policy gives the CLI.
        const data = (await send(plain.url, "GET", "/api/agents/assistant")).json as Screen
        expect(await page.locator("#flags").textContent()).toBe(
          data.flags.map((f, i) => i % 2 === 0 ? `${i === 0 ? "" : "\n"}${f} ` : f).join("")
        )
        expect(await page.locator("#flags").textContent()).toMatch(/--disallowedTools \S*\bBash\b/)
        // Withheld is the session's verdict: nothing is stored as the agent's opt-out.
        expect(await page.locator("#disabled-tools").textContent()).toBe("(none)")

        // A save re-enables the switches it held, but not the withheld ones.
        await toggle(page, "Read").click()
        await page.locator("#disabled-tools", { hasText: "Read" }).waitFor()
        await page.locator("body[data-state=ready]").waitFor()
        expect(await toggle(page, "Read").isDisabled()).toBe(false)
        expect(await toggle(page, "group:bash").isDisabled()).toBe(true)
        await toggle(page, "Read").click()
        await page.locator("#disabled-tools", { hasText: "(none)" }).waitFor()

        const file = artifact("tool-settings-server-withheld.png")
        await page.screenshot({ path: file })
        expect(fs.statSync(file).size).toBeGreaterThan(10_000)

        // In Simplified Chinese the label and the reason are translated too.
        await page.locator("#locale").selectOption("zh-CN")
        await page.waitForURL(/[?&]locale=zh-CN/)
        expect(await bash.locator(".held").textContent()).toBe("需要批准")
        expect(await bash.locator(".withheld-reason").textContent()).toContain("Claude Code 在每次调用 Bash 前都会询问")
        expect(errors).toEqual([])
        await page.close()
      } finally {
        await plain.close()
      }

      // The shared server's session answers prompts (canUseTool): the same card is a normal switch.
      const page = await openAgent("answered")
      expect(await row(page, "group:bash").getAttribute("class")).not.toContain("withheld")
      expect(await row(page, "group:bash").locator(".held").count()).toBe(0)
      expect(await row(page, "group:bash").locator(".withheld-reason").count()).toBe(0)
      expect(await toggle(page, "group:bash").isDisabled()).toBe(false)
      expect(await toggle(page, "group:bash").isChecked()).toBe(true)
      expect(await page.locator("#flags").textContent()).not.toMatch(/--disallowedTools \S*\bBash\b/)
      await page.close()
    },
    180_000
  )

  it(
    "switches to Gemini CLI's catalog: the same opt-outs, its switches, the gemini -p flags and policy file",
    async () => {
      const page = await openAgent("two-clis")
      const errors: Array<string> = []
      page.on("pageerror", (e) => errors.push(e.message))
      // On Claude Code's screen: Read off.
      await toggle(page, "Read").click()
      await page.locator("#disabled-tools", { hasText: "Read" }).waitFor()
      expect(await page.locator("#policy-toml").isHidden()).toBe(true)

      await page.locator("#cli").selectOption("gemini")
      await page.waitForURL(/[?&]catalog=gemini/)
      await toggle(page, "read_file").waitFor()
      expect(await page.locator("#flags-label").textContent()).toBe("gemini -p flags for this agent")
      // Read stands for both of Gemini CLI's readers.
      expect(await toggle(page, "read_file").isChecked()).toBe(false)
      expect(await toggle(page, "read_many_files").isChecked()).toBe(false)
      expect(await toggle(page, "run_shell_command").isChecked()).toBe(true)
      expect(await row(page, "read_file").locator(".label").textContent()).toBe("Read files")
      expect(await page.locator("[data-tool=invoke_agent] .note").textContent()).toBe("managed by Gemini CLI")
      expect(await page.locator("#flags").textContent()).toBe(
        "--policy policy.toml\n--allowed-mcp-server-names gtb,notes"
      )
      const toml = page.locator("#policy-toml")
      expect(await toml.isVisible()).toBe(true)
      expect(await toml.textContent()).toMatch(/toolName = \[[^\]]*"read_file"[^\]]*\]\ndecision = "deny"/)

      // A flip here writes Gemini CLI's name, and the policy file follows.
      await toggle(page, "glob").click()
      await page.locator("#disabled-tools", { hasText: "glob" }).waitFor()
      expect(await page.locator("#disabled-tools").textContent()).toBe("Read\nglob")
      expect(await toml.textContent()).toMatch(/"glob"[^\n]*\ndecision = "deny"/)

      // The choice survives a reload, and the copy is a gemini command.
      await page.reload()
      await page.locator("body[data-ready=true]").waitFor()
      expect(await page.locator("#cli").inputValue()).toBe("gemini")
      expect(await toggle(page, "glob").isChecked()).toBe(false)

      // Back on Claude Code's catalog, the same stored list.
      await page.locator("#cli").selectOption("claude")
      await page.waitForURL(/[?&]catalog=claude/)
      await toggle(page, "Read").waitFor()
      expect(await toggle(page, "Read").isChecked()).toBe(false)
      expect(await page.locator("#flags-label").textContent()).toBe("claude -p flags for this agent")
      expect(await page.locator("#policy-toml").isHidden()).toBe(true)
      expect(errors).toEqual([])
      await page.close()
    },
    180_000
  )

  it(
    "switches to Codex CLI's catalog: the same opt-outs, its switches, the codex exec flags and the copied command",
    async () => {
      await browser!.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server!.url })
      const page = await openAgent("three-clis")
      const errors: Array<string> = []
      page.on("pageerror", (e) => errors.push(e.message))
      // On Claude Code's screen: Read off.
      await toggle(page, "Read").click()
      await page.locator("#disabled-tools", { hasText: "Read" }).waitFor()

      await page.locator("#cli").selectOption("codex")
      await page.waitForURL(/[?&]catalog=codex/)
      await toggle(page, "view_image").waitFor()
      expect(await page.locator("#flags-label").textContent()).toBe("codex exec flags for this agent")
      // Read stands for Codex CLI's image viewer; the shell and the patch tool stay on.
      expect(await toggle(page, "view_image").isChecked()).toBe(false)
      expect(await toggle(page, "group:bash").isChecked()).toBe(true)
      expect(await toggle(page, "apply_patch").isChecked()).toBe(true)
      expect(await row(page, "view_image").locator(".label").textContent()).toBe("View images")
      expect(await page.locator("[data-tool=spawn_agent] .note").textContent()).toBe("managed by Codex CLI")
      const flags = page.locator("#flags")
      expect(await flags.textContent()).toContain("--disable view_image")
      expect(await flags.textContent()).toContain("-c web_search=\"disabled\"")
      expect(await page.locator("#policy-toml").isHidden()).toBe(true)

      // A flip here writes Codex CLI's name, and the switches follow: no patch tool, a read-only sandbox.
      await toggle(page, "apply_patch").click()
      await page.locator("#disabled-tools", { hasText: "apply_patch" }).waitFor()
      expect(await page.locator("#disabled-tools").textContent()).toBe("Read\napply_patch")
      expect(await flags.textContent()).toContain("-c sandbox_mode=\"read-only\"")

      // The choice survives a reload, and the copy is a codex exec command a shell takes as it is.
      await page.reload()
      await page.locator("body[data-ready=true]").waitFor()
      expect(await page.locator("#cli").inputValue()).toBe("codex")
      expect(await toggle(page, "apply_patch").isChecked()).toBe(false)
      await page.locator("#copy").click()
      await page.locator("#copy", { hasText: "Copied" }).waitFor()
      const copied = await page.evaluate(() => navigator.clipboard.readText())
      expect(copied).toMatch(/^codex exec --disable apps /)
      expect(copied).toContain(" -c 'sandbox_mode=\"read-only\"'")
      expect(errors).toEqual([])
      await page.close()
    },
    180_000
  )

  it("copies the flags as a claude -p command a shell takes as it is", async () => {
    await browser!.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server!.url })
    const page = await openAgent("copier")
    await toggle(page, "group:notes").click()
    await page.locator("#disabled-tools", { hasText: "mcp__notes__read_note" }).waitFor()
    await page.locator("#copy").click()
    await page.locator("#copy", { hasText: "Copied" }).waitFor()
    const copied = await page.evaluate(() => navigator.clipboard.readText())
    const [flagsLine, allowedLine] = (await page.locator("#flags").textContent())!.split("\n")
    // The allowed list holds `mcp__gtb__*`, which a shell would expand unquoted.
    expect(flagsLine).toMatch(/^--disallowedTools [\w,]+$/)
    expect(copied).toBe(`claude -p ${flagsLine} --allowedTools 'mcp__gtb__*'`)
    expect(allowedLine).toBe("--allowedTools mcp__gtb__*")
    await page.close()
  }, 120_000)
})
