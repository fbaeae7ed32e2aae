//! The version the C ABI reports is the package's.

#[test]
fn ferrule_version_is_the_cargo_package_version() {
    let manifest = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).unwrap();
    let package = manifest.split("[package]").nth(1).unwrap().split("\n[").next().unwrap();
    let declared = package
        .lines()
        .find_map(|line| line.strip_prefix("version = "))
        .map(|value| value.trim().trim_matches('"'))
        .expect("a version in [package]");
    let reported = ferrule::ffi::ferrule_version();
    // SAFETY: ferrule_version returns a static string of `len` bytes.
    let bytes = unsafe { std::slice::from_raw_parts(reported.ptr.cast::<u8>(), reported.len) };
    assert_eq!(std::str::from_utf8(bytes).unwrap(), declared);
    // SAFETY: the string is NUL-terminated at `len`.
    assert_eq!(unsafe { *reported.ptr.add(reported.len) }, 0);
}
