/**
 * The parts of the MCP SDK the bridge runs on, loaded when a bridge starts rather than when the
 * library is imported: the SDK pulls zod, ajv and hono, which would otherwise double the import
 * time of the main entry for apps that never start a bridge. Node caches the modules, so every
 * bridge after the first pays nothing.
 */
import type * as ServerModule from "@modelcontextprotocol/sdk/server/index.js"
import type * as McpModule from "@modelcontextprotocol/sdk/server/mcp.js"
import type * as TransportModule from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import type * as TypesModule from "@modelcontextprotocol/sdk/types.js"
import * as Effect from "effect/Effect"

/** What the bridge uses of the SDK. */
export interface McpServerSdk {
  readonly Server: typeof ServerModule.Server
  readonly StreamableHTTPServerTransport: typeof TransportModule.StreamableHTTPServerTransport
  readonly CallToolRequestSchema: typeof TypesModule.CallToolRequestSchema
  readonly ListToolsRequestSchema: typeof TypesModule.ListToolsRequestSchema
  readonly isInitializeRequest: typeof TypesModule.isInitializeRequest
}

/** Imports the SDK's server modules; a failure is a defect (the SDK is a dependency of the package). */
export const load: Effect.Effect<McpServerSdk> = Effect.promise(async () => {
  const [server, transport, types] = await Promise.all([
    import("@modelcontextprotocol/sdk/server/index.js"),
    import("@modelcontextprotocol/sdk/server/streamableHttp.js"),
    import("@modelcontextprotocol/sdk/types.js")
  ])
  return {
    Server: server.Server,
    StreamableHTTPServerTransport: transport.StreamableHTTPServerTransport,
    CallToolRequestSchema: types.CallToolRequestSchema,
    ListToolsRequestSchema: types.ListToolsRequestSchema,
    isInitializeRequest: types.isInitializeRequest
  }
})

/** The SDK's high-level `McpServer`: the instance type the Agent SDK's in-process server config names. */
export const loadMcpServer: Effect.Effect<typeof McpModule.McpServer> = Effect.promise(() =>
  import("@modelcontextprotocol/sdk/server/mcp.js").then((module) => module.McpServer)
)
