/**
 * The tool settings screen of the registry design, as a small web app: pick an agent, flip its
 * switches (one per tool or pair group, by category, in English, Simplified or Traditional
 * Chinese), and watch the `claude` CLI flags the switches become, in a panel that stays in view.
 * The tools without a switch follow in three collapsed groups (managed by Claude Code, depending
 * on the session, never available), each with why. Each agent's choice is stored with
 * `AgentSettings` in a SQLite file.
 *
 *   npx tsx examples/tool-settings-server.ts [database-file]
 *
 * (or set AGENT_SETTINGS_DB; by default the file under ~/.local/share/effect-chat-bridge/; PORT
 * picks the port, a free one by default). It prints the page's URL, binds 127.0.0.1 only, and
 * runs until Ctrl-C.
 *
 * The flags are for the headless session a plain `ClaudeLocal` run gets (no `canUseTool`, the
 * default permission mode), so Bash, Edit and Write show as withheld ("Needs approval").
 * SETTINGS_CAN_USE_TOOL=1 describes an application that answers permission prompts, and
 * SETTINGS_PERMISSION_MODE (acceptEdits, bypassPermissions, …) the run's permission mode.
 *
 * The page (`tool-settings-server.html`, plain HTML and a little script) talks to this JSON API:
 *
 *   GET  /api/agents                                  every agent and its opt-outs
 *   POST /api/agents              {"agentId": "…"}    creates an agent (every tool on)
 *   GET  /api/agents/:agentId?locale=zh-CN            the settings screen's data (see `Screen`)
 *   PUT  /api/agents/:agentId/switches/:switchId?locale=…  {"enabled": false}   flips one switch
 *
 * Both take `&catalog=gemini` for Gemini CLI's catalog (`GeminiCliCatalog`): the same stored
 * opt-outs (a Claude Code name stands for its Gemini equivalents), the `gemini -p` flags and the
 * `--policy` file `ToolPolicy.toGeminiPolicy` makes of them; `&catalog=codex` for Codex CLI's
 * (`CodexCliCatalog`) and the `codex exec` switches `ToolPolicy.toCodexPolicy` makes of them.
 *
 * A switch the session withholds carries `withheld` (the policy's English reason) and
 * `withheldText` (label, reason and how to allow it, in the asked language); its stored state is
 * kept. Bad input gets a 4xx with `{"error": "<what is wrong and what to do>"}` and changes nothing.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServer from "effect/http/HttpServer"
import * as HttpServerError from "effect/http/HttpServerError"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Layer from "effect/Layer"
import * as NetAddress from "effect/net/NetAddress"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as fs from "node:fs"
import { createServer, type IncomingMessage, type Server } from "node:http"
import type { Socket } from "node:net"
import { fileURLToPath } from "node:url"
import * as AgentSettingsSqlite from "../src/layers/AgentSettingsSqlite.ts"
import * as CatalogView from "../src/registry/CatalogView.ts"
import * as ClaudeCodeCatalog from "../src/registry/ClaudeCodeCatalog.ts"
import * as CodexCliCatalog from "../src/registry/CodexCliCatalog.ts"
import * as Conditions from "../src/registry/Conditions.ts"
import * as GeminiCliCatalog from "../src/registry/GeminiCliCatalog.ts"
import * as Registry from "../src/registry/Registry.ts"
import { type Category, categoryOrder, type Exposure } from "../src/registry/ToolDescriptor.ts"
import * as ToolPolicy from "../src/registry/ToolPolicy.ts"
import * as AgentSettings from "../src/services/AgentSettings.ts"
import { runExample } from "./support/providers.ts"

// --- The registry: Claude Code's catalog plus the application's own MCP tools. ---

/**
 * A notes server the application mounts for its agents: two MCP tools in one pair group, so they
 * share one switch, and turning it off moves both from `--allowedTools` to `--disallowedTools`.
 */
const notesTools = ["read_note", "write_note"].map((wireName) =>
  Registry.mcpTool({
    server: "notes",
    wireName,
    category: "context",
    pairGroup: "notes",
    labelKey: "app.notes.label",
    descriptionKey: "app.notes.description"
  })
)

/** The application's messages, beside the catalog's own. */
const appMessages: CatalogView.ExtraMessages = {
  en: { "app.notes.label": "Notes", "app.notes.description": "Read and write the team's notes." },
  "zh-CN": { "app.notes.label": "笔记", "app.notes.description": "读取和编写团队笔记。" },
  "zh-TW": { "app.notes.label": "筆記", "app.notes.description": "讀取和編寫團隊筆記。" }
}

