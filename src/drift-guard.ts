/**
 * `effect-chat-bridge/drift-guard`: checks the Claude Code catalog against the installed Claude
 * Agent SDK's typed tool list with the TypeScript compiler API. A separate entry point because it
 * needs the optional peers `typescript` (~5.9; TypeScript 7 has no compiler API) and
 * `@anthropic-ai/claude-agent-sdk`: the main entry never loads either. The same check runs as the
 * `check-claude-tools` bin. `GeminiDriftGuard` checks the Gemini CLI catalog against the installed
 * `@google/gemini-cli` bundle's built-in list (plain text; needs neither peer); `CodexDriftGuard`
 * the Codex CLI catalog against the tools the installed `@openai/codex` sends to a loopback probe.
 *
 * Needs: `npm i -D typescript@~5.9 @anthropic-ai/claude-agent-sdk@0.3.335`.
 *
 * @summary `DriftGuard`: the catalog checked against the installed Agent SDK (needs `typescript`).
 * @since 0.1.0
 * @module effect-chat-bridge/drift-guard
 */
export * as CodexDriftGuard from "./registry/CodexDriftGuard.ts"
export * as DriftGuard from "./registry/DriftGuard.ts"
export * as GeminiDriftGuard from "./registry/GeminiDriftGuard.ts"
