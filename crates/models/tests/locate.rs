//! `locate`: the order of the places looked in, and what a person reads when none holds a model.
//! Every place is a temporary folder passed through an explicit `Env`; the process environment and
//! the real ~/.cache are never touched.

use std::path::{Path, PathBuf};

use deepread_models::{candidates, locate_in, repo_folder, Env, Source, PINNED_REVISION, REPO};
use tempfile::TempDir;

const MAIN_COMMIT: &str = "1234567890abcdef1234567890abcdef12345678";

/// Every place `locate` looks in, under one temporary folder.
struct Places {
    root: TempDir,
}

impl Places {
    fn new() -> Self {
        Places {
            root: tempfile::tempdir().unwrap(),
        }
    }

    fn explicit(&self) -> PathBuf {
        self.root.path().join("explicit")
    }
    fn env_var(&self) -> PathBuf {
        self.root.path().join("from-env")
    }
    fn hub(&self) -> PathBuf {
        self.root.path().join("hub")
    }
    fn repo(&self) -> PathBuf {
        self.hub().join(repo_folder(REPO))
    }
    fn pinned(&self) -> PathBuf {
        self.repo().join("snapshots").join(PINNED_REVISION)
    }
    fn main(&self) -> PathBuf {
        self.repo().join("snapshots").join(MAIN_COMMIT)
    }
    fn data(&self) -> PathBuf {
        self.root.path().join("data")
    }
    fn data_model(&self) -> PathBuf {
        self.data().join("models/DeepSeek-OCR-2")
    }

    fn env(&self, with_var: bool) -> Env {
        Env {
            model_var: with_var.then(|| self.env_var()),
            hub_cache: Some(self.hub()),
            data_dir: Some(self.data()),
            endpoint: String::new(),
            token: None,
        }
    }

    /// A model in every place, refs/main naming its own snapshot.
    fn everywhere() -> Self {
        let places = Places::new();
        for dir in [
            places.explicit(),
            places.env_var(),
            places.pinned(),
            places.main(),
            places.data_model(),
        ] {
            model(&dir);
        }
        std::fs::create_dir_all(places.repo().join("refs")).unwrap();
        std::fs::write(places.repo().join("refs/main"), MAIN_COMMIT).unwrap();
        places
    }
}

fn model(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("config.json"), "{}").unwrap();
    std::fs::write(dir.join("tokenizer.json"), "{}").unwrap();
    std::fs::write(dir.join("model-00001-of-000001.safetensors"), [0u8; 100]).unwrap();
}

fn found(explicit: Option<&Path>, env: &Env) -> (Source, PathBuf) {
    let located = locate_in(explicit, env).unwrap();
    (located.source, located.dir)
}

#[test]
fn the_order_is_explicit_then_deepread_model_then_hf_cache_then_data_folder() {
    let places = Places::everywhere();
    let explicit = places.explicit();

    assert_eq!(
        found(Some(&explicit), &places.env(true)),
        (Source::Explicit, explicit)
    );
    assert_eq!(
        found(None, &places.env(true)),
        (Source::EnvVar, places.env_var())
    );
    assert_eq!(
        found(None, &places.env(false)),
        (Source::HubPinned, places.pinned())
    );
    std::fs::remove_dir_all(places.pinned()).unwrap();
    assert_eq!(
        found(None, &places.env(false)),
        (Source::HubMain, places.main())
    );
    std::fs::remove_file(places.repo().join("refs/main")).unwrap();
    assert_eq!(
        found(None, &places.env(false)),
        (Source::DataDir, places.data_model())
    );
}

#[test]
fn a_hit_tells_what_the_folder_holds() {
    let places = Places::everywhere();
    let located = locate_in(None, &places.env(false)).unwrap();
    assert_eq!(located.files.files, 3);
    assert_eq!(located.files.bytes, 104);
}

