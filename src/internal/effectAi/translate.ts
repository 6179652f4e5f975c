/**
 * This library's chat events as `effect/ai` response parts: tool calls and results checked
 * against the toolkit's schemas, usage and finish parts, and the folding of stream parts into a
 * non-streaming response. Re-exported by `ai/ChatLanguageModel.ts`.
 */
import type * as Response from "effect/ai/Response"
import type * as AiTool from "effect/ai/Tool"
import * as Cause from "effect/Cause"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { type ApprovalRequired, Usage } from "../../services/ChatClient.ts"
import type { ChatEvent, ToolCallEnd } from "../../services/ChatEvent.ts"
import type { Interrupted } from "../../services/ClaudeLive.ts"
import { MetadataKey } from "./errors.ts"

export type AnyCodec = Schema.Codec<unknown, unknown>

// A failure that is not a SchemaError (a schema needing services or async work) cannot be checked
// here: the value is passed on and `effect/ai` decodes it in the calling context.
const isSchemaFailure = (cause: Cause.Cause<unknown>): boolean =>
  Option.exists(Cause.findErrorOption(cause), Schema.isSchemaError)

/** Whether `effect/ai` will accept `params` for the tool (it fails the whole call otherwise). */
const paramsDecode = (tool: AiTool.Any, params: unknown): boolean => {
  const exit = Schema.decodeUnknownExit(tool.parametersSchema as AnyCodec)(params)
  return Exit.isSuccess(exit) || !isSchemaFailure(exit.cause)
}

/**
 * The encoded value `effect/ai` expects in a tool-result part, from the JSON the model saw: read
 * with the schema's JSON codec (a date as its ISO string), written back with the schema itself.
 */
const encodedResult = (schema: Schema.Top, payload: unknown): Result.Result<unknown, void> => {
  const decoded = Schema.decodeUnknownExit(Schema.toCodecJson(schema as AnyCodec))(payload)
  if (Exit.isFailure(decoded)) return isSchemaFailure(decoded.cause) ? Result.failVoid : Result.succeed(payload)
  const encoded = Schema.encodeUnknownExit(schema as AnyCodec)(decoded.value)
  if (Exit.isFailure(encoded)) return isSchemaFailure(encoded.cause) ? Result.failVoid : Result.succeed(payload)
  return Result.succeed(encoded.value)
}

export const parseJson = (text: string): Result.Result<unknown, void> => {
  try {
    return Result.succeed(JSON.parse(text) as unknown)
  } catch {
    return Result.failVoid
  }
}

const int = (n: number): number | undefined => (Number.isSafeInteger(n) && n >= 0 ? n : undefined)

/**
 * This library's usage in `effect/ai`'s shape; nothing is reported when the provider reported nothing.
 *
 * @category utils
 * @since 1.0.0
 */
export const encodeUsage = (usage: Usage): typeof Response.Usage.Encoded =>
  usage.known
    ? {
      inputTokens: {
        total: int(usage.inputTokens),
        cacheRead: int(usage.cachedTokens),
        uncached: int(usage.inputTokens - usage.cachedTokens)
      },
      outputTokens: {
        total: int(usage.outputTokens),
        reasoning: int(usage.reasoningTokens),
        text: int(usage.outputTokens - usage.reasoningTokens)
      }
    }
    : { inputTokens: {}, outputTokens: {} }

const finishPart = (
  usage: Usage,
  toolErrors: ReadonlyArray<ToolError>,
  interrupted?: InterruptedMetadata,
  reason: Response.FinishReason = interrupted === undefined ? "stop" : "other",
  approval?: ApprovalMetadata
): Response.FinishPartEncoded => ({
  type: "finish",
  reason,
  usage: encodeUsage(usage),
  metadata: {
    [MetadataKey]: {
      ...(usage.costUsd === undefined ? {} : { costUsd: usage.costUsd }),
      ...(toolErrors.length === 0 ? {} : { toolErrors }),
      ...(interrupted === undefined ? {} : { interrupted }),
      ...(approval === undefined ? {} : { approval })
    }
  }
})

type ApprovalMetadata = {
  readonly approvalId: string
  readonly sessionId: string
  readonly conversationId?: string
}

const needsApproval = (tool: AiTool.Any): boolean => tool.needsApproval !== undefined && tool.needsApproval !== false

// Type aliases, not interfaces, so that they are assignable to `Json` metadata.
type InterruptedMetadata = {
  readonly terminalReason?: string
  readonly tools: ReadonlyArray<{ readonly id: string; readonly name: string; readonly isError?: boolean }>
}

const interruptedMetadata = (reason: Interrupted): InterruptedMetadata => ({
  ...(reason.terminalReason === undefined ? {} : { terminalReason: reason.terminalReason }),
  tools: reason.tools.map((tool) => ({
    id: tool.id,
    name: tool.name,
    ...(tool.isError === undefined ? {} : { isError: tool.isError })
  }))
})

type ToolError = {
  readonly id: string
  readonly name: string
  readonly message: string
}

/**
 * Turns ChatEvents into `effect/ai` stream parts: text blocks, provider-executed tool calls and
 * results of the toolkit's tools, and a finish part with the summed usage.
 *
 * @category constructors
 * @since 1.0.0
 */
