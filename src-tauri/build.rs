use std::path::Path;

fn main() {
    // tauri.conf.json lives at the repository root (see architecture.md), and tauri-build reads the
    // config from the current directory, so build from there.
    // Read when the script runs, not baked in when it is compiled: a build script compiled for another
    // checkout sharing this target directory would otherwise look there.
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let root = Path::new(&manifest_dir).join("..");
    println!(
        "cargo:rerun-if-changed={}",
        root.join("tauri.conf.json").display()
    );
    println!("cargo:rerun-if-changed={}", root.join("ui/dist").display());
    std::env::set_current_dir(&root).expect("repository root is readable");
    let attributes =
        tauri_build::Attributes::new().capabilities_path_pattern("src-tauri/capabilities/**/*");
    tauri_build::try_build(attributes).expect("tauri build configuration is valid");
}
