//! Cassettes (`model.record`): runs recorded against a local server, then
//! replayed with the server gone; what a cassette holds (never a key), what a
//! replay refuses, and what it says it left unused.

use std::path::Path;

use crate::common::server::{Ending, MockServer, Reply};
use crate::common::wire::{self, base_url, PROVIDERS};
use crate::common::*;
use ferrule::agent::{Agent, AgentBuilder, RunStatus};
use ferrule::ErrorCode;
use serde_json::{json, Value};

/// A port nothing listens on (a server started and stopped): a replay that
/// reached the network would fail there.
fn dead_url() -> String {
    let server = MockServer::start(vec![]);
    server.url().to_owned()
}

fn record(path: &Path, mode: &str) -> Value {
    json!({"record": {"path": path.to_str().unwrap(), "mode": mode}})
}

fn recording_agent(provider: &str, url: &str, cassette: &Path, mode: &str) -> Agent {
    provider_agent(provider, &base_url(provider, url), record(cassette, mode), json!({}), vec![echo("lookup")])
}

/// Events as JSON text, each run's id left out (ids count runs in the
/// process).
fn normalized(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|event| {
            let mut event = event.clone();
            event.as_object_mut().unwrap().remove("run_id");
            event.to_string()
        })
        .collect()
}

/// The text of a run's last message.
fn answer(result: &ferrule::agent::RunResult) -> String {
    text(&serde_json::to_value(result.messages.last().unwrap()).unwrap())
}

