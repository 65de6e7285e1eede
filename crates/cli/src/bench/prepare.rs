//! `deepread bench --prepare FILE`: the CPU side of a reading, which must keep ahead of the GPU. Each page is
//! rendered at the model's resolution (PDFium takes one call at a time, as in the pipeline) and preprocessed
//! into the model's views (resizing and tiling, in parallel), on 1, 2, … threads: the pipeline's preparing
//! threads are the cores but one, at most 4, so a row per thread count says what a machine of that many cores
//! feeds. Set beside `--document`'s pages/s on the same GPU, it shows whether the CPU keeps up.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use clap::Args;
use deepread_core::recognizer::{MODEL_RENDER, RENDER_DPI};
use deepread_engine::preprocess::{preprocess, PreprocessConfig};
use deepread_engine::PageImage;
use deepread_pdf::Document;

use crate::failure::Failure;

#[derive(Args)]
pub struct PrepareArgs {
    /// Time the pages' preparation (render + the model's preprocessing) of this PDF instead.
    #[arg(long, value_name = "PDF")]
    prepare: Option<PathBuf>,
    /// Pages to prepare, the document's repeated (default: twice its pages, at least 24).
    #[arg(long)]
    prepare_pages: Option<usize>,
    /// Preparing threads to time.
    #[arg(long, value_delimiter = ',', default_value = "1,2,3")]
    prepare_threads: Vec<usize>,
}

impl PrepareArgs {
    pub(super) fn file(&self) -> Option<&Path> {
        self.prepare.as_deref()
    }
}

/// Where one thread count's time went, summed over its threads.
#[derive(Default)]
struct Spent {
    render: Duration,
    views: Duration,
}

pub(super) fn run(args: &PrepareArgs, path: &Path) -> Result<(), Failure> {
    if args.prepare_threads.is_empty() || args.prepare_threads.contains(&0) {
        return Err(Failure::Usage(
            "--prepare-threads must be a list of counts ≥ 1".into(),
        ));
    }
    let document =
        Arc::new(Document::open(path, None).map_err(|e| Failure::Document(format!("{e}")))?);
    let count = document.page_count();
    if count == 0 {
        return Err(Failure::Document(format!(
            "{} has no pages",
            path.display()
        )));
    }
    let pages = args.prepare_pages.unwrap_or((2 * count).max(24));
    println!(
        "deepread bench --prepare: {} ({count} pages, {pages} prepared per row, repeated), rendered at {RENDER_DPI} dpi and \
         preprocessed into the model's views; {} CPU threads on this machine",
        path.display(),
        thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!("threads  pages  seconds  pages/s  render ms/page  views ms/page");
    for &threads in &args.prepare_threads {
        let started = Instant::now();
        let spent = prepare_all(&document, count, pages, threads)?;
        let seconds = started.elapsed().as_secs_f64();
        let per_page = |d: Duration| d.as_secs_f64() * 1e3 / pages as f64;
        println!(
            "{threads:>7}  {pages:>5}  {seconds:>7.2}  {:>7.2}  {:>14.1}  {:>13.1}",
            pages as f64 / seconds,
            per_page(spent.render),
            per_page(spent.views)
        );
    }
    Ok(())
}

/// Prepares `pages` pages (page i is the document's i mod `count`) on `threads` threads.
fn prepare_all(
    document: &Arc<Document>,
    count: usize,
    pages: usize,
    threads: usize,
) -> Result<Spent, Failure> {
    let next = AtomicUsize::new(0);
    let spent = Mutex::new(Spent::default());
    let failure = Mutex::new(None);
    thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let page = next.fetch_add(1, Ordering::Relaxed);
                if page >= pages {
                    break;
                }
                match prepare_page(document, page % count) {
                    Ok((render, views)) => {
                        let mut spent = spent.lock().unwrap_or_else(|e| e.into_inner());
                        spent.render += render;
                        spent.views += views;
                    }
                    Err(error) => {
                        *failure.lock().unwrap_or_else(|e| e.into_inner()) = Some(error);
                        // The other threads stop at their next page.
                        next.store(pages, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    match failure.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(error) => Err(error),
        None => Ok(spent.into_inner().unwrap_or_else(|e| e.into_inner())),
    }
}

/// One page as the pipeline prepares it for the model: its render's time and its views' time.
fn prepare_page(document: &Document, page: usize) -> Result<(Duration, Duration), Failure> {
    let t0 = Instant::now();
    let image = document
        .render_page(page, MODEL_RENDER)
        .map_err(|e| Failure::Document(format!("page {}: {e}", page + 1)))?;
    let t1 = Instant::now();
    let prepared = preprocess(&image, &PreprocessConfig::default())
        .map_err(|e| Failure::Document(format!("page {}: {e}", page + 1)))?;
    // The pixel bytes the engine takes are part of the CPU's work.
    std::hint::black_box(PageImage::from(prepared));
    Ok((t1 - t0, t1.elapsed()))
}
