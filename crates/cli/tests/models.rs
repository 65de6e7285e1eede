//! `deepread models download|list` end to end: the real binary against a hub on 127.0.0.1, in a home
//! folder of its own (HF_HOME, HOME and the XDG folders point into a temporary folder).

#[path = "../../models/tests/support/fake_hub/mod.rs"]
mod fake_hub;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use fake_hub::{FakeHub, Faults, HubFile, PINNED, WEIGHTS};

/// The binary with every variable it reads set to a folder of this test, or removed.
fn deepread(home: &Path, endpoint: &str, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_deepread"));
    command
        .args(args)
        .env("HF_ENDPOINT", endpoint)
        .env("HF_HOME", home.join("hf"))
        .env("HOME", home)
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("XDG_DATA_HOME", home.join("data"));
    for name in [
        "HF_HUB_CACHE",
        "HUGGINGFACE_HUB_CACHE",
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "HF_TOKEN_PATH",
        "DEEPREAD_MODEL",
    ] {
        command.env_remove(name);
    }
    command
}

fn run(home: &Path, endpoint: &str, args: &[&str]) -> Output {
    deepread(home, endpoint, args)
        .output()
        .expect("deepread runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn snapshot(home: &Path) -> PathBuf {
    home.join("hf/hub/models--deepseek-ai--DeepSeek-OCR-2/snapshots")
        .join(PINNED)
}

#[test]
fn download_fills_the_hf_cache_and_list_then_finds_it() {
    let hub = FakeHub::model();
    let home = tempfile::tempdir().unwrap();

    let download = run(home.path(), &hub.endpoint(), &["models", "download"]);

    assert!(download.status.success(), "{}", text(&download.stderr));
    let snapshot = snapshot(home.path());
    assert_eq!(
        text(&download.stdout).trim(),
        snapshot.display().to_string()
    );
    assert!(text(&download.stderr).contains("DeepRead will read with it"));
    for name in ["config.json", "tokenizer.json", WEIGHTS] {
        assert_eq!(
            std::fs::read(snapshot.join(name)).unwrap(),
            hub.file(name).content
        );
    }

    let list = run(home.path(), &hub.endpoint(), &["models", "list"]);

    assert!(list.status.success(), "{}", text(&list.stderr));
    let stdout = text(&list.stdout);
    let used: Vec<&str> = stdout.lines().filter(|l| l.starts_with('*')).collect();
    assert_eq!(used.len(), 1, "{stdout}");
    assert!(
        used[0].starts_with("* 3. Hugging Face cache, pinned revision aaa02f3"),
        "{stdout}"
    );
    assert!(
        used[0].contains(&snapshot.display().to_string()),
        "{stdout}"
    );
    assert!(used[0].ends_with("3 files, 0.4 MB"), "{stdout}");
    assert!(
        stdout.contains("  1. the folder named (--model): not given"),
        "{stdout}"
    );
    assert!(stdout.contains("  2. DEEPREAD_MODEL: not set"), "{stdout}");
    assert!(
        stdout.contains(&format!("Uses {}", snapshot.display())),
        "{stdout}"
    );
    // And where it reads: this CPU build says so; a CUDA build names the GPU and both capabilities.
    let device = stdout
        .lines()
        .find_map(|line| line.strip_prefix("Reads on: "))
        .unwrap_or_else(|| panic!("no device line: {stdout}"));
    assert!(
        device == "CPU, f32; built without CUDA"
            || device.contains("compute capability")
                && device.contains("; built for compute capability"),
        "{device}"
    );
}

#[test]
fn list_without_a_model_says_how_to_get_one() {
    let home = tempfile::tempdir().unwrap();

    let list = run(home.path(), "http://127.0.0.1:9", &["models", "list"]);

    let stdout = text(&list.stdout);
    assert!(list.status.success());
    assert!(!stdout.lines().any(|l| l.starts_with('*')), "{stdout}");
    assert!(
        stdout.contains("No model found: download it with `deepread models download`"),
        "{stdout}"
    );
    let data = home.path().join("data/deepread/models/DeepSeek-OCR-2");
    assert!(
        stdout.contains(&format!(
            "5. DeepRead's data folder: {}: no such folder",
            data.display()
        )),
        "{stdout}"
    );
}

#[test]
fn a_killed_download_resumes_where_it_stopped() {
    let hub = FakeHub::model();
    hub.set_faults(Faults {
        slow: Some((WEIGHTS.into(), Duration::from_millis(50))),
        ..Faults::default()
    });
    let home = tempfile::tempdir().unwrap();
    let etag = hub.file(WEIGHTS).etag();
    let partial = home
        .path()
        .join("hf/hub/models--deepseek-ai--DeepSeek-OCR-2/blobs")
        .join(format!("{etag}.incomplete"));
    let mut child = deepread(home.path(), &hub.endpoint(), &["models", "download"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while std::fs::metadata(&partial).map_or(0, |m| m.len()) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no bytes arrived"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // SIGKILL: harsher than Ctrl+C, and what is on disk must still be good to resume from.
    child.kill().unwrap();
    child.wait().unwrap();
    let kept = std::fs::metadata(&partial).unwrap().len();
    hub.set_faults(Faults::default());

    let again = run(home.path(), &hub.endpoint(), &["models", "download"]);

    assert!(again.status.success(), "{}", text(&again.stderr));
    let last = hub.content_requests(WEIGHTS).pop().flatten();
    let resumed_from: u64 = last
        .as_deref()
        .and_then(|range| {
            range
                .strip_prefix("bytes=")?
                .strip_suffix('-')?
                .parse()
                .ok()
        })
        .expect("the second run asks for a range");
    assert!(
        resumed_from >= kept && resumed_from > 0,
        "{resumed_from} vs {kept}"
    );
    assert_eq!(
        std::fs::read(snapshot(home.path()).join(WEIGHTS)).unwrap(),
        hub.file(WEIGHTS).content
    );
}

#[test]
fn failures_say_what_to_do_with_their_own_exit_statuses() {
    let home = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let unreachable = run(
        home.path(),
        &format!("http://127.0.0.1:{port}"),
        &["models", "download"],
    );
    assert_eq!(unreachable.status.code(), Some(9));
    let stderr = text(&unreachable.stderr);
    assert!(
        stderr.contains(&format!("deepread: cannot reach http://127.0.0.1:{port}")),
        "{stderr}"
    );

    let hub = FakeHub::model();
    hub.set_faults(Faults {
        token: Some("hf_secret".into()),
        ..Faults::default()
    });
    let refused = run(home.path(), &hub.endpoint(), &["models", "download"]);
    assert_eq!(refused.status.code(), Some(4));
    assert!(
        text(&refused.stderr).contains("set HF_TOKEN"),
        "{}",
        text(&refused.stderr)
    );

    // The token file huggingface_hub's login writes is read too.
    std::fs::create_dir_all(home.path().join("hf")).unwrap();
    std::fs::write(home.path().join("hf/token"), "hf_secret\n").unwrap();
    let with_token = run(home.path(), &hub.endpoint(), &["models", "download"]);
    assert!(with_token.status.success(), "{}", text(&with_token.stderr));
}

#[test]
fn a_revision_and_a_folder_of_ones_own_are_honoured() {
    let commit = "1234567890abcdef1234567890abcdef12345678";
    let files: Vec<HubFile> = fake_hub::model_files();
    let hub = FakeHub::start(files, commit);
    let home = tempfile::tempdir().unwrap();
    let to = home.path().join("elsewhere");

    let output = run(
        home.path(),
        &hub.endpoint(),
        &[
            "models",
            "download",
            "--revision",
            "main",
            "--to",
            to.to_str().unwrap(),
        ],
    );

    assert!(output.status.success(), "{}", text(&output.stderr));
    let snapshot = to
        .join("models--deepseek-ai--DeepSeek-OCR-2/snapshots")
        .join(commit);
    assert_eq!(text(&output.stdout).trim(), snapshot.display().to_string());
    assert!(text(&output.stderr).contains(&format!("pass --model {}", snapshot.display())));
    assert_eq!(
        std::fs::read_to_string(to.join("models--deepseek-ai--DeepSeek-OCR-2/refs/main")).unwrap(),
        commit
    );
}
