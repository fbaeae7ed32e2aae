//! Gives the shared library its SONAME on Linux (`libferrule.so.0`, the ABI
//! version), so programs linked against it load the ABI they were built for.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libferrule.so.0");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
