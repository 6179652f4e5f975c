/**
 * `effect-chat-bridge/claude-agent`: Claude Code through the Claude Agent SDK, with your tools
 * served in-process over the CLI's control channel. A separate entry point because the SDK is an
 * optional peer dependency: importing the main entry never loads it.
 *
 * Needs: `npm i @anthropic-ai/claude-agent-sdk@0.3.335` (it ships the `claude` binary); without it
 * every call fails with an error saying what to install.
 *
 * @summary `ClaudeAgent`: Claude Code on the Claude Agent SDK (needs `@anthropic-ai/claude-agent-sdk`).
 * @since 0.1.0
 * @module effect-chat-bridge/claude-agent
 */
export * as ClaudeAgent from "./layers/ClaudeAgent.ts"
