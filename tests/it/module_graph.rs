//! The modules of `src/agent` form no cycle: a module that another one uses does
//! not use it back, directly or through others. Read from the paths of each
//! file's code (comments aside): `super::` and `crate::agent::`, and the names
//! `mod.rs` re-exports.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each module of `dir` (a file other than `mod.rs`) and the sibling modules its
/// code names: as `super::<module>`, as `crate::agent::<module>`, or through a
/// name `mod.rs` re-exports from one.
fn sibling_uses(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(dir).expect("src/agent is readable") {
        let path = entry.expect("a directory entry").path();
        assert!(!path.is_dir(), "{} is a directory: the check reads only the files of src/agent", path.display());
        if path.extension().is_some_and(|ext| ext == "rs") {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            files.insert(name, code_of(&std::fs::read_to_string(&path).expect("a readable source file")));
        }
    }
    let reexported = reexports(files.get("mod").map_or("", String::as_str));
    files
        .iter()
        .filter(|(name, _)| name.as_str() != "mod")
        .map(|(name, text)| {
            let used = names_used(text)
                .into_iter()
                .filter_map(|used| match files.contains_key(&used) {
                    true => Some(used),
                    false => reexported.get(&used).cloned(),
                })
                .filter(|module| module != "mod")
                .collect();
            (name.clone(), used)
        })
        .collect()
}

/// `text` without its `//` comments (doc comments included) and without its
/// unit tests (from `#[cfg(test)]` on, where `super::` is the file itself).
fn code_of(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines().map(|line| line.find("//").map_or(line, |at| &line[..at])).collect::<Vec<_>>().join("\n")
}

/// The names `mod.rs` re-exports (`pub use module::{A, B};`), each with the
/// module it comes from.
fn reexports(code: &str) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for statement in code.split(';').map(str::trim) {
        let Some(rest) = statement.strip_prefix("pub use ").or_else(|| statement.strip_prefix("pub(crate) use "))
        else {
            continue;
        };
        let (module, items) = rest.split_once("::").unwrap_or((rest, ""));
        for item in top_level_items(items.trim_start_matches('{').trim_end_matches('}')) {
            names.insert(ident(&item), module.trim().to_owned());
        }
    }
    names
}

/// The leading identifier of `text`.
fn ident(text: &str) -> String {
    text.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
}

/// The items of a `{...}` group's inside, split at its own commas (not at those
/// of nested groups).
fn top_level_items(inside: &str) -> Vec<String> {
    let (mut items, mut depth, mut item) = (Vec::new(), 0, String::new());
    for c in inside.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut item));
                continue;
            }
            _ => {}
        }
        item.push(c);
    }
    items.push(item);
    items.into_iter().map(|item| item.trim().to_owned()).filter(|item| !item.is_empty()).collect()
}

/// The names right after `super::` or `crate::agent::` in `code`: from
/// `super::a::B`, and from each item of `super::{a, b::{C, D}}` (over several
/// lines too). A glob (`super::*`) hides what it uses, so it is refused.
fn names_used(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for prefix in ["super::", "crate::agent::"] {
        for (at, _) in code.match_indices(prefix) {
            let rest = code[at + prefix.len()..].trim_start();
            let items = match rest.strip_prefix('{') {
                Some(group) => {
                    let mut depth = 1;
                    let end = group
                        .char_indices()
                        .find(|&(_, c)| {
                            depth += match c {
                                '{' => 1,
                                '}' => -1,
                                _ => 0,
                            };
                            depth == 0
                        })
                        .map_or(group.len(), |(end, _)| end);
                    top_level_items(&group[..end])
                }
                None => vec![rest.to_owned()],
            };
            for item in items {
                assert!(!item.starts_with('*'), "a glob import ({prefix}*) hides which modules it uses");
                let name = ident(&item);
                if !name.is_empty() && name != "self" {
                    names.insert(name);
                }
            }
        }
    }
    names
}

/// A cycle in `graph`, as the path that closes it.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|n| n == node) {
            let mut cycle = path[start..].to_vec();
            cycle.push(node.to_owned());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn agent_modules_use_each_other_without_a_cycle() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/agent");
    let graph = sibling_uses(&dir);
    assert!(graph.len() > 20, "src/agent has its modules: {:?}", graph.keys());
    assert!(graph["run_loop"].contains("turn"), "the reader sees `use super::turn::turn`: {:?}", graph["run_loop"]);
    if let Some(cycle) = find_cycle(&graph) {
        panic!("src/agent has an import cycle: {}", cycle.join(" -> "));
    }
}

#[test]
fn the_cycle_check_reads_groups_over_lines_nested_groups_paths_and_reexports() {
    let uses = |text: &str| names_used(&code_of(text));
    assert_eq!(
        uses("use super::{\n    b::B, // not super::d\n    c::{C, D},\n    e,\n};\nfn f() { crate::agent::g::h() }"),
        BTreeSet::from(["b".to_owned(), "c".to_owned(), "e".to_owned(), "g".to_owned()])
    );
    let exported = reexports("mod a;\npub use a::{A, B};\npub(crate) use c::C;");
    assert_eq!(exported.get("B").map(String::as_str), Some("a"));
    assert_eq!(exported.get("C").map(String::as_str), Some("c"));
    let graph = BTreeMap::from([
        ("a".to_owned(), uses("use super::{b::B, c};")),
        ("b".to_owned(), uses("fn f() { super::c::g() }")),
        ("c".to_owned(), uses("use super::a::A;")),
        ("d".to_owned(), BTreeSet::new()),
    ]);
    assert_eq!(find_cycle(&graph), Some(vec!["a".to_owned(), "b".to_owned(), "c".to_owned(), "a".to_owned()]));
}