fn lines(cassette: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(cassette).unwrap();
    text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

#[test]
fn every_provider_replays_a_recorded_run_event_for_event() {
    for provider in PROVIDERS {
        let dir = tempfile::tempdir().unwrap();
        let cassette = dir.path().join("run.jsonl");
        // Gemini's calls come without ids: ferrule makes them up, and the next
        // request carries them.
        let id = if provider == "gemini" { "" } else { "call_1" };
        let server = MockServer::start(vec![
            Reply::sse(&wire::stream(provider, "Let me look.", &[(id, "lookup", r#"{"q":"C-100"}"#)])),
            Reply::sse(&wire::stream(provider, "C-100 is on Gold.", &[])),
        ]);
        let recorded = run(&recording_agent(provider, server.url(), &cassette, "record"), "Plan of C-100?");
        assert_eq!(recorded.0.status, RunStatus::Completed, "{provider}: {:?}", recorded.0.error);
        assert_eq!(server.requests().len(), 2);
        drop(server);

        let written = lines(&cassette);
        assert_eq!(written[0], json!({"ferrule_cassette": 1}), "{provider}");
        assert_eq!(written.len(), 3, "{provider}: a header and two exchanges");
        assert_eq!(written[1]["status"], 200);
        assert!(written[1]["chunks"].as_array().unwrap().len() > 1, "{provider}: chunk boundaries are kept");

        let agent = recording_agent(provider, &dead_url(), &cassette, "replay");
        let replayed = run(&agent, "Plan of C-100?");
        assert_eq!(replayed.0.status, RunStatus::Completed, "{provider}: {:?}", replayed.0.error);
        assert_eq!(normalized(&replayed.1), normalized(&recorded.1), "{provider}");
        assert_eq!(
            serde_json::to_value(&replayed.0.messages).unwrap(),
            serde_json::to_value(&recorded.0.messages).unwrap()
        );
        assert_eq!(agent.unused_recordings(), Some(vec![]), "{provider}");
    }
}

#[test]
fn a_replay_never_reaches_the_network_and_needs_no_key() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("run.jsonl");
    let server = MockServer::start(vec![Reply::sse(&wire::chat("Hello.", &[]))]);
    let model = record(&cassette, "record");
    let recorded = run(&provider_agent("openai", &base_url("openai", server.url()), model, json!({}), vec![]), "hi");
    assert_eq!(recorded.0.status, RunStatus::Completed);

    // The server is still there, and the key's variable is unset.
    let config = json!({"model": {"provider": "openai", "name": "test-model", "base_url": base_url("openai", server.url()),
        "api_key_env": "FERRULE_TEST_NEVER_SET", "record": {"path": cassette.to_str().unwrap()}}});
    std::env::remove_var("FERRULE_TEST_NEVER_SET");
    let agent = AgentBuilder::from_json(&config.to_string()).unwrap().build().expect("a replay needs no key");
    let replayed = run(&agent, "hi");
    assert_eq!(replayed.0.status, RunStatus::Completed, "{:?}", replayed.0.error);
    assert_eq!(server.connections(), 1, "only the recording connected");
    assert_eq!(normalized(&replayed.1), normalized(&recorded.1));

    // A second run finds the exchange used.
    let again = run(&agent, "hi");
    let error = again.0.error.clone().unwrap();
    assert_eq!(error.code, ErrorCode::ReplayMismatch, "{error:?}");
    assert!(error.message.contains("(1 recorded, 0 unused)"), "{}", error.message);
    assert_eq!(server.connections(), 1);
}

#[test]
fn an_unmatched_request_fails_the_run_saying_where_it_differs() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("run.jsonl");
    let server = MockServer::start(vec![Reply::sse(&wire::chat("Hello.", &[]))]);
    run(&recording_agent("openai", server.url(), &cassette, "record"), "Plan of C-100?");
    drop(server);
    let (result, events) = run(&recording_agent("openai", &dead_url(), &cassette, "replay"), "Plan of C-200?");
    assert_eq!(result.status, RunStatus::Failed);
    let error = result.error.clone().unwrap();
    assert_eq!(error.code, ErrorCode::ReplayMismatch);
    for part in ["POST /v1/chat/completions", "differs from unused exchange 1 at byte", "C-100", "C-200"] {
        assert!(error.message.contains(part), "{part}: {}", error.message);
    }
    assert!(of_type(&events, "retry").is_empty(), "a mismatch is not retried");
}

#[test]
fn a_cassette_never_holds_a_secret_even_split_between_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("run.jsonl");
    let header_secret = "tok-5bX8wQ1eR7yU3iO9";
    // The key comes back in a header and in the answer's text, cut in two
    // where one chunk ends and the next begins.
    let body = wire::chat(&format!("Your key is {TEST_KEY} ok"), &[]);
    let text = String::from_utf8(body).unwrap();
    let at = text.find(TEST_KEY).unwrap() + TEST_KEY.len() / 2;
    let mut reply = Reply::sse(text.as_bytes()).header("x-echo", &format!("key={TEST_KEY}"));
    reply.chunks = vec![text.as_bytes()[..at].to_vec(), text.as_bytes()[at..].to_vec()];
    let server = MockServer::start(vec![reply]);
    let model = json!({"headers": {"x-team-token": header_secret}, "record": {"path": cassette.to_str().unwrap(), "mode": "record"}});
    let agent = provider_agent("openai", &base_url("openai", server.url()), model.clone(), json!({}), vec![]);
    // The prompt carries the key too: the body goes out as it is, and is
    // masked in the cassette.
    let (result, _) = run(&agent, &format!("My key is {TEST_KEY}."));
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert!(server.requests()[0].json().to_string().contains(TEST_KEY), "the request itself is not changed");
    drop(server);

    let written = std::fs::read_to_string(&cassette).unwrap();
    for secret in [TEST_KEY, header_secret] {
        for piece in secret.as_bytes().windows(8) {
            let piece = std::str::from_utf8(piece).unwrap();
            assert!(!written.contains(piece), "{piece:?} of a secret is in the cassette:\n{written}");
        }
    }
    let exchange = &lines(&cassette)[1];
    assert_eq!(exchange["request_headers"]["authorization"], "[redacted]");
    assert_eq!(exchange["request_headers"]["x-team-token"], "[redacted]");
    assert_eq!(exchange["chunks"].as_array().unwrap().len(), 2, "the boundary is kept");
    assert!(exchange["headers"]["x-echo"].as_str().unwrap().starts_with("key=****"));

    // Masked the same way, the same request still matches.
    let agent = provider_agent(
        "openai",
        &base_url("openai", &dead_url()),
        json!({"headers": {"x-team-token": header_secret},
        "record": {"path": cassette.to_str().unwrap()}}),
        json!({}),
        vec![],
    );
    let (replayed, _) = run(&agent, &format!("My key is {TEST_KEY}."));
    assert_eq!(replayed.status, RunStatus::Completed, "{:?}", replayed.error);
}

#[test]
fn replay_or_record_answers_what_it_has_and_records_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("run.jsonl");
    let first = MockServer::start(vec![Reply::sse(&wire::chat("One.", &[]))]);
    let agent = recording_agent("openai", first.url(), &cassette, "replay_or_record");
    assert_eq!(run(&agent, "one").0.status, RunStatus::Completed, "a missing cassette is started");
    drop(agent);
    drop(first);

    let second = MockServer::start(vec![Reply::sse(&wire::chat("Two.", &[]))]);
    let agent = recording_agent("openai", second.url(), &cassette, "replay_or_record");
    assert_eq!(answer(&run(&agent, "one").0), "One.");
    assert_eq!(second.connections(), 0, "the recorded exchange answered");
    assert_eq!(answer(&run(&agent, "two").0), "Two.");
    assert_eq!(second.requests().len(), 1);
    drop(agent);
    drop(second);

    assert_eq!(lines(&cassette).len(), 3, "the second exchange was added");
    let agent = recording_agent("openai", &dead_url(), &cassette, "replay");
    assert_eq!(answer(&run(&agent, "two").0), "Two.");
    let unused = agent.unused_recordings().unwrap();
    assert_eq!(unused.len(), 1);
    assert_eq!((unused[0].index, unused[0].path.as_str()), (1, "/v1/chat/completions"));
}

#[test]
fn a_stream_cut_short_replays_as_the_same_failure() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("run.jsonl");
    let body = wire::chat("This answer never ends properly", &[]);
    let server = MockServer::start(vec![Reply::sse(&body[..body.len() / 2]).ending(Ending::Cut)]);
    let recorded = run(&recording_agent("openai", server.url(), &cassette, "record"), "hi");
    assert_eq!(recorded.0.error.as_ref().unwrap().code, ErrorCode::ProviderNetwork);
    drop(server);
    assert!(lines(&cassette)[1]["error"]["code"] == "PROVIDER_NETWORK", "{:?}", lines(&cassette)[1]);

    let replayed = run(&recording_agent("openai", &dead_url(), &cassette, "replay"), "hi");
    assert_eq!(replayed.0.error, recorded.0.error);
    assert_eq!(normalized(&replayed.1), normalized(&recorded.1));
}