/** The page's own words (the catalog's come from `CatalogView`). */
const uiMessages: Readonly<Record<CatalogView.Locale, Readonly<Record<string, string>>>> = {
  en: {
    title: "Tool settings",
    agent: "Agent",
    language: "Language",
    newAgent: "New agent",
    create: "Create",
    flags: "claude -p flags for this agent",
    catalog: "CLI",
    disabledTools: "Stored opt-outs",
    none: "(none)",
    "exposure.internal": "managed by Claude Code",
    "exposure.disabled": "never available",
    "exposure.conditional": "only when {condition}",
    "state.on": "on",
    "state.off": "off",
    headless: "needs someone to answer it: off in claude -p",
    "group.internal": "Managed by Claude Code",
    "group.session": "Depends on the session",
    "group.disabled": "Never available",
    "hint.internal": "always on: Claude Code runs its own work with them",
    "hint.session": "on or off by this session's conditions, and off when no one is there to answer",
    "hint.disabled": "blocked for every agent",
    "reason.group": "goes with {tools}",
    "reason.interactive": "asks the user and waits; a headless claude -p run has no one to answer",
    "reason.conditionMet": "{condition} holds in this session",
    "reason.conditionUnmet": "{condition} does not hold in this session",
    "reason.none": "the catalog gives no reason",
    "withheld.label": "Needs approval",
    "withheld.asks":
      "Claude Code asks before each {tool} call, and no one can answer on this headless claude -p run (permission mode {mode}, no canUseTool, not in allowedTools)",
    "withheld.interactive":
      "{tool} needs someone to answer it, and this headless claude -p run has no one (permission mode {mode})",
    "withheld.hint.asks":
      "To offer it: decide calls with canUseTool, allow it with toolPolicy.allowedTools, or use permission mode {fix}",
    "withheld.hint.interactive": "To offer it: use permission mode bypassPermissions",
    copy: "Copy",
    copied: "Copied",
    retry: "Retry",
    loading: "Loading…",
    saving: "Saving…"
  },
  "zh-CN": {
    title: "工具设置",
    agent: "智能体",
    language: "语言",
    newAgent: "新智能体",
    create: "创建",
    flags: "此智能体的 claude -p 参数",
    catalog: "CLI",
    disabledTools: "已保存的停用项",
    none: "（无）",
    "exposure.internal": "由 Claude Code 管理",
    "exposure.disabled": "始终不可用",
    "exposure.conditional": "仅当 {condition}",
    "state.on": "开",
    "state.off": "关",
    headless: "需要有人回答：在 claude -p 中关闭",
    "group.internal": "由 Claude Code 管理",
    "group.session": "取决于会话",
    "group.disabled": "始终不可用",
    "hint.internal": "始终开启：Claude Code 用它们完成自身工作",
    "hint.session": "由本会话的条件决定开关，无人回答时关闭",
    "hint.disabled": "对所有智能体禁用",
    "reason.group": "与 {tools} 一起",
    "reason.interactive": "会询问用户并等待；无界面的 claude -p 运行无人回答",
    "reason.conditionMet": "本会话满足 {condition}",
    "reason.conditionUnmet": "本会话不满足 {condition}",
    "reason.none": "目录未给出原因",
    "withheld.label": "需要批准",
    "withheld.asks":
      "Claude Code 在每次调用 {tool} 前都会询问，而这个无界面的 claude -p 运行无人回答（权限模式 {mode}，没有 canUseTool，不在 allowedTools 中）",
    "withheld.interactive": "{tool} 需要有人回答，而这个无界面的 claude -p 运行无人回答（权限模式 {mode}）",
    "withheld.hint.asks":
      "要提供它：用 canUseTool 决定每次调用，用 toolPolicy.allowedTools 允许它，或使用权限模式 {fix}",
    "withheld.hint.interactive": "要提供它：使用权限模式 bypassPermissions",
    copy: "复制",
    copied: "已复制",
    retry: "重试",
    loading: "加载中…",
    saving: "保存中…"
  },
  "zh-TW": {
    title: "工具設定",
    agent: "智慧代理",
    language: "語言",
    newAgent: "新智慧代理",
    create: "建立",
    flags: "此智慧代理的 claude -p 參數",
    catalog: "CLI",
    disabledTools: "已儲存的停用項目",
    none: "（無）",
    "exposure.internal": "由 Claude Code 管理",
    "exposure.disabled": "一律不可用",
    "exposure.conditional": "僅當 {condition}",
    "state.on": "開",
    "state.off": "關",
    headless: "需要有人回答：在 claude -p 中關閉",
    "group.internal": "由 Claude Code 管理",
    "group.session": "取決於工作階段",
    "group.disabled": "一律不可用",
    "hint.internal": "一律開啟：Claude Code 用它們完成自身工作",
    "hint.session": "由本工作階段的條件決定開關，無人回答時關閉",
    "hint.disabled": "對所有智慧代理停用",
    "reason.group": "與 {tools} 一起",
    "reason.interactive": "會詢問使用者並等待；無介面的 claude -p 執行無人回答",
    "reason.conditionMet": "本工作階段符合 {condition}",
    "reason.conditionUnmet": "本工作階段不符合 {condition}",
    "reason.none": "目錄未提供原因",
    "withheld.label": "需要核准",
    "withheld.asks":
      "Claude Code 在每次呼叫 {tool} 前都會詢問，而這個無介面的 claude -p 執行無人回答（權限模式 {mode}，沒有 canUseTool，不在 allowedTools 中）",
    "withheld.interactive": "{tool} 需要有人回答，而這個無介面的 claude -p 執行無人回答（權限模式 {mode}）",
    "withheld.hint.asks":
      "若要提供它：用 canUseTool 決定每次呼叫，用 toolPolicy.allowedTools 允許它，或使用權限模式 {fix}",
    "withheld.hint.interactive": "若要提供它：使用權限模式 bypassPermissions",
    copy: "複製",
    copied: "已複製",
    retry: "重試",
    loading: "載入中…",
    saving: "儲存中…"
  }
}

