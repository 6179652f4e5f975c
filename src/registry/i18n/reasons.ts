/**
 * Why a catalog tool has no switch, in the shipped locales other than English. Keyed by the
 * English `reason` of the descriptor (as gettext keys by source text): a reason that changes, or
 * an application's own, is shown in English until it is translated, never with a stale text.
 *
 * @since 1.0.0
 * @module
 */

const cliOriented = "CLI-oriented: needs the interactive terminal app or its background services"
const webOverMcp = "an app with its own web tools serves them over MCP"

/** Simplified Chinese. */
export const zhCN: Readonly<Record<string, string>> = {
  "legacy reader of background Bash output; goes with Bash": "读取后台 Bash 输出的旧工具；与 Bash 一起",
  "Jupyter editing is not needed by chat agents": "聊天智能体不需要编辑 Jupyter 笔记本",
  "multi-agent workflow scripts: the feature agents opt into": "多智能体工作流脚本：由智能体自行选择启用的功能",
  "subagents are how Claude Code splits work": "Claude Code 通过子智能体拆分工作",
  "legacy alias of Agent": "Agent 的旧别名",
  "lists the running subagents; goes with Agent": "列出正在运行的子智能体；与 Agent 一起",
  "loads deferred MCP tools; blocking it hides MCP tools": "加载延迟的 MCP 工具；禁用它会隐藏 MCP 工具",
  "agent teams": "智能体团队",
  "superseded by the Task* tools": "已被 Task* 工具取代",
  "re-reads connected MCP servers' tool lists (e.g. after tools/list_changed); session-local, no side effects":
    "重新读取已连接 MCP 服务器的工具列表（例如在 tools/list_changed 之后）；仅限本会话，无副作用",
  "structured result channel of review runs; only records findings in the transcript":
    "审查运行的结构化结果通道；只在对话记录中记录发现",
  [cliOriented]: "面向 CLI：需要交互式终端应用或其后台服务",
  "reads the CLI's notification inbox, fed by Monitor/PushNotification, which are disabled":
    "读取 CLI 的通知收件箱，其来源 Monitor/PushNotification 已被禁用",
  "sets a session goal through the CLI's approval dialog; CLI-oriented": "通过 CLI 的确认对话框设置会话目标；面向 CLI",
  "files product feedback about Claude Code itself with Anthropic; not an agent task, sends data off the machine":
    "向 Anthropic 提交关于 Claude Code 本身的产品反馈；不是智能体的任务，会把数据发送到本机之外",
  "the CLI's onboarding UI": "CLI 的新手引导界面",
  "prompts to install the CLI's Chrome extension; UI-only": "提示安装 CLI 的 Chrome 扩展；仅用于界面",
  "publishes HTML to Anthropic's hosted artifact service; uploads files off the machine":
    "将 HTML 发布到 Anthropic 托管的 Artifact 服务；会把文件上传到本机之外",
  "drives the account-bound hosted Claude Design service": "操作与账号绑定的托管 Claude Design 服务",
  [webOverMcp]: "有自己网络工具的应用通过 MCP 提供它们",
  "reads and writes account-bound claude.ai Project documents, outside the app's own context tools":
    "读写与账号绑定的 claude.ai 项目文档，不在应用自己的上下文工具之内",
  "shows a skill-proposal review card in the CLI; needs its interactive reviewer":
    "在 CLI 中显示技能提议审核卡片；需要交互式审核者",
  "loads the workspace's skills on demand; read-only": "按需加载工作区的技能；只读",
  "subagents are how Gemini CLI splits work": "Gemini CLI 通过子智能体拆分工作",
  "a subagent's result channel; only returns its answer": "子智能体的结果通道；只返回其答案",
  "session-local todo list; no side effects": "仅限本会话的待办列表；无副作用",
  "records the conversation's topic for the CLI's context; no side effects": "为 CLI 的上下文记录对话主题；无副作用",
  "the CLI's task tracker (an experimental feature); session-local planning state":
    "CLI 的任务跟踪器（实验性功能）；仅限本会话的计划状态",
  "reads Gemini CLI's own bundled docs; read-only": "读取 Gemini CLI 自带的文档；只读",
  "subagents are how Codex splits work": "Codex 通过子智能体拆分工作",
  "the thread's goal, kept by the CLI; session-local, no side effects": "由 CLI 保存的对话目标；仅限本会话，无副作用",
  "no Codex 0.171.0 switch removes it; in `codex exec` nobody can answer it":
    "Codex 0.171.0 没有开关能移除它；在 `codex exec` 中没有人能回答它",
  "asks the user for wider sandbox permissions; an experimental feature only an interactive client answers":
    "向用户请求更宽的沙箱权限；实验性功能，只有交互式客户端能回答",
  "messages the user in the middle of a turn; an experimental feature, the app gets the final answer":
    "在轮次进行中给用户发消息；实验性功能，应用只接收最终答案",
  "finds the MCP tools a model defers; blocking it hides MCP tools":
    "查找模型延迟加载的 MCP 工具；禁用它会隐藏 MCP 工具",
  "writes to a running exec_command session; goes with exec_command":
    "向正在运行的 exec_command 会话写入；与 exec_command 一起"
}

