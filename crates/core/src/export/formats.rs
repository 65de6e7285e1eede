//! The formats a reading is exported in, as the person chooses them (`deepread convert --to`, the Export
//! dialog), and the files each one writes, so that nothing is overwritten without being asked.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::figures::{write_figures, FIGURES_DIR};
use super::tables_csv::tables_dir;
use super::{
    output_file, write_csv, write_docx, write_epub, write_html, write_json, write_markdown,
    write_xlsx, DocumentExport, EpubChapters, ExportError, ExportSummary,
};

/// One output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    /// The document's Markdown with its figures, as the reference script writes it.
    Md,
    /// Every block with its box: the sidecar other tools read.
    Json,
    /// One standalone, sanitized page.
    Html,
    /// A Word document.
    Docx,
    /// An EPUB 3 book.
    Epub,
    /// Every table, a sheet each, in one workbook.
    Xlsx,
    /// Every table as its own CSV file.
    Csv,
}

impl ExportFormat {
    pub const ALL: [ExportFormat; 7] = [
        ExportFormat::Md,
        ExportFormat::Json,
        ExportFormat::Html,
        ExportFormat::Docx,
        ExportFormat::Epub,
        ExportFormat::Xlsx,
        ExportFormat::Csv,
    ];

    /// The name on the command line and in the settings: the file extension.
    pub fn key(self) -> &'static str {
        match self {
            ExportFormat::Md => "md",
            ExportFormat::Json => "json",
            ExportFormat::Html => "html",
            ExportFormat::Docx => "docx",
            ExportFormat::Epub => "epub",
            ExportFormat::Xlsx => "xlsx",
            ExportFormat::Csv => "csv",
        }
    }

    /// Whether its files link the figures in `images/` rather than carry them inside.
    fn links_figures(self) -> bool {
        matches!(self, ExportFormat::Md | ExportFormat::Html)
    }

    /// What it writes under `out_dir` for `stem`, its figures aside.
    fn output(self, out_dir: &Path, stem: &str) -> Result<PathBuf, ExportError> {
        match self {
            ExportFormat::Csv => tables_dir(out_dir, stem),
            other => output_file(out_dir, stem, other.key()),
        }
    }
}

impl fmt::Display for ExportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

impl FromStr for ExportFormat {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let key = text.trim().to_ascii_lowercase();
        let key = match key.as_str() {
            "markdown" => "md",
            "word" => "docx",
            "excel" => "xlsx",
            other => other,
        };
        ExportFormat::ALL
            .into_iter()
            .find(|format| format.key() == key)
            .ok_or_else(|| {
                let known: Vec<&str> = ExportFormat::ALL.iter().map(|f| f.key()).collect();
                format!(
                    "unknown format \"{text}\"; choose from {}",
                    known.join(", ")
                )
            })
    }
}

/// What an export writes: the formats, and how an EPUB is cut into chapters.
#[derive(Debug, Clone)]
pub struct ExportChoice {
    pub formats: BTreeSet<ExportFormat>,
    pub epub_chapters: EpubChapters,
}

impl ExportChoice {
    /// The files and folders the export would write under `out_dir` for `stem`: the ones to look for before
    /// overwriting anything.
    pub fn planned_outputs(&self, out_dir: &Path, stem: &str) -> Result<Vec<PathBuf>, ExportError> {
        let mut outputs = self
            .formats
            .iter()
            .map(|format| format.output(out_dir, stem))
            .collect::<Result<Vec<_>, _>>()?;
        if self.formats.iter().any(|f| f.links_figures()) {
            outputs.push(out_dir.join(FIGURES_DIR));
        }
        Ok(outputs)
    }

    /// Those of [`Self::planned_outputs`] that are there already.
    pub fn existing_outputs(
        &self,
        out_dir: &Path,
        stem: &str,
    ) -> Result<Vec<PathBuf>, ExportError> {
        let mut outputs = self.planned_outputs(out_dir, stem)?;
        outputs.retain(|path| path.symlink_metadata().is_ok());
        Ok(outputs)
    }

