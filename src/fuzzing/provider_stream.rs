//! A provider's response, streamed or whole, through its decoder.

use crate::message::AssistantMessage;
use crate::provider::{decode_pieces, ProviderKind};

/// The providers by the input's first byte (modulo their number).
pub(crate) const PROVIDERS: [ProviderKind; 5] = [
    ProviderKind::Openai,
    ProviderKind::OpenaiCompatible,
    ProviderKind::OpenaiResponses,
    ProviderKind::Anthropic,
    ProviderKind::Gemini,
];

/// Input: a first byte choosing the provider (its low bits) and whether the
/// body is a stream (high bit clear) or one JSON document (set), further bytes
/// giving chunk lengths, a NUL, then the body. Holds: the body decodes to the
/// same message, or fails with the same error, whatever chunks it arrives in;
/// a failure is a provider's error with a message; a decoded message reads
/// back from its JSON as it was.
pub fn provider_stream(data: &[u8]) {
    let [head, body] = super::parts(data, 2)[..] else { return };
    let Some((&choice, lengths)) = head.split_first() else { return };
    let provider = PROVIDERS[usize::from(choice & 0x7f) % PROVIDERS.len()];
    let stream = choice & 0x80 == 0;
    let whole = decode_pieces(provider, &[body], stream);
    let chunked = decode_pieces(provider, &super::pieces(body, lengths), stream);
    match (&whole, &chunked) {
        (Ok(one), Ok(other)) => assert_eq!(one, &with_ids_of(other, one), "{provider:?}: chunks changed the message"),
        (Err(one), Err(other)) => assert_eq!(one, other, "{provider:?}: chunks changed the error"),
        _ => panic!("{provider:?}: whole {whole:?}, in chunks {chunked:?}"),
    }
    match whole {
        Ok(message) => {
            let json = serde_json::to_value(&message).expect("a message is JSON");
            let back: AssistantMessage = serde_json::from_value(json).expect("a decoded message reads back");
            assert_eq!(back, message, "{provider:?}: the message changed through its JSON");
        }
        Err(error) => {
            assert!(!error.message.is_empty(), "{provider:?}: an error without a message");
            assert!((32..64).contains(&(error.code as u32)), "{provider:?}: {error:?} is no provider's error");
        }
    }
}

/// `message` with the ids of `other`'s calls where both made theirs up (Gemini
/// gives calls no id; each decoding makes up its own).
fn with_ids_of(message: &AssistantMessage, other: &AssistantMessage) -> AssistantMessage {
    let made_up =
        |id: &str| id.len() == 29 && id.starts_with("call_") && id[5..].bytes().all(|b| b.is_ascii_hexdigit());
    let mut message = message.clone();
    for (call, theirs) in message.tool_calls.iter_mut().zip(&other.tool_calls) {
        if made_up(&call.id) && made_up(&theirs.id) {
            call.id.clone_from(&theirs.id);
        }
    }
    message
}

#[cfg(test)]
mod tests {
    use crate::test_fixtures as fixtures;

    /// Every recorded response, in chunks of every length from 1 to 64 bytes.
    #[test]
    fn every_recorded_response_holds_in_any_chunks() {
        let Some(dir) = fixtures::fixtures_dir() else { return };
        let mut seen = 0;
        for (index, name) in
            ["openai-chat", "openai-compatible", "openai-responses", "anthropic", "gemini"].iter().enumerate()
        {
            for entry in std::fs::read_dir(dir.join("providers").join(name)).unwrap() {
                let path = entry.unwrap().path();
                let whole_json = path.extension().is_some_and(|e| e == "json");
                let choice = index as u8 | if whole_json { 0x80 } else { 0 };
                let body = fixtures::stream_body(&path);
                for length in [1u8, 2, 3, 7, 63] {
                    let input = [&[choice, length][..], &[0], &body].concat();
                    super::provider_stream(&input);
                }
                seen += 1;
            }
        }
        assert!(seen > 20, "only {seen} recorded responses");
    }
}
