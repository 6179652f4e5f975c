/**
 * A chat page a person can use, on a Claude Code conversation served as an AG-UI agent
 * (`effect-chat-bridge/ag-ui`'s `ClaudeAgUi`, on `effect/ai`'s `AgUiServer`): streamed answers,
 * tool calls shown as they run (name, input, result), a Stop button, typing while the agent works
 * (folded into the running turn), Approve / Deny on a parked tool call, an error state, and the
 * conversation restored on reload — in English, Simplified or Traditional Chinese.
 *
 *   npx tsx examples/chat-server.ts [data-directory]
 *
 * (PORT picks the port, a free one by default; the `claude` CLI's settings come from the
 * `CLAUDE_*` variables, as `ClaudeLocal.layerFromEnv` reads them). It prints the page's URL, binds
 * 127.0.0.1 only, and runs until Ctrl-C. The data directory (default `./chat-data`) keeps the
 * session store (SQLite: sessions and parked approvals, so an approval survives a restart) and
 * each thread's log (what the page shows).
 *
 *   GET  /                      the page (`chat-server.html`)
 *   GET  /chat-page.js          its script, `support/chatPage.ts` bundled with esbuild at start
 *   GET  /api/threads/:threadId the thread's log (`{ threadId, items }`, see `support/chatLog.ts`)
 *   POST /agent                 the AG-UI agent (`RunAgentInput` in, Server-Sent Events out)
 *
 * The application's tools: `lookup_order` runs at once; `refund` needs a person's approval (its
 * call parks, the page shows Approve / Deny).
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import type * as AgUiSchema from "effect/ai/AgUiSchema"
import * as AgUiServer from "effect/ai/AgUiServer"
import * as Console from "effect/Console"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServer from "effect/http/HttpServer"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as esbuild from "esbuild"
import * as fs from "node:fs"
import { createServer } from "node:http"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as ClaudeAgUi from "../src/ai/ClaudeAgUi.ts"
import * as ClaudeLocal from "../src/layers/ClaudeLocal.ts"
import * as ClaudeSessionStoreSql from "../src/layers/ClaudeSessionStoreSql.ts"
import { ChatClient } from "../src/services/ChatClient.ts"
import { ClaudeSession } from "../src/services/ClaudeCodeOptions.ts"
import * as Tool from "../src/services/Tool.ts"
import * as ChatLog from "./support/chatLog.ts"
import { runExample } from "./support/providers.ts"

// --- The application's tools. ---

/** Looks an order up: runs at once. */
export const lookupOrder = Tool.make("lookup_order", {
  description: "Looks up an order's status by its id",
  parameters: { orderId: Schema.String },
  handler: ({ orderId }) => Effect.succeed(`Order ${orderId}: shipped on 2026-12-01, 2 items, total 48.00 EUR`)
})

/** Refunds an order: parks until a person approves it on the page. */
export const refund = Tool.make("refund", {
  description: "Refunds an order (a person approves each refund)",
  parameters: { orderId: Schema.String, amount: Schema.Number },
  needsApproval: true,
  handler: ({ amount, orderId }) => Effect.succeed(`Refunded ${amount.toFixed(2)} EUR on order ${orderId}`)
})

// --- Each thread's log, for the page's reload. ---

/** Thread ids are conversation ids: letters, digits, `-`, `_`. */
const isThreadId = (id: string) => /^[A-Za-z0-9_-]{1,128}$/.test(id)

const makeLogs = (dir: string) => {
  fs.mkdirSync(dir, { recursive: true })
  const cache = new Map<string, Array<ChatLog.Item>>()
  const file = (threadId: string) => path.join(dir, `${threadId}.json`)
  const get = (threadId: string): Array<ChatLog.Item> => {
    let items = cache.get(threadId)
    if (items === undefined) {
      items = fs.existsSync(file(threadId))
        ? JSON.parse(fs.readFileSync(file(threadId), "utf8")) as Array<ChatLog.Item>
        : []
      cache.set(threadId, items)
    }
    return items
  }
  // Written after each change: small files, and a restart shows what the page showed.
  const update = (threadId: string, f: (items: Array<ChatLog.Item>) => void) => {
    const items = get(threadId)
    f(items)
    fs.writeFileSync(file(threadId), JSON.stringify(items))
  }
  // The Claude Code session a thread's conversation left, so the thread resumes it after a restart.
  const sessionFile = (threadId: string) => path.join(dir, `${threadId}.session`)
  const session = (threadId: string) =>
    fs.existsSync(sessionFile(threadId)) ? fs.readFileSync(sessionFile(threadId), "utf8") : undefined
  const keepSession = (threadId: string, sessionId: string) => fs.writeFileSync(sessionFile(threadId), sessionId)
  return { get, update, session, keepSession }
}

/** The run's new user messages: those after the last message of another role (what the agent sends). */
const newUserMessages = (input: AgUiSchema.RunAgentInput) => {
  const found: Array<{ readonly id: string; readonly text: string }> = []
  for (let i = input.messages.length - 1; i >= 0; i--) {
    const message = input.messages[i]!
    if (message.role !== "user") break
    const text = typeof message.content === "string"
      ? message.content
      : message.content.flatMap((part) => part.type === "text" ? [part.text] : []).join("\n")
    found.unshift({ id: message.id, text })
  }
  return found
}

