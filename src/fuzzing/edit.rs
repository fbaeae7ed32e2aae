//! The edit built-in's matching of old text in a file.

use crate::builtin::edit::{apply, MAX_SEARCH_BYTES};
use crate::builtin::matching::Budget;
use crate::builtin::Stop;

/// Input: a file's text, then pairs of old and new text, each part after a
/// NUL. Holds: the search stays within its budget (the fuzzer's timeout would
/// tell); a refusal says why; an edit that matched exactly put its new text in
/// the result, and when every edit matched exactly (in a file without CR) the
/// result is as long as the file with each old text's length swapped for its
/// new text's.
pub fn edit(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut parts = text.split('\0');
    let body = parts.next().unwrap_or_default();
    let rest: Vec<&str> = parts.collect();
    let edits: Vec<(String, String)> =
        rest.chunks(2).map(|pair| (pair[0].to_owned(), pair.get(1).copied().unwrap_or_default().to_owned())).collect();
    match apply(body, &edits, "f.txt", &mut Budget::new(MAX_SEARCH_BYTES), &Stop::never()) {
        Ok((updated, fuzzy)) => {
            for (i, (_, new)) in edits.iter().enumerate().filter(|(i, _)| !fuzzy.contains(i)) {
                assert!(
                    updated.contains(new.as_str()),
                    "edit {i} matched exactly but its new text is not in the result"
                );
            }
            if fuzzy.is_empty() && !body.contains('\r') {
                let removed: usize = edits.iter().map(|(old, _)| old.len()).sum();
                let added: usize = edits.iter().map(|(_, new)| new.len()).sum();
                assert_eq!(updated.len(), body.len() - removed + added, "exact edits changed other text");
            }
        }
        Err(why) => assert!(!why.is_empty(), "a refusal without a reason"),
    }
}
