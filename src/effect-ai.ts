/**
 * `effect-chat-bridge/effect-ai`: interop with `effect/ai`. A `Toolkit` with its handlers as
 * tools for every provider and the MCP bridge (`AiToolkit`), and any provider — Claude Code above
 * all — as an `effect/ai` `LanguageModel` that runs your toolkit (`ChatLanguageModel`). On
 * Effect 4 `effect/ai` is part of `effect` itself, so there is no optional peer any more; it stays
 * a separate entry point so the main entry does not load the `effect/ai` modules.
 *
 * Needs: nothing beyond the main entry's peers.
 *
 * @summary `AiToolkit` and `ChatLanguageModel`: `effect/ai` toolkits and `LanguageModel` on any provider.
 * @groupDescription effect/ai
 * `effect/ai` toolkits as this library's tools, and this library's providers as a `LanguageModel`.
 * @since 0.1.0
 * @module effect-chat-bridge/effect-ai
 */
export * as AiToolkit from "./ai/AiToolkit.ts"
export * as ChatLanguageModel from "./ai/ChatLanguageModel.ts"