// --- The screen's data. ---

/** A tool without a switch, shown so the user sees why it is on or off. */
interface FixedTool {
  readonly name: string
  readonly label: string
  readonly exposure: Exclude<Exposure, "user">
  readonly condition?: string
  readonly pairGroup?: string
  readonly reason?: string
  /** The locale `reason` is written in (English until the catalog has a translation). */
  readonly reasonLocale?: CatalogView.Locale
  /** Needs someone to answer it, so a headless `claude -p` run goes without it. */
  readonly interactive: boolean
  /** Whether the CLI may use it in this session (the policy's verdict). */
  readonly on: boolean
}

/**
 * Why the session withholds a switch's tools, in the screen's language: the session's verdict,
 * not the agent's choice, so the page shows the switch off and locked and the stored opt-outs
 * stay as they are.
 */
interface WithheldText {
  /** The tool the reason is about (the first withheld one of the switch). */
  readonly tool: string
  readonly label: string
  readonly reason: string
  /** How to let the session offer it. */
  readonly hint: string
}

/** A switch; `withheld` (from `CatalogView`, in English) and `withheldText` when the session withholds it. */
export interface Switch extends CatalogView.CatalogEntry {
  readonly withheldText?: WithheldText
}

/**
 * The headless session the flags are for, as the application sets up `ClaudeLocal`. The default
 * (`{}`) is what a plain `ClaudeLocal` run gets: no `canUseTool`, the default permission mode.
 */
export interface Session {
  /** The application answers Claude Code's permission prompts (`canUseTool`). */
  readonly canUseTool?: boolean
  /** The run's permission mode (`default` when absent). */
  readonly permissionMode?: ToolPolicy.PermissionMode
}

/** One category: its switches (from `CatalogView`) and its tools without one. */
interface Section {
  readonly category: Category
  readonly label: string
  readonly switches: ReadonlyArray<Switch>
  readonly fixed: ReadonlyArray<FixedTool>
}

/**
 * Which CLI's catalog the screen shows: Claude Code's, Gemini CLI's or Codex CLI's. All read and
 * write the agent's one list of opt-outs; on the others a Claude Code name stands for its equivalents.
 */
export type CatalogName = "claude" | "gemini" | "codex"

/** Everything the page shows for one agent in one language. */
export interface Screen {
  readonly agentId: string
  readonly locale: CatalogView.Locale
  readonly catalog: CatalogName
  /** The CLI the flags are for. */
  readonly command: "claude" | "gemini" | "codex"
  /** The command line the flags follow (`claude -p`, `gemini -p`, `codex exec`). */
  readonly invocation: ReadonlyArray<string>
  /** Gemini CLI: the `--policy` file the flags name. */
  readonly policyToml?: string
  readonly ui: Readonly<Record<string, string>>
  readonly sections: ReadonlyArray<Section>
  readonly disabledTools: ReadonlyArray<string>
  readonly conditions: Conditions.Conditions
  /** The session the policy and flags are for. */
  readonly session: Session
  readonly policy: ToolPolicy.ToolPolicy
  readonly flags: ReadonlyArray<string>
}

const reasonFields = (reason: CatalogView.Reason | undefined) =>
  reason === undefined ? {} : { reason: reason.text, reasonLocale: reason.locale }

const format = (text: string, values: Readonly<Record<string, string>>) =>
  text.replace(/\{(\w+)\}/g, (_, k: string) => values[k] ?? "")

/** The page's words for a withheld switch; the policy's English reason stays in `entry.withheld`. */
const withheldText = (
  registry: Registry.Registry,
  entry: CatalogView.CatalogEntry,
  policy: ToolPolicy.ToolPolicy,
  session: Session,
  locale: CatalogView.Locale
): Switch => {
  const tool = entry.withheld === undefined ? undefined : policy.withheld.find((w) => entry.tools.includes(w.tool))
  if (tool === undefined) return entry
  const ui = uiMessages[locale]
  const asks = registry.byName.get(tool.tool)?.asks
  const kind = asks === undefined ? "interactive" : "asks"
  const values = {
    tool: tool.tool,
    mode: session.permissionMode ?? "default",
    fix: asks === "edit" ? "acceptEdits" : "bypassPermissions"
  }
  return {
    ...entry,
    withheldText: {
      tool: tool.tool,
      label: ui["withheld.label"]!,
      reason: format(ui[`withheld.${kind}`]!, values),
      hint: format(ui[`withheld.hint.${kind}`]!, values)
    }
  }
}