#[test]
fn a_retried_request_replays_with_its_retry() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("run.jsonl");
    let server = MockServer::start(vec![
        Reply::json(429, br#"{"error": {"message": "slow down", "type": "rate_limit"}}"#).header("retry-after-ms", "5"),
        Reply::sse(&wire::chat("Done.", &[])),
    ]);
    let recorded = run(&recording_agent("openai", server.url(), &cassette, "record"), "hi");
    assert_eq!(recorded.0.status, RunStatus::Completed);
    assert_eq!(of_type(&recorded.1, "retry").len(), 1);
    drop(server);
    let replayed = run(&recording_agent("openai", &dead_url(), &cassette, "replay"), "hi");
    assert_eq!(normalized(&replayed.1), normalized(&recorded.1));
}

#[test]
fn bad_record_settings_are_refused_at_build() {
    let dir = tempfile::tempdir().unwrap();
    let not_a_cassette = dir.path().join("notes.jsonl");
    std::fs::write(&not_a_cassette, "{\"hello\": 1}\n").unwrap();
    let bad_line = dir.path().join("bad.jsonl");
    std::fs::write(&bad_line, "{\"ferrule_cassette\":1}\n{\"method\": \"POST\"}\n").unwrap();
    let missing = dir.path().join("missing.jsonl");
    let fifo = dir.path().join("fifo.jsonl");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let http = |record: Value| {
        json!({"model": {"provider": "openai", "name": "m", "base_url": "http://127.0.0.1:9/v1",
        "api_key_env": "FERRULE_TEST_NEVER_SET", "record": record}})
    };
    let cases = [
        (http(json!({"path": missing.to_str().unwrap()})), "cannot read"),
        (http(json!({"path": not_a_cassette.to_str().unwrap()})), "not a ferrule cassette"),
        (http(json!({"path": bad_line.to_str().unwrap()})), "line 2"),
        (http(json!({"path": missing.to_str().unwrap(), "mode": "tape"})), "unknown variant"),
        (http(json!({"path": missing.to_str().unwrap(), "speed": 2})), "unknown field"),
        (http(json!({"path": " "})), "must name a file"),
        (http(json!({"path": fifo.to_str().unwrap()})), "not a regular file"),
        (http(json!({"path": dir.path().to_str().unwrap()})), "not a regular file"),
        (json!({"model": {"provider": "scripted", "script": [], "record": {"path": "x"}}}), "HTTP providers"),
    ];
    for (config, expected) in cases {
        let error = AgentBuilder::from_json(&config.to_string()).and_then(|builder| builder.build()).err().unwrap();
        assert_eq!(error.code, ErrorCode::InvalidArg, "{config}: {error:?}");
        assert!(error.message.contains(expected), "{expected}: {}", error.message);
    }
    std::env::remove_var("FERRULE_TEST_NEVER_SET");
    let recording = http(json!({"path": dir.path().join("new.jsonl").to_str().unwrap(), "mode": "record"}));
    let error = AgentBuilder::from_json(&recording.to_string()).unwrap().build().err().unwrap();
    assert_eq!(error.code, ErrorCode::ProviderAuth, "recording needs the key: {error:?}");
}

