/**
 * The settings page in a real browser: Debian's headless Chromium (`apt-get install -y chromium`;
 * .ci/run installs it), driven by playwright-core, which never downloads a browser of its own.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { type BrowserContext, chromium, type Page } from "playwright-core"
import { type RunningServer, startServer } from "./toolSettingsServerSupport.js"

const executablePath = "/usr/bin/chromium"
const screenshot = path.resolve("artifacts", "tool-settings-server.png")

const folder = fs.mkdtempSync(path.join(os.tmpdir(), "tool-settings-browser-"))
const database = path.join(folder, "agents.sqlite")
let server: RunningServer | undefined
let browser: BrowserContext | undefined

beforeAll(async () => {
  if (!fs.existsSync(executablePath)) {
    throw new Error(`Chromium is not installed at ${executablePath}: run \`apt-get install -y chromium\` (as root)`)
  }
  server = await startServer(database)
  browser = await chromium.launchPersistentContext(path.join(folder, "profile"), {
    executablePath,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync"
    ],
    locale: "en-US",
    viewport: { width: 1000, height: 900 }
  })
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await server?.close()
  fs.rmSync(folder, { recursive: true, force: true })
}, 120_000)

const row = (page: Page, entry: string) => page.locator(`label.row[data-entry="${entry}"]`)
const toggle = (page: Page, entry: string) => page.locator(`input[role="switch"][data-switch="${entry}"]`)

describe("examples/tool-settings-server.ts in headless Chromium", () => {
  it("toggles a pair group, switches to zh-CN, and after a reload shows the stored switch, the labels and the flags", async () => {
    const page = await browser!.newPage()
    const errors: Array<string> = []
    page.on("pageerror", (e) => errors.push(e.message))

    await page.goto(`${server!.url}/`)
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

    fs.mkdirSync(path.dirname(screenshot), { recursive: true })
    await page.screenshot({ path: screenshot, fullPage: true })
    expect(fs.statSync(screenshot).size).toBeGreaterThan(10_000)
    console.log(`screenshot: ${screenshot}`)
  })
})
