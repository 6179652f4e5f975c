/**
 * A tool result as MCP `CallToolResult` content: the text, then each image as MCP image content
 * (base64 `data` + `mimeType`). MCP image content has no URL form, so an image given by URL
 * becomes a text line naming it.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import type { ToolResult } from "../../services/Tool.ts"

/** The content array of a `tools/call` answer; there is always at least one item. */
export const mcpContent = (result: ToolResult): CallToolResult["content"] => {
  const images = result.images ?? []
  const text = result.content === "" && images.length > 0 ? [] : [{ type: "text" as const, text: result.content }]
  return [
    ...text,
    ...images.map((image) =>
      image.source.type === "base64"
        ? { type: "image" as const, data: image.source.data, mimeType: image.source.mediaType }
        : { type: "text" as const, text: `Image: ${image.source.url}` }
    )
  ]
}

/** Whether `text` parses as JSON that is not an object (what Gemini CLI cannot take as structured content). */
const isScalarJson = (text: string): boolean => {
  try {
    const value: unknown = JSON.parse(text)
    return typeof value !== "object" || value === null || Array.isArray(value)
  } catch {
    return false
  }
}

/** {@link mcpContent}, led by an empty text item when the first text is JSON but not an object. */
export const guardedContent = (result: ToolResult): CallToolResult["content"] => {
  const content = mcpContent(result)
  const first = content[0]
  return first !== undefined && first.type === "text" && isScalarJson(first.text)
    ? [{ type: "text", text: "" }, ...content]
    : content
}
