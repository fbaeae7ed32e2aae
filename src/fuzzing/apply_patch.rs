//! The apply_patch built-in: a patch parsed, matched and applied to real files.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::json;

use crate::builtin::workspace::Workspace;
use crate::builtin::Stop;

/// Input: the content of `a.txt`, of `dir/b.txt`, then the patch, each part
/// after a NUL, applied in a confined workspace beside a directory it must not
/// reach. Holds: a refused patch leaves every file as it was (none of its
/// changes applies), and says why; no patch changes anything outside the
/// workspace, beside it or above it.
pub fn apply_patch(data: &[u8]) {
    let [a, b, patch] = super::parts(data, 3)[..] else { return };
    let Ok(patch) = std::str::from_utf8(patch) else { return };
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let root = scratch.path().join("work");
    for (path, content) in [("work/a.txt", a), ("work/dir/b.txt", b), ("outside/c.txt", b"kept\n")] {
        let path = scratch.path().join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("a directory");
        std::fs::write(path, content).expect("a file");
    }
    let before = tree(scratch.path());
    let workspace = Workspace::new(root.to_str(), true).expect("the workspace");
    let outcome = crate::builtin::apply_patch::run(&workspace, &json!({ "input": patch }), &Stop::never());
    let after = tree(scratch.path());
    let beside = |files: &BTreeMap<String, Option<Vec<u8>>>| {
        files
            .iter()
            .filter(|(path, _)| !path.starts_with("work/"))
            .map(|(p, c)| (p.clone(), c.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(beside(&after), beside(&before), "a patch changed files outside the workspace");
    if let Err(why) = outcome {
        assert!(!why.is_empty(), "a refusal without a reason");
        assert_eq!(after, before, "a refused patch changed the workspace: {why}");
    }
}

/// Every file and directory under `root` with its content, by relative path.
fn tree(root: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut found = BTreeMap::new();
    let mut waiting = vec![root.to_path_buf()];
    while let Some(dir) = waiting.pop() {
        for entry in std::fs::read_dir(&dir).expect("a directory") {
            let path = entry.expect("an entry").path();
            let name = path.strip_prefix(root).expect("inside").to_string_lossy().into_owned();
            let kind = std::fs::symlink_metadata(&path).expect("metadata").file_type();
            if kind.is_dir() {
                waiting.push(path);
                found.insert(name, None);
            } else {
                found.insert(name, Some(std::fs::read(&path).unwrap_or_default()));
            }
        }
    }
    found
}
