//! `locate`: which model folder to read with. In order: a folder the caller names, `DEEPREAD_MODEL`,
//! the Hugging Face cache (the pinned revision, else the snapshot `refs/main` names, so a copy Python
//! tools downloaded is reused), then DeepRead's platform data folder.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::env::Env;
use crate::hub::cache::{snapshot_dir, RepoCache};
use crate::{PINNED_REVISION, REPO};

/// Which rule a model folder comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A folder the caller named (the command line's `--model`).
    Explicit,
    /// The `DEEPREAD_MODEL` environment variable.
    EnvVar,
    /// The Hugging Face cache's snapshot of [`PINNED_REVISION`].
    HubPinned,
    /// The Hugging Face cache's snapshot that `refs/main` names.
    HubMain,
    /// `models/DeepSeek-OCR-2` in DeepRead's platform data folder.
    DataDir,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Explicit => write!(f, "the folder named (--model)"),
            Source::EnvVar => write!(f, "DEEPREAD_MODEL"),
            Source::HubPinned => write!(
                f,
                "Hugging Face cache, pinned revision {}",
                &PINNED_REVISION[..7]
            ),
            Source::HubMain => write!(f, "Hugging Face cache, refs/main"),
            Source::DataDir => write!(f, "DeepRead's data folder"),
        }
    }
}

/// What a model folder holds, for display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelFiles {
    pub files: usize,
    pub bytes: u64,
}

/// One place looked in, and what was there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub source: Source,
    /// The folder, when the rule names one (an unset variable names none).
    pub dir: Option<PathBuf>,
    /// What is in the folder when it counts as a model; why it does not otherwise.
    pub contents: Result<ModelFiles, String>,
}

impl Place {
    pub fn is_model(&self) -> bool {
        self.contents.is_ok()
    }
}

/// The model folder to read with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub dir: PathBuf,
    pub source: Source,
    pub files: ModelFiles,
}

/// No usable model folder: every place looked, and why each did not count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotFound {
    /// The rule that named a folder which is not a model (such a folder is never passed over for another).
    pub named_by: Option<Source>,
    pub places: Vec<Place>,
}

impl fmt::Display for NotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let named = self.named_by.as_ref().and_then(|source| {
            let place = self.places.iter().find(|place| &place.source == source)?;
            Some((source, place.dir.as_ref()?, place.contents.as_ref().err()?))
        });
        match named {
            Some((source, dir, why)) => write!(
                f,
                "{} ({source}) is not a DeepSeek-OCR-2 model folder: {why}; places looked:",
                dir.display()
            )?,
            None => write!(
                f,
                "no DeepSeek-OCR-2 model found (a folder with config.json, tokenizer.json and \
                 *.safetensors weights, or llama.cpp's GGUF pair); places looked:"
            )?,
        }
        for place in &self.places {
            let dir = place
                .dir
                .as_ref()
                .map(|dir| format!("{}: ", dir.display()))
                .unwrap_or_default();
            let what = match &place.contents {
                Ok(files) => format!("a model, {} files", files.files),
                Err(why) => why.clone(),
            };
            write!(f, "\n  {}: {dir}{what}", place.source)?;
        }
        Ok(())
    }
}

impl std::error::Error for NotFound {}

/// Finds the model folder from the process environment; `explicit` is a folder the user named.
pub fn locate(explicit: Option<&Path>) -> Result<Located, NotFound> {
    locate_in(explicit, &Env::from_process())
}

/// Finds the model folder in the given environment. A folder the user named (`explicit`, else
/// `DEEPREAD_MODEL`) is used or refused, never passed over for another model: reading with weights
/// other than the ones asked for would be a silent surprise.
pub fn locate_in(explicit: Option<&Path>, env: &Env) -> Result<Located, NotFound> {
    let places = candidates(explicit, env);
    let named = places
        .iter()
        .position(|place| is_user_named(&place.source) && place.dir.is_some());
    let chosen = match named {
        Some(index) => Some(index).filter(|&index| places[index].is_model()),
        None => places.iter().position(Place::is_model),
    };
    match chosen {
        Some(index) => {
            let place = &places[index];
            Ok(Located {
                dir: place.dir.clone().unwrap_or_default(),
                source: place.source.clone(),
                files: *place.contents.as_ref().expect("chosen places hold a model"),
            })
        }
        None => Err(NotFound {
            named_by: named.map(|index| places[index].source.clone()),
            places,
        }),
    }
}

