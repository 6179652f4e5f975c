/**
 * Not an example of its own: the script of `examples/chat-server.ts`'s page, bundled for the browser with esbuild when the
 * server starts. It talks AG-UI to `/agent` with `@ag-ui/client`'s `HttpAgent` (one per run) and
 * keeps the conversation in the shared log model (`support/chatLog.ts`), which the server records
 * too: a reload asks the server for the thread's log and shows it again.
 *
 * States (`body[data-state]`): `idle`, `running` (a run streams: Stop shows, typing still sends —
 * the message is folded into the running turn), `approval` (a parked tool call waits for Approve /
 * Deny), `error` (the server's `RUN_ERROR`, or the connection dropped).
 */
import { HttpAgent } from "@ag-ui/client"
import * as ChatLog from "./chatLog.ts"

type Locale = "en" | "zh-CN" | "zh-TW"
type State = "idle" | "running" | "approval" | "error"

const strings: Record<Locale, Record<string, string>> = {
  en: {
    title: "Chat",
    placeholder: "Message the agent (Enter sends, Shift+Enter for a new line)",
    send: "Send",
    stop: "Stop",
    newChat: "New chat",
    language: "Language",
    "state.idle": "Ready",
    "state.running": "Working… (Escape stops; you can keep typing)",
    "state.approval": "Waiting for your approval",
    "state.error": "Something went wrong",
    you: "You",
    agent: "Agent",
    tool: "Tool",
    input: "Input",
    result: "Result",
    running: "Running…",
    failed: "Failed",
    needsApproval: "needs your approval",
    approve: "Approve",
    deny: "Deny",
    approved: "Approved",
    denied: "Denied",
    stopped: "Stopped",
    error: "Error",
    dropped: "The connection to the server was lost",
    loadFailed: "Could not load this conversation",
    empty: "Ask something to start."
  },
  "zh-CN": {
    title: "对话",
    placeholder: "给助手发消息（Enter 发送，Shift+Enter 换行）",
    send: "发送",
    stop: "停止",
    newChat: "新对话",
    language: "语言",
    "state.idle": "就绪",
    "state.running": "处理中…（Esc 停止；可以继续输入）",
    "state.approval": "等待你的批准",
    "state.error": "出错了",
    you: "你",
    agent: "助手",
    tool: "工具",
    input: "输入",
    result: "结果",
    running: "运行中…",
    failed: "失败",
    needsApproval: "需要你的批准",
    approve: "批准",
    deny: "拒绝",
    approved: "已批准",
    denied: "已拒绝",
    stopped: "已停止",
    error: "错误",
    dropped: "与服务器的连接已断开",
    loadFailed: "无法加载此对话",
    empty: "提个问题开始吧。"
  },
  "zh-TW": {
    title: "對話",
    placeholder: "傳訊息給助理（Enter 傳送，Shift+Enter 換行）",
    send: "傳送",
    stop: "停止",
    newChat: "新對話",
    language: "語言",
    "state.idle": "就緒",
    "state.running": "處理中…（Esc 停止；可以繼續輸入）",
    "state.approval": "等待你的核准",
    "state.error": "發生錯誤",
    you: "你",
    agent: "助理",
    tool: "工具",
    input: "輸入",
    result: "結果",
    running: "執行中…",
    failed: "失敗",
    needsApproval: "需要你的核准",
    approve: "核准",
    deny: "拒絕",
    approved: "已核准",
    denied: "已拒絕",
    stopped: "已停止",
    error: "錯誤",
    dropped: "與伺服器的連線已中斷",
    loadFailed: "無法載入此對話",
    empty: "提個問題開始吧。"
  }
}
const locales = Object.keys(strings) as Array<Locale>

