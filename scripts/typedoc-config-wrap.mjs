// A typedoc plugin: show a `Config.Wrap<Options>` parameter as written.
//
// TypeScript resolves `Config.Wrap<Options>` (a conditional type) into the record of every option
// as a `Config` or a nested record, and typedoc prints that resolved type: each `layerConfig` page
// repeated its provider's whole `Options` twice over (ClaudeLocal's was 260 KiB, the whole API
// site ~1.5 MiB of it), and grew with every option. Converting the parameter from its type node
// instead keeps the reference, linked to Effect's docs like any other Effect type.
import { Converter } from "typedoc"
import ts from "typescript"

const wrapped = /^Config\.Wrap</

/** @param {import("typedoc").Application} app */
export function load(app) {
  app.converter.on(Converter.EVENT_CREATE_SIGNATURE, (context, signature, declaration) => {
    if (!declaration || !("parameters" in declaration)) return
    const nodes = declaration.parameters
    for (const [i, parameter] of (signature.parameters ?? []).entries()) {
      const node = nodes[i]
      if (node && ts.isParameter(node) && node.type && wrapped.test(node.type.getText())) {
        parameter.type = context.converter.convertType(context, node.type)
      }
    }
  })
}
