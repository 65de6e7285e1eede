//! Finding and binding the PDFium shared library, once per process.
//!
//! Look-up order: the caller's explicit path, `DEEPREAD_PDFIUM` (a file or a folder), the folder of
//! the running executable, the installed package's copy beside it ([`PACKAGED_PDFIUM`]), then the
//! system library search path. PDFium keeps global state and is not
//! thread-safe, so every call into it goes through [`pdfium_lock`].

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};

use pdfium_render::prelude::Pdfium;

use crate::error::{PdfError, SearchedPlace};

/// The environment variable that names the PDFium library or the folder that holds it.
pub const PDFIUM_ENV: &str = "DEEPREAD_PDFIUM";

/// Where the .deb and the AppImage put PDFium, from the folder of the installed binaries
/// (/usr/bin → /usr/lib/DeepRead/pdfium; scripts/bundle.mjs makes the packages).
const PACKAGED_PDFIUM: &str = "../lib/DeepRead/pdfium";

static PDFIUM: OnceLock<Pdfium> = OnceLock::new();

/// Held while binding, so two threads never both try to load the library.
static BINDING: Mutex<()> = Mutex::new(());

/// Held around every sequence of PDFium calls: PDFium's error state and caches are global.
static CALLS: Mutex<()> = Mutex::new(());

/// Binds PDFium for this process. Idempotent: once a library is bound, later calls return `Ok`
/// without looking again (even with a different `explicit` path). On failure nothing is cached, so
/// a later call (after `make deps`, say) looks again.
pub fn bind_pdfium(explicit: Option<&Path>) -> Result<(), PdfError> {
    pdfium_with(explicit).map(|_| ())
}

/// The bound library, binding it lazily from the default places on first use.
pub(crate) fn pdfium() -> Result<&'static Pdfium, PdfError> {
    pdfium_with(None)
}

/// Serializes PDFium calls across threads. A poisoned lock is taken anyway: the guard protects
/// PDFium's state, not data of ours that a panic could have left half-written.
pub(crate) fn pdfium_lock() -> MutexGuard<'static, ()> {
    CALLS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn pdfium_with(explicit: Option<&Path>) -> Result<&'static Pdfium, PdfError> {
    if let Some(bound) = PDFIUM.get() {
        return Ok(bound);
    }
    let _binding = BINDING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(bound) = PDFIUM.get() {
        return Ok(bound);
    }
    let pdfium = load_first_available(explicit)?;
    Ok(PDFIUM.get_or_init(|| pdfium))
}

fn load_first_available(explicit: Option<&Path>) -> Result<Pdfium, PdfError> {
    let mut searched = Vec::new();
    for candidate in candidate_files(explicit, &mut searched) {
        let place = candidate.display().to_string();
        if !candidate.is_file() {
            searched.push(SearchedPlace {
                place,
                outcome: "no such file".into(),
            });
            continue;
        }
        match Pdfium::bind_to_library(&candidate) {
            Ok(bindings) => {
                tracing::info!(library = %place, "bound PDFium");
                return Ok(Pdfium::new(bindings));
            }
            Err(error) => {
                tracing::warn!(library = %place, ?error, "PDFium library did not load");
                searched.push(SearchedPlace {
                    place,
                    outcome: format!("failed to load: {error:?}"),
                });
            }
        }
    }
    match Pdfium::bind_to_system_library() {
        Ok(bindings) => {
            tracing::info!("bound the system PDFium library");
            Ok(Pdfium::new(bindings))
        }
        Err(error) => {
            searched.push(SearchedPlace {
                place: format!(
                    "the system library search path ({})",
                    Pdfium::pdfium_platform_library_name().to_string_lossy()
                ),
                outcome: format!("not loaded: {error:?}"),
            });
            Err(PdfError::PdfiumNotFound { searched })
        }
    }
}

/// The files to try, in order. A folder stands for the platform's library name inside it. Places
/// that cannot even be named (no executable path) are recorded in `searched` right away.
fn candidate_files(explicit: Option<&Path>, searched: &mut Vec<SearchedPlace>) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Some(path) = explicit {
        files.push(library_file(path));
    }
    match std::env::var_os(PDFIUM_ENV) {
        Some(value) if !value.is_empty() => files.push(library_file(Path::new(&value))),
        _ => searched.push(SearchedPlace {
            place: format!("${PDFIUM_ENV}"),
            outcome: "not set".into(),
        }),
    }
    match std::env::current_exe() {
        Ok(exe) => {
            if let Some(dir) = exe.parent() {
                files.push(Pdfium::pdfium_platform_library_name_at_path(dir));
                files.push(Pdfium::pdfium_platform_library_name_at_path(
                    &dir.join(PACKAGED_PDFIUM),
                ));
            }
        }
        Err(error) => searched.push(SearchedPlace {
            place: "next to the executable".into(),
            outcome: format!("its location is unknown: {error}"),
        }),
    }
    files
}

fn library_file(path: &Path) -> PathBuf {
    if path.is_dir() {
        Pdfium::pdfium_platform_library_name_at_path(path)
    } else {
        path.to_path_buf()
    }
}
