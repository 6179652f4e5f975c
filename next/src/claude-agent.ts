/**
 * `effect-chat-bridge/claude-agent`: Claude Code through the Claude Agent SDK, with your tools
 * served in-process over the CLI's control channel. A separate entry point because the SDK is an
 * optional peer dependency: importing the main entry never loads it.
 *
 * @since 0.1.0
 * @module
 */
export * as ClaudeAgent from "./layers/ClaudeAgent.js"