/** The page's words for another CLI's screen: the same sentences, naming that CLI. */
const cliWords = (
  ui: Readonly<Record<string, string>>,
  name: string,
  invocation: string
): Readonly<Record<string, string>> =>
  Object.fromEntries(
    Object.entries(ui).map(([k, v]) => [k, v.replaceAll("Claude Code", name).replaceAll("claude -p", invocation)])
  )

/** What another CLI's compile made of the opt-outs. */
type Compiled =
  | { readonly catalog: "gemini"; readonly gemini: ToolPolicy.GeminiPolicy }
  | { readonly catalog: "codex"; readonly codex: ToolPolicy.CodexPolicy }

/** The screen's CLI-specific part: which names the switches read, the words, the command line. */
const cliOf = (compiled: Compiled | undefined, settings: AgentSettings.Settings, locale: CatalogView.Locale) => {
  if (compiled === undefined) {
    return {
      agent: settings,
      catalog: "claude" as const,
      invocation: ["claude", "-p"],
      ui: uiMessages[locale],
      extra: {}
    }
  }
  if (compiled.catalog === "gemini") {
    const gemini = compiled.gemini
    return {
      // The switches read the opt-outs in Gemini CLI's names (Bash → run_shell_command).
      agent: { disabledTools: GeminiCliCatalog.fromClaudeNames(settings.disabledTools) },
      catalog: "gemini" as const,
      invocation: ["gemini", "-p"],
      ui: cliWords(uiMessages[locale], "Gemini CLI", "gemini -p"),
      extra: { policyToml: gemini.policyToml },
      flags: [
        "--policy",
        "policy.toml",
        ...(gemini.allowedMcpServerNames.length === 0
          ? []
          : ["--allowed-mcp-server-names", gemini.allowedMcpServerNames.join(",")])
      ]
    }
  }
  return {
    agent: { disabledTools: CodexCliCatalog.fromClaudeNames(settings.disabledTools) },
    catalog: "codex" as const,
    invocation: ["codex", "exec"],
    ui: cliWords(uiMessages[locale], "Codex CLI", "codex exec"),
    extra: {},
    flags: compiled.codex.args
  }
}

const screen = (
  registry: Registry.Registry,
  settings: AgentSettings.Settings,
  policy: ToolPolicy.ToolPolicy,
  context: ToolPolicy.PolicyContext,
  session: Session,
  locale: CatalogView.Locale,
  compiled?: Compiled
): Screen => {
  const conditions = context.conditions ?? {}
  const cli = cliOf(compiled, settings, locale)
  const agent = cli.agent
  const switches = CatalogView.view(registry, agent, { locale, messages: appMessages, session: context })
  const blocked = new Set(policy.disallowedTools)
  const label = (key: string, fallback: string) => CatalogView.translate(key, locale, appMessages) ?? fallback
  const sections = categoryOrder.flatMap((category): Array<Section> => {
    const fixed = registry.descriptors.filter((d) => d.category === category && d.exposure !== "user").map((
      d
    ): FixedTool => ({
      name: d.name,
      label: label(d.labelKey, d.name),
      exposure: d.exposure as FixedTool["exposure"],
      ...(d.condition === undefined ? {} : { condition: d.condition }),
      ...(d.pairGroup === undefined ? {} : { pairGroup: d.pairGroup }),
      ...reasonFields(CatalogView.reasonOf(d, locale)),
      interactive: d.interactive === true,
      on: !blocked.has(d.name)
    }))
    const entries = (switches.find((s) => s.category === category)?.entries ?? []).map((e) =>
      withheldText(registry, e, policy, session, locale)
    )
    if (entries.length === 0 && fixed.length === 0) return []
    return [{ category, label: label(`category.${category}`, category), switches: entries, fixed }]
  })
  return {
    agentId: settings.agentId,
    locale,
    catalog: cli.catalog,
    command: cli.catalog,
    invocation: cli.invocation,
    ...cli.extra,
    ui: cli.ui,
    sections,
    disabledTools: settings.disabledTools,
    conditions,
    session,
    policy,
    flags: "flags" in cli ? cli.flags : ToolPolicy.toCliFlags(policy)
  }
}

// --- Errors the API answers with. ---

/** A request the API refuses: its status and a message saying what to do. */
class ApiError extends Schema.TaggedError<ApiError>()("ApiError", {
  status: Schema.Number,
  message: Schema.String
}) {}

const badRequest = (message: string) => new ApiError({ status: 400, message })

type SettingsError =
  | AgentSettings.AgentNotFoundError
  | AgentSettings.AgentAlreadyExistsError
  | AgentSettings.InvalidSettingsInputError
  | AgentSettings.CorruptedSettingsError
  | AgentSettings.AgentSettingsStorageError

