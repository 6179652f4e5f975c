/**
 * The text of a Schema decode or encode failure as the model sees it in a tool's error result.
 * Effect 3's tree formatter said `Expected number, actual "two"` under the path; Effect 4's default
 * formatter says `Expected number` and the path, and leaves the actual value out unless the parse
 * ran with `reportInput: true`. This keeps the Effect 3 information: one line per issue with the
 * message, the actual value (`actual …`) and the path (`at ["a"]["b"][0]`).
 */
import type * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"

/** Parse options for a decode whose failure is formatted here: every issue, with its input. */
export const parseOptions = { errors: "all", reportInput: true } as const

const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.map((key) => typeof key === "number" ? `[${key}]` : `[${JSON.stringify(String(key))}]`).join("")

const standard = SchemaIssue.makeFormatterStandardSchemaV1()

interface Line {
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

// The JSON codec decodes `Number` from `number | "Infinity" | "-Infinity" | "NaN"`; when neither
// matches, Effect reports the string literals, which tells a model nothing. Report the number.
const isNumberCodecMiss = (issue: SchemaIssue.Issue): issue is SchemaIssue.Encoding =>
  issue._tag === "Encoding" && issue.ast._tag === "Number" && issue.issue._tag === "AnyOf"

const lines = (issue: SchemaIssue.Issue, path: ReadonlyArray<PropertyKey>): ReadonlyArray<Line> => {
  switch (issue._tag) {
    case "Pointer":
      return lines(issue.issue, [...path, ...issue.path])
    case "Composite":
      return issue.issues.flatMap((inner) => lines(inner, path))
    case "AnyOf":
      if (issue.issues.length > 0) return issue.issues.flatMap((inner) => lines(inner, path))
      break
    case "Encoding":
      if (isNumberCodecMiss(issue)) {
        return lines(new SchemaIssue.InvalidType(issue.ast, issue.input, parseOptions), path)
      }
      break
  }
  return standard(issue).issues.map(({ message, path: inner }) => ({
    message,
    path: [...path, ...(inner ?? []).map((p) => typeof p === "object" ? p.key : p)]
  }))
}

/**
 * One line per issue: `<message>` or `<message> at <path>`; Effect's `, got <input>` reads
 * `, actual <input>` as in Effect 3.
 */
export const format = (error: Schema.SchemaError | SchemaIssue.Issue): string => {
  const issue = SchemaIssue.isIssue(error) ? error : error.issue
  return lines(issue, []).map(({ message, path }) => {
    const text = message.startsWith("Expected ") ? message.replace(", got ", ", actual ") : message
    return path.length === 0 ? text : `${text} at ${formatPath(path)}`
  }).join("\n")
}
