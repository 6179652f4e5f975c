/**
 * An `effect/ai` prompt as the `claude` CLI takes it: system messages as the system prompt, the
 * last user message as the request and earlier messages as a transcript before it. Re-exported
 * by `ai/ChatLanguageModel.ts`.
 */
import type * as AiError from "effect/ai/AiError"
import type * as Prompt from "effect/ai/Prompt"
import * as Effect from "effect/Effect"
import { invalidRequest } from "./errors.ts"

const json = (value: unknown): string => {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

const textOf = (parts: ReadonlyArray<{ readonly type: string; readonly text?: string }>): string =>
  parts.flatMap((part) => (part.type === "text" && part.text !== undefined ? [part.text] : [])).join("")

const renderResult = (part: Prompt.ToolResultPart): string =>
  `Tool ${part.name} ${part.isFailure ? "failed with" : "returned"} ${json(part.result)}`

const renderMessage = (message: Prompt.Message): ReadonlyArray<string> => {
  switch (message.role) {
    case "system":
      return []
    case "user":
      return [`User: ${textOf(message.content)}`]
    case "assistant":
      return message.content.flatMap((part) => {
        switch (part.type) {
          case "text":
            return [`Assistant: ${part.text}`]
          case "tool-call":
            return [`Assistant called tool ${part.name} with ${json(part.params)}`]
          case "tool-result":
            return [renderResult(part)]
          default:
            return []
        }
      })
    case "tool":
      return message.content.flatMap((part) => part.type === "tool-result" ? [renderResult(part)] : [])
  }
}

/**
 * The prompt as the CLI takes it: system messages joined into the system prompt; the last user
 * message as the request, earlier messages as a transcript before it.
 *
 * @category utils
 * @since 1.0.0
 */
export const renderPrompt = (
  prompt: Prompt.Prompt,
  method: string
): Effect.Effect<{ readonly systemPrompt: string | undefined; readonly text: string }, AiError.AiError> => {
  for (const message of prompt.content) {
    if (message.role === "user" || message.role === "assistant") {
      const file = message.content.find((part) => part.type === "file")
      if (file !== undefined && file.type === "file") {
        return Effect.fail(invalidRequest(
          method,
          "prompt",
          `File parts (${file.mediaType}) are not supported: the claude CLI takes text prompts. ` +
            "Put the file's text in a text part, or let the agent read it from its working directory."
        ))
      }
    }
  }
  const system = prompt.content.flatMap((m) => (m.role === "system" ? [m.content] : []))
  const conversation = prompt.content.filter((m) => m.role !== "system")
  const last = conversation.at(-1)
  const request = last !== undefined && last.role === "user" ? textOf(last.content) : ""
  const history = (last !== undefined && last.role === "user" ? conversation.slice(0, -1) : conversation)
    .flatMap(renderMessage)
  const text = history.length === 0
    ? request
    : `<conversation_so_far>\n${history.join("\n\n")}\n</conversation_so_far>\n\n${
      request === "" ? "Continue the conversation." : request
    }`
  return Effect.succeed({ systemPrompt: system.length === 0 ? undefined : system.join("\n\n"), text })
}