const fromSettingsError = (error: SettingsError): ApiError => {
  switch (error._tag) {
    case "AgentNotFoundError":
      return new ApiError({ status: 404, message: `${error.message}; create it with POST /api/agents` })
    case "AgentAlreadyExistsError":
      return new ApiError({ status: 409, message: error.message })
    case "InvalidSettingsInputError":
      return badRequest(error.message)
    case "CorruptedSettingsError":
    case "AgentSettingsStorageError":
      return new ApiError({ status: 500, message: error.message })
  }
}

/** Small JSON bodies only: a settings request is a few dozen bytes. */
const maxBodySize = 16 * 1024

const tooLarge = `the body is over ${maxBodySize} bytes; a settings request is a few dozen`

/**
 * The body as text, up to `maxBodySize` bytes, with or without a Content-Length (chunked). Past
 * the bound it fails with a 413 and lets the rest drain until the answer closes the connection:
 * destroying the request instead (as a body-size limit in the platform would) resets the
 * connection before the client can read any answer.
 */
const bodyText = Effect.gen(function*() {
  const incoming = NodeHttpServerRequest.toIncomingMessage(yield* HttpServerRequest.HttpServerRequest)
  return yield* Effect.callback<string, ApiError>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const stop = () => {
      incoming.off("data", onData).off("end", onEnd).off("error", onError)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size <= maxBodySize) return void chunks.push(chunk)
      stop()
      incoming.resume()
      resume(Effect.fail(new ApiError({ status: 413, message: tooLarge })))
    }
    const onEnd = () => {
      stop()
      resume(Effect.succeed(Buffer.concat(chunks).toString("utf8")))
    }
    const onError = (error: Error) => {
      stop()
      resume(Effect.fail(badRequest(`the body could not be read: ${error.message}`)))
    }
    incoming.on("data", onData).once("end", onEnd).once("error", onError)
    return Effect.sync(stop)
  })
})

const standardIssues = SchemaIssue.makeFormatterStandardSchemaV1()

/**
 * Every issue on its own line, with its path: `Expected boolean, actual "no" at ["enabled"]`
 * (Effect 4 says `got`; `actual` is what the Effect 3 line answered).
 */
const formatIssues = (error: Schema.SchemaError): string =>
  standardIssues(error.issue).issues.map(({ message, path }) => {
    const text = message.replace(/^(Expected .*?), got /, "$1, actual ")
    return path === undefined || path.length === 0
      ? text
      : `${text} at ${path.map((p) => `[${JSON.stringify(String(typeof p === "object" ? p.key : p))}]`).join("")}`
  }).join("\n")

/** Decodes the JSON body strictly: not JSON, a wrong type or an unknown field is a 400. */
const body = <S extends Schema.Decoder<unknown>>(schema: S) =>
  bodyText.pipe(
    Effect.flatMap((text) =>
      Effect.try({
        // An empty body reads as null, as the platform's own JSON body does.
        try: (): unknown => text === "" ? null : JSON.parse(text),
        catch: (e) => badRequest(`the body is not JSON: ${e instanceof Error ? e.message : String(e)}`)
      })
    ),
    Effect.flatMap((json) =>
      Effect.mapError(
        // `reportInput` puts the rejected value in the message, as Effect 3 did.
        Schema.decodeUnknownEffect(schema)(json, { onExcessProperty: "error", errors: "all", reportInput: true }),
        (e) => badRequest(`invalid body: ${formatIssues(e)}`)
      )
    )
  )

const locales = Object.keys(CatalogView.locales) as Array<CatalogView.Locale>

/** `?catalog=` (`claude` when absent); another is a 400 naming both. */
const catalogParam = Effect.gen(function*() {
  const value = (yield* HttpServerRequest.ParsedSearchParams)["catalog"] ?? "claude"
  return value === "claude" || value === "gemini" || value === "codex"
    ? value as CatalogName
    : yield* badRequest(`unknown catalog ${JSON.stringify(value)}; use claude, gemini or codex`)
})

/** `?locale=` (English when absent); an unknown one is a 400 naming the shipped ones. */
const localeParam = Effect.gen(function*() {
  const value = (yield* HttpServerRequest.ParsedSearchParams)["locale"] ?? "en"
  const locale = typeof value === "string" ? value : value.join(",")
  return locales.includes(locale as CatalogView.Locale)
    ? locale as CatalogView.Locale
    : yield* badRequest(`unknown locale ${JSON.stringify(locale)}; use one of ${locales.join(", ")}`)
})

const pathParam = (name: string) => Effect.map(HttpRouter.params, (params) => params[name] ?? "")

const json = (value: unknown, status = 200) => HttpServerResponse.jsonUnsafe(value, { status })

/**
 * An error answer. A 413 also ends the connection: the rest of that body is not read, and on a
 * kept-alive connection the server would have to take it all in first.
 */
