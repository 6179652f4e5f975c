import { describe, expect, it } from "@effect/vitest"
import * as ClusterError from "effect/cluster/ClusterError"
import * as ClusterSchema from "effect/cluster/ClusterSchema"
import * as EntityAddress from "effect/cluster/EntityAddress"
import * as EntityId from "effect/cluster/EntityId"
import * as ShardId from "effect/cluster/ShardId"
import * as Context from "effect/Context"
import * as Schema from "effect/Schema"
import { EmptyPromptError } from "../../src/services/ChatClient.ts"
import * as ClaudeConversation from "../../src/services/ClaudeConversation.ts"
import { ClaudeLiveError, NoRunningTurn } from "../../src/services/ClaudeLive.ts"
import * as Content from "../../src/services/Content.ts"

describe("ClaudeConversation (protocol)", () => {
  it("buffered prompts join like a local client's: text by blank lines, parts when there is media", () => {
    expect(ClaudeConversation.joinPrompts(["only"])).toBe("only")
    expect(ClaudeConversation.joinPrompts(["a", "", "b"])).toBe("a\n\nb")
    const image = Content.image(new Uint8Array([1, 2, 3]), "image/png")
    expect(ClaudeConversation.joinPrompts(["look", [image]])).toEqual([Content.text("look"), image])
  })

  it("conversation ids are store keys, not paths or flags; turn ids are printable", () => {
    const id = Schema.is(ClaudeConversation.ConversationId)
    expect(["conv-1", "user_42", "A"].every(id)).toBe(true)
    expect(["", "-x", "../etc", "a/b", "a b", "x".repeat(129)].some(id)).toBe(false)
    const turn = Schema.is(ClaudeConversation.TurnId)
    expect(turn("2026-12-02T05:00:00Z#1")).toBe(true)
    expect(turn("")).toBe(false)
    expect(turn("new\nline")).toBe(false)
  })

  it("toChatError: setup failures are config errors, delivery failures retryable, chat errors unchanged", () => {
    const setup = ClaudeConversation.toChatError(
      new ClaudeConversation.ConversationSetupError({ conversationId: "c", message: "no tools for c" })
    )
    expect(setup).toMatchObject({
      _tag: "ProviderError",
      reason: { _tag: "ConfigurationError" },
      isRetryable: false,
      message: "no tools for c"
    })
    const full = ClaudeConversation.toChatError(
      new ClusterError.MailboxFull({
        address: EntityAddress.make({
          shardId: ShardId.make("default", 1),
          entityType: ClaudeConversation.ClaudeConversation.type,
          entityId: EntityId.make("c")
        })
      })
    )
    expect(full).toMatchObject({ _tag: "ProviderError", reason: { _tag: "NetworkError" }, isRetryable: true })
    expect(full.message).toContain("MailboxFull")
    const empty = new EmptyPromptError({ message: "empty" })
    expect(ClaudeConversation.toChatError(empty)).toBe(empty)
  })

  it("toLiveError: a control's setup and delivery failures are the retryable NoAnswer reason, live errors unchanged", () => {
    const toLive = ClaudeConversation.toLiveError("interrupt")
    const setup = toLive(
      new ClaudeConversation.ConversationSetupError({ conversationId: "c", message: "no tools for c" })
    )
    expect(setup).toMatchObject({
      _tag: "ClaudeLiveError",
      provider: "claude-cluster",
      reason: { _tag: "NoAnswer", control: "interrupt", detail: "no tools for c" },
      isRetryable: true
    })
    const full = toLive(
      new ClusterError.MailboxFull({
        address: EntityAddress.make({
          shardId: ShardId.make("default", 1),
          entityType: ClaudeConversation.ClaudeConversation.type,
          entityId: EntityId.make("c")
        })
      })
    )
    expect(full.reason._tag).toBe("NoAnswer")
    expect(full.message).toContain("MailboxFull")
    const idle = new ClaudeLiveError({ provider: "claude-local", reason: new NoRunningTurn({ control: "interrupt" }) })
    expect(toLive(idle)).toBe(idle)
  })

  it("control RPCs are not persisted (a control is for the turn running now); turns are", () => {
    const persisted = (rpc: { readonly annotations: Context.Context<never> }) =>
      Context.get(rpc.annotations, ClusterSchema.Persisted)
    expect([ClaudeConversation.Chat, ClaudeConversation.Ask].map(persisted)).toEqual([true, true])
    expect(
      [
        ClaudeConversation.Interrupt,
        ClaudeConversation.Steer,
        ClaudeConversation.SetModel,
        ClaudeConversation.SetPermissionMode,
        ClaudeConversation.SetMaxThinkingTokens,
        ClaudeConversation.GetContextUsage,
        ClaudeConversation.GetMcpStatus
      ].map(persisted)
    ).toEqual([false, false, false, false, false, false, false])
  })
})