    /// The chosen formats that `written` (an export's files) holds nothing of: the tables' formats of a
    /// reading without tables, which write no empty workbook.
    pub fn unwritten(&self, out_dir: &Path, stem: &str, written: &[PathBuf]) -> Vec<ExportFormat> {
        self.formats
            .iter()
            .copied()
            .filter(|format| {
                format.output(out_dir, stem).map_or(true, |planned| {
                    !written.iter().any(|file| file.starts_with(&planned))
                })
            })
            .collect()
    }

    /// Writes every chosen format, the figures once for those that link them.
    pub fn write(
        &self,
        export: &DocumentExport<'_>,
        out_dir: &Path,
        stem: &str,
    ) -> Result<ExportSummary, ExportError> {
        let mut summary = ExportSummary::default();
        // The Markdown writes the figures itself, before the file that links them.
        if !self.formats.contains(&ExportFormat::Md) && self.formats.contains(&ExportFormat::Html) {
            summary.absorb(write_figures(export, out_dir)?);
        }
        for format in &self.formats {
            summary.absorb(self.write_one(*format, export, out_dir, stem)?);
        }
        Ok(summary)
    }

    fn write_one(
        &self,
        format: ExportFormat,
        export: &DocumentExport<'_>,
        out_dir: &Path,
        stem: &str,
    ) -> Result<ExportSummary, ExportError> {
        match format {
            ExportFormat::Md => write_markdown(export, out_dir, stem),
            ExportFormat::Json => write_json(export, out_dir, stem),
            ExportFormat::Html => write_html(export, out_dir, stem),
            ExportFormat::Docx => write_docx(export, out_dir, stem),
            ExportFormat::Epub => write_epub(export, out_dir, stem, self.epub_chapters),
            ExportFormat::Xlsx => write_xlsx(export, out_dir, stem),
            ExportFormat::Csv => write_csv(export, out_dir, stem),
        }
    }
}

impl ExportSummary {
    fn absorb(&mut self, other: ExportSummary) {
        self.files.extend(other.files);
        self.figures += other.figures;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_named_by_their_extension_and_a_few_words_people_use() {
        for format in ExportFormat::ALL {
            assert_eq!(format.key().parse::<ExportFormat>(), Ok(format));
        }
        assert_eq!("Markdown".parse::<ExportFormat>(), Ok(ExportFormat::Md));
        assert_eq!(" Word ".parse::<ExportFormat>(), Ok(ExportFormat::Docx));
        assert_eq!("excel".parse::<ExportFormat>(), Ok(ExportFormat::Xlsx));
        let error = "pdf".parse::<ExportFormat>().unwrap_err();
        assert!(
            error.contains("\"pdf\"") && error.contains("docx"),
            "{error}"
        );
    }

    #[test]
    fn the_outputs_looked_for_are_those_written() {
        let dir = tempfile::tempdir().unwrap();
        let choice = ExportChoice {
            formats: [ExportFormat::Html, ExportFormat::Csv, ExportFormat::Docx].into(),
            epub_chapters: EpubChapters::Document,
        };
        assert!(choice
            .existing_outputs(dir.path(), "report")
            .unwrap()
            .is_empty());
        std::fs::write(dir.path().join("report.docx"), b"").unwrap();
        std::fs::write(dir.path().join("report.md"), b"").unwrap();
        std::fs::create_dir(dir.path().join(FIGURES_DIR)).unwrap();
        assert_eq!(
            choice.existing_outputs(dir.path(), "report").unwrap(),
            vec![dir.path().join("report.docx"), dir.path().join(FIGURES_DIR)],
            "the Markdown was not chosen; the figures' folder is, through the HTML"
        );
        assert!(choice.planned_outputs(dir.path(), "a/b").is_err());
    }
}
