//! Passwords of encrypted PDFs, kept only when the person asks: in the system keyring, under an account per
//! document's content (so a moved or renamed copy opens with it too), never in the cache or a log.

use std::path::Path;
use std::sync::Arc;

use deepread_pdf::{Document, PdfError};
use serde::Serialize;

use crate::keyring;
use crate::library::Library;

/// How a document's password was used, for the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum PasswordUse {
    /// The document has none.
    None,
    /// Typed in, and not kept.
    Entered,
    /// From the keyring, or typed in and kept there now.
    Remembered,
}

pub struct Opened {
    pub document: Arc<Document>,
    pub password: PasswordUse,
    /// Why a password the person asked to remember is not, when it is not.
    pub notice: Option<String>,
}

/// Opens `path` as the window does: with `password` when one is given (kept in the keyring if `remember`), else
/// as it is, and when it needs a password after all, with the one remembered for it, if any.
pub fn open(
    library: &Library,
    path: &Path,
    password: Option<&str>,
    remember: bool,
) -> Result<Opened, PdfError> {
    if let Some(password) = password {
        let document = library.open(path, Some(password))?;
        return Ok(entered(document, password, remember));
    }
    match library.open(path, None) {
        Ok(document) => Ok(Opened {
            document,
            password: PasswordUse::None,
            notice: None,
        }),
        Err(PdfError::PasswordRequired) => open_remembered(library, path),
        Err(error) => Err(error),
    }
}

/// Drops the password remembered for document `hash`; nothing remembered is not an error.
pub fn forget(hash: &str) -> Result<(), String> {
    keyring::forget(&account(hash))
        .map_err(|e| format!("The password could not be forgotten: {e}."))
}

/// The document opened with a password typed in, kept if the person asked.
fn entered(document: Arc<Document>, password: &str, remember: bool) -> Opened {
    let kept = match remember {
        true => Some(keyring::store(&account(document.content_hash()), password)),
        false => None,
    };
    let (password, notice) = match kept {
        None => (PasswordUse::Entered, None),
        Some(Ok(())) => (PasswordUse::Remembered, None),
        Some(Err(error)) => (
            PasswordUse::Entered,
            Some(format!(
                "The password opened the document but could not be remembered: {error}."
            )),
        ),
    };
    Opened {
        document,
        password,
        notice,
    }
}

/// The encrypted document at `path`, opened with the password remembered for its content; `PasswordRequired`
/// when there is none (or the keyring cannot say), so that the window asks.
fn open_remembered(library: &Library, path: &Path) -> Result<Opened, PdfError> {
    let account = account(&Document::hash_of_file(path)?);
    let remembered = keyring::load(&account).unwrap_or_else(|error| {
        tracing::warn!(%error, "no remembered password could be looked up; asking for it");
        None
    });
    let Some(password) = remembered else {
        return Err(PdfError::PasswordRequired);
    };
    match library.open(path, Some(&password)) {
        Ok(document) => Ok(Opened {
            document,
            password: PasswordUse::Remembered,
            notice: None,
        }),
        // The same content with another password: the keyring's entry is not this document's any more.
        Err(PdfError::WrongPassword) => {
            if let Err(error) = keyring::forget(&account) {
                tracing::warn!(%error, "a remembered password that does not open its document stays");
            }
            Err(PdfError::PasswordRequired)
        }
        Err(error) => Err(error),
    }
}

/// The keyring account of document `hash`'s password.
fn account(hash: &str) -> String {
    format!("pdf-password:{hash}")
}
