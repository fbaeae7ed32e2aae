package dev.ferrule

/** The provisional result decoded (its JSON is [Event.ToolExecutionUpdate.partial]). */
val Event.ToolExecutionUpdate.partialResult: ToolResult get() = ToolResult.decode(partial)

/** The call's final result decoded (its JSON is [Event.ToolExecutionEnd.result]). */
val Event.ToolExecutionEnd.toolResult: ToolResult get() = ToolResult.decode(result)
