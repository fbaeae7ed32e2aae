//! `ferrule-conformance [--scenarios DIR] [--schema FILE] OBSERVATIONS_DIR...`:
//! judges every runner's observations (one `<scenario>.json` per scenario in
//! each directory) against the scenarios, printing one line per scenario and
//! runner. Fails when any observation fails or is missing. The scenarios and the
//! schema are by default those of the checkout the judge was built in.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ferrule_conformance::{Judge, Scenario};

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(problem) => {
            eprintln!("ferrule-conformance: {problem}");
            ExitCode::from(2)
        }
    }
}

fn run(args: Vec<String>) -> Result<bool, String> {
    let root = checkout();
    let mut scenarios_dir = root.join("tests/conformance");
    let mut schema_path = root.join("schema/ferrule.schema.json");
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--scenarios" => scenarios_dir = args.next().ok_or("--scenarios takes a directory")?.into(),
            "--schema" => schema_path = args.next().ok_or("--schema takes a file")?.into(),
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
            dir => dirs.push(dir.into()),
        }
    }
    if dirs.is_empty() {
        return Err("name at least one directory of observations".to_owned());
    }
    let schema_text = std::fs::read_to_string(&schema_path).map_err(|e| format!("{}: {e}", schema_path.display()))?;
    let schema = serde_json::from_str(&schema_text).map_err(|e| format!("{}: {e}", schema_path.display()))?;
    let judge = Judge::with_schema(&schema);
    let scenarios = Scenario::read_all(&scenarios_dir)?;
    if scenarios.is_empty() {
        return Err(format!("no scenarios in {}", scenarios_dir.display()));
    }
    let mut all_passed = true;
    for dir in &dirs {
        let (mut passed, mut failed) = (0, 0);
        for scenario in &scenarios {
            let problems = judge_file(&judge, scenario, &dir.join(format!("{}.json", scenario.name())));
            if problems.is_empty() {
                passed += 1;
                println!("ok   {} {}", dir.display(), scenario.name());
            } else {
                failed += 1;
                println!("FAIL {} {}", dir.display(), scenario.name());
                for problem in problems {
                    println!("     {problem}");
                }
            }
        }
        println!("{}: {passed} passed, {failed} failed", dir.display());
        all_passed &= failed == 0;
    }
    Ok(all_passed)
}

/// The checkout the judge belongs to: the one its executable was built in
/// (`target/release/ferrule-conformance`), so that it also works where the
/// checkout is mounted elsewhere (the Swift root); else where it was compiled.
fn checkout() -> PathBuf {
    let built_in = std::env::current_exe().ok().and_then(|exe| Some(exe.parent()?.parent()?.parent()?.to_path_buf()));
    match built_in {
        Some(root) if root.join("schema/ferrule.schema.json").is_file() => root,
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.."),
    }
}

/// What is wrong with the observation in `path`, a missing file included.
fn judge_file(judge: &Judge, scenario: &Scenario, path: &Path) -> Vec<String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => return vec![format!("no observation ({}: {e}): the runner skipped the scenario", path.display())],
    };
    match serde_json::from_str(&text) {
        Ok(observation) => judge.judge(scenario, &observation),
        Err(e) => vec![format!("the observation is not JSON: {e}")],
    }
}