/// Every place looked in, in order, each with what it holds.
pub fn candidates(explicit: Option<&Path>, env: &Env) -> Vec<Place> {
    vec![
        named_place(Source::Explicit, explicit, "not given"),
        named_place(Source::EnvVar, env.model_var.as_deref(), "not set"),
        hub_pinned(env),
        hub_main(env),
        named_place(
            Source::DataDir,
            env.data_model_dir().as_deref(),
            "no platform data folder on this system",
        ),
    ]
}

fn is_user_named(source: &Source) -> bool {
    matches!(source, Source::Explicit | Source::EnvVar)
}

fn named_place(source: Source, dir: Option<&Path>, unset: &str) -> Place {
    match dir {
        Some(dir) => Place {
            source,
            dir: Some(dir.to_path_buf()),
            contents: inspect(dir),
        },
        None => Place {
            source,
            dir: None,
            contents: Err(unset.to_owned()),
        },
    }
}

const NO_HUB_CACHE: &str = "no home folder, and neither HF_HUB_CACHE nor HF_HOME is set";

fn hub_pinned(env: &Env) -> Place {
    let dir = env
        .hub_cache
        .as_ref()
        .map(|hub| snapshot_dir(hub, REPO, PINNED_REVISION));
    named_place(Source::HubPinned, dir.as_deref(), NO_HUB_CACHE)
}

fn hub_main(env: &Env) -> Place {
    let Some(hub) = &env.hub_cache else {
        return named_place(Source::HubMain, None, NO_HUB_CACHE);
    };
    let cache = RepoCache::new(hub, REPO);
    match cache.read_ref("main") {
        Some(commit) if commit == PINNED_REVISION => Place {
            source: Source::HubMain,
            dir: Some(cache.snapshot(&commit)),
            contents: Err("the pinned revision (above)".into()),
        },
        Some(commit) => named_place(Source::HubMain, Some(&cache.snapshot(&commit)), ""),
        None => Place {
            source: Source::HubMain,
            dir: Some(cache.root().join("refs").join("main")),
            contents: Err("no such file (main was never downloaded)".into()),
        },
    }
}

/// DeepRead's own int8 weights, which the engine writes beside a checkpoint (its `quant::INT8_CACHE`, a
/// crate this one does not depend on; core's tests hold the two names alike): not a model of their own.
pub const INT8_CACHE: &str = "deepread-int8.gguf";

/// A folder counts as a model when it has config.json, tokenizer.json and some *.safetensors, or two GGUF files
/// (llama.cpp's pair: the text file and its `mmproj`, which the engine tells apart and checks).
fn inspect(dir: &Path) -> Result<ModelFiles, String> {
    if !dir.exists() {
        return Err("no such folder".into());
    }
    if !dir.is_dir() {
        return Err("not a folder".into());
    }
    let entries: Vec<(PathBuf, u64)> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read it: {e}"))?
        .flatten()
        // `fs::metadata` follows snapshot links; a link whose blob is missing does not count.
        .filter_map(|entry| {
            let meta = std::fs::metadata(entry.path()).ok()?;
            meta.is_file().then(|| (entry.path(), meta.len()))
        })
        .collect();
    let has = |name: &str| {
        entries
            .iter()
            .any(|(path, _)| path.file_name() == Some(name.as_ref()))
    };
    let has_weights = entries
        .iter()
        .any(|(path, _)| path.extension().is_some_and(|ext| ext == "safetensors"));
    let gguf_files = entries
        .iter()
        .filter(|(path, _)| path.extension().is_some_and(|ext| ext == "gguf"))
        .filter(|(path, _)| path.file_name() != Some(INT8_CACHE.as_ref()))
        .count();
    let files = ModelFiles {
        files: entries.len(),
        bytes: entries.iter().map(|(_, len)| len).sum(),
    };
    if !has_weights && gguf_files >= 2 {
        return Ok(files);
    }
    let missing: Vec<&str> = [
        (!has("config.json")).then_some("config.json"),
        (!has("tokenizer.json")).then_some("tokenizer.json"),
        (!has_weights).then_some("*.safetensors weights"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !missing.is_empty() {
        return Err(format!("no {}", missing.join(", no ")));
    }
    Ok(files)
}
