//! The one place the environment is read: `DEEPREAD_MODEL`, the Hugging Face variables and the platform
//! folders. Tests build an [`Env`] from a map instead, so they never touch the process environment.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use directories::{BaseDirs, ProjectDirs};

use crate::MODEL_FOLDER;

/// The hub used when `HF_ENDPOINT` is not set.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// What DeepRead takes from the environment to find and fetch the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Env {
    /// `DEEPREAD_MODEL`: a model folder named by the user.
    pub model_var: Option<PathBuf>,
    /// The Hugging Face hub cache: `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else
    /// `~/.cache/huggingface/hub` (the same rules as huggingface_hub, so both share one cache).
    pub hub_cache: Option<PathBuf>,
    /// The platform data folder DeepRead keeps its cache in (`~/.local/share/deepread` on Linux).
    pub data_dir: Option<PathBuf>,
    /// `HF_ENDPOINT` without a trailing slash, else [`DEFAULT_ENDPOINT`].
    pub endpoint: String,
    /// `HF_TOKEN`, else the token file huggingface_hub's login writes.
    pub token: Option<String>,
}

impl Env {
    /// The process environment and this user's folders.
    pub fn from_process() -> Self {
        let home = BaseDirs::new().map(|dirs| dirs.home_dir().to_path_buf());
        // The same ProjectDirs as the SQLite cache (crates/store), so all DeepRead data sits together.
        let data_dir =
            ProjectDirs::from("app", "DeepRead", "DeepRead").map(|dirs| dirs.data_dir().to_owned());
        Self::from_vars(|name| std::env::var_os(name), home.as_deref(), data_dir)
    }

    /// An environment given as a lookup (e.g. a map in tests), a home folder and a data folder.
    pub fn from_vars(
        var: impl Fn(&str) -> Option<OsString>,
        home: Option<&Path>,
        data_dir: Option<PathBuf>,
    ) -> Self {
        let var = |name: &str| var(name).filter(|value| !value.is_empty());
        let path = |name: &str| var(name).map(|value| expand_home(PathBuf::from(value), home));
        let hf_home = path("HF_HOME").or_else(|| {
            path("XDG_CACHE_HOME")
                .or_else(|| home.map(|home| home.join(".cache")))
                .map(|cache| cache.join("huggingface"))
        });
        let hub_cache = path("HF_HUB_CACHE")
            .or_else(|| path("HUGGINGFACE_HUB_CACHE"))
            .or_else(|| hf_home.as_ref().map(|hf_home| hf_home.join("hub")));
        let token_file = path("HF_TOKEN_PATH").or_else(|| hf_home.map(|h| h.join("token")));
        let token = var("HF_TOKEN")
            .or_else(|| var("HUGGING_FACE_HUB_TOKEN"))
            .and_then(|token| token.into_string().ok())
            .or_else(|| token_file.and_then(|file| std::fs::read_to_string(file).ok()))
            .map(|token| token.trim().to_owned())
            .filter(|token| !token.is_empty());
        let endpoint = var("HF_ENDPOINT")
            .and_then(|value| value.into_string().ok())
            .map_or_else(
                || DEFAULT_ENDPOINT.to_owned(),
                |e| e.trim_end_matches('/').to_owned(),
            );
        Env {
            model_var: var("DEEPREAD_MODEL").map(PathBuf::from),
            hub_cache,
            data_dir,
            endpoint,
            token,
        }
    }

    /// Where a model kept in the platform data folder lives.
    pub fn data_model_dir(&self) -> Option<PathBuf> {
        self.data_dir
            .as_ref()
            .map(|dir| dir.join("models").join(MODEL_FOLDER))
    }
}

/// `~/x` as huggingface_hub reads it (Python's `expanduser`), for paths typed into shell profiles.
fn expand_home(path: PathBuf, home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix("~"), home) {
        (Ok(rest), Some(home)) => home.join(rest),
        _ => path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)], home: &str) -> Env {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        Env::from_vars(|name| map.get(name).cloned(), Some(Path::new(home)), None)
    }

    #[test]
    fn hub_cache_follows_huggingface_hub_rules() {
        assert_eq!(
            env(&[], "/h").hub_cache,
            Some(PathBuf::from("/h/.cache/huggingface/hub"))
        );
        assert_eq!(
            env(&[("XDG_CACHE_HOME", "/x")], "/h").hub_cache,
            Some(PathBuf::from("/x/huggingface/hub"))
        );
        assert_eq!(
            env(&[("HF_HOME", "~/hf")], "/h").hub_cache,
            Some(PathBuf::from("/h/hf/hub"))
        );
        assert_eq!(
            env(&[("HF_HOME", "/hf"), ("HF_HUB_CACHE", "/cache")], "/h").hub_cache,
            Some(PathBuf::from("/cache"))
        );
    }

    #[test]
    fn endpoint_defaults_to_the_hub_and_loses_its_trailing_slash() {
        assert_eq!(env(&[], "/h").endpoint, DEFAULT_ENDPOINT);
        assert_eq!(
            env(&[("HF_ENDPOINT", "http://127.0.0.1:9/")], "/h").endpoint,
            "http://127.0.0.1:9"
        );
    }

    #[test]
    fn token_comes_from_hf_token_else_the_token_file() {
        let home = tempfile::tempdir().unwrap();
        let hf_home = home.path().join("hf");
        std::fs::create_dir_all(&hf_home).unwrap();
        std::fs::write(hf_home.join("token"), "hf_file\n").unwrap();
        let hf_home = hf_home.to_str().unwrap();
        let home = home.path().to_str().unwrap();
        assert_eq!(
            env(&[("HF_HOME", hf_home)], home).token.as_deref(),
            Some("hf_file")
        );
        assert_eq!(
            env(&[("HF_HOME", hf_home), ("HF_TOKEN", "hf_var")], home)
                .token
                .as_deref(),
            Some("hf_var")
        );
        assert_eq!(env(&[], home).token, None);
    }

    #[test]
    fn empty_variables_count_as_unset() {
        let env = env(&[("DEEPREAD_MODEL", ""), ("HF_HUB_CACHE", "")], "/h");
        assert_eq!(env.model_var, None);
        assert_eq!(
            env.hub_cache,
            Some(PathBuf::from("/h/.cache/huggingface/hub"))
        );
    }
}
