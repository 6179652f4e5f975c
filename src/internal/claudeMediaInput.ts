/**
 * A prompt with images or documents for the `claude` CLI: `--input-format stream-json` and one
 * stream-json user message on stdin whose content is Messages API blocks (the CLI passes them on).
 * Text-only turns keep the plain-text stdin. Kept apart from any long-lived stream-json writer:
 * this is one message per run, written whole before stdin closes.
 */
import type { Part } from "../services/Content.js"
import { contentBlock } from "./anthropicWire.js"

/** The flags that make `claude -p` read stream-json user messages from stdin. */
export const streamJsonInputFlags: ReadonlyArray<string> = ["--input-format", "stream-json"]

/** One stream-json user message line carrying `parts` as content blocks (`extraText` appended). */
export const userMessageLine = (parts: ReadonlyArray<Part>, extraText?: string): string =>
  JSON.stringify({
    type: "user",
    message: {
      role: "user",
      content: [
        ...parts.flatMap(contentBlock),
        ...(extraText === undefined ? [] : [{ type: "text", text: extraText }])
      ]
    },
    parent_tool_use_id: null
  }) + "\n"
