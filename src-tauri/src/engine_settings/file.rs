//! The settings file: JSON at `$DEEPREAD_SETTINGS`, else `settings.json` in the platform config
//! folder. Replaced whole through a temporary file in the same folder, so that a crash mid-write
//! leaves the old file or the new one, never half of one.

use std::io::Write;
use std::path::{Path, PathBuf};

use directories::ProjectDirs;

use super::EngineSettings;

const FILE_NAME: &str = "settings.json";

/// `$DEEPREAD_SETTINGS`, else e.g. `~/.config/deepread/settings.json`; `None` without a home folder.
pub fn default_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("DEEPREAD_SETTINGS") {
        return Some(PathBuf::from(path));
    }
    // The same qualifier as the cache's data folder (crates/store).
    let dirs = ProjectDirs::from("app", "DeepRead", "DeepRead")?;
    Some(dirs.config_dir().join(FILE_NAME))
}

/// The settings in `path`: the defaults when there is no file yet. A file that cannot be read or is
/// not settings gives the defaults and a notice naming it; it is left as it is, for the person to
/// look at, until they save new settings.
pub fn load(path: &Path) -> (EngineSettings, Option<String>) {
    let problem = match std::fs::read(path) {
        Ok(bytes) => match serde_json::from_slice(&bytes) {
            Ok(settings) => return (settings, None),
            Err(error) => format!("it is not DeepRead settings: {error}"),
        },
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return (EngineSettings::default(), None)
        }
        Err(error) => format!("it could not be read: {error}"),
    };
    let notice = format!(
        "The settings in {} were not used ({problem}): DeepRead reads with the defaults until new \
         settings are saved.",
        path.display()
    );
    (EngineSettings::default(), Some(notice))
}

/// Replaces the file at `path` with `settings`, creating its folder if need be.
pub fn write(path: &Path, settings: &EngineSettings) -> std::io::Result<()> {
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(folder)?;
    let mut json = serde_json::to_vec_pretty(settings)?;
    json.push(b'\n');
    let mut temporary = tempfile::Builder::new()
        .prefix(".settings-")
        .suffix(".tmp")
        .tempfile_in(folder)?;
    temporary.write_all(&json)?;
    temporary.as_file().sync_all()?;
    // A temporary file that is not persisted is deleted when dropped, on error too.
    temporary.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::EngineKind;
    use super::*;

    fn remote() -> EngineSettings {
        EngineSettings {
            engine: EngineKind::Remote,
            endpoint: "https://gpu.example.com/v1".into(),
            model: "my/ocr".into(),
            concurrency: Some(32),
            allow_http: true,
            weights: deepread_core::recognizer::WeightFormat::Int8,
        }
    }

    #[test]
    fn settings_saved_are_read_back_as_they_were_and_no_temporary_file_stays() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("deeper/settings.json");
        write(&path, &remote()).unwrap();
        assert_eq!(load(&path), (remote(), None));
        write(&path, &EngineSettings::default()).unwrap();
        assert_eq!(load(&path), (EngineSettings::default(), None));
        let files: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(files, vec!["settings.json"]);
    }

    #[test]
    fn the_file_is_json_in_camel_case() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        write(&path, &remote()).unwrap();
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "engine": "remote",
                "endpoint": "https://gpu.example.com/v1",
                "model": "my/ocr",
                "concurrency": 32,
                "allowHttp": true,
                "weights": "int8",
            })
        );
    }

    #[test]
    fn no_file_is_the_defaults_without_a_notice() {
        let dir = tempfile::tempdir().unwrap();
        let (settings, notice) = load(&dir.path().join("settings.json"));
        assert_eq!(settings, EngineSettings::default());
        assert_eq!(notice, None);
    }

    #[test]
    fn a_corrupt_file_gives_the_defaults_a_notice_naming_it_and_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, "{\"engine\": \"remote\", ").unwrap();
        let (settings, notice) = load(&path);
        assert_eq!(settings, EngineSettings::default());
        let notice = notice.unwrap();
        assert!(notice.contains(&path.display().to_string()), "{notice}");
        assert!(notice.contains("not DeepRead settings"), "{notice}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"engine\": \"remote\", "
        );

        std::fs::write(&path, r#"{"engine": "cloud"}"#).unwrap();
        let notice = load(&path).1.unwrap();
        assert!(notice.contains("cloud"), "{notice}");
    }

    #[test]
    fn a_file_that_cannot_be_read_gives_the_defaults_and_a_notice() {
        let dir = tempfile::tempdir().unwrap();
        // A folder where the file should be: reading it fails, whoever runs the test.
        let (settings, notice) = load(dir.path());
        assert_eq!(settings, EngineSettings::default());
        assert!(notice.unwrap().contains("could not be read"));
    }
}
