//! What a handoff carries to the agent taking over: the transcript, whole or
//! without tool calls and their results. Taking the calls out of a response
//! takes its reasoning with them (a provider refuses reasoning whose calls are
//! gone), and Gemini's signatures too (they sign the reasoning that led to the
//! calls); a response left with no text leaves the transcript, so no call,
//! result or reasoning is ever left an orphan.

use super::agent_tool_options::HandoffMessages;
use super::progress::RunProgress;
use crate::message::{Message, Part, StopReason};

/// Leaves in `progress` the transcript a handoff carries; returns how many
/// messages it left out.
pub(crate) fn carry(progress: &mut RunProgress, which: HandoffMessages) -> usize {
    if which == HandoffMessages::All {
        return 0;
    }
    let before = progress.messages.len();
    let mut index = 0;
    let mut input_kept = 0;
    let input = progress.input_messages;
    progress.messages.retain_mut(|message| {
        let kept = match message {
            Message::Tool(_) => false,
            Message::Assistant(response) if !response.tool_calls.is_empty() => {
                response.tool_calls.clear();
                response.content.retain_mut(|part| match part {
                    Part::Thinking { .. } | Part::RedactedThinking { .. } => false,
                    Part::Text { text, signature } => {
                        *signature = None;
                        !text.is_empty()
                    }
                    _ => true,
                });
                if response.stop_reason == StopReason::ToolUse {
                    response.stop_reason = StopReason::EndTurn;
                }
                !response.content.is_empty()
            }
            _ => true,
        };
        if kept && index < input {
            input_kept += 1;
        }
        index += 1;
        kept
    });
    progress.input_messages = input_kept;
    before - progress.messages.len()
}