const errorJson = (status: number, error: string) =>
  status === 413
    ? HttpServerResponse.jsonUnsafe({ error }, { status, headers: { connection: "close" } })
    : json({ error }, status)

/** A route's handler with its refusals answered as `{"error": …}`. */
const answer = <R>(
  handler: Effect.Effect<HttpServerResponse.HttpServerResponse, ApiError | SettingsError, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R> =>
  handler.pipe(
    Effect.catch((e) => {
      const refused = e._tag === "ApiError" ? e : fromSettingsError(e)
      return Effect.succeed(errorJson(refused.status, refused.message))
    })
  )

// --- The app. ---

/** Options of {@link layer}. */
export interface Options {
  /** The SQLite file the agents' settings are stored in; `AgentSettingsSqlite.defaultFilename()` by default. */
  readonly filename?: string
  /** The port on 127.0.0.1; 0 (the default) picks a free one. */
  readonly port?: number
  /** The session's conditions; detected from the current directory when absent. */
  readonly conditions?: Conditions.Conditions
  /** The headless session the flags are for; a plain `ClaudeLocal` run's (`{}`) by default. */
  readonly session?: Session
}

const page = fs.readFileSync(fileURLToPath(new URL("tool-settings-server.html", import.meta.url)), "utf8")

const app = Effect.fnUntraced(function*(
  registry: Registry.Registry,
  geminiRegistry: Registry.Registry,
  codexRegistry: Registry.Registry,
  conditions: Conditions.Conditions,
  session: Session,
  port: number
) {
  const settings = yield* AgentSettings.AgentSettings
  // A headless `claude -p` session with the application's bridge mounted as `gtb`. Unless the
  // application answers permission prompts (`canUseTool`) or the permission mode lets them run,
  // the tools Claude Code asks about (Bash, Edit, Write) are withheld whatever the switches say.
  const context: ToolPolicy.PolicyContext = {
    conditions,
    headless: true,
    mcpServers: ["gtb"],
    ...(session.canUseTool === true ? { canUseTool: true } : {}),
    ...(session.permissionMode === undefined ? {} : { permissionMode: session.permissionMode })
  }

  const claudeScreen = (agent: AgentSettings.Settings, locale: CatalogView.Locale) =>
    Effect.map(
      AgentSettings.resolveToolPolicyFor(agent.agentId, context, { registry }),
      (policy) => screen(registry, agent, policy, context, session, locale)
    ).pipe(Effect.provideService(AgentSettings.AgentSettings, settings))
  // Gemini CLI: the same opt-outs compiled by `ToolPolicy.toGeminiPolicy` for a `gemini -p` run.
  const geminiScreen = (agent: AgentSettings.Settings, locale: CatalogView.Locale) =>
    Effect.fromResult(
      ToolPolicy.toGeminiPolicy({ registry: geminiRegistry, disabledTools: agent.disabledTools, conditions }, {
        mcpServers: ["gtb"],
        ...(session.canUseTool === true ? { canUseTool: true } : {}),
        ...(session.permissionMode === undefined ? {} : { permissionMode: session.permissionMode })
      })
    ).pipe(
      Effect.mapError((e) => badRequest(e.message)),
      Effect.map((gemini) =>
        screen(geminiRegistry, agent, gemini.policy, context, session, locale, { catalog: "gemini", gemini })
      )
    )
  // Codex CLI: the same opt-outs compiled by `ToolPolicy.toCodexPolicy` for a `codex exec` run.
  const codexScreen = (agent: AgentSettings.Settings, locale: CatalogView.Locale) =>
    Effect.fromResult(
      ToolPolicy.toCodexPolicy({ registry: codexRegistry, disabledTools: agent.disabledTools, conditions }, {
        mcpServers: ["gtb"],
        ...(session.canUseTool === true ? { canUseTool: true } : {}),
        ...(session.permissionMode === undefined ? {} : { permissionMode: session.permissionMode })
      })
    ).pipe(
      Effect.mapError((e) => badRequest(e.message)),
      Effect.map((codex) =>
        screen(codexRegistry, agent, codex.policy, context, session, locale, { catalog: "codex", codex })
      )
    )
  const screenOf = (agent: AgentSettings.Settings, locale: CatalogView.Locale, catalog: CatalogName) =>
    catalog === "gemini"
      ? geminiScreen(agent, locale)
      : catalog === "codex"
      ? codexScreen(agent, locale)
      : claudeScreen(agent, locale)

  const router = yield* HttpRouter.make
  yield* router.add("GET", "/", HttpServerResponse.html(page))
  yield* router.add("GET", "/favicon.ico", HttpServerResponse.empty({ status: 204 }))
  yield* router.add("GET", "/api/agents", answer(Effect.map(settings.list, (agents) => json({ agents }))))
  yield* router.add(
    "POST",
    "/api/agents",
    answer(Effect.gen(function*() {
      const { agentId } = yield* body(Schema.Struct({ agentId: Schema.String }))
      return json(yield* settings.create(agentId), 201)
    }))
  )
  yield* router.add(
    "GET",
    "/api/agents/:agentId",
    answer(Effect.gen(function*() {
      const locale = yield* localeParam
      const catalog = yield* catalogParam
      const agent = yield* settings.get(yield* pathParam("agentId"))
      return json(yield* screenOf(agent, locale, catalog))
    }))
  )
  yield* router.add(
    "PUT",
    "/api/agents/:agentId/switches/:switchId",
    answer(Effect.gen(function*() {
      const locale = yield* localeParam
      const catalog = yield* catalogParam
      const { enabled } = yield* body(Schema.Struct({ enabled: Schema.Boolean }))
      const agentId = yield* pathParam("agentId")
      const switchId = yield* pathParam("switchId")
      // Check everything before writing, so a bad request changes nothing.
      const current = yield* settings.get(agentId)
      const shown = catalog === "gemini" ? geminiRegistry : catalog === "codex" ? codexRegistry : registry
      const entry = CatalogView.view(shown, current).flatMap((s) => s.entries).find((e) => e.id === switchId)
      if (entry === undefined) return yield* unknownSwitch(shown, switchId)
      // Turning another CLI's tool on also drops the Claude Code opt-outs that stood for it.
      const claudeNamesOf = catalog === "gemini"
        ? GeminiCliCatalog.claudeNamesOf
        : catalog === "codex"
        ? CodexCliCatalog.claudeNamesOf
        : undefined
      const stored = claudeNamesOf !== undefined && enabled
        ? yield* settings.enable(agentId, [...entry.tools, ...entry.tools.flatMap(claudeNamesOf)])
        : yield* settings.toggle(agentId, entry, enabled)
      return json(yield* screenOf(stored, locale, catalog))
    }))
  )

  // The router fails only when no route matches (every route answers its own errors).
  const routed = router.asHttpEffect().pipe(
    Effect.catch((e) =>
      e instanceof HttpServerError.HttpServerError && e.reason._tag === "RouteNotFound"
        ? Effect.succeed(errorJson(404, `no route ${e.request.method} ${e.request.url}`))
        : Effect.fail(e)
    )
  )
  // The store checks opt-outs against every catalog: the screens write any CLI's tool names.
  const both = yield* Registry.make(
    [
      ...ClaudeCodeCatalog.descriptors,
      ...GeminiCliCatalog.descriptors,
      // Gemini CLI's MCP-resource tools have the same names; one entry each is enough to check a name.
      ...CodexCliCatalog.descriptors.filter((d) => !GeminiCliCatalog.registry.byName.has(d.name)),
      ...notesTools
    ],
    { pairGroups: ["notes"] }
  ).pipe(Effect.orDie)
  return guardLoopback(Effect.provideService(routed, AgentSettings.PolicyRegistry, both), port)
})

/** Why a switch id has no switch: not in the registry, or a tool the user cannot switch. */
const unknownSwitch = (registry: Registry.Registry, switchId: string) => {
  const d = registry.byName.get(switchId)
  if (d === undefined) {
    return Effect.fail(
      new ApiError({
        status: 404,
        message: `no switch ${JSON.stringify(switchId)}; the switches are ${
          CatalogView.slots(registry).map((s) => s.id).join(", ")
        }`
      })
    )
  }
  const group = d.pairGroup === undefined
    ? undefined
    : CatalogView.slots(registry).find((s) => s.pairGroup === d.pairGroup)
  return Effect.fail(
    new ApiError({
      status: 409,
      message: group !== undefined
        ? `${d.name} has no switch of its own: it goes with the ${group.id} switch`
        : `${d.name} is ${d.exposure}: it has no switch${d.reason === undefined ? "" : ` (${d.reason})`}`
    })
  )
}

/**
 * A loopback server is still reachable from web pages the user opens: refuse other hosts
 * (DNS rebinding), other origins, and writes that are not JSON (which a cross-site form could
 * send without a CORS preflight).
 */
const guardLoopback = <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>, port: number) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const host = request.headers["host"]
    const origin = request.headers["origin"]
    if (host !== `127.0.0.1:${port}` && host !== `localhost:${port}`) {
      return json({ error: `unexpected Host ${JSON.stringify(host)}; open http://127.0.0.1:${port}/` }, 403)
    }
    if (origin !== undefined && origin !== `http://${host}`) {
      return json({ error: `requests from ${origin} are not accepted` }, 403)
    }
    if (request.method === "POST" || request.method === "PUT") {
      if (!(request.headers["content-type"] ?? "").startsWith("application/json")) {
        return json({ error: "send the body as JSON with Content-Type: application/json" }, 415)
      }
      // A declared size is refused before reading; a chunked body is bounded as it is read (`body`).
      if (Number(request.headers["content-length"] ?? 0) > maxBodySize) return errorJson(413, tooLarge)
    }
    return yield* app
  })

