/** Images returned by tools, as the MCP SDK's own client receives them from the bridge. */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as NodeMcpBridge from "../../src/layers/NodeMcpBridge.ts"
import * as Content from "../../src/services/Content.ts"
import * as Tool from "../../src/services/Tool.ts"
import { connectClient } from "./mcpBridgeSupport.ts"

// The 1×1 PNG of test/support/media.ts, copied so this file does not wait for that module's port.
const pngBase64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
const pngBytes = new Uint8Array(Buffer.from(pngBase64, "base64"))

const screenshot = Tool.make("screenshot", {
  description: "Takes a screenshot",
  parameters: {},
  handler: () => Effect.succeed(Content.toolContent([Content.text("the screen"), Content.image(pngBytes, "image/png")]))
})
const chart = Tool.dynamic("chart", {
  description: "Only images, one by URL",
  inputSchema: { type: "object", properties: {} },
  handler: () =>
    Effect.succeed(Content.toolContent([
      Content.image(pngBase64, "image/webp"),
      Content.imageUrl("https://example.com/chart.png")
    ]))
})

describe("NodeMcpBridge media", () => {
  it.live("an image returned by a tool reaches the MCP client as image content, after the text", () =>
    Effect.gen(function*() {
      const bridge = yield* NodeMcpBridge.make({ tools: [screenshot, chart] })
      const client = yield* connectClient(bridge.url, `Bearer ${Redacted.value(bridge.token)}`)
      const shot = yield* Effect.promise(() => client.callTool({ name: "screenshot", arguments: {} }))
      expect(shot).toEqual({
        content: [
          { type: "text", text: "the screen" },
          { type: "image", data: pngBase64, mimeType: "image/png" }
        ],
        isError: false
      })
      // No text part: no empty text item; an image URL (MCP image content has no URL form) is named in text.
      const drawn = yield* Effect.promise(() => client.callTool({ name: "chart", arguments: {} }))
      expect(drawn.content).toEqual([
        { type: "image", data: pngBase64, mimeType: "image/webp" },
        { type: "text", text: "Image: https://example.com/chart.png" }
      ])
    }))
})
