//! The run input JSON (`ferrule_agent_start`).

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::message::{AssistantMessage, Message, Part, UserMessage};

/// What a run starts from.
#[derive(Debug, Clone, PartialEq)]
pub enum RunInput {
    /// One user prompt.
    Prompt(String),
    /// A transcript (a previous run's `messages` plus a new user message).
    Messages(Vec<Message>),
    /// An execute-only run: the calls of `execute` (an assistant message the
    /// host's own model produced) validated and executed as one batch after the
    /// context `messages`, with no model request.
    Execute {
        /// The context before the assistant message.
        messages: Vec<Message>,
        /// The assistant message whose calls run.
        execute: AssistantMessage,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InputRepr {
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    messages: Option<Vec<Message>>,
    #[serde(default)]
    execute: Option<serde_json::Value>,
}

impl RunInput {
    /// Parses `{"prompt": "..."}` or `{"messages": [...]}`.
    pub fn from_json(json: &str) -> Result<Self> {
        let repr: InputRepr = Error::parse_json("run input", json)?;
        if let Some(execute) = repr.execute {
            if repr.prompt.is_some() {
                return Err(Error::invalid_arg("run input: \"execute\" takes \"messages\", not \"prompt\""));
            }
            let messages = repr.messages.unwrap_or_default();
            check_messages(&messages)?;
            let execute = assistant_message(execute)?;
            check_parts(&Message::Assistant(execute.clone()))
                .map_err(|e| Error::invalid_arg(format!("run input: execute: {e}")))?;
            return Ok(RunInput::Execute { messages, execute });
        }
        match (repr.prompt, repr.messages) {
            (Some(prompt), None) => Ok(RunInput::Prompt(prompt)),
            (None, Some(messages)) if messages.is_empty() => {
                Err(Error::invalid_arg("run input: messages must not be empty"))
            }
            (None, Some(messages)) => {
                check_messages(&messages)?;
                Ok(RunInput::Messages(messages))
            }
            _ => Err(Error::invalid_arg("run input: give exactly one of \"prompt\", \"messages\" and \"execute\"")),
        }
    }

    /// The transcript the run starts with, and an execute-only run's message.
    pub fn into_parts(self) -> (Vec<Message>, Option<AssistantMessage>) {
        match self {
            RunInput::Prompt(prompt) => (vec![Message::User(UserMessage { content: vec![Part::text(prompt)] })], None),
            RunInput::Messages(messages) => (messages, None),
            RunInput::Execute { messages, execute } => (messages, Some(execute)),
        }
    }
}

fn check_messages(messages: &[Message]) -> Result<()> {
    for (i, message) in messages.iter().enumerate() {
        check_parts(message).map_err(|e| Error::invalid_arg(format!("run input: messages[{i}]: {e}")))?;
    }
    Ok(())
}

/// The `execute` message: an assistant message whose `role` may be left out.
fn assistant_message(mut value: serde_json::Value) -> Result<AssistantMessage> {
    if let Some(object) = value.as_object_mut() {
        match object.remove("role") {
            None => {}
            Some(role) if role == "assistant" => {}
            Some(role) => {
                return Err(Error::invalid_arg(format!("run input: execute: role must be \"assistant\", not {role}")))
            }
        }
    }
    serde_json::from_value(value).map_err(|e| Error::invalid_arg(format!("run input: execute: {e}")))
}

fn check_parts(message: &Message) -> Result<(), String> {
    let parts = match message {
        Message::System(_) => return Ok(()),
        Message::User(m) => &m.content,
        Message::Assistant(m) => &m.content,
        Message::Tool(m) => &m.content,
    };
    parts.iter().try_for_each(Part::check)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn prompt_becomes_one_user_message() {
        let (messages, _) = RunInput::from_json(r#"{"prompt": "hi"}"#).unwrap().into_parts();
        assert_eq!(messages, vec![Message::User(UserMessage { content: vec![Part::text("hi")] })]);
    }

    #[test]
    fn both_or_neither_is_rejected() {
        for json in [r#"{}"#, r#"{"prompt": "a", "messages": [{"role": "user", "content": "b"}]}"#] {
            assert_eq!(RunInput::from_json(json).unwrap_err().code, ErrorCode::InvalidArg);
        }
    }

    #[test]
    fn unknown_input_field_is_named() {
        let err = RunInput::from_json(r#"{"prompt": "a", "promt": "b"}"#).unwrap_err();
        assert!(err.message.contains("promt"), "{}", err.message);
    }
}
