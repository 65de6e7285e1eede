use std::path::Path;

fn main() {
    // tauri.conf.json lives at the repository root (see architecture.md), and tauri-build reads the
    // config from the current directory, so build from there.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
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