/** The agent, recording what each run asked and streamed into its thread's log. */
const logged = <R>(agent: AgUiServer.Agent<R>, logs: ReturnType<typeof makeLogs>): AgUiServer.Agent<R> => ({
  run: (input) =>
    Effect.map(agent.run(input), (events) =>
      Stream.suspend(() => {
        logs.update(input.threadId, (items) => {
          for (const entry of input.resume ?? []) {
            const payload = entry.payload as { approved?: unknown } | undefined
            ChatLog.decide(items, entry.interruptId, entry.status === "resolved" && payload?.approved !== false)
          }
          for (const message of newUserMessages(input)) ChatLog.addUser(items, message.id, message.text)
        })
        return events.pipe(
          Stream.tap((event) =>
            Effect.sync(() => logs.update(input.threadId, (items) => ChatLog.applyEvent(items, event)))
          ),
          // A client that closed the request (Stop) interrupts the stream.
          Stream.onExit((exit) =>
            Exit.hasInterrupts(exit)
              ? Effect.sync(() => logs.update(input.threadId, ChatLog.addStopped))
              : Effect.void
          )
        )
      }))
})

// --- The server. ---

/** Options of {@link layer}. */
export interface Options {
  /** Where the session store and the threads' logs live. */
  readonly dataDir: string
  /** The port on 127.0.0.1; 0 (the default) picks a free one. */
  readonly port?: number
  /** The `claude` CLI's options (binary, cwd, env, …); `keepAlive` is always on. */
  readonly claude?: ClaudeLocal.Options
  /** More tools of the application's, beside `lookup_order` and `refund`. */
  readonly tools?: ReadonlyArray<Tool.Tool>
}

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url))

/** The page's script: `support/chatPage.ts` and `@ag-ui/client`, one ES module for the browser. */
const bundle = Effect.promise(() =>
  esbuild.build({
    entryPoints: [here("support/chatPage.ts")],
    bundle: true,
    write: false,
    format: "esm",
    platform: "browser",
    target: "es2022",
    minify: true,
    logLevel: "silent"
  })
).pipe(Effect.map((result) => result.outputFiles[0]!.text))

const routes = (options: Options) =>
  Layer.unwrap(Effect.gen(function*() {
    const script = yield* bundle
    const page = fs.readFileSync(here("chat-server.html"), "utf8")
    const logs = makeLogs(path.join(options.dataDir, "threads"))
    const store = yield* Layer.build(
      ClaudeSessionStoreSql.layerSqlite({ filename: path.join(options.dataDir, "sessions.sqlite") })
    ).pipe(Effect.orDie)
    const agent = yield* ClaudeAgUi.make({
      // A thread comes back with its session (its history): closed while idle (`resume`), or
      // after a restart (the session its conversation left when it closed).
      conversation: ({ resume, threadId }) =>
        ClaudeLocal.layerNode({ ...options.claude, keepAlive: true, resume: resume ?? logs.session(threadId) }).pipe(
          Layer.tap((context) =>
            Effect.andThen(
              Context.get(context, ChatClient).setTools([lookupOrder, refund, ...(options.tools ?? [])]),
              Effect.addFinalizer(() =>
                Effect.map(
                  Context.get(context, ClaudeSession).sessionId,
                  Option.map((id) => logs.keepSession(threadId, id))
                )
              )
            )
          ),
          Layer.provide(Layer.succeedContext(store))
        )
    })
    return Layer.mergeAll(
      AgUiServer.layerHttp({ path: "/agent", agent: logged(agent, logs) }),
      HttpRouter.add("GET", "/", HttpServerResponse.html(page)),
      HttpRouter.add("GET", "/favicon.ico", HttpServerResponse.empty({ status: 204 })),
      HttpRouter.add(
        "GET",
        "/chat-page.js",
        HttpServerResponse.text(script, { contentType: "text/javascript; charset=utf-8" })
      ),
      HttpRouter.add(
        "GET",
        "/api/threads/:threadId",
        Effect.map(HttpRouter.params, (params) => {
          const threadId = params["threadId"] ?? ""
          return isThreadId(threadId)
            ? HttpServerResponse.jsonUnsafe({ threadId, items: logs.get(threadId) })
            : HttpServerResponse.jsonUnsafe({ error: "a thread id is letters, digits, - and _" }, { status: 400 })
        })
      )
    )
  }))

/**
 * The server on 127.0.0.1. Closing the layer's scope closes every conversation (their CLIs), the
 * store, and the server (open event streams included).
 */
export const layer = (options: Options) =>
  Layer.unwrap(Effect.sync(() => {
    const server = createServer()
    return HttpRouter.serve(routes(options), { disableLogger: true, disableListenLog: true }).pipe(
      Layer.provideMerge(NodeHttpServer.layer(() => server, { host: "127.0.0.1", port: options.port ?? 0 })),
      // Released first: an event stream still open would hold the server's close.
      Layer.tap(() => Effect.addFinalizer(() => Effect.sync(() => server.closeAllConnections())))
    )
  }))

// --- Run directly: print the URL and serve until Ctrl-C. ---

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === fs.realpathSync(process.argv[1])) {
  const dataDir = path.resolve(process.argv[2] ?? "chat-data")
  Effect.gen(function*() {
    const claude = yield* ClaudeLocal.configFromEnv()
    yield* Effect.gen(function*() {
      yield* HttpServer.addressFormattedWith((url) =>
        Console.log(`Chat at ${url}/ (data in ${dataDir}); Ctrl-C stops the server`)
      )
      return yield* Effect.never
    }).pipe(Effect.provide(layer({ dataDir, port: Number(process.env["PORT"] ?? 0), claude })))
  }).pipe(runExample)
}
