//! Messages that enter a run from outside the model (`ferrule_run_inject`, or a
//! `turn_start` hook's `inject`): only user and system messages, marked
//! `"origin": "injection"`.

use super::transcript::check_parts;
use crate::message::{Message, Origin};

/// Marks an injected message as such; only user and system messages with valid
/// parts may be injected (the problem otherwise).
pub(crate) fn mark_injected(message: &mut Message) -> Result<(), String> {
    match message {
        Message::User(user) => user.origin = Some(Origin::Injection),
        Message::System(system) => system.origin = Some(Origin::Injection),
        _ => return Err("only user and system messages can be injected".to_owned()),
    }
    check_parts(message)
}
