//! `deepread convert FILE... -o OUT`: read documents (from the cache where read before) and write them in
//! the formats chosen (`--to md,docx,...`), never over earlier outputs unless asked.

mod outputs;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, ValueEnum};
use deepread_core::corrections::{correct_pages, Laid};
use deepread_core::export::{
    DocumentExport, EpubChapters, ExportChoice, ExportFormat, PageExport, PageStatus,
};
use deepread_core::pipeline::{read_document, Cache, CancelToken, ReadOptions};
use deepread_core::recognizer::{
    engine_placement, locate_model, DeepSeekOcr2, ReadingMode, Recognizer, TextLayerRecognizer,
};
use deepread_engine::quant::WeightFormat;
use deepread_pdf::Document;
use deepread_store::Store;

use crate::failure::Failure;
use crate::page_ranges::parse_pages;
use crate::password::{open_document, PasswordArgs};
use crate::progress::DocumentProgress;
use crate::remote::RemoteArgs;
use crate::Mode;
use outputs::{expand_inputs, file_stem, plan_outputs, refuse_overwrite, OutputPlan};

#[derive(Args)]
pub struct ConvertArgs {
    /// PDFs or page images, or folders of them.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Output folder (one subfolder per document when several are given).
    #[arg(short, long)]
    out: PathBuf,
    /// Formats to write, comma-separated: md, json, html, docx, epub, xlsx (every table, a sheet each), csv
    /// (every table, a file each).
    #[arg(long, value_delimiter = ',', default_value = "md")]
    to: Vec<ExportFormat>,
    /// Also write a JSON sidecar with every block's box (the same as adding json to --to).
    #[arg(long)]
    json: bool,
    /// An EPUB's chapters: the whole document as one, or a chapter at each heading of level 1, or of 1 and 2.
    #[arg(long, value_enum, default_value_t = Chapters::Document)]
    epub_chapters: Chapters,
    /// The name of each document's files (and folder, when several are converted): {name} is the
    /// document's file name without its extension; {page} writes each page as files of its own, numbered
    /// from 1 and padded so that they sort ("{name}-p{page}": report-p01.md, report-p02.md, …).
    #[arg(long, default_value = "{name}")]
    name: String,
    /// Replace outputs that are there already (by default nothing is read when one is).
    #[arg(long)]
    overwrite: bool,
    /// Who reads: the model, the PDF's own text layer (instant, born-digital PDFs only), or the model
    /// on a server (--endpoint).
    #[arg(long, value_enum, default_value_t = EngineChoice::Deepseek)]
    engine: EngineChoice,
    #[arg(long, value_enum, default_value_t = Mode::Layout)]
    mode: Mode,
    /// Pages to read, numbered from 1: "1-5,9".
    #[arg(long)]
    pages: Option<String>,
    /// Model folder (default: $DEEPREAD_MODEL, the Hugging Face cache, then the data folder: `deepread models list`);
    /// with --engine remote, the name the server serves it under (deepseek-ai/DeepSeek-OCR-2).
    #[arg(long, required_if_eq("engine", "remote"))]
    model: Option<PathBuf>,
    /// Most pages the model reads at once (default: as many as the GPU's memory holds, up to 64; 4 on the CPU).
    #[arg(long)]
    in_flight: Option<usize>,
    /// The language model's weights: bf16, or int8 (half the memory; each page's prompt takes longer for now;
    /// quantized at the first use and kept beside the model, then read from there).
    #[arg(long, default_value = "bf16")]
    weights: WeightFormat,
    /// Cache file (default: the platform's data folder).
    #[arg(long)]
    cache: Option<PathBuf>,
    /// Read every page again instead of taking it from the cache.
    #[arg(long)]
    no_cache: bool,
    #[command(flatten)]
    remote: RemoteArgs,
    #[command(flatten)]
    password: PasswordArgs,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Chapters {
    Document,
    H1,
    H2,
}

impl From<Chapters> for EpubChapters {
    fn from(chapters: Chapters) -> Self {
        match chapters {
            Chapters::Document => EpubChapters::Document,
            Chapters::H1 => EpubChapters::Heading(1),
            Chapters::H2 => EpubChapters::Heading(2),
        }
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum EngineChoice {
    Deepseek,
    Text,
    Remote,
}

pub fn run(args: ConvertArgs) -> Result<(), Failure> {
    let pages = args
        .pages
        .as_deref()
        .map(parse_pages)
        .transpose()
        .map_err(Failure::Usage)?;
    let files = expand_inputs(&args.files)?;
    let plans = plan_outputs(&args.out, &files, &args.name)?;
    let choice = export_choice(&args);
    let password = args.password.password()?;
    let documents = open_documents(&files, password.as_deref())?;
    let pages = pages.unwrap_or_default();
    let outputs: Vec<(PathBuf, String)> = documents
        .iter()
        .zip(&plans)
        .flat_map(|((_, document), plan)| {
            let count = document.page_count();
            plan.stems(&pages_written(&pages, count), count)
                .into_iter()
                .map(|(stem, _)| (plan.folder.clone(), stem))
        })
        .collect();
    refuse_overwrite(&outputs, &choice, args.overwrite)?;
    let recognizer = recognizer(&args)?;
    let runtime = tokio::runtime::Runtime::new().map_err(|e| Failure::Unexpected(e.into()))?;
    let cache = open_cache(&runtime, args.cache.as_deref())?;
    let options = ReadOptions {
        pages,
        use_cache: !args.no_cache,
        ..ReadOptions::default()
    };
    let mut trouble = Vec::new();
    for ((path, document), plan) in documents.iter().zip(&plans) {
        let outcome = convert_document(
            path,
            document,
            recognizer.as_ref(),
            &cache,
            &options,
            plan,
            &choice,
        )?;
        if outcome.failed + outcome.looped > 0 {
            trouble.push(format!(
                "{}: {} page(s) failed, {} looped",
                path.display(),
                outcome.failed,
                outcome.looped
            ));
        }
    }
    runtime.block_on(cache.into_store().close());
    if trouble.is_empty() {
        Ok(())
    } else {
        Err(Failure::PagesFailed(trouble.join("; ")))
    }
}

fn export_choice(args: &ConvertArgs) -> ExportChoice {
    let mut formats: std::collections::BTreeSet<ExportFormat> = args.to.iter().copied().collect();
    if args.json {
        formats.insert(ExportFormat::Json);
    }
    ExportChoice {
        formats,
        epub_chapters: args.epub_chapters.into(),
    }
}

/// Opens every document before reading any, so a bad file is reported before minutes of work.
fn open_documents(
    files: &[PathBuf],
    password: Option<&str>,
) -> Result<Vec<(PathBuf, Arc<Document>)>, Failure> {
    files
        .iter()
        .map(|path| Ok((path.clone(), Arc::new(open_document(path, password)?))))
        .collect()
}

fn recognizer(args: &ConvertArgs) -> Result<Box<dyn Recognizer>, Failure> {
    if args.remote.given() && !matches!(args.engine, EngineChoice::Remote) {
        let problem = "--endpoint, --concurrency and --allow-http go with --engine remote";
        return Err(Failure::Usage(problem.into()));
    }
    Ok(match args.engine {
        EngineChoice::Text => Box::new(TextLayerRecognizer::new()),
        EngineChoice::Remote => Box::new(
            args.remote
                .recognizer(args.model.as_deref(), args.mode.into())
                .map_err(|e| Failure::Usage(format!("{e:#}")))?,
        ),
        EngineChoice::Deepseek => Box::new(load_model(
            args.model.as_deref(),
            args.mode.into(),
            args.in_flight,
            args.weights,
        )?),
    })
}

/// The model in process, found as `deepread models list` says, and where it reads, told once on stderr.
pub(crate) fn load_model(
    explicit: Option<&Path>,
    mode: ReadingMode,
    slots: Option<usize>,
    weights: WeightFormat,
) -> Result<DeepSeekOcr2, Failure> {
    let dir = locate_model(explicit).map_err(Failure::model)?;
    let model = DeepSeekOcr2::load_as(&dir, mode, slots, weights).map_err(Failure::model)?;
    let placement = engine_placement();
    eprintln!(
        "DeepSeek-OCR-2 from {} on {}",
        dir.display(),
        placement.describe()
    );
    if let Some(problem) = &placement.problem {
        eprintln!("{problem}");
    }
    Ok(model)
}

fn open_cache(runtime: &tokio::runtime::Runtime, path: Option<&Path>) -> Result<Cache, Failure> {
    let store = match path {
        Some(path) => runtime.block_on(Store::open(path)),
        None => runtime.block_on(Store::open_default()),
    }
    .map_err(|e| Failure::Cache(e.to_string()))?;
    if let Some(set_aside) = store.set_aside() {
        eprintln!("deepread: {set_aside}");
    }
    Ok(Cache::new(store, runtime.handle().clone()))
}

/// Pages of a written document that did not read cleanly, read now or taken from the cache alike: the
/// exit status speaks of the output, which is the same either way.
struct Outcome {
    failed: usize,
    looped: usize,
}

impl Outcome {
    fn of(pages: &BTreeMap<usize, PageExport>) -> Self {
        let mut outcome = Outcome {
            failed: 0,
            looped: 0,
        };
        for page in pages.values() {
            match page.status {
                PageStatus::Failed { .. } => outcome.failed += 1,
                PageStatus::Looped { .. } => outcome.looped += 1,
                PageStatus::Read | PageStatus::NotRead => {}
            }
        }
        outcome
    }
}

fn convert_document(
    path: &Path,
    document: &Arc<Document>,
    recognizer: &dyn Recognizer,
    cache: &Cache,
    options: &ReadOptions,
    plan: &OutputPlan,
    choice: &ExportChoice,
) -> Result<Outcome, Failure> {
    let name = path
        .file_name()
        .map_or_else(|| file_stem(path), |n| n.to_string_lossy().into_owned());
    let total = if options.pages.is_empty() {
        document.page_count()
    } else {
        options.pages.len()
    };
    let mut progress = DocumentProgress::new(&name, total);
    let mut pages = BTreeMap::new();
    let summary = read_document(
        document,
        recognizer,
        Some(cache),
        options,
        &CancelToken::new(),
        &mut |event| {
            progress.observe(&event);
            if let Some(page) = PageExport::from_event(&event) {
                pages.insert(page.index, page);
            }
        },
    );
    progress.finish();
    report_pages(&name, &pages);
    let outcome = Outcome::of(&pages);
    let mut export = DocumentExport {
        section: None,
        document,
        title: document.title().unwrap_or_else(|| file_stem(path)),
        pages: pages.into_values().collect(),
    };
    apply_corrections(&name, &mut export.pages, cache, document.content_hash());
    let count = document.page_count();
    let mut unwritten: Option<BTreeSet<ExportFormat>> = None;
    for (stem, page) in plan.stems(&pages_written(&options.pages, count), count) {
        let part = DocumentExport {
            section: page,
            document,
            title: export.title.clone(),
            pages: export
                .pages
                .iter()
                .filter(|p| page.is_none_or(|page| p.index == page))
                .cloned()
                .collect(),
        };
        let written = choice
            .write(&part, &plan.folder, &stem)
            .map_err(|e| Failure::Output(e.to_string()))?;
        let missing: BTreeSet<_> = choice
            .unwritten(&plan.folder, &stem, &written.files)
            .into_iter()
            .collect();
        unwritten = Some(match unwritten {
            None => missing,
            Some(before) => before.intersection(&missing).copied().collect(),
        });
    }
    for format in unwritten.unwrap_or_default() {
        eprintln!("{name}: no tables were read, so nothing was written as {format}");
    }
    if summary.from_cache == total {
        eprintln!("{name}: all {total} page(s) from the cache, nothing read again");
    } else if summary.from_cache > 0 {
        eprintln!(
            "{name}: {} of {total} page(s) from the cache",
            summary.from_cache
        );
    }
    Ok(outcome)
}

/// The pages a document's files hold: those asked for that it has, or all of them.
fn pages_written(asked: &[usize], page_count: usize) -> Vec<usize> {
    match asked {
        [] => (0..page_count).collect(),
        asked => asked.iter().copied().filter(|&p| p < page_count).collect(),
    }
}

/// The corrections made in the window, laid over the pages written; one the page no longer fits is said.
fn apply_corrections(name: &str, pages: &mut [PageExport], cache: &Cache, hash: &str) {
    let corrections = match cache.corrections(hash) {
        Ok(corrections) => corrections,
        Err(error) => {
            eprintln!("{name}: corrections could not be read from the cache ({error}); writing the reading as read");
            return;
        }
    };
    for (page, laid) in correct_pages(pages, &corrections) {
        if let Laid::Differs { .. } = laid {
            eprintln!(
                "{name}: page {}: a correction was left out: the page reads differently now than when it was corrected",
                page + 1
            );
        }
    }
}

/// Says which pages did not read cleanly, and why.
fn report_pages(name: &str, pages: &BTreeMap<usize, PageExport>) {
    for page in pages.values() {
        match &page.status {
            PageStatus::Failed { error } => {
                eprintln!("{name}: page {} failed: {error}", page.index + 1)
            }
            PageStatus::Looped { reason } => {
                eprintln!(
                    "{name}: page {} looped ({reason}); kept what came before the loop",
                    page.index + 1
                )
            }
            PageStatus::Read | PageStatus::NotRead => {}
        }
    }
}
