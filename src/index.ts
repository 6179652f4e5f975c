/**
 * effect-chat-bridge: let a model call your in-process tools on any provider, and decide from
 * one declarative registry which Claude Code tools an agent may use.
 *
 * @since 0.1.0
 */
export * as ChatClient from "./services/ChatClient.js"
export * as ModelTurn from "./services/ModelTurn.js"
export * as Tool from "./services/Tool.js"
export * as Scripted from "./layers/Scripted.js"
