//! `ferrule-codegen [--check]`: writes the bindings' generated files from
//! `schema/ferrule.schema.json` (the list is in [`outputs`]); with `--check`,
//! writes nothing and fails when any of them is not what the schema makes
//! (`make test` runs it so).

mod decisions;
mod go;
mod kotlin;
mod model;
mod names;
mod outputs;
mod render;
mod swift;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn main() -> ExitCode {
    let check = match std::env::args().skip(1).collect::<Vec<_>>().as_slice() {
        [] => false,
        [flag] if flag == "--check" => true,
        other => {
            eprintln!("usage: ferrule-codegen [--check] (not {other:?})");
            return ExitCode::from(2);
        }
    };
    match run(&Path::new(env!("CARGO_MANIFEST_DIR")).join(".."), check) {
        Ok(stale) if stale.is_empty() => ExitCode::SUCCESS,
        Ok(stale) => {
            for path in stale {
                eprintln!("{}: stale or left over; run `make generate` and commit the change", path.display());
            }
            ExitCode::FAILURE
        }
        Err(problem) => {
            eprintln!("ferrule-codegen: {problem}");
            ExitCode::from(2)
        }
    }
}

/// Renders every output of the checkout at `root`; writes each (or, with
/// `check`, compares it). The files that differed.
fn run(root: &Path, check: bool) -> Result<Vec<PathBuf>, String> {
    let schema_path = root.join("schema/ferrule.schema.json");
    let schema_text = std::fs::read_to_string(&schema_path).map_err(|e| format!("{}: {e}", schema_path.display()))?;
    let schema = serde_json::from_str(&schema_text).map_err(|e| format!("{}: {e}", schema_path.display()))?;
    let env = render::environment()?;
    let mut stale = Vec::new();
    for output in outputs::OUTPUTS {
        let text = render::render(&env, &schema, output)?;
        let path = root.join(output.path);
        if std::fs::read_to_string(&path).ok().as_deref() == Some(text.as_str()) {
            continue;
        }
        stale.push(path.clone());
        if !check {
            std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    for path in leftovers(root)? {
        stale.push(path.clone());
        if !check {
            std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    Ok(if check { stale } else { Vec::new() })
}

/// The binding sources with a generated file's name (`*_gen.go`,
/// `*_gen.swift`, `*_gen.kt`) that no output makes any more: they would still
/// be compiled.
fn leftovers(root: &Path) -> Result<Vec<PathBuf>, String> {
    let made: Vec<PathBuf> = outputs::OUTPUTS.iter().map(|output| root.join(output.path)).collect();
    let mut found = Vec::new();
    let mut folders =
        vec![root.join("bindings/go"), root.join("bindings/swift/Sources"), root.join("bindings/kotlin/src")];
    while let Some(folder) = folders.pop() {
        let entries = std::fs::read_dir(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
        for entry in entries {
            let path = entry.map_err(|e| format!("{}: {e}", folder.display()))?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if path.is_dir() && !name.starts_with('.') {
                folders.push(path);
            } else if ["_gen.go", "_gen.swift", "_gen.kt"].iter().any(|end| name.ends_with(end))
                && !made.contains(&path)
            {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}