export const makeTranslator = (tools: ReadonlyArray<AiTool.Any>) => {
  const byName = new Map(tools.map((tool) => [tool.name, tool]))
  const reported = new Set<string>()
  const held = new Map<string, Response.ToolCallPartEncoded>()
  const toolErrors: Array<ToolError> = []
  let usage = Usage.empty
  let textId: string | undefined
  let blocks = 0
  const closeText = (): Array<Response.StreamPartEncoded> => {
    if (textId === undefined) return []
    const id = textId
    textId = undefined
    return [{ type: "text-end", id }]
  }
  /** The `tool-result` part of a toolkit tool's call, or none when its result does not decode. */
  const toolResult = (tool: AiTool.Any, event: ToolCallEnd): ReadonlyArray<Response.StreamPartEncoded> => {
    const payload = event.isError
      ? (tool.failureMode === "return" && event.result.startsWith("Error: ")
        ? parseJson(event.result.slice("Error: ".length))
        : Result.failVoid)
      : parseJson(event.result)
    const result = Result.flatMap(
      payload,
      (value) => encodedResult(event.isError ? tool.failureSchema : tool.successSchema, value)
    )
    if (Result.isFailure(result)) {
      toolErrors.push({ id: event.id, name: event.name, message: event.result })
      return []
    }
    return [{
      type: "tool-result",
      id: event.id,
      name: event.name,
      result: result.success,
      isFailure: event.isError,
      providerExecuted: true
    }]
  }
  const translate = (event: ChatEvent): ReadonlyArray<Response.StreamPartEncoded> => {
    switch (event._tag) {
      case "TextDelta": {
        if (event.text === "") return []
        const start: Array<Response.StreamPartEncoded> = []
        if (textId === undefined) {
          textId = `text-${blocks++}`
          start.push({ type: "text-start", id: textId })
        }
        return [...start, { type: "text-delta", id: textId, delta: event.text }]
      }
      case "ToolCallStart": {
        const tool = byName.get(event.name)
        if (tool === undefined) return []
        if (!paramsDecode(tool, event.arguments)) {
          toolErrors.push({ id: event.id, name: event.name, message: "arguments did not decode" })
          return []
        }
        reported.add(event.id)
        const call: Response.ToolCallPartEncoded = {
          type: "tool-call",
          id: event.id,
          name: event.name,
          params: event.arguments,
          providerExecuted: true
        }
        // A call that may wait for an approval is told only once it ran (or as the parked call).
        if (needsApproval(tool)) {
          held.set(event.id, call)
          return closeText()
        }
        return [...closeText(), call]
      }
      case "ToolCallEnd": {
        const tool = byName.get(event.name)
        if (tool === undefined || !reported.has(event.id)) return []
        const call = held.get(event.id)
        held.delete(event.id)
        return [...(call === undefined ? [] : [call]), ...toolResult(tool, event)]
      }
      case "Usage":
        usage = Usage.add(usage, event.usage)
        return []
      case "Complete":
        return [...closeText(), finishPart(usage, toolErrors)]
      default:
        // Event kinds added later carry nothing effect/ai has a part for.
        return []
    }
  }
  return Object.assign(translate, {
    /**
     * The parts that end a stream whose turn was stopped (`ClaudeLive.interrupt`): the open text
     * block closed, then a finish part with reason `other`, `usage` (what the client counted, the
     * stopped turn included) and the stop in its metadata (`interrupted`: the CLI's
     * `terminalReason` and the tool calls it made). Since 2.1.0.
     */
    interrupted: (reason: Interrupted, counted: Usage): ReadonlyArray<Response.StreamPartEncoded> => [
      ...closeText(),
      finishPart(counted, toolErrors, interruptedMetadata(reason))
    ],
    /**
     * The parts that end a stream whose turn parked a call (`ApprovalRequired`): the call as a
     * `tool-call` for `effect/ai` to run (not provider-executed: its `needsApproval` makes
     * `effect/ai` ask for a `tool-approval-request` first), then a finish part with reason
     * `tool-calls` and the parked approval in its metadata (`approval`). Since 2.2.0.
     */
    parked: (reason: ApprovalRequired, counted: Usage): ReadonlyArray<Response.StreamPartEncoded> => {
      // The model's own tool use id when the stream showed the call, else the approval's id.
      const shown = [...held.values()].reverse().find((call) => call.name === reason.tool)
      held.clear()
      return [
        ...closeText(),
        {
          type: "tool-call",
          id: shown?.id ?? reason.approvalId,
          name: reason.tool,
          params: shown?.params ?? reason.input,
          providerExecuted: false
        },
        finishPart(counted, toolErrors, undefined, "tool-calls", {
          approvalId: reason.approvalId,
          sessionId: reason.sessionId,
          ...(reason.conversationId === undefined ? {} : { conversationId: reason.conversationId })
        })
      ]
    }
  })
}

/** Folds stream parts into the parts of a non-streaming response. */
export const collectParts = (parts: Iterable<Response.StreamPartEncoded>): Array<Response.PartEncoded> => {
  const out: Array<Response.PartEncoded> = []
  const open = new Map<string, string>()
  for (const part of parts) {
    switch (part.type) {
      case "text-start":
        open.set(part.id, "")
        break
      case "text-delta":
        open.set(part.id, (open.get(part.id) ?? "") + part.delta)
        break
      case "text-end":
        out.push({ type: "text", text: open.get(part.id) ?? "" })
        open.delete(part.id)
        break
      case "tool-call":
      case "tool-result":
      case "finish":
        out.push(part)
        break
      default:
        break
    }
  }
  return out
}

/**
 * The toolkit's tools, with handlers from the calling context, as tools for `setTools`. Fails
 * with `InvalidRequestError` for provider-defined tools, `needsApproval`, bad names and missing
 * handlers.
 */
