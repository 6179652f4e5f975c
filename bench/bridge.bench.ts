/**
 * MCP bridge costs:
 * - `tools/call` round trip through the bridge vs the same tool handler on a bare
 *   `@modelcontextprotocol/sdk` server over the same Streamable HTTP transport on `node:http`
 *   (target ≤ 1.15×): what the bridge's checks, session routing and Effect runtime add;
 * - bridge start + stop time;
 * - scope close time while a client holds an open SSE stream.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { CallToolRequestSchema, isInitializeRequest, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { randomUUID } from "node:crypto"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { performance } from "node:perf_hooks"
import * as NodeMcpBridge from "../src/layers/NodeMcpBridge.ts"
import * as Tool from "../src/services/Tool.ts"
import { compare, median } from "./util.ts"

const add = Tool.make("add", {
  description: "Adds two numbers",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

const connect = async (url: string, headers: Record<string, string>) => {
  const client = new Client({ name: "bench", version: "0" })
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }))
  return client
}

/** The baseline: the SDK's documented stateful setup, no checks, the tool's handler run directly. */
const startBareServer = async () => {
  const transports = new Map<string, StreamableHTTPServerTransport>()
  const server = Http.createServer(async (req, res) => {
    const sessionId = req.headers["mcp-session-id"]
    const existing = typeof sessionId === "string" ? transports.get(sessionId) : undefined
    if (existing !== undefined) return existing.handleRequest(req, res)
    const chunks: Array<Buffer> = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const body: unknown = JSON.parse(Buffer.concat(chunks).toString("utf8"))
    if (!isInitializeRequest(body)) {
      res.writeHead(400).end()
      return
    }
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        transports.set(id, transport)
      }
    })
    const mcp = new Server({ name: "bare", version: "0" }, { capabilities: { tools: { listChanged: true } } })
    mcp.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [{ name: add.name, description: add.description, inputSchema: add.inputSchema }]
    }))
    mcp.setRequestHandler(CallToolRequestSchema, async (request) => ({
      content: [{ type: "text", text: await Effect.runPromise(add.run(request.params.arguments ?? {})) }]
    }))
    await mcp.connect(transport)
    await transport.handleRequest(req, res, body)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`
  const close = async () => {
    for (const t of transports.values()) await t.close()
    await new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    })
  }
  return { url, close }
}

const startBridge = async () => {
  const scope = Effect.runSync(Scope.make())
  const bridge = await Effect.runPromise(NodeMcpBridge.make({ tools: [add] }).pipe(Scope.provide(scope)))
  return { bridge, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

const main = async () => {
  // 1. tools/call round trip, side by side
  const { bridge, close: closeBridge } = await startBridge()
  const bare = await startBareServer()
  const bridgeClient = await connect(bridge.url, { Authorization: `Bearer ${Redacted.value(bridge.token)}` })
  const bareClient = await connect(bare.url, {})
  let i = 0
  const callVia = (client: Client) => async () => {
    const n = i++
    const result = await client.callTool({ name: "add", arguments: { a: n, b: 1 } })
    const text = (result.content as Array<{ text: string }>)[0]!.text
    if (Number(text) !== n + 1) throw new Error(`wrong result ${text}`)
  }
  await compare("tools/call round trip (bridge vs bare SDK server)", callVia(bridgeClient), callVia(bareClient), {
    rounds: 10,
    perRound: 200,
    target: 1.15
  })
  await bridgeClient.close()
  await bareClient.close()
  await closeBridge()
  await bare.close()

  // 2. start + stop
  const startStop: Array<number> = []
  for (let k = 0; k < 50; k++) {
    const t = performance.now()
    const { close } = await startBridge()
    await close()
    startStop.push(performance.now() - t)
  }
  console.log(`bridge start+stop: median ${median(startStop).toFixed(3)} ms over ${startStop.length} runs`)

  // 3. close with a connected client holding its GET SSE stream
  const closeTimes: Array<number> = []
  for (let k = 0; k < 20; k++) {
    const { bridge: b, close } = await startBridge()
    const client = await connect(b.url, { Authorization: `Bearer ${Redacted.value(b.token)}` })
    await client.listTools()
    // give the client's GET SSE stream time to be established
    await new Promise((r) => setTimeout(r, 20))
    const t = performance.now()
    await close()
    closeTimes.push(performance.now() - t)
    await client.close().catch(() => undefined)
  }
  console.log(
    `bridge close with an open SSE stream: median ${median(closeTimes).toFixed(3)} ms, max ${
      Math.max(...closeTimes).toFixed(3)
    } ms over ${closeTimes.length} runs (target < 1000 ms)`
  )
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