/** Traditional Chinese (Taiwan). */
export const zhTW: Readonly<Record<string, string>> = {
  "legacy reader of background Bash output; goes with Bash": "讀取背景 Bash 輸出的舊工具；與 Bash 一起",
  "Jupyter editing is not needed by chat agents": "聊天代理不需要編輯 Jupyter 筆記本",
  "multi-agent workflow scripts: the feature agents opt into": "多代理工作流程腳本：由代理自行選擇啟用的功能",
  "subagents are how Claude Code splits work": "Claude Code 透過子代理拆分工作",
  "legacy alias of Agent": "Agent 的舊別名",
  "lists the running subagents; goes with Agent": "列出執行中的子代理；與 Agent 一起",
  "loads deferred MCP tools; blocking it hides MCP tools": "載入延後的 MCP 工具；停用它會隱藏 MCP 工具",
  "agent teams": "代理團隊",
  "superseded by the Task* tools": "已由 Task* 工具取代",
  "re-reads connected MCP servers' tool lists (e.g. after tools/list_changed); session-local, no side effects":
    "重新讀取已連線 MCP 伺服器的工具清單（例如在 tools/list_changed 之後）；僅限本工作階段，無副作用",
  "structured result channel of review runs; only records findings in the transcript":
    "審查執行的結構化結果通道；只在對話紀錄中記錄發現",
  [cliOriented]: "以 CLI 為主：需要互動式終端機應用程式或其背景服務",
  "reads the CLI's notification inbox, fed by Monitor/PushNotification, which are disabled":
    "讀取 CLI 的通知收件匣，其來源 Monitor/PushNotification 已停用",
  "sets a session goal through the CLI's approval dialog; CLI-oriented":
    "透過 CLI 的確認對話框設定工作階段目標；以 CLI 為主",
  "files product feedback about Claude Code itself with Anthropic; not an agent task, sends data off the machine":
    "向 Anthropic 提交關於 Claude Code 本身的產品意見；不是代理的工作，會把資料傳送到本機之外",
  "the CLI's onboarding UI": "CLI 的新手導覽介面",
  "prompts to install the CLI's Chrome extension; UI-only": "提示安裝 CLI 的 Chrome 擴充功能；僅用於介面",
  "publishes HTML to Anthropic's hosted artifact service; uploads files off the machine":
    "將 HTML 發佈到 Anthropic 託管的 Artifact 服務；會把檔案上傳到本機之外",
  "drives the account-bound hosted Claude Design service": "操作與帳號綁定的託管 Claude Design 服務",
  [webOverMcp]: "有自己網路工具的應用程式透過 MCP 提供它們",
  "reads and writes account-bound claude.ai Project documents, outside the app's own context tools":
    "讀寫與帳號綁定的 claude.ai 專案文件，不在應用程式自己的情境工具之內",
  "shows a skill-proposal review card in the CLI; needs its interactive reviewer":
    "在 CLI 中顯示技能提議審查卡片；需要互動式審查者",
  "loads the workspace's skills on demand; read-only": "依需求載入工作區的技能；唯讀",
  "subagents are how Gemini CLI splits work": "Gemini CLI 透過子代理拆分工作",
  "a subagent's result channel; only returns its answer": "子代理的結果通道；只傳回其答案",
  "session-local todo list; no side effects": "僅限本工作階段的待辦清單；無副作用",
  "records the conversation's topic for the CLI's context; no side effects": "為 CLI 的情境記錄對話主題；無副作用",
  "the CLI's task tracker (an experimental feature); session-local planning state":
    "CLI 的工作追蹤器（實驗性功能）；僅限本工作階段的規劃狀態",
  "reads Gemini CLI's own bundled docs; read-only": "讀取 Gemini CLI 內附的文件；唯讀",
  "subagents are how Codex splits work": "Codex 透過子代理拆分工作",
  "the thread's goal, kept by the CLI; session-local, no side effects":
    "由 CLI 保存的對話目標；僅限本工作階段，無副作用",
  "no Codex 0.171.0 switch removes it; in `codex exec` nobody can answer it":
    "Codex 0.171.0 沒有開關能移除它；在 `codex exec` 中沒有人能回答它",
  "asks the user for wider sandbox permissions; an experimental feature only an interactive client answers":
    "向使用者請求更寬的沙箱權限；實驗性功能，只有互動式用戶端能回答",
  "messages the user in the middle of a turn; an experimental feature, the app gets the final answer":
    "在回合進行中傳訊息給使用者；實驗性功能，應用程式只接收最終答案",
  "finds the MCP tools a model defers; blocking it hides MCP tools":
    "尋找模型延後載入的 MCP 工具；停用它會隱藏 MCP 工具",
  "writes to a running exec_command session; goes with exec_command":
    "向執行中的 exec_command 工作階段寫入；與 exec_command 一起"
}
