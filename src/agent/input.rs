//! The run input JSON (`ferrule_agent_start`).

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::message::{Message, Part, UserMessage};

/// What a run starts from.
#[derive(Debug, Clone, PartialEq)]
pub enum RunInput {
    /// One user prompt.
    Prompt(String),
    /// A transcript (a previous run's `messages` plus a new user message).
    Messages(Vec<Message>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InputRepr {
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    messages: Option<Vec<Message>>,
}

impl RunInput {
    /// Parses `{"prompt": "..."}` or `{"messages": [...]}`.
    pub fn from_json(json: &str) -> Result<Self> {
        let repr: InputRepr = Error::parse_json("run input", json)?;
        match (repr.prompt, repr.messages) {
            (Some(prompt), None) => Ok(RunInput::Prompt(prompt)),
            (None, Some(messages)) if messages.is_empty() => {
                Err(Error::invalid_arg("run input: messages must not be empty"))
            }
            (None, Some(messages)) => {
                for (i, message) in messages.iter().enumerate() {
                    check_parts(message).map_err(|e| Error::invalid_arg(format!("run input: messages[{i}]: {e}")))?;
                }
                Ok(RunInput::Messages(messages))
            }
            _ => Err(Error::invalid_arg("run input: give exactly one of \"prompt\" and \"messages\"")),
        }
    }

    /// The transcript the run starts with.
    pub fn into_messages(self) -> Vec<Message> {
        match self {
            RunInput::Prompt(prompt) => vec![Message::User(UserMessage { content: vec![Part::text(prompt)] })],
            RunInput::Messages(messages) => messages,
        }
    }
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
        let messages = RunInput::from_json(r#"{"prompt": "hi"}"#).unwrap().into_messages();
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
