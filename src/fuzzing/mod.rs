//! What the fuzz targets (`fuzz/`, `make fuzz`) check, one file per target.
//!
//! Each target takes the fuzzer's bytes and asserts what must hold of any
//! input, not only that nothing panics: the same result whatever chunks a
//! stream arrives in, every change of a patch or none, a state that reads back
//! as it was written. Compiled for the fuzzer (feature `fuzzing`) and for the
//! library's own tests, which run every committed seed and every input a fuzzer
//! once failed on (`fuzz/seeds`, `fuzz/regressions`) as ordinary tests.
//! Nothing here is part of the library's API.

mod agent_config;
mod apply_patch;
mod edit;
mod json_unique;
mod mcp_messages;
mod provider_stream;
mod resume;
mod run_input;
mod sse;
mod tool_arguments;

pub use agent_config::agent_config;
pub use apply_patch::apply_patch;
pub use edit::edit;
pub use json_unique::json_unique;
pub use mcp_messages::mcp_messages;
pub use provider_stream::provider_stream;
pub use resume::resume;
pub use run_input::run_input;
pub use sse::sse;
pub use tool_arguments::tool_arguments;

/// A target: the check of one input.
pub type Target = fn(&[u8]);

/// Every target by its name, as `fuzz/fuzz_targets` and the corpus directories
/// name them.
pub const TARGETS: &[(&str, Target)] = &[
    ("agent_config", agent_config),
    ("apply_patch", apply_patch),
    ("edit", edit),
    ("json_unique", json_unique),
    ("mcp_messages", mcp_messages),
    ("provider_stream", provider_stream),
    ("resume", resume),
    ("run_input", run_input),
    ("sse", sse),
    ("tool_arguments", tool_arguments),
];

/// The input cut at each NUL byte into at most `count` parts (the last keeps
/// any further NULs); a target that reads several texts takes them so.
fn parts(data: &[u8], count: usize) -> Vec<&[u8]> {
    data.splitn(count, |&b| b == 0).collect()
}

/// `data` cut into pieces whose lengths the bytes of `lengths` give in turn
/// (0 to 64 bytes each, repeating: a read may give nothing), as a stream
/// arrives in chunks; whole when no length is above 0.
fn pieces<'a>(data: &'a [u8], lengths: &[u8]) -> Vec<&'a [u8]> {
    let sizes: Vec<usize> = lengths.iter().map(|&b| usize::from(b % 65)).collect();
    if sizes.iter().all(|&size| size == 0) {
        return vec![data];
    }
    let mut pieces = Vec::new();
    let mut rest = data;
    for size in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (piece, after) = rest.split_at((*size).min(rest.len()));
        pieces.push(piece);
        rest = after;
    }
    pieces
}

#[cfg(test)]
mod corpus {
    use std::path::{Path, PathBuf};

    /// Runs every target on each file of its committed seeds and regressions,
    /// so that what a fuzzer once found stays fixed without a fuzzer.
    #[test]
    fn every_committed_input_holds() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
        for (name, target) in super::TARGETS {
            let seeds = files(&root.join("seeds").join(name));
            assert!(!seeds.is_empty(), "{name} has no seeds under {}", root.display());
            for input in seeds.iter().chain(&files(&root.join("regressions").join(name))) {
                let data = std::fs::read(input).unwrap();
                let outcome = std::panic::catch_unwind(|| target(&data));
                assert!(outcome.is_ok(), "{name} fails on {}", input.display());
            }
        }
    }

    fn files(dir: &Path) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
            Ok(entries) => entries.map(|entry| entry.unwrap().path()).collect(),
            Err(_) => Vec::new(),
        };
        files.sort();
        files
    }
}
