/**
 * Structured answers (`ask`): the JSON Schema a provider is given for an Effect Schema, and the
 * decoding of the model's answer with it. Shared by the tool loop, the Claude providers and the
 * cluster's `ClaudeConversation` client.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as SchemaAST from "effect/SchemaAST"
import { StructuredOutputError } from "../../services/ChatClient.ts"
import type { ResponseFormat } from "../../services/ModelTurn.ts"
import type * as Tool from "../../services/Tool.ts"
import * as ParseErrorText from "./parseErrorText.ts"
import * as ToolJsonSchema from "./toolJsonSchema.ts"

const MaxAnswerPreview = 2_000

/**
 * Turns an Effect Schema into the object-rooted JSON Schema every provider accepts for structured
 * answers; `wrapped` tells whether the answer sits under `value`.
 */
export const responseFormatFor = (
  schema: Schema.Top
): Effect.Effect<{ readonly format: ResponseFormat; readonly wrapped: boolean }, StructuredOutputError> =>
  Effect.try({
    try: () => {
      const opaque = opaqueDeclaration(schema.ast)
      if (opaque !== undefined) throw new Error(`${opaque} has no JSON form (give it a \`toCodecJson\` annotation)`)
      const json = inlineRootRef(ToolJsonSchema.fromSchema(schema) as Record<string, unknown>)
      if (json["type"] === "object") {
        return { format: { name: "answer", schema: json as Tool.JsonSchemaObject }, wrapped: false }
      }
      const { $defs, ...inner } = json
      const wrappedSchema: Tool.JsonSchemaObject = {
        type: "object",
        properties: { value: inner },
        required: ["value"],
        additionalProperties: false,
        ...($defs === undefined ? {} : { $defs })
      }
      return { format: { name: "answer", schema: wrappedSchema }, wrapped: true }
    },
    catch: (e) =>
      new StructuredOutputError({
        message: `The schema cannot be expressed as JSON Schema: ${e instanceof Error ? e.message : String(e)}`,
        answer: ""
      })
  })

/**
 * Effect 4 renders a declaration it has no JSON codec for (`Schema.declare` without a
 * `toCodecJson` annotation) as "any JSON", which no answer can then decode into; v3's generator
 * refused such schemas, and so does `ask` before any request. Returns the offending node's name.
 */
const opaqueDeclaration = (ast: SchemaAST.AST, seen = new Set<SchemaAST.AST>()): string | undefined => {
  if (seen.has(ast)) return undefined
  seen.add(ast)
  const first = (nodes: ReadonlyArray<SchemaAST.AST>) => {
    for (const node of nodes) {
      const found = opaqueDeclaration(node, seen)
      if (found !== undefined) return found
    }
    return undefined
  }
  switch (ast._tag) {
    case "Declaration":
      return ast.annotations?.["toCodecJson"] === undefined && ast.encoding === undefined
        ? String(ast.annotations?.["expected"] ?? ast.annotations?.["identifier"] ?? "a declared type")
        : first(ast.typeParameters)
    case "Objects":
      return first([...ast.propertySignatures.map((p) => p.type), ...ast.indexSignatures.map((i) => i.type)])
    case "Arrays":
      return first([...ast.elements, ...ast.rest])
    case "Union":
      return first(ast.types)
    case "Suspend":
      return opaqueDeclaration(ast.thunk(), seen)
    default:
      return undefined
  }
}

/**
 * A `Schema.Class` (or any schema with an identifier) renders as `{ $ref, $defs }`; providers want
 * the object itself at the root, so the referenced definition is inlined there.
 */
const inlineRootRef = (json: Record<string, unknown>): Record<string, unknown> => {
  const ref = json["$ref"]
  const defs = json["$defs"] as Record<string, Record<string, unknown>> | undefined
  if (typeof ref !== "string" || !ref.startsWith("#/$defs/") || defs === undefined) return json
  const target = defs[ref.slice("#/$defs/".length)]
  if (target === undefined) return json
  const { $ref: _ref, $defs: _defs, ...rest } = json
  return { ...rest, ...target, $defs: defs }
}

/** Decodes a structured answer (given as a value, or as JSON text) with `schema`. */
export const decodeAnswer = <A, I>(
  schema: Schema.Codec<A, I>,
  raw: { readonly structured?: unknown; readonly text: string },
  wrapped: boolean
): Effect.Effect<A, StructuredOutputError> => {
  const preview = raw.text.length > MaxAnswerPreview ? `${raw.text.slice(0, MaxAnswerPreview)}…` : raw.text
  return Effect.gen(function*() {
    let value: unknown = raw.structured
    if (value === undefined) {
      value = yield* Effect.try({
        try: () => JSON.parse(stripFence(raw.text)) as unknown,
        catch: () => new StructuredOutputError({ message: "The answer is not JSON", answer: preview })
      })
    }
    if (wrapped) {
      if (typeof value !== "object" || value === null || !("value" in value)) {
        return yield* new StructuredOutputError({ message: "The answer has no `value` field", answer: preview })
      }
      value = value.value
    }
    // The JSON codec of the schema: the JSON Schema the model was given describes its encoded side.
    return yield* Schema.decodeUnknownEffect(Schema.toCodecJson(schema))(value, ParseErrorText.parseOptions).pipe(
      Effect.mapError((error) =>
        new StructuredOutputError({
          message: `The answer does not match the schema: ${ParseErrorText.format(error)}`,
          answer: preview
        })
      )
    )
  })
}

// Models sometimes wrap JSON in a markdown fence even when asked not to.
const stripFence = (text: string): string => {
  const m = /^\s*```(?:json)?\s*\n([\s\S]*?)\n\s*```\s*$/.exec(text)
  return m ? m[1]! : text
}
