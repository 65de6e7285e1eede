//! The password of encrypted PDFs on the command line: from a file (`--password-file`), else from
//! `$DEEPREAD_PDF_PASSWORD`, never as an argument, where any user could read it in the process list.

use std::path::{Path, PathBuf};

use clap::Args;
use deepread_pdf::{Document, PdfError};

use crate::failure::Failure;

/// The environment variable read when no `--password-file` is given.
pub const PASSWORD_VAR: &str = "DEEPREAD_PDF_PASSWORD";

#[derive(Args)]
pub struct PasswordArgs {
    /// A file whose first line is the password of the encrypted PDFs given (default: $DEEPREAD_PDF_PASSWORD).
    /// Documents that are not encrypted open as always.
    #[arg(long, value_name = "FILE")]
    password_file: Option<PathBuf>,
}

impl PasswordArgs {
    /// The password asked for, if any.
    pub fn password(&self) -> Result<Option<String>, Failure> {
        match &self.password_file {
            Some(path) => first_line(path).map(Some),
            None => Ok(std::env::var(PASSWORD_VAR).ok()),
        }
    }
}

/// The file's first line without its line ending: editors and `echo` end files with one.
fn first_line(path: &Path) -> Result<String, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Failure::Usage(format!(
            "could not read the password file {}: {e}",
            path.display()
        ))
    })?;
    Ok(text.lines().next().unwrap_or_default().to_owned())
}

/// Opens a document with the password, saying how to give one when it needs it.
pub fn open_document(path: &Path, password: Option<&str>) -> Result<Document, Failure> {
    Document::open(path, password).map_err(|e| match e {
        PdfError::PasswordRequired => Failure::document(
            path,
            format!("{e} (give it with --password-file FILE or ${PASSWORD_VAR})"),
        ),
        other => Failure::document(path, other),
    })
}
