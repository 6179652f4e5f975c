/**
 * The chat page of `examples/chat-server.ts` in a real headless Chromium (playwright-core; the
 * Chromium the settings page's test finds, see `test/support/chromium.ts`), against the real
 * `claude` binary (kept alive, one per thread) and the fake Messages API. One browser, one server
 * (restarted once), one fake API across the cases; each case is a thread of its own.
 */
import { afterAll, beforeAll, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as HttpServer from "effect/http/HttpServer"
import * as Layer from "effect/Layer"
import * as NetAddress from "effect/net/NetAddress"
import * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { BrowserContext, Page } from "playwright-core"
import * as ChatServer from "../../examples/chat-server.ts"
import * as Tool from "../../src/services/Tool.ts"
import { launch } from "../support/chromium.ts"
import { claudeBinary, type Sandbox, sandbox } from "../support/claudeCli.ts"
import { requestTimeout } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"
import { allText } from "../support/liveHarness.ts"

let ids = 0

/** The tool results of the request's last user message. */
const lastResults = (req: Fake.FakeRequest) =>
  Fake.toolResults({
    ...req,
    body: { ...req.body, messages: (req.body.messages ?? []).filter((m) => m.role === "user").slice(-1) }
  })

const call = (name: string, input: unknown): Fake.FakeReply => ({
  toolUses: [{ id: `toolu_page_${++ids}`, name: `mcp__gtb__${name}`, input }]
})

/**
 * The model: a tool by keyword (an order, a wait, a refund), a story that hangs mid-answer, an
 * echo otherwise; with tool results, it answers with them.
 */
const model = (req: Fake.FakeRequest): Fake.FakeReply => {
  const results = lastResults(req)
  if (results.length > 0) return { text: `after tool: ${results.map((r) => r.content).join(" | ")}` }
  const last = Fake.lastUserLine(req)
  if (last.includes("story")) return { text: "Once upon a time, in a land far away", breakMidway: "hang" }
  if (last.includes("explode")) {
    return { status: 400, body: { type: "error", error: { type: "invalid_request_error", message: "fake refusal" } } }
  }
  if (last.includes("refund")) return call("refund", { orderId: "A-1", amount: 12 })
  if (last.includes("order")) return call("lookup_order", { orderId: "A-1" })
  if (last.includes("stock")) return call("wait_for_stock", {})
  return { text: `You said: ${last}` }
}

/** A tool that runs until the test opens its gate: "typing while it works" happens meanwhile. */
const gated = () => {
  let open = () => {}
  let started = () => {}
  const opened = new Promise<void>((resolve) => (open = resolve))
  const running = new Promise<void>((resolve) => (started = resolve))
  const tool = Tool.make("wait_for_stock", {
    description: "Waits until the stock count is in",
    parameters: {},
    handler: () => Effect.sync(started).pipe(Effect.andThen(Effect.promise(() => opened)), Effect.as("stock: 7 left"))
  })
  return { tool, open, running }
}

const folder = fs.mkdtempSync(path.join(os.tmpdir(), "chat-browser-"))
const dataDir = path.join(folder, "data")
const suiteScope = Effect.runSync(Scope.make())
const inSuite = <A>(effect: Effect.Effect<A, never, Scope.Scope>) =>
  Effect.runPromise(Effect.provideService(effect, Scope.Scope, suiteScope))

let api: Fake.FakeMessagesApi
let box: Sandbox
let browser: BrowserContext
const stock = gated()

interface RunningServer {
  readonly url: string
  readonly port: number
  readonly close: () => Promise<void>
}
let server: RunningServer | undefined

/** The example's server in this process, on `port` (0: a free one). */
const startServer = async (port = 0): Promise<RunningServer> => {
  const scope = Effect.runSync(Scope.make())
  const layer = ChatServer.layer({
    dataDir,
    port,
    claude: {
      binary: claudeBinary,
      cwd: box.cwd,
      env: box.env,
      requestTimeout,
      toolPolicy: { disabledTools: ["Bash"] }
    },
    tools: [stock.tool]
  })
  const context = await Effect.runPromise(Layer.buildWithScope(layer, scope))
  const address = Context.get(context, HttpServer.HttpServer).address
  if (!NetAddress.isInetAddress(address)) throw new Error("expected a TCP address")
  return {
    url: `http://127.0.0.1:${address.port}`,
    port: address.port,
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

beforeAll(async () => {
  api = await inSuite(Fake.make(model))
  box = await inSuite(sandbox(api.url))
  server = await startServer()
  browser = await launch(folder)
}, 300_000)

afterAll(async () => {
  await browser?.close()
  await server?.close()
  await Effect.runPromise(Scope.close(suiteScope, Exit.void))
  fs.rmSync(folder, { recursive: true, force: true })
}, 120_000)

const artifact = (name: string) => {
  fs.mkdirSync(path.resolve("artifacts"), { recursive: true })
  return path.resolve("artifacts", name)
}

/** A page on a new thread (or `thread`), once its first load is done; page errors are collected. */
const open = async (query = "locale=en") => {
  const page = await browser.newPage()
  const errors: Array<string> = []
  page.on("pageerror", (e) => errors.push(e.message))
  await page.goto(`${server!.url}/?${query}`)
  await page.locator("body[data-ready=true]").waitFor()
  return { page, errors }
}

const say = async (page: Page, text: string) => {
  await page.locator("#input").fill(text)
  await page.locator("#input").press("Enter")
}

const state = (page: Page) => page.locator("body").getAttribute("data-state")
const waitState = (page: Page, value: string) => page.locator(`body[data-state=${value}]`).waitFor()
const items = (page: Page, kind: string) => page.locator(`#messages li[data-kind=${kind}]`)
const threadOf = (page: Page) => new URL(page.url()).searchParams.get("thread")!

describeWithClaude("examples/chat-server.ts in headless Chromium (real claude)", () => {
  it(
    "sends with Enter, streams the answer and shows the tool call (name, input, result); Shift+Enter is a newline",
    async () => {
      const { errors, page } = await open()
      expect(await state(page)).toBe("idle")
      expect(await page.locator("#send").textContent()).toBe("Send")
      // Shift+Enter adds a line and sends nothing.
      await page.locator("#input").fill("first line")
      await page.locator("#input").press("Shift+Enter")
      expect(await page.locator("#input").inputValue()).toBe("first line\n")
      expect(await items(page, "user").count()).toBe(0)

      await say(page, "Please check order A-1")
      const tool = items(page, "tool").first()
      await tool.locator(".result").waitFor()
      expect(await tool.locator(".name").textContent()).toBe("lookup_order")
      expect(JSON.parse((await tool.locator(".args").textContent())!)).toEqual({ orderId: "A-1" })
      expect(await tool.locator(".result").textContent()).toContain("Order A-1: shipped")
      const answer = items(page, "assistant").last()
      await answer.filter({ hasText: "after tool: Order A-1: shipped" }).waitFor()
      await waitState(page, "idle")
      expect(await items(page, "user").first().locator(".text").textContent()).toBe("Please check order A-1")
      // The input was cleared on send.
      expect(await page.locator("#input").inputValue()).toBe("")
      await page.screenshot({ path: artifact("chat-server-answer.png"), fullPage: true })

      // Another language; a reload shows the same thread, from the server's log, in it.
      await page.locator("#locale").selectOption("zh-CN")
      expect(await page.locator("#send").textContent()).toBe("发送")
      await page.reload()
      await page.locator("body[data-ready=true]").waitFor()
      expect(await page.locator("html").getAttribute("lang")).toBe("zh-CN")
      expect(await page.locator("#status").textContent()).toBe("就绪")
      expect(await items(page, "tool").first().locator(".badge").textContent()).toBe("工具")
      expect(await items(page, "assistant").last().locator(".text").textContent()).toBe(
        "after tool: Order A-1: shipped on 2026-12-01, 2 items, total 48.00 EUR"
      )
      await page.screenshot({ path: artifact("chat-server-zh-CN.png"), fullPage: true })
      expect(errors).toEqual([])
      await page.close()
    },
    240_000
  )

  it(
    "Stop mid-answer ends the turn; the next message has the history, the stopped turn included",
    async () => {
      const { errors, page } = await open()
      await say(page, "Remember the word pineapple")
      await items(page, "assistant").filter({ hasText: "You said: Remember the word pineapple" }).waitFor()
      await waitState(page, "idle")
      await say(page, "Tell me a story")
      await items(page, "assistant").filter({ hasText: "Once upon" }).waitFor()
      expect(await state(page)).toBe("running")
      expect(await page.locator("#stop").isVisible()).toBe(true)
      // Escape is the Stop button's key.
      await page.keyboard.press("Escape")
      await items(page, "stopped").waitFor()
      await waitState(page, "idle")
      expect(await page.locator("#stop").isVisible()).toBe(false)

      await say(page, "What was the word?")
      await items(page, "assistant").filter({ hasText: "You said: What was the word?" }).waitFor()
      await waitState(page, "idle")
      const last = api.messageRequests().at(-1)!
      expect(Fake.lastUserLine(last)).toBe("What was the word?")
      expect(allText(last)).toContain("Remember the word pineapple")
      expect(allText(last)).toContain("Tell me a story")
      expect(allText(last)).toContain("Request interrupted by user")
      await page.screenshot({ path: artifact("chat-server-stopped.png"), fullPage: true })
      expect(errors).toEqual([])
      await page.close()
    },
    240_000
  )

  it(
    "a message typed while a tool runs is folded into the running turn",
    async () => {
      const { errors, page } = await open()
      await say(page, "Please wait for stock")
      await stock.running
      const tool = items(page, "tool").filter({ hasText: "wait_for_stock" })
      await tool.and(page.locator("[data-status=running]")).waitFor()
      expect(await state(page)).toBe("running")
      // The composer stays usable while the agent works.
      await say(page, "also say hello")
      await items(page, "user").filter({ hasText: "also say hello" }).waitFor()
      // The CLI needs the steer before the tool's result is released.
      await new Promise((resolve) => setTimeout(resolve, 1_000))
      stock.open()
      await tool.locator(".result").filter({ hasText: "stock: 7 left" }).waitFor()
      await items(page, "assistant").filter({ hasText: "after tool: stock: 7 left" }).waitFor()
      await waitState(page, "idle")
      // Folded in: the request that carried the tool's result carried the message too.
      const carrying = api.messageRequests().filter((r) => allText(r).includes("also say hello"))
      expect(carrying.length).toBeGreaterThanOrEqual(1)
      expect(allText(carrying[0])).toContain("stock: 7 left")
      expect(await items(page, "error").count()).toBe(0)
      await page.screenshot({ path: artifact("chat-server-steered.png"), fullPage: true })
      expect(errors).toEqual([])
      await page.close()
    },
    240_000
  )

  it(
    "a parked tool call shows Approve / Deny; approved after a server restart, its result shows; the thread goes on after another",
    async () => {
      const { errors, page } = await open()
      await say(page, "Please refund order A-1")
      const approval = items(page, "approval").first()
      await approval.locator("button.approve").waitFor()
      await waitState(page, "approval")
      expect(await approval.locator(".name").textContent()).toContain("refund")
      expect(JSON.parse((await approval.locator(".args").textContent())!)).toEqual({ orderId: "A-1", amount: 12 })
      await page.screenshot({ path: artifact("chat-server-approval.png"), fullPage: true })

      // A new server process state on the same data directory and port.
      const thread = threadOf(page)
      const port = server!.port
      await server!.close()
      server = await startServer(port)
      await page.reload()
      await page.locator("body[data-ready=true]").waitFor()
      expect(threadOf(page)).toBe(thread)
      await waitState(page, "approval")
      await items(page, "approval").first().locator("button.approve").click()
      await items(page, "assistant").filter({ hasText: "after tool: Refunded 12.00 EUR on order A-1" }).waitFor()
      await waitState(page, "idle")
      expect(await items(page, "approval").first().getAttribute("data-status")).toBe("approved")
      await page.screenshot({ path: artifact("chat-server-approved.png"), fullPage: true })

      // Another restart: the thread's next message goes on in its session (the model sees it all).
      await server!.close()
      server = await startServer(port)
      await page.reload()
      await page.locator("body[data-ready=true]").waitFor()
      await say(page, "Anything else?")
      await items(page, "assistant").filter({ hasText: "You said: Anything else?" }).waitFor()
      const history = allText(api.messageRequests().at(-1))
      expect(history).toContain("Please refund order A-1")
      expect(history).toContain("Refunded 12.00 EUR on order A-1")
      expect(errors).toEqual([])
      await page.close()
    },
    240_000
  )

  it(
    "the server's RUN_ERROR and a dropped connection show as the error state",
    async () => {
      const { errors, page } = await open()
      await say(page, "Please explode")
      await items(page, "error").first().waitFor()
      await waitState(page, "error")
      expect(await items(page, "error").first().getAttribute("role")).toBe("alert")
      await page.screenshot({ path: artifact("chat-server-error.png"), fullPage: true })

      // The conversation goes on after an error; then the server goes away mid-answer.
      await say(page, "Tell me a story again")
      await items(page, "assistant").filter({ hasText: "Once upon" }).waitFor()
      const port = server!.port
      await server!.close()
      await items(page, "error").nth(1).waitFor()
      await waitState(page, "error")
      expect(await items(page, "error").nth(1).textContent()).toContain("The connection to the server was lost")
      server = await startServer(port)
      // @ag-ui/client rethrows the dropped stream's error from its reader's cancel as well (an
      // unhandled rejection of its own); the page has shown it already.
      expect(errors.filter((e) => e !== "network error")).toEqual([])
      await page.close()
    },
    240_000
  )
})
