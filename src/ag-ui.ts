/**
 * `effect-chat-bridge/ag-ui`: a Claude Code conversation served as an AG-UI agent over HTTP + SSE
 * on `effect/ai`'s `AgUiServer` (`ClaudeAgUi`): streamed text and tool calls, Stop (abort →
 * interrupt), typing while it works (steer), approvals as AG-UI interrupts.
 *
 * Needs: nothing beyond the main entry's peers (`effect` ≥ 4.1.5 for `effect/ai/AgUiServer`).
 *
 * @summary `ClaudeAgUi`: Claude Code conversations as an AG-UI agent (stream, stop, steer, approvals).
 * @groupDescription effect/ai
 * `effect/ai` toolkits as this library's tools, and this library's providers as a `LanguageModel`.
 * @since 2.2.0
 * @module effect-chat-bridge/ag-ui
 */
export * as ClaudeAgUi from "./ai/ClaudeAgUi.ts"
