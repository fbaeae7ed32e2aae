//! A response without calls: the run's final answer, unless the output schema or
//! a `final_answer` hook sends it back, or messages injected meanwhile need one
//! more request.

use serde_json::Value;

use super::context::RunContext;
use super::hook_stages;
use super::next_step::{Ending, NextStep};
use super::progress::RunProgress;
use crate::error::{Error, ErrorCode};
use crate::message::{AssistantMessage, Message, UserMessage};

/// What the run makes of its final answer.
#[derive(Default)]
pub(crate) struct FinalAnswer {
    /// The answer as JSON, once it satisfied the output schema.
    pub(crate) output: Option<Value>,
    /// A `final_answer` hook ended the run: it has no final answer.
    pub(crate) withheld: bool,
}

/// Concludes `turn` with `message`, which has no calls. With an `output_schema`
/// it must be JSON that satisfies it; one that does not goes back to the model,
/// with what is wrong, while `output_retries` last, and then fails the run. Then
/// the `final_answer` hooks may send it back with feedback.
pub(crate) async fn conclude(
    run: &RunContext,
    progress: &mut RunProgress,
    answer: &mut FinalAnswer,
    turn: u32,
    message: AssistantMessage,
) -> NextStep {
    let agent = run.agent();
    let text = crate::message::text_of(&message.content);
    progress.messages.push(Message::Assistant(message));
    if run.shared.has_injections() {
        // The model has not seen them yet: one more request answers them.
        return NextStep::RunAgain;
    }
    if let Some(schema) = &agent.output {
        let checked = output_json(&text).and_then(|value| schema.validate(&value).map(|()| value));
        let retries = agent.config.output_retries;
        match checked {
            Ok(value) => answer.output = Some(value),
            Err(wrong) if progress.output_corrections < retries => {
                progress.output_corrections += 1;
                let correction = format!(
                    "Your answer must be JSON that satisfies the output schema, and it is not: {wrong}. \
                     Answer again with that JSON only."
                );
                progress.messages.push(Message::User(UserMessage::text(correction)));
                return NextStep::RunAgain;
            }
            Err(wrong) => {
                let message =
                    format!("the final answer does not satisfy output_schema after {retries} correction(s): {wrong}");
                return NextStep::End(Ending::Failed(Error::new(ErrorCode::InvalidOutput, message)));
            }
        }
    }
    let Some(last) = progress.messages.last() else { return NextStep::End(Ending::Completed) };
    match hook_stages::final_answer(&run.hooks(), turn, last).await {
        // Injected while the hooks decided: the model answers them too.
        Ok(None) if run.shared.has_injections() => {
            answer.output = None;
            NextStep::RunAgain
        }
        Ok(None) => NextStep::End(Ending::Completed),
        Ok(Some(feedback)) => {
            answer.output = None;
            progress.messages.push(Message::User(UserMessage::text(feedback)));
            NextStep::RunAgain
        }
        Err(stop) => {
            // An answer the hooks did not let through is not the run's, and
            // neither is one they sent back before: the run has no final answer.
            progress.messages.pop();
            *answer = FinalAnswer { output: None, withheld: true };
            NextStep::End(stop.ending())
        }
    }
}

/// The final answer's text as JSON: the text itself, or the inside of one
/// Markdown code fence around it (models without native structured output often
/// add one). Repeated keys are refused, as in tool arguments.
fn output_json(text: &str) -> Result<Value, String> {
    let trimmed = text.trim();
    let inner = trimmed
        .strip_prefix("```")
        .and_then(|rest| rest.strip_suffix("```"))
        .map(|fenced| fenced.trim_start_matches(|c: char| c.is_ascii_alphanumeric()).trim())
        .unwrap_or(trimmed);
    crate::json::parse_unique(inner).map_err(|e| format!("it is not JSON ({e})"))
}
