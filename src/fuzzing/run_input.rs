//! A run's input: a prompt, messages, calls to execute, or a state to resume.

use crate::agent::RunInput;
use crate::error::ErrorCode;

/// Input: run input JSON. Holds: it is read, or refused as not JSON or not
/// run input, with a message, the same way each time (a state to resume in it
/// is checked as the resume target checks it).
pub fn run_input(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match RunInput::from_json(text) {
        Ok(input) => assert_eq!(RunInput::from_json(text).ok(), Some(input), "the same text read twice differs"),
        Err(error) => {
            assert!(matches!(error.code, ErrorCode::InvalidJson | ErrorCode::InvalidArg), "{error:?}");
            assert!(!error.message.is_empty(), "a refusal without a reason");
        }
    }
}
