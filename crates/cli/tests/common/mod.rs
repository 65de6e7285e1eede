//! What the CLI's end-to-end tests share: the real-world fixtures, PDFium, and the binary's output.

#![allow(dead_code)] // each test file uses its own part

use std::path::{Path, PathBuf};
use std::process::Output;

/// ../shared/fixtures, or where `DEEPREAD_FIXTURES` says (the Makefile sets it).
pub fn fixtures() -> PathBuf {
    std::env::var_os("DEEPREAD_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures"))
}

pub fn fixture(relative: &str) -> PathBuf {
    let path = fixtures().join(relative);
    assert!(path.exists(), "fixture {} is missing", path.display());
    path
}

/// The PDFium the Makefile installed, or `DEEPREAD_PDFIUM`.
pub fn pdfium() -> PathBuf {
    std::env::var_os("DEEPREAD_PDFIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.deps/pdfium/libpdfium.so")
        })
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}