/// The cassette of conformance scenario 048, recorded as its config and tool
/// describe (against a local server standing for the provider), then a second
/// run the scenario does not make. Committed; `FERRULE_BLESS=1` writes it
/// anew, and this test fails while it is stale (a change of the request
/// bodies).
#[test]
fn the_conformance_cassette_is_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    let scenario: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("048_replay_from_a_cassette.json")).unwrap()).unwrap();
    let committed = root.join(scenario["config"]["model"]["record"]["path"].as_str().unwrap());
    let server = MockServer::start(vec![
        Reply::sse(&wire::chat("", &[("call_1", "lookup", r#"{"customer_id":"C-100"}"#)])),
        Reply::sse(&wire::chat("C-100 is on Gold.", &[])),
        Reply::sse(&wire::chat("", &[("call_2", "lookup", r#"{"customer_id":"C-200"}"#)])),
        Reply::sse(&wire::chat("C-200 is on Gold.", &[])),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let recorded = dir.path().join("cassette.jsonl");
    let mut config = scenario["config"].clone();
    let base = config["model"]["base_url"].as_str().unwrap().to_owned();
    config["model"]["base_url"] = json!(base_url("openai", server.url()));
    config["model"]["api_key_env"] = json!(TEST_KEY_ENV);
    config["model"]["record"] = json!({"path": recorded.to_str().unwrap(), "mode": "record"});
    std::env::set_var(TEST_KEY_ENV, TEST_KEY);
    let mut builder = AgentBuilder::from_json(&config.to_string()).unwrap();
    for spec in scenario["tools"].as_array().unwrap() {
        let options = serde_json::from_value(spec["options"].clone()).unwrap();
        let tool = ferrule::tool::Tool::new(
            spec["name"].as_str().unwrap(),
            spec["description"].as_str().unwrap(),
            spec["input_schema"].clone(),
            options,
            |_call: ferrule::tool::Invocation| async {
                ferrule::tool::ToolOutcome::Completed(ferrule::tool::ToolResult::text("Gold"))
            },
        );
        builder.add_tool(tool.unwrap()).unwrap();
    }
    let agent = builder.build().unwrap();
    for prompt in ["Plan of C-100?", "Plan of C-200?"] {
        assert_eq!(run(&agent, prompt).0.status, RunStatus::Completed);
    }
    drop(agent);
    // The server's address is the test's: the cassette names the scenario's.
    let written = std::fs::read_to_string(&recorded).unwrap().replace(&base_url("openai", server.url()), &base);
    if std::env::var_os("FERRULE_BLESS").is_some() {
        std::fs::write(&committed, &written).unwrap();
    }
    let current = std::fs::read_to_string(&committed).unwrap_or_default();
    // Chunks are cut where the reads of the stream were, which may differ
    // from run to run: the bodies they make are compared.
    let whole_bodies = |text: &str| -> Vec<Value> {
        let lines = text.lines().map(|line| serde_json::from_str::<Value>(line).unwrap_or(Value::Null));
        lines
            .map(|mut exchange| {
                if let Some(chunks) = exchange.get("chunks").and_then(Value::as_array) {
                    exchange["chunks"] = json!(chunks.iter().filter_map(Value::as_str).collect::<String>());
                }
                exchange
            })
            .collect()
    };
    assert!(
        whole_bodies(&written) == whole_bodies(&current),
        "{} is stale: run `FERRULE_BLESS=1 cargo test --release --test it the_conformance_cassette` and commit it",
        committed.display()
    );
}

#[test]
fn a_whole_request_timeout_is_recorded_as_one_and_replayed_with_its_retry() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("run.jsonl");
    let body = wire::chat("Slow.", &[]);
    let server =
        MockServer::start(vec![Reply::sse(&body[..20]).ending(Ending::Stall), Reply::sse(&wire::chat("Done.", &[]))]);
    let model =
        json!({"timeouts": {"total_ms": 300}, "record": {"path": cassette.to_str().unwrap(), "mode": "record"}});
    let agent = provider_agent("openai", &base_url("openai", server.url()), model, json!({}), vec![]);
    let (recorded, recorded_events) = run(&agent, "hi");
    assert_eq!(recorded.status, RunStatus::Completed, "{:?} {recorded_events:?}", recorded.error);
    assert_eq!(answer(&recorded), "Done.");
    drop(agent);
    drop(server);
    let exchanges = lines(&cassette);
    assert_eq!(exchanges[1]["error"]["code"], "TIMEOUT", "{}", exchanges[1]);
    assert!(exchanges[1]["error"]["message"].as_str().unwrap().contains("whole request"));

    let model = json!({"timeouts": {"total_ms": 300}, "record": {"path": cassette.to_str().unwrap()}});
    let agent = provider_agent("openai", &base_url("openai", &dead_url()), model, json!({}), vec![]);
    let (replayed, events) = run(&agent, "hi");
    assert_eq!(replayed.status, RunStatus::Completed, "{:?}", replayed.error);
    assert_eq!(answer(&replayed), "Done.");
    assert_eq!(types(&events), types(&recorded_events));
    assert_eq!(of_type(&events, "retry")[0]["error"]["code"], "TIMEOUT");
}

#[test]
fn a_build_that_fails_leaves_the_cassette_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("run.jsonl");
    std::fs::write(&cassette, "precious\n").unwrap();
    let config = json!({"model": {"provider": "openai", "name": "m", "base_url": "http://127.0.0.1:9/v1",
        "api_key_env": TEST_KEY_ENV, "record": {"path": cassette.to_str().unwrap(), "mode": "record"}},
        "tool_choice": {"name": "missing"}});
    std::env::set_var(TEST_KEY_ENV, TEST_KEY);
    assert!(AgentBuilder::from_json(&config.to_string()).unwrap().build().is_err());
    assert_eq!(std::fs::read_to_string(&cassette).unwrap(), "precious\n");
}

#[test]
fn a_stream_that_does_not_decode_is_recorded_with_its_failure() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("run.jsonl");
    let body = b"data: {\"choices\": [{\"index\": 0, \"delta\": {\"content\": \"a\"}}]}\n\ndata: {not json}\n\n";
    let server = MockServer::start(vec![Reply::sse(body)]);
    let recorded = run(&recording_agent("openai", server.url(), &cassette, "record"), "hi");
    assert_eq!(recorded.0.error.as_ref().unwrap().code, ErrorCode::ProviderMalformedStream);
    drop(server);
    assert_eq!(lines(&cassette)[1]["error"]["code"], "PROVIDER_MALFORMED_STREAM");
    let replayed = run(&recording_agent("openai", &dead_url(), &cassette, "replay"), "hi");
    assert_eq!(replayed.0.error, recorded.0.error);
}

#[test]
fn runs_replayed_at_once_on_one_agent_each_get_their_own_exchanges() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("run.jsonl");
    let prompts: Vec<String> = (0..8).map(|i| format!("Plan of C-{i}?")).collect();
    let server =
        MockServer::start(prompts.iter().map(|p| Reply::sse(&wire::chat(&format!("Answer to {p}"), &[]))).collect());
    let agent = recording_agent("openai", server.url(), &cassette, "record");
    for prompt in &prompts {
        assert_eq!(run(&agent, prompt).0.status, RunStatus::Completed);
    }
    drop(agent);
    drop(server);
    for _ in 0..20 {
        let agent = recording_agent("openai", &dead_url(), &cassette, "replay");
        std::thread::scope(|scope| {
            for prompt in &prompts {
                let agent = &agent;
                scope.spawn(move || {
                    let (result, _) = run(agent, prompt);
                    assert_eq!(answer(&result), format!("Answer to {prompt}"), "{:?}", result.error);
                });
            }
        });
        assert_eq!(agent.unused_recordings(), Some(vec![]));
    }
}