#[test]
fn a_miss_lists_every_place_looked_and_why_it_did_not_count() {
    let places = Places::new();
    // A download cut short: a snapshot whose weights link to a blob that never arrived.
    model(&places.pinned());
    let weights = places.pinned().join("model-00001-of-000001.safetensors");
    std::fs::remove_file(&weights).unwrap();
    std::os::unix::fs::symlink("../../blobs/missing", &weights).unwrap();
    std::fs::create_dir_all(places.data_model()).unwrap();
    std::fs::write(places.data_model().join("config.json"), "{}").unwrap();

    let error = locate_in(None, &places.env(false)).unwrap_err();

    assert_eq!(error.named_by, None);
    assert_eq!(error.places.len(), 5);
    let message = error.to_string();
    let lines: Vec<&str> = message.lines().collect();
    assert!(
        lines[0].starts_with("no DeepSeek-OCR-2 model found"),
        "{message}"
    );
    assert!(
        lines[1].contains("(--model)") && lines[1].ends_with("not given"),
        "{message}"
    );
    assert!(
        lines[2].starts_with("  DEEPREAD_MODEL") && lines[2].ends_with("not set"),
        "{message}"
    );
    assert!(
        lines[3].contains(&places.pinned().display().to_string()),
        "{message}"
    );
    assert!(lines[3].ends_with("no *.safetensors weights"), "{message}");
    assert!(
        lines[4].contains("refs/main") && lines[4].contains("no such file"),
        "{message}"
    );
    assert!(
        lines[5].ends_with("no tokenizer.json, no *.safetensors weights"),
        "{message}"
    );
}

#[test]
fn a_folder_the_user_names_is_used_or_refused_never_passed_over() {
    let places = Places::everywhere();
    std::fs::remove_file(places.explicit().join("tokenizer.json")).unwrap();

    let error = locate_in(Some(&places.explicit()), &places.env(true)).unwrap_err();

    assert_eq!(error.named_by, Some(Source::Explicit));
    let message = error.to_string();
    assert!(
        message.starts_with(&format!(
        "{} (the folder named (--model)) is not a DeepSeek-OCR-2 model folder: no tokenizer.json",
        places.explicit().display()
    )),
        "{message}"
    );

    // DEEPREAD_MODEL pointing nowhere is refused the same way, though the cache holds a model.
    let mut env = places.env(true);
    env.model_var = Some(places.root.path().join("gone"));
    let error = locate_in(None, &env).unwrap_err();
    assert_eq!(error.named_by, Some(Source::EnvVar));
    assert!(error
        .to_string()
        .contains("(DEEPREAD_MODEL) is not a DeepSeek-OCR-2 model folder: no such folder"));
}

#[test]
fn candidates_show_every_place_in_order_with_what_is_there() {
    let places = Places::everywhere();
    let list = candidates(None, &places.env(true));
    let sources: Vec<Source> = list.iter().map(|p| p.source.clone()).collect();
    assert_eq!(
        sources,
        [
            Source::Explicit,
            Source::EnvVar,
            Source::HubPinned,
            Source::HubMain,
            Source::DataDir
        ]
    );
    assert_eq!(list[0].dir, None);
    assert!(list[1..].iter().all(|p| p.is_model()));
}

#[test]
fn refs_main_naming_the_pinned_commit_is_not_listed_twice() {
    let places = Places::new();
    model(&places.pinned());
    std::fs::create_dir_all(places.repo().join("refs")).unwrap();
    std::fs::write(places.repo().join("refs/main"), PINNED_REVISION).unwrap();

    let list = candidates(None, &places.env(false));

    assert!(list[2].is_model());
    assert_eq!(
        list[3].contents,
        Err("the pinned revision (above)".to_owned())
    );
}

#[test]
fn llama_cpp_gguf_pair_counts_as_a_model_but_deepreads_own_int8_file_does_not() {
    let places = Places::new();
    let dir = places.explicit();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("deepread-int8.gguf"), [0u8; 10]).unwrap();
    std::fs::write(dir.join("DeepSeek-OCR-2-Q4_K_M.gguf"), [0u8; 10]).unwrap();
    let error = locate_in(Some(&dir), &places.env(false)).unwrap_err();
    assert!(error.to_string().contains("no config.json"), "{error}");

    std::fs::write(dir.join("mmproj-DeepSeek-OCR-2-Q8_0.gguf"), [0u8; 10]).unwrap();
    let located = locate_in(Some(&dir), &places.env(false)).unwrap();
    assert_eq!((located.source, located.files.files), (Source::Explicit, 3));
}