const $ = <E extends HTMLElement>(id: string) => document.getElementById(id) as E
const params = new URLSearchParams(location.search)
const guessLocale = (): Locale => {
  const preferred = navigator.languages.find((l) => l.startsWith("zh") || l.startsWith("en")) ?? "en"
  if (!preferred.startsWith("zh")) return "en"
  return /TW|HK|MO|Hant/i.test(preferred) ? "zh-TW" : "zh-CN"
}
let locale: Locale = locales.includes(params.get("locale") as Locale) ? params.get("locale") as Locale : guessLocale()
const t = (key: string) => strings[locale][key] ?? strings.en[key] ?? key

// The thread id lives in the URL, so a reload (or a shared link) shows the same conversation.
const threadId = params.get("thread") ?? `t-${crypto.randomUUID()}`
const saveUrl = () => {
  const url = new URL(location.href)
  url.searchParams.set("thread", threadId)
  url.searchParams.set("locale", locale)
  history.replaceState(null, "", url)
}

let items: Array<ChatLog.Item> = []
let state: State = "idle"
/** The run the page waits on (the foreground one): Stop aborts it. */
let current: { readonly agent: HttpAgent; stopped: boolean } | undefined

const element = (tag: string, className?: string, text?: string) => {
  const el = document.createElement(tag)
  if (className !== undefined) el.className = className
  if (text !== undefined) el.textContent = text
  return el
}

const pretty = (json: string) => {
  try {
    return JSON.stringify(JSON.parse(json), null, 2)
  } catch {
    return json
  }
}

const renderItem = (item: ChatLog.Item): HTMLElement => {
  const li = element("li", `item ${item.kind}`)
  li.dataset["kind"] = item.kind
  li.dataset["id"] = item.id
  switch (item.kind) {
    case "user":
    case "assistant":
      li.append(element("div", "who", t(item.kind === "user" ? "you" : "agent")), element("div", "text", item.text))
      break
    case "tool": {
      li.dataset["status"] = item.result !== undefined
        ? (item.isError === true ? "failed" : "done")
        : item.parked === true
        ? "parked"
        : "running"
      const head = element("div", "head")
      head.append(element("span", "badge", t("tool")), element("code", "name", item.name))
      if (item.parked === true && item.result === undefined) head.append(element("span", "ask", t("needsApproval")))
      else if (item.result === undefined) head.append(element("span", "spinner", t("running")))
      else if (item.isError === true) head.append(element("span", "failed", t("failed")))
      li.append(head, element("div", "label", t("input")), element("pre", "args", pretty(item.args)))
      if (item.result !== undefined) {
        li.append(element("div", "label", t("result")), element("pre", "result", item.result))
      }
      break
    }
    case "approval": {
      li.dataset["status"] = item.status
      const head = element("div", "head")
      head.append(
        element("span", "badge", t("tool")),
        element("code", "name", item.tool),
        element("span", "ask", t("needsApproval"))
      )
      li.append(head, element("pre", "args", JSON.stringify(item.input, null, 2)))
      if (item.status === "pending") {
        const actions = element("div", "actions")
        const approve = element("button", "approve", t("approve")) as HTMLButtonElement
        const deny = element("button", "deny", t("deny")) as HTMLButtonElement
        approve.disabled = deny.disabled = state === "running"
        approve.addEventListener("click", () => void decide(item.id, true))
        deny.addEventListener("click", () => void decide(item.id, false))
        actions.append(approve, deny)
        li.append(actions)
      } else {
        li.append(element("div", "decision", t(item.status)))
      }
      break
    }
    case "error":
      li.setAttribute("role", "alert")
      li.append(element("div", "who", t("error")), element("div", "text", item.message))
      if (item.code !== undefined) li.append(element("code", "code", item.code))
      break
    case "stopped":
      li.textContent = t("stopped")
      break
  }
  return li
}

