//! Shared by the integration tests: where the fixtures are, binding PDFium, running poppler (the
//! independent reference), and a guard against hangs.

#![allow(dead_code)] // each test binary uses its own subset

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

/// `DEEPREAD_FIXTURES`, else `<workspace>/../shared/fixtures`. Panics when missing: these tests
/// must not pass by skipping.
pub fn fixtures_dir() -> PathBuf {
    let dir = match std::env::var_os("DEEPREAD_FIXTURES") {
        Some(dir) => PathBuf::from(dir),
        None => workspace_root().join("../shared/fixtures"),
    };
    assert!(
        dir.join("index.json").is_file(),
        "fixtures not found at {} (set DEEPREAD_FIXTURES)",
        dir.display()
    );
    dir
}

pub fn fixture(relative: &str) -> PathBuf {
    let path = fixtures_dir().join(relative);
    assert!(path.is_file(), "fixture missing: {}", path.display());
    path
}

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Binds PDFium from `DEEPREAD_PDFIUM` when set, else from the workspace's `.deps` (what
/// `make deps` installs). Panics with the crate's own explanation when neither works.
pub fn init_pdfium() {
    let explicit = workspace_root().join(".deps/pdfium/libpdfium.so");
    let result = if std::env::var_os(deepread_pdf::PDFIUM_ENV).is_some() {
        deepread_pdf::bind_pdfium(None)
    } else {
        deepread_pdf::bind_pdfium(Some(&explicit))
    };
    if let Err(error) = result {
        panic!("{error}");
    }
}

/// Runs `work` on its own thread and fails the test if it takes longer than `seconds` (a hang)
/// or panics. `what` names the file in the failure message.
pub fn within<T: Send + 'static>(
    seconds: u64,
    what: &str,
    work: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (done, result) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        let value = work();
        let _ = done.send(());
        value
    });
    match result.recv_timeout(Duration::from_secs(seconds)) {
        Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => match handle.join() {
            Ok(value) => value,
            Err(panic) => std::panic::resume_unwind(panic),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: still running after {seconds} s (hang?)")
        }
    }
}

/// Runs a poppler tool; panics with install instructions when it is missing or fails.
pub fn poppler(tool: &str, args: &[&str]) -> String {
    let output = Command::new(tool).args(args).output().unwrap_or_else(|e| {
        panic!("cannot run {tool} ({e}): install poppler-utils (apt-get install -y poppler-utils)")
    });
    assert!(
        output.status.success(),
        "{tool} {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Per-page (width, height, rotation) as `pdfinfo` reports them (size before /Rotate).
pub fn pdfinfo_pages(path: &Path, password: Option<&str>) -> Vec<(f32, f32, u32)> {
    let path_str = path.to_str().unwrap();
    let mut args = vec!["-f", "1", "-l", "100000"];
    if let Some(pw) = password {
        args.extend(["-upw", pw]);
    }
    args.push(path_str);
    let info = poppler("pdfinfo", &args);
    let mut pages: Vec<(f32, f32, u32)> = Vec::new();
    for line in info.lines() {
        let Some(rest) = line.strip_prefix("Page") else {
            continue;
        };
        let rest = rest.trim_start();
        let Some((number, value)) = rest.split_once(' ') else {
            continue;
        };
        let Ok(number) = number.parse::<usize>() else {
            continue;
        };
        let value = value.trim_start();
        if let Some(size) = value.strip_prefix("size:") {
            let nums: Vec<f32> = size
                .split_whitespace()
                .filter_map(|t| t.parse().ok())
                .collect();
            assert_eq!(pages.len() + 1, number, "pdfinfo output out of order");
            pages.push((nums[0], nums[1], 0));
        } else if let Some(rot) = value.strip_prefix("rot:") {
            pages[number - 1].2 = rot.trim().parse().unwrap();
        }
    }
    pages
}

/// `sha256sum` of a file.
pub fn sha256sum(path: &Path) -> String {
    let output = Command::new("sha256sum").arg(path).output().unwrap();
    assert!(output.status.success());
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// The fixtures index, parsed.
pub fn index_json() -> serde_json::Value {
    let text = std::fs::read_to_string(fixtures_dir().join("index.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The index entry for a fixture path relative to the fixtures folder.
pub fn index_entry(relative: &str) -> Option<serde_json::Value> {
    index_json()
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["file"] == relative)
        .cloned()
}

/// Every file under `dir` (recursively) whose name satisfies `keep`, relative to the fixtures.
pub fn files_under(dir: &str, keep: &dyn Fn(&str) -> bool) -> Vec<String> {
    let root = fixtures_dir();
    let mut found = Vec::new();
    let mut stack = vec![root.join(dir)];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if keep(path.file_name().unwrap().to_str().unwrap()) {
                let relative = path.strip_prefix(&root).unwrap();
                found.push(relative.to_str().unwrap().to_string());
            }
        }
    }
    found.sort();
    found
}
