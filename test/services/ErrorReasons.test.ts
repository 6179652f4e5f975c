/**
 * Every public error with sub-kinds follows effect's reason pattern: `Effect.catchReason` selects
 * each reason (checked by the type checker, a misspelt reason does not compile, and at run time),
 * `isRetryable` follows the documented table, the message is the reason's, and a Schema round
 * trip keeps the reason.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as McpBridge from "../../src/services/McpBridge.ts"
import * as SecretFile from "../../src/services/SecretFile.ts"
import * as Tool from "../../src/services/Tool.ts"

/** Encodes to JSON-safe data and back, as an error crossing a process (the cluster) would. */
const roundTrip = <S extends Schema.Codec<unknown, unknown>>(schema: S, value: S["Type"]): S["Type"] => {
  const codec = Schema.toCodecJson(schema)
  return Schema.decodeUnknownSync(codec)(JSON.parse(JSON.stringify(Schema.encodeSync(codec)(value))))
}

/** The reason's tag, its `isRetryable`, and that the error's own message and retryability are the reason's. */
const expectReason = (
  error: { readonly reason: { readonly _tag: string; readonly isRetryable: boolean; readonly message: string } } & {
    readonly isRetryable: boolean
    readonly message: string
  },
  tag: string,
  retryable: boolean
) => {
  expect(error.reason._tag).toBe(tag)
  expect(error.reason.isRetryable).toBe(retryable)
  expect(error.isRetryable).toBe(retryable)
  expect(error.message).toBe(error.reason.message)
}

describe("McpBridgeError", () => {
  const invalid = new McpBridge.McpBridgeError({
    reason: new McpBridge.InvalidOptions({ option: "serverName", message: "serverName must match" })
  })
  const bind = new McpBridge.McpBridgeError({
    reason: new McpBridge.BindFailed({ host: "127.0.0.1", port: 0, message: "Cannot listen: EMFILE" })
  })

  it("isRetryable: InvalidOptions no, BindFailed yes; the message is the reason's", () => {
    expectReason(invalid, "InvalidOptions", false)
    expectReason(bind, "BindFailed", true)
  })

  it.effect("catchReason selects each reason and lets the other through", () =>
    Effect.gen(function*() {
      const fail = (error: McpBridge.McpBridgeError) => Effect.fail(error)
      const option = yield* fail(invalid).pipe(
        Effect.catchReason("McpBridgeError", "InvalidOptions", (reason) => Effect.succeed(reason.option))
      )
      expect(option).toBe("serverName")
      const port = yield* fail(bind).pipe(
        Effect.catchReason("McpBridgeError", "BindFailed", (reason) => Effect.succeed(reason.port))
      )
      expect(port).toBe(0)
      const passed = yield* Effect.flip(
        fail(bind).pipe(Effect.catchReason("McpBridgeError", "InvalidOptions", () => Effect.succeed("caught")))
      )
      expect(passed.reason._tag).toBe("BindFailed")
      // @ts-expect-error a reason McpBridgeError does not have does not compile
      fail(bind).pipe(Effect.catchReason("McpBridgeError", "BindFail", () => Effect.void))
    }))

  it("a Schema round trip keeps the reason and its fields", () => {
    for (const error of [invalid, bind]) {
      const back = roundTrip(McpBridge.McpBridgeError, error)
      expect(back).toBeInstanceOf(McpBridge.McpBridgeError)
      expect(back.reason).toEqual(error.reason)
      expect(back.reason.constructor).toBe(error.reason.constructor)
      expect(back.message).toBe(error.message)
    }
  })
})

