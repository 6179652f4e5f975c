/**
 * The parts of `claude -p --output-format stream-json --verbose` output the library reads: the
 * `system/init` line (MCP server status) and the final `result` line. Unknown fields are ignored.
 */
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"

export const InitLine = Schema.Struct({
  type: Schema.Literal("system"),
  subtype: Schema.Literal("init"),
  session_id: Schema.optional(Schema.String),
  mcp_servers: Schema.optionalWith(
    Schema.Array(Schema.Struct({ name: Schema.String, status: Schema.String })),
    { default: () => [] }
  )
})
export type InitLine = typeof InitLine.Type

const Count = Schema.optionalWith(Schema.NullOr(Schema.Number), { default: () => 0 })

export const ResultUsage = Schema.Struct({
  input_tokens: Count,
  output_tokens: Count,
  cache_creation_input_tokens: Count,
  cache_read_input_tokens: Count
})

export const PermissionDenial = Schema.Struct({
  tool_name: Schema.String,
  tool_use_id: Schema.optional(Schema.String)
})

export const ResultLine = Schema.Struct({
  type: Schema.Literal("result"),
  subtype: Schema.optional(Schema.String),
  is_error: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  result: Schema.optionalWith(Schema.String, { default: () => "" }),
  session_id: Schema.optional(Schema.String),
  api_error_status: Schema.optional(Schema.NullOr(Schema.Number)),
  total_cost_usd: Schema.optional(Schema.NullOr(Schema.Number)),
  num_turns: Schema.optional(Schema.Number),
  usage: Schema.optional(ResultUsage),
  permission_denials: Schema.optionalWith(Schema.Array(PermissionDenial), { default: () => [] }),
  structured_output: Schema.optional(Schema.Unknown)
})
export type ResultLine = typeof ResultLine.Type

const decodeInit = Schema.decodeUnknownEither(InitLine)
const decodeResult = Schema.decodeUnknownEither(ResultLine)

export interface ParsedRun {
  readonly init: InitLine | undefined
  readonly result: ResultLine | undefined
  /** Lines that were not JSON at all (the CLI printing something unexpected). */
  readonly garbage: ReadonlyArray<string>
}

/** Reads the init and result lines out of the CLI's stdout. */
export const parseRun = (stdout: string): ParsedRun => {
  let init: InitLine | undefined
  let result: ResultLine | undefined
  const garbage: Array<string> = []
  for (const line of stdout.split("\n")) {
    const trimmed = line.trim()
    if (trimmed === "") continue
    let json: unknown
    try {
      json = JSON.parse(trimmed)
    } catch {
      garbage.push(trimmed)
      continue
    }
    if (init === undefined) {
      const i = decodeInit(json)
      if (Either.isRight(i)) {
        init = i.right
        continue
      }
    }
    const r = decodeResult(json)
    if (Either.isRight(r)) result = r.right
  }
  return { init, result, garbage }
}
