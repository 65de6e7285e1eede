//! `deepread models check-quant FILE…`: how far int8 weights move the model on one's own pages, with the real
//! weights. Each page is read greedily with the weights as downloaded (bf16 on a GPU); those tokens are then
//! fed back, teacher-forced, through that model and through the same model with int8 weights, and the logits
//! of every read position compared: the relative error, the share of positions whose greedy token is the
//! same, and the widest flip (a flip between near-equal logits is a near-tie any rounding may turn).

use std::path::{Path, PathBuf};

use clap::Args;
use deepread_core::recognizer::{locate_model, ReadingMode, MODEL_RENDER};
use deepread_engine::quant::{checkpoint_source, teacher_forced_logits, Agreement, INT8_CACHE};
use deepread_engine::{default_device, Flow, GenerateOptions, Model, Ocr, PageInput};

use crate::failure::Failure;
use crate::page_ranges::parse_pages;
use crate::password::{open_document, PasswordArgs};

#[derive(Args)]
pub struct CheckQuantArgs {
    /// PDFs or page images.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Pages of each PDF to read, numbered from 1: "1-3,9".
    #[arg(long, default_value = "1-3")]
    pages: String,
    /// Tokens read and compared on each page (fewer where the page ends sooner).
    #[arg(long, default_value_t = 256)]
    tokens: usize,
    /// Model folder (default: the one `deepread models list` marks). Its int8 weights are cached there.
    #[arg(long)]
    model: Option<PathBuf>,
    #[command(flatten)]
    password: PasswordArgs,
}

pub fn run(args: CheckQuantArgs) -> Result<(), Failure> {
    let pages = parse_pages(&args.pages).map_err(Failure::Usage)?;
    if args.tokens == 0 {
        return Err(Failure::Usage("--tokens must be at least 1".into()));
    }
    let dir = locate_model(args.model.as_deref()).map_err(Failure::model)?;
    let (device, dtype) = default_device();
    let ocr = Ocr::load(&dir, &device, dtype).map_err(Failure::model)?;
    eprintln!("int8 weights: read from {INT8_CACHE} in the model folder, or made now (once)");
    let int8 = int8_beside(ocr.engine().model(), &dir)?;
    let password = args.password.password()?;
    let mut total: Option<Agreement> = None;
    for file in &args.files {
        let document = open_document(file, password.as_deref())?;
        for &index in pages.iter().filter(|&&p| p < document.page_count()) {
            let image = document
                .render_page(index, MODEL_RENDER)
                .map_err(|e| Failure::document(file, e))?;
            let input = ocr
                .prepare(&image, ReadingMode::Layout.preset().text())
                .map_err(Failure::model)?;
            let page = check_page(&ocr, &int8, &input, args.tokens).map_err(Failure::model)?;
            println!("{} p.{}: {}", file.display(), index + 1, describe(&page));
            total = Some(total.map_or(page.clone(), |t| t.merge(&page)));
        }
    }
    let total = total.ok_or_else(|| Failure::Usage("no page to read: check --pages".into()))?;
    println!("all pages: {}", describe(&total));
    Ok(())
}

/// The loaded model with int8 weights beside it (sharing its vision tower and embeddings).
fn int8_beside(model: &Model, dir: &Path) -> Result<Model, Failure> {
    let source = checkpoint_source(dir).map_err(Failure::model)?;
    model
        .clone()
        .into_int8(Some(&dir.join(INT8_CACHE)), &source)
        .map_err(Failure::model)
}

/// One page read greedily by `ocr`'s model, then teacher-forced through it and through `int8`.
fn check_page(
    ocr: &Ocr,
    int8: &Model,
    input: &PageInput,
    tokens: usize,
) -> deepread_engine::error::Result<Agreement> {
    let options = GenerateOptions {
        max_new_tokens: tokens,
        ..GenerateOptions::default()
    };
    let read = ocr
        .engine()
        .generate(std::slice::from_ref(input), &options, |_| Flow::Continue)?;
    let model = ocr.engine().model();
    // The vision tower is the same in both: the page is seen once.
    let features = match &input.image {
        Some(image) => Some(model.image_features(image)?),
        None => None,
    };
    let dense = teacher_forced_logits(model, input, features.as_ref(), &read[0].tokens)?;
    let quantized = teacher_forced_logits(int8, input, features.as_ref(), &read[0].tokens)?;
    Agreement::of(&dense, &quantized)
}

fn describe(a: &Agreement) -> String {
    format!(
        "{} positions, logits {:.3e} relative (L2), top-1 {}/{} ({:.1} %), widest flip {:.4}",
        a.positions,
        a.rel_l2,
        a.top1,
        a.positions,
        a.top1_share() * 100.0,
        a.widest_flip
    )
}
