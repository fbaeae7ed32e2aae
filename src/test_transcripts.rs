//! Random transcripts for the property tests (proptest strategies): any order
//! of roles, any parts, text with quotes, escapes, control and astral
//! characters, calls whose argument text may or may not be JSON, injected user
//! messages.

use proptest::prelude::*;

use crate::message::{
    AssistantMessage, Message, Origin, Part, StopReason, SystemMessage, ToolCall, ToolResultMessage, UserMessage,
};

/// Short text of every kind a transcript holds.
pub(crate) fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[a-z ]{1,12}",
        "[\"\\\\\n\t\u{0}\u{1F600}é<>&a-z]{0,16}",
        any::<String>().prop_map(|s| s.chars().take(24).collect()),
    ]
}

fn arguments() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("{}".to_owned()),
        Just("{\"q\": \"x\", \"a\": [1, 2.5, null]}".to_owned()),
        Just("[1]".to_owned()),
        text(),
    ]
}

fn image() -> impl Strategy<Value = Part> {
    let media = prop_oneof![Just("image/png"), Just("image/jpeg"), Just("image/gif"), Just("image/webp")];
    prop_oneof![
        media.prop_map(|m| Part::Image { media_type: Some(m.into()), data: Some("iVBORw0KGgo=".into()), url: None }),
        Just(Part::Image { media_type: None, data: None, url: Some("https://example.com/i.png".into()) }),
    ]
}

/// The parts of a user message or a tool result.
pub(crate) fn content() -> impl Strategy<Value = Vec<Part>> {
    let part = prop_oneof![
        4 => text().prop_map(Part::text),
        1 => image(),
        1 => proptest::option::of("[a-z]{1,5}\\.csv").prop_map(|name| Part::File {
            media_type: "text/csv".into(),
            data: "YSxi".into(),
            name,
        }),
    ];
    proptest::collection::vec(part, 0..3)
}

fn thinking() -> impl Strategy<Value = Part> {
    prop_oneof![
        (text(), proptest::option::of("[a-zA-Z0-9]{1,8}")).prop_map(|(thinking, signature)| Part::Thinking {
            thinking,
            signature,
            id: None
        }),
        (text(), "rs_[a-z0-9]{1,6}").prop_map(|(thinking, id)| Part::Thinking {
            thinking,
            signature: Some("gAAAA-encrypted".into()),
            id: Some(id)
        }),
        Just(Part::RedactedThinking { data: "cmVkYWN0ZWQ=".into() }),
    ]
}

fn call() -> impl Strategy<Value = ToolCall> {
    (prop_oneof![Just("lookup"), Just("noop")], arguments(), proptest::option::of(Just("c2ln"))).prop_map(
        |(name, arguments, signature)| ToolCall {
            id: String::new(),
            name: name.into(),
            arguments,
            signature: signature.map(str::to_owned),
        },
    )
}

/// An assistant message with up to `max_calls` calls (ids given later).
pub(crate) fn assistant(max_calls: usize) -> impl Strategy<Value = AssistantMessage> {
    let parts = prop_oneof![2 => text().prop_map(Part::text), 1 => thinking()];
    (proptest::collection::vec(parts, 0..3), proptest::collection::vec(call(), 0..=max_calls)).prop_map(
        |(content, tool_calls)| {
            let stop_reason = if tool_calls.is_empty() { StopReason::EndTurn } else { StopReason::ToolUse };
            AssistantMessage { content, tool_calls, stop_reason, ..Default::default() }
        },
    )
}

/// A run's transcript: a user message first, then user (some injected),
/// system and assistant messages in any order, each assistant message's calls
/// answered right after it (always when `answer_every_call`, else sometimes).
/// Call ids are unique: `call_0`, `call_1`, ...
pub(crate) fn transcript(answer_every_call: bool) -> impl Strategy<Value = Vec<Message>> {
    let step = prop_oneof![
        3 => (assistant(3), content(), any::<bool>(), any::<bool>()).prop_map(move |(message, content, answer, is_error)| {
            let results: Vec<Message> = match answer || answer_every_call {
                true => message.tool_calls.iter().map(|call| Message::Tool(ToolResultMessage {
                    tool_call_id: String::new(),
                    name: call.name.clone(),
                    content: content.clone(),
                    is_error,
                })).collect(),
                false => Vec::new(),
            };
            std::iter::once(Message::Assistant(message)).chain(results).collect::<Vec<_>>()
        }),
        1 => (content(), any::<bool>()).prop_map(|(content, injected)| vec![Message::User(UserMessage {
            content,
            origin: injected.then_some(Origin::Injection),
        })]),
        1 => text().prop_map(|content| vec![Message::System(SystemMessage { content, origin: None })]),
    ];
    (content(), proptest::collection::vec(step, 0..6)).prop_map(|(first, steps)| {
        let first = Message::User(UserMessage { content: first, origin: None });
        numbered(std::iter::once(first).chain(steps.into_iter().flatten()).collect())
    })
}

/// `messages` with their calls numbered in order and each result given the id
/// of the call it answers (results follow their calls in order).
pub(crate) fn numbered(mut messages: Vec<Message>) -> Vec<Message> {
    let mut next = 0;
    let mut open: Vec<String> = Vec::new();
    for message in &mut messages {
        match message {
            Message::Assistant(assistant) => {
                open.clear();
                for call in &mut assistant.tool_calls {
                    call.id = format!("call_{next}");
                    next += 1;
                    open.push(call.id.clone());
                }
                open.reverse();
            }
            Message::Tool(result) => result.tool_call_id = open.pop().unwrap_or_default(),
            _ => open.clear(),
        }
    }
    messages
}
