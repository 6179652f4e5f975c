/** Small real media for tests: a 1×1 PNG and a one-page PDF. */
import { Buffer } from "node:buffer"

/** A valid 1×1 red PNG. */
export const pngBase64 =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
/** Its bytes. */
export const pngBytes = new Uint8Array(Buffer.from(pngBase64, "base64"))

/** A minimal one-page PDF. */
export const pdfBytes = new Uint8Array(Buffer.from(
  "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj 2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj " +
    "3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 10 10]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n",
  "latin1"
))
/** Its base64. */
export const pdfBase64 = Buffer.from(pdfBytes).toString("base64")
