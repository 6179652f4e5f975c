/**
 * Every public error with sub-kinds follows effect's reason pattern: `Effect.catchReason` selects
 * each reason (checked by the type checker, a misspelt reason does not compile, and at run time),
 * `isRetryable` follows the documented table, the message is the reason's, and a Schema round
 * trip keeps the reason.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as ClaudeSessionStoreSql from "../../src/layers/ClaudeSessionStoreSql.ts"
import * as AgentSettings from "../../src/services/AgentSettings.ts"
import * as ClaudeSessionStore from "../../src/services/ClaudeSessionStore.ts"
import * as Content from "../../src/services/Content.ts"
import * as McpBridge from "../../src/services/McpBridge.ts"
import * as SecretFile from "../../src/services/SecretFile.ts"
import * as Subprocess from "../../src/services/Subprocess.ts"
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

describe("SubprocessError", () => {
  const command = "claude"
  const errors = {
    NotFound: new Subprocess.SubprocessError({
      command,
      reason: new Subprocess.NotFound({ message: "Command not found: claude" })
    }),
    SpawnFailed: new Subprocess.SubprocessError({
      command,
      reason: new Subprocess.SpawnFailed({ message: "Cannot run claude: EACCES" })
    }),
    Exited: new Subprocess.SubprocessError({
      command,
      reason: new Subprocess.Exited({
        exitCode: 137,
        signal: "SIGKILL",
        stdoutTail: "",
        stderrTail: "bad flag",
        message: "claude exited with code 137 (SIGKILL): bad flag"
      })
    }),
    TimedOut: new Subprocess.SubprocessError({
      command,
      reason: new Subprocess.TimedOut({
        timeoutMillis: 700,
        stderrTail: "",
        message: "claude did not finish within 700ms"
      })
    }),
    OutputTooLarge: new Subprocess.SubprocessError({
      command,
      reason: new Subprocess.OutputTooLarge({
        stream: "stderr",
        maxBytes: 10,
        message: "claude wrote more than 10 bytes"
      })
    })
  }
  const retryable: Record<keyof typeof errors, boolean> = {
    NotFound: false,
    SpawnFailed: false,
    Exited: false,
    TimedOut: true,
    OutputTooLarge: false
  }

  it("isRetryable: only TimedOut; the message is the reason's", () => {
    for (const [tag, error] of Object.entries(errors)) expectReason(error, tag, retryable[tag as keyof typeof errors])
  })

  it.effect("catchReason selects each reason, and Exited on what checkExit fails with", () =>
    Effect.gen(function*() {
      for (const tag of Object.keys(errors) as Array<keyof typeof errors>) {
        const caught = yield* Effect.fail(errors[tag]).pipe(
          Effect.catchReason("SubprocessError", tag, (reason) => Effect.succeed(reason._tag))
        )
        expect(caught).toBe(tag)
      }
      const exited = yield* Subprocess.checkExit({ command }, { exitCode: 2, stdout: "", stderr: "no such flag" }).pipe(
        Effect.catchReason(
          "SubprocessError",
          "Exited",
          (reason) => Effect.succeed([reason.exitCode, reason.stderrTail])
        )
      )
      expect(exited).toEqual([2, "no such flag"])
      const passed = yield* Effect.flip(
        Effect.fail(errors.TimedOut).pipe(Effect.catchReason("SubprocessError", "Exited", () => Effect.succeed(0)))
      )
      expect(passed.reason._tag).toBe("TimedOut")
      // @ts-expect-error a reason SubprocessError does not have does not compile
      Effect.fail(errors.Exited).pipe(Effect.catchReason("SubprocessError", "ExitError", () => Effect.void))
    }))

  it("a Schema round trip keeps the command and the reason", () => {
    for (const error of Object.values(errors)) {
      const back = roundTrip(Subprocess.SubprocessError, error)
      expect(back.command).toBe(command)
      expect(back.reason).toEqual(error.reason)
      expect(back.reason.constructor).toBe(error.reason.constructor)
    }
  })
})

describe("SessionStoreError", () => {
  const reasons = {
    StoreUnavailable: new ClaudeSessionStore.StoreUnavailable({ message: "did not answer append within 10s" }),
    StoreFailed: new ClaudeSessionStore.StoreFailed({ message: "no such table" }),
    CorruptTranscript: new ClaudeSessionStore.CorruptTranscript({ message: "an entry that is not JSON" }),
    SessionNotFound: new ClaudeSessionStore.SessionNotFound({ message: "Session s1 is in neither" }),
    EmptyTranscript: new ClaudeSessionStore.EmptyTranscript({ message: "no entries for session s1" }),
    InvalidSessionId: new ClaudeSessionStore.InvalidSessionId({ message: "\"../x\" is not a session id" }),
    NoSession: new ClaudeSessionStore.NoSession({ message: "no session yet" }),
    SessionFileFailed: new ClaudeSessionStore.SessionFileFailed({ message: "could not write the session file" })
  }
  type Tag = keyof typeof reasons
  const errorOf = (tag: Tag) =>
    new ClaudeSessionStore.SessionStoreError({ operation: "load", sessionId: "s1", reason: reasons[tag], answer: "a" })

  it("isRetryable: only StoreUnavailable; the message is the reason's", () => {
    for (const tag of Object.keys(reasons) as Array<Tag>) expectReason(errorOf(tag), tag, tag === "StoreUnavailable")
  })

  it.effect("catchReason selects each reason, and the other reasons pass", () =>
    Effect.gen(function*() {
      for (const tag of Object.keys(reasons) as Array<Tag>) {
        const caught = yield* Effect.fail(errorOf(tag)).pipe(
          Effect.catchReason("SessionStoreError", tag, (reason, error) => Effect.succeed([reason._tag, error.answer]))
        )
        expect(caught).toEqual([tag, "a"])
      }
      const passed = yield* Effect.flip(
        Effect.fail(errorOf("StoreFailed")).pipe(
          Effect.catchReason("SessionStoreError", "StoreUnavailable", () => Effect.succeed(0))
        )
      )
      expect(passed.reason._tag).toBe("StoreFailed")
      // @ts-expect-error a reason SessionStoreError does not have does not compile
      Effect.fail(errorOf("NoSession")).pipe(Effect.catchReason("SessionStoreError", "Timeout", () => Effect.void))
    }))

  it("a Schema round trip keeps operation, sessionId, answer and the reason", () => {
    for (const tag of Object.keys(reasons) as Array<Tag>) {
      const back = roundTrip(ClaudeSessionStore.SessionStoreError, errorOf(tag))
      expect([back.operation, back.sessionId, back.answer]).toEqual(["load", "s1", "a"])
      expect(back.reason).toEqual(reasons[tag])
      expect(back.reason.constructor).toBe(reasons[tag].constructor)
    }
  })
})

describe("AgentSettingsStorageError", () => {
  const unavailable = new AgentSettings.AgentSettingsStorageError({
    operation: "disable",
    reason: new AgentSettings.StorageUnavailable({ message: "database is locked" })
  })
  const failed = new AgentSettings.AgentSettingsStorageError({
    operation: "open",
    reason: new AgentSettings.StorageFailed({ message: "cannot open agents.sqlite" })
  })

  it("isRetryable: StorageUnavailable yes, StorageFailed no; the message is the reason's", () => {
    expectReason(unavailable, "StorageUnavailable", true)
    expectReason(failed, "StorageFailed", false)
  })

  it.effect("catchReason selects each reason", () =>
    Effect.gen(function*() {
      const fail = (error: AgentSettings.AgentSettingsStorageError) => Effect.fail(error)
      expect(
        yield* fail(unavailable).pipe(
          Effect.catchReason("AgentSettingsStorageError", "StorageUnavailable", (_, error) =>
            Effect.succeed(error.operation))
        )
      ).toBe("disable")
      expect(
        yield* fail(failed).pipe(
          Effect.catchReason("AgentSettingsStorageError", "StorageFailed", (reason) =>
            Effect.succeed(reason.message))
        )
      ).toBe("cannot open agents.sqlite")
      const passed = yield* Effect.flip(
        fail(failed).pipe(Effect.catchReason("AgentSettingsStorageError", "StorageUnavailable", () =>
          Effect.void))
      )
      expect(passed.reason._tag).toBe("StorageFailed")
      // @ts-expect-error a reason AgentSettingsStorageError does not have does not compile
      fail(failed).pipe(Effect.catchReason("AgentSettingsStorageError", "Busy", () => Effect.void))
    }))

  it("a Schema round trip keeps the operation and the reason; CorruptedSettingsError's free text is detail", () => {
    for (const error of [unavailable, failed]) {
      const back = roundTrip(AgentSettings.AgentSettingsStorageError, error)
      expect(back.operation).toBe(error.operation)
      expect(back.reason).toEqual(error.reason)
      expect(back.reason.constructor).toBe(error.reason.constructor)
    }
    const corrupted = new AgentSettings.CorruptedSettingsError({ agentId: "a", detail: "not an array" })
    expect(corrupted.message).toBe("stored settings of agent \"a\" are corrupted: not an array")
    expect(roundTrip(AgentSettings.CorruptedSettingsError, corrupted).detail).toBe("not an array")
  })
})

describe("UnsupportedContentError", () => {
  const reasons = {
    MediaType: new Content.MediaType({ message: "openai does not take images of type \"image/bmp\"" }),
    TooLarge: new Content.TooLarge({ message: "The image is 21.0 MB, over the limit" }),
    Url: new Content.Url({ message: "gemini cannot fetch image URLs" }),
    Document: new Content.Document({ message: "openai has no document input" }),
    InvalidData: new Content.InvalidData({ message: "The image is not base64" })
  }
  type Tag = keyof typeof reasons
  const errorOf = (tag: Tag) => new Content.UnsupportedContentError({ provider: "openai", reason: reasons[tag] })

  it("isRetryable: no reason is retryable; the message is the reason's", () => {
    for (const tag of Object.keys(reasons) as Array<Tag>) expectReason(errorOf(tag), tag, false)
  })

  it.effect("catchReason selects each reason", () =>
    Effect.gen(function*() {
      for (const tag of Object.keys(reasons) as Array<Tag>) {
        const caught = yield* Effect.fail(errorOf(tag)).pipe(
          Effect.catchReason("UnsupportedContentError", tag, (reason, error) =>
            Effect.succeed([reason._tag, error.provider]))
        )
        expect(caught).toEqual([tag, "openai"])
      }
      const passed = yield* Effect.flip(
        Effect.fail(errorOf("Url")).pipe(Effect.catchReason("UnsupportedContentError", "TooLarge", () =>
          Effect.void))
      )
      expect(passed.reason._tag).toBe("Url")
      // @ts-expect-error a reason UnsupportedContentError does not have does not compile
      Effect.fail(errorOf("Url")).pipe(Effect.catchReason("UnsupportedContentError", "URL", () =>
        Effect.void))
    }))

  it("a Schema round trip keeps the provider and the reason", () => {
    for (const tag of Object.keys(reasons) as Array<Tag>) {
      const back = roundTrip(Content.UnsupportedContentError, errorOf(tag))
      expect(back.provider).toBe("openai")
      expect(back.reason).toEqual(reasons[tag])
      expect(back.reason.constructor).toBe(reasons[tag].constructor)
    }
  })
})

describe("SessionStoreSetupError", () => {
  const errorOf = (reason: ClaudeSessionStoreSql.SessionStoreSetupErrorReason) =>
    new ClaudeSessionStoreSql.SessionStoreSetupError({ stage: "migrate", reason })
  const unavailable = errorOf(new ClaudeSessionStore.StoreUnavailable({ message: "connection refused" }))
  const failed = errorOf(new ClaudeSessionStore.StoreFailed({ message: "permission denied for schema public" }))

  it("isRetryable: StoreUnavailable yes, StoreFailed no; the message is the reason's", () => {
    expectReason(unavailable, "StoreUnavailable", true)
    expectReason(failed, "StoreFailed", false)
  })

  it.effect("catchReason selects each reason; a Schema round trip keeps stage and reason", () =>
    Effect.gen(function*() {
      for (const error of [unavailable, failed]) {
        const caught = yield* Effect.fail(error).pipe(
          Effect.catchReason(
            "SessionStoreSetupError",
            error.reason._tag,
            (reason, e) => Effect.succeed([reason._tag, e.stage])
          )
        )
        expect(caught).toEqual([error.reason._tag, "migrate"])
        const back = roundTrip(ClaudeSessionStoreSql.SessionStoreSetupError, error)
        expect([back.stage, back.reason]).toEqual(["migrate", error.reason])
        expect(back.reason.constructor).toBe(error.reason.constructor)
      }
      // @ts-expect-error a reason SessionStoreSetupError does not have does not compile
      Effect.fail(failed).pipe(Effect.catchReason("SessionStoreSetupError", "MigrationFailed", () => Effect.void))
    }))
})
