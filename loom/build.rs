//! Compiles the included sources of ferrule with their loom primitives.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(ferrule_loom)");
    println!("cargo::rustc-cfg=ferrule_loom");
}
