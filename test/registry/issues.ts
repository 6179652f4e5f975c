/**
 * How the registry tests read a `SchemaError`: Effect 4 has no `ArrayFormatter`/`TreeFormatter`;
 * its Standard Schema formatter gives the same `{ path, message }` list, its default formatter
 * the one-string message.
 */
import type * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"

const standard = SchemaIssue.makeFormatterStandardSchemaV1()

/** Every issue of the error as `{ path, message }`, paths as plain property keys. */
export const formatIssues = (e: Schema.SchemaError): ReadonlyArray<{ path: Array<PropertyKey>; message: string }> =>
  standard(e.issue).issues.map((i) => ({
    path: (i.path ?? []).map((p) => (typeof p === "object" ? p.key : p)),
    message: i.message
  }))

/** The error's whole message, as a settings screen or a log would show it. */
export const formatMessage = (e: Schema.SchemaError): string => e.message
