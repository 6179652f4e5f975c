/**
 * `effect-chat-bridge/effect-ai`: interop with `@effect/ai`. A `Toolkit` with its handlers as
 * tools for every provider and the MCP bridge (`AiToolkit`), and any provider — Claude Code above
 * all — as an `@effect/ai` `LanguageModel` that runs your toolkit (`ChatLanguageModel`). A
 * separate entry point because `@effect/ai` is an optional peer dependency: importing the main
 * entry never loads it.
 *
 * @since 0.1.0
 * @module
 */
export * as AiToolkit from "./ai/AiToolkit.js"
export * as ChatLanguageModel from "./ai/ChatLanguageModel.js"
