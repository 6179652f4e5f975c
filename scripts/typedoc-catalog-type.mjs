// A typedoc plugin: show a catalog's `descriptors` as `ReadonlyArray<ToolDescriptor>`.
//
// The catalogs declare their descriptors `as const` (so `ToolName` is the union of their names),
// and typedoc printed that literal type in full: ClaudeCodeCatalog's page was 260 KiB, Gemini CLI's
// 136 KiB, a tenth of the whole API site for a list each module's own page already describes.
import { Converter, ReflectionKind, UnknownType } from "typedoc"

/** @param {import("typedoc").Application} app */
export function load(app) {
  app.converter.on(Converter.EVENT_RESOLVE_BEGIN, (context) => {
    for (const reflection of context.project.getReflectionsByKind(ReflectionKind.Variable)) {
      if (reflection.name === "descriptors" && reflection.parent?.name.endsWith("Catalog")) {
        reflection.type = new UnknownType("ReadonlyArray<ToolDescriptor>")
      }
    }
  })
}
