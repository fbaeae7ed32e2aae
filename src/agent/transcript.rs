//! What makes a transcript legal: parts that say what they hold, and tool calls
//! and results that pair up (every provider refuses a request whose calls and
//! results do not).

use crate::error::{Error, Result};
use crate::message::{Message, Part};

/// Checks the parts of every message, and that calls and results pair up
/// (`INVALID_ARG` naming the message, as run input's `messages`).
pub(crate) fn check_messages(messages: &[Message]) -> Result<()> {
    for (i, message) in messages.iter().enumerate() {
        check_parts(message).map_err(|e| Error::invalid_arg(format!("run input: messages[{i}]: {e}")))?;
    }
    check_legal(messages).map_err(|e| Error::invalid_arg(format!("run input: {e}")))
}

/// Checks the parts of one message (see [`Part::check`]).
pub(crate) fn check_parts(message: &Message) -> Result<(), String> {
    let parts = match message {
        Message::System(_) => return Ok(()),
        Message::User(m) => &m.content,
        Message::Assistant(m) => &m.content,
        Message::Tool(m) => &m.content,
    };
    parts.iter().try_for_each(Part::check)
}

/// Checks that every tool result directly follows the assistant message whose
/// call it answers (only other results between them), and that every call of an
/// assistant message is answered there, once. Calls are matched by id, as many
/// results as calls for each id (a response may repeat an id; each copy got its
/// own result). The problem, naming the message by index, otherwise.
fn check_legal(messages: &[Message]) -> Result<(), String> {
    // Ids of the open exchange's calls that no result answered yet.
    let mut unanswered: Vec<&str> = Vec::new();
    let mut opened_at = 0;
    for (index, message) in messages.iter().enumerate() {
        if let Message::Tool(result) = message {
            match unanswered.iter().position(|id| *id == result.tool_call_id) {
                Some(at) => {
                    unanswered.swap_remove(at);
                }
                None => {
                    return Err(format!(
                        "messages[{index}] is the result of call \"{}\", which the assistant message before it does not make (or another result answered)",
                        result.tool_call_id
                    ))
                }
            }
            continue;
        }
        if let Some(id) = unanswered.first() {
            return Err(format!("the call \"{id}\" of messages[{opened_at}] has no result before messages[{index}]"));
        }
        if let Message::Assistant(assistant) = message {
            unanswered = assistant.tool_calls.iter().map(|call| call.id.as_str()).collect();
            opened_at = index;
        }
    }
    match unanswered.first() {
        Some(id) => Err(format!("the call \"{id}\" of messages[{opened_at}] has no result")),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(messages: serde_json::Value) -> Result<(), String> {
        check_legal(&serde_json::from_value::<Vec<Message>>(messages).unwrap())
    }

    fn assistant(ids: &[&str]) -> serde_json::Value {
        let calls: Vec<_> = ids.iter().map(|id| json!({"id": id, "name": "t", "arguments": "{}"})).collect();
        json!({"role": "assistant", "content": [], "tool_calls": calls})
    }

    fn result(id: &str) -> serde_json::Value {
        json!({"role": "tool", "tool_call_id": id, "name": "t", "content": "ok"})
    }

    #[test]
    fn paired_calls_and_results_are_legal() {
        let user = json!({"role": "user", "content": "hi"});
        assert_eq!(check(json!([])), Ok(()));
        assert_eq!(
            check(json!([user, assistant(&["a", "b"]), result("b"), result("a"), user, assistant(&[])])),
            Ok(())
        );
        assert_eq!(check(json!([assistant(&["a", "a", ""]), result("a"), result(""), result("a")])), Ok(()));
    }

    #[test]
    fn unpaired_calls_and_results_are_named() {
        let user = json!({"role": "user", "content": "hi"});
        let problem = check(json!([user, assistant(&["a", "b"]), result("a")])).unwrap_err();
        assert!(problem.contains("\"b\" of messages[1] has no result"), "{problem}");
        let problem = check(json!([assistant(&["a"]), user, result("a")])).unwrap_err();
        assert!(problem.contains("before messages[1]"), "{problem}");
        let problem = check(json!([user, result("x")])).unwrap_err();
        assert!(problem.contains("messages[1]") && problem.contains("\"x\""), "{problem}");
        assert!(check(json!([assistant(&["a"]), result("a"), result("a")])).is_err());
    }
}
