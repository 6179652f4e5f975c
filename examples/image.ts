/**
 * Sends an image to a model and asks what it shows. Runs offline on the Scripted model (which
 * really decodes the PNG it is given) unless a real provider is chosen (see README):
 *
 *   npx tsx examples/image.ts                      # a generated PNG, offline
 *   npx tsx examples/image.ts photo.jpg            # your own image (PNG, JPEG, GIF or WebP)
 *   AI_PROVIDER=anthropic npx tsx examples/image.ts photo.jpg   # or openai, gemini, claude-local, claude-agent
 */
import { Console, Data, Effect, Layer } from "effect"
import { readFileSync } from "node:fs"
import { extname } from "node:path"
import { deflateSync, inflateSync } from "node:zlib"
import { ClaudeAgent } from "../src/claude-agent.ts"
import { ChatClient, ClaudeLocal, Content, Scripted } from "../src/index.ts"
import { exampleClaudeBinary, providerFromEnv, runExample } from "./support/providers.ts"

// --- A tiny PNG encoder/decoder (solid RGB images), so the example needs no image file. ---

const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  return c >>> 0
})
const crc32 = (bytes: Uint8Array) => {
  let c = 0xffffffff
  for (const b of bytes) c = crcTable[(c ^ b) & 0xff]! ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}
const chunk = (type: string, data: Uint8Array) => {
  const out = Buffer.alloc(12 + data.length)
  out.writeUInt32BE(data.length, 0)
  out.write(type, 4, "latin1")
  Buffer.from(data).copy(out, 8)
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length)
  return out
}

/** A solid-colour PNG of `width` × `height`. */
const solidPng = (width: number, height: number, [r, g, b]: readonly [number, number, number]) => {
  const header = Buffer.alloc(13)
  header.writeUInt32BE(width, 0)
  header.writeUInt32BE(height, 4)
  header.set([8, 2, 0, 0, 0], 8) // 8-bit RGB, no interlace
  const row = [0, ...Array.from({ length: width }, () => [r, g, b]).flat()]
  const pixels = Buffer.from(Array.from({ length: height }, () => row).flat())
  return new Uint8Array(Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(pixels)),
    chunk("IEND", new Uint8Array())
  ]))
}

/** Size and first pixel of an 8-bit RGB PNG, or undefined for anything else. */
const describePng = (bytes: Buffer) => {
  if (bytes.readUInt32BE(0) !== 0x89504e47 || bytes[25] !== 2) return undefined
  const width = bytes.readUInt32BE(16)
  const height = bytes.readUInt32BE(20)
  const idat: Array<Buffer> = []
  for (let at = 8; at < bytes.length;) {
    const length = bytes.readUInt32BE(at)
    if (bytes.toString("latin1", at + 4, at + 8) === "IDAT") idat.push(bytes.subarray(at + 8, at + 8 + length))
    at += 12 + length
  }
  const [, r, g, b] = inflateSync(Buffer.concat(idat))
  const hex = [r!, g!, b!].map((v) => v.toString(16).padStart(2, "0")).join("")
  return { width, height, colour: `#${hex}` }
}

// --- The offline model: it looks at the image it was sent. ---

const offlineModel = Scripted.layer({
  respond: ({ history }) =>
    Effect.sync(() => {
      const last = history.at(-1)
      const image = last?.role === "user" ? last.parts?.find((p) => p.type === "image") : undefined
      if (image === undefined || image.source.type !== "base64") return Scripted.text("I was not shown an image.")
      const png = image.source.mediaType === "image/png"
        ? describePng(Buffer.from(image.source.data, "base64"))
        : undefined
      return Scripted.text(
        png === undefined
          ? `An ${image.source.mediaType} image I cannot decode offline.`
          : `A ${png.width}×${png.height} image, solid ${png.colour}.`
      )
    })
})

// --- The program: provider-agnostic, it only needs a ChatClient. ---

const mediaTypes: Record<string, string> = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp"
}

class ImageFileError
  extends Data.TaggedError("ImageFileError")<{ readonly message: string; readonly cause: unknown }>
{}

const file = process.argv[2]
// Read inside the program: a missing file is then one `error: …` line, like any other failure.
const readImage = Effect.try({
  try: () =>
    file === undefined
      ? Content.image(solidPng(64, 48, [224, 60, 49]), "image/png")
      : Content.image(readFileSync(file), mediaTypes[extname(file).toLowerCase()] ?? "application/octet-stream"),
  catch: (cause) =>
    new ImageFileError({
      message: `cannot read the image ${JSON.stringify(file)}: pass a PNG, JPEG, GIF or WebP file`,
      cause
    })
})

const program = Effect.gen(function*() {
  const chat = yield* ChatClient.ChatClient
  const image = yield* readImage
  const question = "What does this image show? Answer in one sentence."
  yield* Console.log(`you: ${question} [${file ?? "a generated 64×48 PNG"}]`)
  const answer = yield* chat.chat([Content.text(question), image])
  yield* Console.log(`model: ${answer}`)
}).pipe(
  // A media type or size the provider does not take is refused before any request.
  Effect.catchTag("UnsupportedContentError", (e) => Console.error(`not sent (${e.reason._tag}): ${e.message}`))
)

const provider = providerFromEnv({
  scripted: { name: "scripted (offline)", layer: offlineModel },
  claudeLocal: {
    name: `claude-local (the claude CLI at ${exampleClaudeBinary()})`,
    layer: Layer.orDie(ClaudeLocal.layerFromEnv({ binary: exampleClaudeBinary() }))
  },
  claudeAgent: { name: "claude-agent (the Claude Agent SDK)", layer: Layer.orDie(ClaudeAgent.layerFromEnv()) }
})
console.log(`provider: ${provider.name}`)
program.pipe(Effect.provide(provider.layer), runExample)
