/**
 * The JSON Schema of a tool's arguments, in the shape the model APIs (Anthropic, OpenAI, Gemini)
 * and MCP clients accept. Effect 4's `Schema.toJsonSchemaDocument` describes the encoded side of
 * `Schema.toCodecJson(schema)`; this module tidies that document and the tool decodes arguments with
 * that same codec, so a model that follows the advertised schema never gets a decode error.
 *
 * What changes against the raw document (see docs/effect4.md, "Decisions"):
 * - the root is the document's `schema` with `type: "object"`; its `definitions` become `$defs`
 *   (the `$ref`s already point there); no `dialect` / `$schema` member;
 * - `Number`'s `anyOf[number, "Infinity" | "-Infinity" | "NaN"]` becomes plain `number` (the codec
 *   still accepts the three strings, the model is just not told about them);
 * - an optional property's `anyOf[T, null]` becomes `T` (the codec still accepts `null`); a
 *   required `NullOr` keeps its `null`;
 * - every object with `properties` gets `additionalProperties: false` (unknown keys are still
 *   ignored by the decoder); records keep their value schema;
 * - `integer`'s implicit safe-integer bounds (`±(2^53 - 1)`) are dropped;
 * - a property whose field schema carries a `description` (or `title`) the generator lost (it
 *   drops annotations of nodes it lowers through a transformation, e.g. `Number`) gets it back.
 */
import * as Schema from "effect/Schema"

/** A JSON Schema document, as plain data. */
export type JsonSchema = { readonly [key: string]: unknown }

/** A JSON Schema whose root describes an object, which is what every provider and MCP require. */
export type JsonSchemaObject = { readonly type: "object"; readonly [key: string]: unknown }

interface Node {
  type?: unknown
  enum?: unknown
  anyOf?: unknown
  required?: unknown
  properties?: unknown
  additionalProperties?: unknown
  maximum?: unknown
  minimum?: unknown
  title?: unknown
  description?: unknown
  [key: string]: unknown
}

const isNode = (u: unknown): u is Node => typeof u === "object" && u !== null && !Array.isArray(u)

const isNonFiniteNumberString = (u: unknown): boolean =>
  isNode(u) && u.type === "string" && Array.isArray(u.enum) &&
  u.enum.every((v) => v === "Infinity" || v === "-Infinity" || v === "NaN")

const isNull = (u: unknown): boolean => isNode(u) && u.type === "null" && Object.keys(u).length === 1

/** Replaces a one-member `anyOf` by its member, keeping the outer node's other keys. */
const collapse = (node: Node, members: ReadonlyArray<unknown>): Node => {
  const { anyOf: _anyOf, ...rest } = node
  if (members.length === 1 && isNode(members[0])) return { ...members[0], ...rest }
  return { ...rest, anyOf: members }
}

const tidy = (u: unknown, optional = false): unknown => {
  if (Array.isArray(u)) return u.map((v) => tidy(v))
  if (!isNode(u)) return u
  let node: Node = {}
  for (const [key, value] of Object.entries(u)) {
    if (key === "properties" && isNode(value)) {
      const required = new Set(Array.isArray(u.required) ? u.required : [])
      node[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, tidy(v, !required.has(k))]))
    } else {
      node[key] = tidy(value)
    }
  }
  if (Array.isArray(node.anyOf)) {
    let members: ReadonlyArray<unknown> = node.anyOf
    // Number: drop the branch for the non-finite strings.
    if (members.some((m) => isNode(m) && m.type === "number")) {
      members = members.filter((m) => !isNonFiniteNumberString(m))
    }
    // An optional key: the model leaves it out instead of sending null.
    if (optional) {
      const present = members.filter((m) => !isNull(m))
      members = present.length > 0 ? present : members.slice(0, 1)
    }
    if (members.length !== node.anyOf.length) node = collapse(node, members)
  }
  if (node.type === "integer") {
    if (node.maximum === Number.MAX_SAFE_INTEGER) delete node.maximum
    if (node.minimum === Number.MIN_SAFE_INTEGER) delete node.minimum
  }
  if (node.type === "object" && isNode(node.properties) && node.additionalProperties === true) {
    node.additionalProperties = false
  }
  return node
}

/** Restores field-level `description` / `title` annotations the generator dropped. */
const restoreAnnotations = (schema: Node, fields: Schema.Struct.Fields): Node => {
  if (!isNode(schema.properties)) return schema
  const properties: Node = { ...schema.properties }
  for (const [key, field] of Object.entries(fields)) {
    const property = properties[key]
    if (!isNode(property)) continue
    const annotations = field.ast.annotations ?? {}
    const restored: Node = { ...property }
    for (const name of ["title", "description"] as const) {
      const value = annotations[name]
      if (typeof value === "string" && restored[name] === undefined) restored[name] = value
    }
    properties[key] = restored
  }
  return { ...schema, properties }
}

/**
 * The JSON Schema sent to models for a tool whose arguments are `Schema.Struct(fields)`. Decode
 * the arguments with `Schema.toCodecJson(Schema.Struct(fields))`: that is the codec it describes.
 */
export const fromFields = (fields: Schema.Struct.Fields): JsonSchemaObject => {
  // Effect renders an empty struct as "anything but null"; every tool input is an object.
  if (Object.keys(fields).length === 0) return { type: "object", properties: {}, additionalProperties: false }
  const document = Schema.toJsonSchemaDocument(Schema.Struct(fields))
  const root = restoreAnnotations(tidy(document.schema) as Node, fields)
  const definitions = tidy(document.definitions) as Node
  return {
    ...(Object.keys(definitions).length === 0 ? {} : { $defs: definitions }),
    ...root,
    type: "object"
  }
}

/**
 * The JSON Schema of any schema's JSON codec, tidied as for tools (plain `number`, closed objects,
 * optional keys without `null`), with its definitions under `$defs`. `ask` sends it as the answer's
 * shape; the root need not be an object.
 */
export const fromSchema = (schema: Schema.Top): JsonSchema => {
  const document = Schema.toJsonSchemaDocument(schema)
  const root = tidy(document.schema) as Node
  const definitions = tidy(document.definitions) as Node
  return { ...(Object.keys(definitions).length === 0 ? {} : { $defs: definitions }), ...root }
}
