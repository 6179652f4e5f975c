/**
 * What a scripted `claude` run was asked: the text of the one stream-json user message on its
 * stdin (every ClaudeLocal run sends exactly one), and whether it was marked verbatim.
 */
export const stdinMessage = (stdin: string | undefined): { readonly text: string; readonly verbatim: boolean } => {
  const lines = (stdin ?? "").split("\n").filter((line) => line !== "")
  if (lines.length !== 1) throw new Error(`expected one user message on stdin, got ${lines.length}: ${stdin}`)
  const message = JSON.parse(lines[0]!) as {
    type: string
    message: { content: string | Array<{ type: string; text?: string }> }
    client_composed?: boolean
  }
  if (message.type !== "user") throw new Error(`not a user message: ${lines[0]}`)
  const content = message.message.content
  const text = typeof content === "string"
    ? content
    : content.flatMap((block) => (block.type === "text" ? [block.text ?? ""] : [])).join("\n\n")
  return { text, verbatim: message.client_composed === true }
}

/** The prompt text of {@link stdinMessage}. */
export const stdinPrompt = (stdin: string | undefined): string => stdinMessage(stdin).text