/**
 * The sockets of `server` that never carried a request. A browser opens such sockets ahead of
 * time; Node's `close()` waits for them (it only closes idle keep-alive ones), so the platform's
 * graceful shutdown gives up after 20 s and leaves them open, and a request the browser later
 * sends on one (a reload after a restart) is never answered. `destroy` ends them.
 */
const unusedSockets = (server: Server) => {
  const unused = new Set<Socket>()
  server.on("connection", (socket: Socket) => {
    unused.add(socket)
    socket.once("close", () => unused.delete(socket))
  })
  server.on("request", (request: IncomingMessage) => unused.delete(request.socket))
  return {
    destroy: () => {
      for (const socket of unused) socket.destroy()
      unused.clear()
    }
  }
}

/**
 * The server on 127.0.0.1, its settings in `options.filename`. When the store has no agent yet,
 * an `assistant` agent is created so the page has something to show. Closing the layer's scope
 * stops the server (promptly, see {@link unusedSockets}) and closes the database.
 */
export const layer = (options: Options) =>
  Layer.unwrap(Effect.sync(() => {
    const server = createServer()
    const unused = unusedSockets(server)
    return Layer.effectDiscard(Effect.gen(function*() {
      const registry = yield* ClaudeCodeCatalog.makeRegistry(notesTools, { pairGroups: ["notes"] }).pipe(Effect.orDie)
      const geminiRegistry = yield* GeminiCliCatalog.makeRegistry(notesTools, { pairGroups: ["notes"] }).pipe(
        Effect.orDie
      )
      const codexRegistry = yield* CodexCliCatalog.makeRegistry(notesTools, { pairGroups: ["notes"] }).pipe(
        Effect.orDie
      )
      const conditions = options.conditions ??
        (yield* Conditions.detectConditions({ cwd: process.cwd() }).pipe(Effect.provide(NodeServices.layer)))
      const settings = yield* AgentSettings.AgentSettings
      if ((yield* settings.list).length === 0) yield* settings.create("assistant")
      // Already listening here: the Host check needs the port a `port: 0` server got.
      const address = (yield* HttpServer.HttpServer).address
      const port = NetAddress.isInetAddress(address) ? address.port : -1
      yield* HttpServer.serveEffect(
        yield* app(registry, geminiRegistry, codexRegistry, conditions, options.session ?? {}, port)
      )
      // Added after serving, so it runs before the server's own finalizer waits for the close.
      yield* Effect.addFinalizer(() => Effect.sync(unused.destroy))
    })).pipe(Layer.provideMerge(NodeHttpServer.layer(() => server, { host: "127.0.0.1", port: options.port ?? 0 })))
  })).pipe(
    Layer.provide(AgentSettingsSqlite.layerSqlite(options.filename === undefined ? {} : { filename: options.filename }))
  )