describe("SecretFileError", () => {
  const errors = {
    CreateDirectory: new SecretFile.SecretFileError({
      reason: new SecretFile.CreateDirectory({ path: "/nope", message: "Could not create a secret directory in /nope" })
    }),
    Write: new SecretFile.SecretFileError({
      reason: new SecretFile.Write({ path: "/tmp/d/secret", message: "Could not write secret file /tmp/d/secret" })
    }),
    InsecureMode: new SecretFile.SecretFileError({
      reason: new SecretFile.InsecureMode({
        path: "/tmp/d/secret",
        mode: 0o644,
        expected: 0o600,
        message: "Secret file has mode 644, expected 600"
      })
    })
  }

  it("isRetryable: no reason is retryable; the message is the reason's", () => {
    for (const [tag, error] of Object.entries(errors)) expectReason(error, tag, false)
  })

  it.effect("catchReason selects each reason", () =>
    Effect.gen(function*() {
      const fail = (error: SecretFile.SecretFileError) => Effect.fail(error)
      expect(
        yield* fail(errors.CreateDirectory).pipe(
          Effect.catchReason("SecretFileError", "CreateDirectory", (reason) => Effect.succeed(reason.path))
        )
      ).toBe("/nope")
      expect(
        yield* fail(errors.Write).pipe(
          Effect.catchReason("SecretFileError", "Write", (reason) => Effect.succeed(reason.path))
        )
      ).toBe("/tmp/d/secret")
      expect(
        yield* fail(errors.InsecureMode).pipe(
          Effect.catchReason("SecretFileError", "InsecureMode", (reason) => Effect.succeed(reason.mode))
        )
      ).toBe(0o644)
      const passed = yield* Effect.flip(
        fail(errors.Write).pipe(Effect.catchReason("SecretFileError", "InsecureMode", () => Effect.succeed(0)))
      )
      expect(passed.reason._tag).toBe("Write")
      // @ts-expect-error a reason SecretFileError does not have does not compile
      fail(errors.Write).pipe(Effect.catchReason("SecretFileError", "WriteFailed", () => Effect.void))
    }))

  it("a Schema round trip keeps the reason and its fields", () => {
    for (const error of Object.values(errors)) {
      const back = roundTrip(SecretFile.SecretFileError, error)
      expect(back.reason).toEqual(error.reason)
      expect(back.reason.constructor).toBe(error.reason.constructor)
    }
  })
})

describe("ToolFailure", () => {
  const errors = {
    InvalidArguments: new Tool.ToolFailure({
      reason: new Tool.InvalidArguments({ message: "Invalid arguments for tool add: not JSON" })
    }),
    HandlerFailed: new Tool.ToolFailure({ reason: new Tool.HandlerFailed({ message: "disk full" }) }),
    UnencodableResult: new Tool.ToolFailure({
      reason: new Tool.UnencodableResult({ message: "Tool big returned a result that cannot be encoded as JSON" })
    })
  }

  it("isRetryable: no reason is retryable; the message is the reason's", () => {
    for (const [tag, error] of Object.entries(errors)) expectReason(error, tag, false)
  })

  it.effect("catchReason selects each reason, on what a real tool fails with", () =>
    Effect.gen(function*() {
      const tool = Tool.make("half", {
        description: "Halves an even number",
        parameters: { n: Schema.Number },
        handler: ({ n }) => n % 2 === 0 ? Effect.succeed(n / 2) : Effect.fail(new Error(`${n} is odd`))
      })
      const huge = Tool.make("huge", {
        description: "Returns a value JSON cannot hold",
        parameters: {},
        handler: () => Effect.succeed(10n)
      })
      expect(
        yield* tool.run("{not json").pipe(
          Effect.catchReason("ToolFailure", "InvalidArguments", (reason) => Effect.succeed(reason.message))
        )
      ).toContain("Invalid arguments for tool half")
      expect(
        yield* tool.run({ n: 3 }).pipe(
          Effect.catchReason("ToolFailure", "HandlerFailed", (reason) => Effect.succeed(reason.message))
        )
      ).toBe("3 is odd")
      expect(
        yield* huge.run({}).pipe(
          Effect.catchReason("ToolFailure", "UnencodableResult", (reason) => Effect.succeed(reason._tag))
        )
      ).toBe("UnencodableResult")
      const passed = yield* Effect.flip(
        tool.run({ n: 3 }).pipe(Effect.catchReason("ToolFailure", "InvalidArguments", () => Effect.succeed(0)))
      )
      expect(passed.reason._tag).toBe("HandlerFailed")
      // @ts-expect-error a reason ToolFailure does not have does not compile
      tool.run({}).pipe(Effect.catchReason("ToolFailure", "HandlerFailure", () => Effect.void))
    }))

  it("a Schema round trip keeps the reason", () => {
    for (const error of Object.values(errors)) {
      const back = roundTrip(Tool.ToolFailure, error)
      expect(back.reason).toEqual(error.reason)
      expect(back.reason.constructor).toBe(error.reason.constructor)
    }
  })
})