const render = () => {
  document.documentElement.lang = locale
  document.title = t("title")
  for (const el of Array.from(document.querySelectorAll<HTMLElement>("[data-t]"))) el.textContent = t(el.dataset["t"]!)
  $<HTMLTextAreaElement>("input").placeholder = t("placeholder")
  $<HTMLSelectElement>("locale").value = locale
  document.body.dataset["state"] = state
  $("status").textContent = t(`state.${state}`)
  const list = $("messages")
  const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40
  // A parked call shows once: as its approval card (the same tool and input, with the decision).
  const shown = items.filter((item) => !(item.kind === "tool" && item.parked === true && item.result === undefined))
  list.replaceChildren(...shown.map(renderItem))
  $("empty").hidden = items.length > 0
  if (atBottom) list.scrollTop = list.scrollHeight
}

const settle = (failed: boolean) => {
  state = failed ? "error" : ChatLog.pendingApproval(items) !== undefined ? "approval" : "idle"
  render()
}

/**
 * One run: its events go into the log as they stream. `background` runs are messages typed while
 * another run streams: the server folds them into that run (answering with a bare RUN_FINISHED),
 * or runs them as a turn of their own if the first one has just ended.
 */
const run = async (
  messages: ReadonlyArray<{ id: string; text: string }>,
  resume?: Parameters<HttpAgent["runAgent"]>[0]
) => {
  const background = state === "running"
  const agent = new HttpAgent({
    url: "/agent",
    threadId,
    initialMessages: messages.map((m) => ({ id: m.id, role: "user" as const, content: m.text }))
  })
  const handle = { agent, stopped: false }
  if (!background) current = handle
  state = "running"
  render()
  let failed = false
  let finished = false
  try {
    await agent.runAgent(resume ?? {}, {
      onEvent: ({ event }) => {
        // After Stop, @ag-ui/client reports its own abort as RUN_ERROR (code "abort"): not an error.
        if (handle.stopped && event.type === "RUN_ERROR") return
        ChatLog.applyEvent(items, event as unknown as ChatLog.LogEvent)
        if (event.type === "RUN_ERROR") failed = true
        if (event.type === "RUN_FINISHED" || event.type === "RUN_ERROR") finished = true
        render()
      }
    })
  } catch (error) {
    if (!handle.stopped && !finished) {
      failed = true
      items.push({ kind: "error", id: `dropped-${items.length}`, message: `${t("dropped")} (${String(error)})` })
    }
  }
  // An aborted run may end with the client's own RUN_FINISHED (outcome "cancelled"): Stop wins.
  if (handle.stopped) ChatLog.addStopped(items)
  if (current === handle) {
    current = undefined
    settle(failed)
  } else if (failed) {
    settle(true)
  } else {
    render()
  }
}

const send = () => {
  const input = $<HTMLTextAreaElement>("input")
  const text = input.value.trim()
  if (text === "") return
  input.value = ""
  const id = `u-${crypto.randomUUID()}`
  ChatLog.addUser(items, id, text)
  void run([{ id, text }])
}

const stop = () => {
  if (current === undefined) return
  current.stopped = true
  current.agent.abortRun()
}

const decide = (approvalId: string, approved: boolean) => {
  ChatLog.decide(items, approvalId, approved)
  return run([], {
    resume: [{ interruptId: approvalId, status: approved ? "resolved" : "cancelled", payload: { approved } }]
  })
}

const load = async () => {
  saveUrl()
  try {
    const response = await fetch(`/api/threads/${encodeURIComponent(threadId)}`)
    if (!response.ok) throw new Error(`HTTP ${response.status}`)
    items = ((await response.json()) as { items: Array<ChatLog.Item> }).items
    settle(false)
  } catch (error) {
    items.push({ kind: "error", id: "load", message: `${t("loadFailed")}: ${String(error)}` })
    settle(true)
  }
  document.body.dataset["ready"] = "true"
}

$("composer").addEventListener("submit", (e) => {
  e.preventDefault()
  send()
})
$("input").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault()
    send()
  }
})
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape") stop()
})
$("stop").addEventListener("click", stop)
$("new").addEventListener("click", () => {
  location.search = `?locale=${locale}`
})
$<HTMLSelectElement>("locale").addEventListener("change", (e) => {
  locale = (e.target as HTMLSelectElement).value as Locale
  saveUrl()
  render()
})
void load()