// --- Run directly: print the URL and serve until Ctrl-C. ---

const permissionModes: ReadonlyArray<ToolPolicy.PermissionMode> = [
  "default",
  "acceptEdits",
  "bypassPermissions",
  "plan",
  "dontAsk",
  "auto"
]

/** The session from SETTINGS_CAN_USE_TOOL (0 or 1) and SETTINGS_PERMISSION_MODE, or what is wrong with them. */
const sessionFromEnv = (env: NodeJS.ProcessEnv): Session | string => {
  const canUseTool = env["SETTINGS_CAN_USE_TOOL"] ?? "0"
  const mode = env["SETTINGS_PERMISSION_MODE"]
  if (canUseTool !== "0" && canUseTool !== "1") return `SETTINGS_CAN_USE_TOOL=${canUseTool}: use 0 or 1`
  if (mode !== undefined && mode !== "" && !permissionModes.includes(mode as ToolPolicy.PermissionMode)) {
    return `SETTINGS_PERMISSION_MODE=${mode}: use one of ${permissionModes.join(", ")}`
  }
  return {
    ...(canUseTool === "1" ? { canUseTool: true } : {}),
    ...(mode === undefined || mode === "" ? {} : { permissionMode: mode as ToolPolicy.PermissionMode })
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === fs.realpathSync(process.argv[1])) {
  const filename = process.argv[2] ?? process.env["AGENT_SETTINGS_DB"]
  const port = Number(process.env["PORT"] ?? 0)
  const session = sessionFromEnv(process.env)
  if (typeof session === "string") {
    // A typo in the session would describe flags no run gets: refuse to start rather than guess.
    console.error(session)
    process.exitCode = 2
  } else {
    HttpServer.addressFormattedWith((url) =>
      Console.log(
        `Tool settings at ${url}/ (settings in ${filename ?? AgentSettingsSqlite.defaultFilename()}); ` +
          "Ctrl-C stops the server"
      )
    ).pipe(
      Effect.andThen(Effect.never),
      Effect.provide(layer({ port, session, ...(filename === undefined ? {} : { filename }) })),
      runExample
    )
  }
}
