//! The names the model sees for a server's tools.

/// The longest tool name every provider accepts.
const MAX_NAME_LEN: usize = 64;

/// The name the model sees for the tool `tool` of the server `server`:
/// `<server>__<tool>`, or the tool's own name without `prefix`. When a
/// character outside `[A-Za-z0-9_-]` had to become `_`, or the name is longer
/// than 64 characters, it ends in `_` and 8 hex digits of a hash of the whole
/// name (so that `a.b` and `a_b`, or two names in another script, stay apart),
/// keeping at most its first 55 characters; the hash is stable across
/// versions, so a saved run state still names the tool.
pub fn model_name(server: &str, tool: &str, prefix: bool) -> String {
    let whole = match prefix {
        true => format!("{server}__{tool}"),
        false => tool.to_owned(),
    };
    let name: String = whole.chars().map(cleaned).collect();
    if name.len() <= MAX_NAME_LEN && !name.is_empty() && name == whole {
        return name;
    }
    let kept: String = name.chars().take(MAX_NAME_LEN - 9).collect();
    format!("{kept}_{:08x}", fnv1a(whole.as_bytes()) as u32)
}

/// Whether `name` may be the model's name of one of the tools of the server
/// `server`: any name when its tools are not prefixed, else one that begins as
/// every name [`model_name`] gives them does.
pub fn may_name(server: &str, name: &str, prefix: bool) -> bool {
    let start: String = format!("{server}__").chars().map(cleaned).take(MAX_NAME_LEN - 9).collect();
    !prefix || name.starts_with(&start)
}

/// `c`, or `_` in place of a character outside `[A-Za-z0-9_-]`.
fn cleaned(c: char) -> char {
    match c.is_ascii_alphanumeric() || c == '_' || c == '-' {
        true => c,
        false => '_',
    }
}

/// The 64-bit FNV-1a hash of `bytes`.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_cleaned_and_bounded() {
        assert_eq!(model_name("files", "read_file", true), "files__read_file");
        assert_eq!(model_name("files", "read_file", false), "read_file");
        let cleaned = model_name("git hub", "issues.list/all", true);
        assert!(cleaned.starts_with("git_hub__issues_list_all_") && cleaned.len() == 33, "{cleaned}");
        assert_ne!(model_name("s", "a.b", true), model_name("s", "a_b", true), "cleaning keeps names apart");
        assert_ne!(model_name("s", "读取", true), model_name("s", "写入", true));
        assert!(model_name("s", "读取", true).chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        let long = model_name("server", &"t".repeat(80), true);
        assert_eq!(long.len(), 64);
        assert!(long.starts_with("server__ttt") && long.as_bytes()[55] == b'_', "{long}");
        let other = model_name("server", &format!("{}u", "t".repeat(79)), true);
        assert_ne!(long, other, "two long names that share their start stay apart");
        assert_eq!(long, model_name("server", &"t".repeat(80), true), "stable");
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c, "FNV-1a's published value");
        assert_eq!(model_name("s", "", false).len(), 9, "an empty name is hashed: {}", model_name("s", "", false));
    }

    #[test]
    fn a_servers_names_are_told_apart_from_others() {
        for (server, tool) in [("files", "read"), ("git hub", "a.b"), (&*"s".repeat(70), "t"), ("files", "")] {
            assert!(may_name(server, &model_name(server, tool, true), true), "{server} {tool}");
        }
        assert!(!may_name("files", "fles__read", true));
        assert!(!may_name("files", "read", true));
        assert!(may_name("files", "read", false), "unprefixed names may be anything");
    }
}
