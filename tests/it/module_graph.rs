//! The modules of `src/agent` form no cycle: a module that another one uses does
//! not use it back, directly or through others. Read from the `super::` paths of
//! each file's code (comments aside).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each module of `dir` (a file other than `mod.rs`) and the sibling modules its
/// code names as `super::<module>`.
fn sibling_uses(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let files: BTreeMap<String, String> = std::fs::read_dir(dir)
        .expect("src/agent is readable")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "rs") && !path.ends_with("mod.rs"))
        .map(|path| {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).expect("a readable source file"))
        })
        .collect();
    files
        .iter()
        .map(|(name, text)| (name.clone(), names_used(text).into_iter().filter(|n| files.contains_key(n)).collect()))
        .collect()
}

/// The names after `super::` in the code of `text`, one level deep: from
/// `super::a::B` and from each item of `super::{a, b::C}`.
fn names_used(text: &str) -> BTreeSet<String> {
    let ident = |s: &str| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    let mut names = BTreeSet::new();
    for line in text.lines().map(str::trim_start).filter(|line| !line.starts_with("//")) {
        for (at, _) in line.match_indices("super::") {
            let rest = &line[at + "super::".len()..];
            match rest.strip_prefix('{') {
                Some(group) => {
                    let group = &group[..group.find('}').unwrap_or(group.len())];
                    names.extend(group.split(',').map(|item| ident(item.trim())));
                }
                None => {
                    names.insert(ident(rest));
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
fn the_cycle_check_finds_a_cycle_through_grouped_uses() {
    let uses = |text: &str| names_used(text).into_iter().collect::<BTreeSet<_>>();
    let graph = BTreeMap::from([
        ("a".to_owned(), uses("use super::{b::B, c};\n// use super::d;")),
        ("b".to_owned(), uses("fn f() { super::c::g() }")),
        ("c".to_owned(), uses("use super::a::A;")),
        ("d".to_owned(), BTreeSet::new()),
    ]);
    assert_eq!(graph["a"], BTreeSet::from(["b".to_owned(), "c".to_owned()]));
    assert_eq!(find_cycle(&graph), Some(vec!["a".to_owned(), "b".to_owned(), "c".to_owned(), "a".to_owned()]));
}
