//! `deepread bench --document`: a synthetic document whose pages end at lengths of their own (a [`Mix`]), read
//! end to end as the product reads it: pages prepared ahead on another thread and pulled as slots free up,
//! each page stopped by the caller at its length (EOS forced, so it leaves its slot at once, as a page the loop
//! sentinel stops does), with the product's n-gram ban. For each mix, the grouped reading the app and CLI did
//! before beside continuous batching (slots sized from free memory, then capped at `--slots`): pages/s,
//! tokens/s, the first token of page 1, the longest wait of the decoding pages while one joins, GPU memory.

use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::thread;
use std::time::Instant;

use clap::Args;
use deepread_engine::device::memory_used;
use deepread_engine::{
    Engine, Flow, GenerateEvent, GenerateOptions, PageInput, PageSource, Pull, Schedule,
    ScheduleReport,
};

use super::mix::Mix;
use super::{BenchArgs, Setting};
use crate::failure::Failure;

/// Pages prepared ahead of the reading, as the pipeline's preparing threads keep them.
const PREPARED_AHEAD: usize = 8;
/// A static batch's size in the transformers oracle's figure (hf_reference.py at B = 16).
const ORACLE_BATCH: usize = 16;
/// The RTX 3090 against the H100 (NVIDIA's data sheets): memory bandwidth 936 GB/s; vision and prefill between
/// the ratio of SMs × boost clock (132 × 1.98 GHz against 82 × 1.695 GHz) and that of dense bf16 tensor peaks
/// with f32 accumulation (989 against 71 TFLOPS).
const RTX3090_BANDWIDTH_GBS: f64 = 936.0;
const RTX3090_JOIN_SLOWER: (f64, f64) = (1.88, 13.9);

#[derive(Args)]
pub struct DocumentArgs {
    /// Pages of the document (`--document`).
    #[arg(long, default_value_t = 735)]
    document_pages: usize,
    /// Output-length mixes to read.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "book,captured"
    )]
    mix: Vec<Mix>,
    /// Pages decoding together in the grouped reading (the app and CLI read 4 at a time).
    #[arg(long, default_value_t = 4)]
    grouped_slots: usize,
    /// Pages of the grouped reading, the document's first (default: all of it; it is the slow one).
    #[arg(long)]
    grouped_pages: Option<usize>,
    /// Continuous readings capped at these slots, beside the one sized from free memory.
    #[arg(long, value_delimiter = ',')]
    slots: Vec<usize>,
    /// Seed of the book's lengths.
    #[arg(long, default_value_t = 735)]
    seed: u64,
}

impl DocumentArgs {
    pub(super) fn check(&self) -> Result<(), Failure> {
        let zero = self.document_pages == 0
            || self.grouped_slots == 0
            || self.grouped_pages == Some(0)
            || self.slots.contains(&0);
        if zero || self.mix.is_empty() {
            return Err(Failure::Usage(
                "--document-pages, --grouped-slots, --grouped-pages and --slots must be at least 1, and --mix name a mix".into(),
            ));
        }
        Ok(())
    }
}

/// One reading of a document.
struct Figures {
    reading: String,
    pages: usize,
    seconds: f64,
    tokens: usize,
    first_token_ms: Option<f64>,
    /// The pages' prefill, summed: the reading thread's time not spent in decode steps.
    prefill_seconds: f64,
    /// The pages' vision, summed: the vision thread's time, beside the reading thread's.
    vision_seconds: f64,
    memory_bytes: Option<u64>,
    failed: usize,
    schedule: ScheduleReport,
}

pub(super) fn run(
    engine: &Engine,
    page: &PageInput,
    args: &BenchArgs,
    setting: &Setting,
) -> Result<(), Failure> {
    let doc = &args.doc;
    let sized = Schedule::for_engine(engine);
    warm_up(engine, page, &sized)?;
    print_header(args, setting, page);
    for &mix in &doc.mix {
        let lengths = mix.lengths(doc.document_pages, doc.seed);
        let grouped_pages = doc
            .grouped_pages
            .unwrap_or(lengths.len())
            .min(lengths.len());
        let mut readings = vec![
            (
                "grouped".to_string(),
                Schedule::grouped(doc.grouped_slots),
                &lengths[..grouped_pages],
            ),
            ("continuous".to_string(), sized.clone(), &lengths[..]),
        ];
        for &cap in doc.slots.iter().filter(|&&cap| cap < sized.slots) {
            let capped = sized.clone().with_slots(cap);
            readings.push(("capped".to_string(), capped, &lengths[..]));
        }
        let mut figures = Vec::new();
        for (reading, schedule, lengths) in readings {
            let mut f = read_document(engine, page, lengths, &schedule)?;
            f.reading = reading;
            print_row(mix, &f);
            figures.push(f);
        }
        let gpu = (setting.placement.device.is_cuda(), args.bandwidth_gbs);
        print_mix_summary(mix, &lengths, &figures, gpu);
    }
    Ok(())
}

/// Captures the decode graph of every width up to the slots before anything is timed (a reader pays that once
/// per process): page `i` of `slots` runs long enough to still decode when the last one joins.
fn warm_up(engine: &Engine, page: &PageInput, schedule: &Schedule) -> Result<(), Failure> {
    let slots = schedule.slots;
    let lengths: Vec<usize> = (0..slots).map(|i| 12 * (slots - i) + 2).collect();
    read_document(engine, page, &lengths, schedule).map(|_| ())
}

/// Reads `lengths.len()` copies of `page`, page `i` stopped after `lengths[i]` tokens.
fn read_document(
    engine: &Engine,
    page: &PageInput,
    lengths: &[usize],
    schedule: &Schedule,
) -> Result<Figures, Failure> {
    let options = GenerateOptions {
        // An id no model has: every page ends where the caller stops it.
        eos_token_id: Some(u32::MAX),
        ..GenerateOptions::default()
    };
    let device = engine.model().device();
    let mut generated = vec![0usize; lengths.len()];
    let mut figures = Figures {
        reading: String::new(),
        pages: lengths.len(),
        seconds: 0.0,
        tokens: 0,
        first_token_ms: None,
        prefill_seconds: 0.0,
        vision_seconds: 0.0,
        memory_bytes: None,
        failed: 0,
        schedule: ScheduleReport::default(),
    };
    let (sender, receiver) = mpsc::sync_channel(PREPARED_AHEAD);
    // Page 1 is ready before the clock starts, as a rendered page would be.
    sender.send(page.clone()).expect("the receiver is alive");
    thread::scope(|scope| {
        scope.spawn(move || {
            for _ in 1..lengths.len() {
                if sender.send(page.clone()).is_err() {
                    return;
                }
            }
        });
        let start = Instant::now();
        let mut source = Prepared(receiver);
        let mut on_event = |event: GenerateEvent| {
            match event {
                GenerateEvent::Token { page, .. } => {
                    generated[page] += 1;
                    if page == 0 && figures.first_token_ms.is_none() {
                        figures.first_token_ms = Some(start.elapsed().as_secs_f64() * 1e3);
                    }
                    if generated[page] >= lengths[page] {
                        return Flow::StopPage;
                    }
                }
                GenerateEvent::Finished { stats, .. } => {
                    figures.tokens += stats.generated_tokens;
                    figures.prefill_seconds += stats.prefill_ms / 1e3;
                    figures.vision_seconds += stats.vision_ms / 1e3;
                    figures.memory_bytes = figures.memory_bytes.max(memory_used(device));
                }
                GenerateEvent::Failed { .. } => figures.failed += 1,
                GenerateEvent::FewerSlots { .. } => {}
            }
            Flow::Continue
        };
        let report = engine
            .read_pages(&mut source, schedule, &options, &mut on_event)
            .map_err(Failure::model)?;
        figures.seconds = start.elapsed().as_secs_f64();
        figures.schedule = report;
        Ok(figures)
    })
}

/// Pages from the preparing thread: a page not prepared yet does not hold up the pages decoding.
struct Prepared(Receiver<PageInput>);

impl PageSource for Prepared {
    fn pull(&mut self, wait: bool) -> Pull {
        let next = if wait {
            self.0.recv().ok()
        } else {
            match self.0.try_recv() {
                Ok(page) => Some(page),
                Err(TryRecvError::Empty) => return Pull::NotReady,
                Err(TryRecvError::Disconnected) => None,
            }
        };
        next.map_or(Pull::End, Pull::Page)
    }
}

fn print_header(args: &BenchArgs, setting: &Setting, page: &PageInput) {
    println!(
        "deepread bench --document: {}, {}, {:?} decode path; {} pages, {} tiles + global view, {} prompt tokens; EOS forced at each page's length, the product's n-gram ban",
        setting.weights,
        setting.placement.describe(),
        setting.path,
        args.doc.document_pages,
        args.crops,
        page.prompt_ids.len(),
    );
    println!("readings: grouped (a group joins, then decodes until its last page ends), continuous (slots sized from free memory), capped (continuous, slots capped by --slots)");
    println!(
        "mix       reading          pages  slots   tokens  seconds  pages/s  tokens/s  first token ms  longest stall ms  widest  GPU GB  set aside  failed"
    );
}

fn print_row(mix: Mix, f: &Figures) {
    let memory = f
        .memory_bytes
        .map_or("n/a".to_string(), |b| format!("{:.2}", b as f64 / 1e9));
    let first = f
        .first_token_ms
        .map_or("n/a".to_string(), |ms| format!("{ms:.1}"));
    println!(
        "{:<9} {:<15} {:>6} {:>6} {:>8} {:>8.1} {:>8.2} {:>9.1} {:>15} {:>17.1} {:>7} {:>7} {:>10} {:>7}",
        mix.name(),
        f.reading,
        f.pages,
        f.schedule.slots,
        f.tokens,
        f.seconds,
        f.pages as f64 / f.seconds,
        f.tokens as f64 / f.seconds,
        first,
        f.schedule.longest_join_stall_ms,
        f.schedule.widest_step,
        memory,
        f.schedule.preempted,
        f.failed,
    );
}

/// The mix itself, what a static batch of 16 makes of it (the oracle's figure is extrapolated from it), and, on
/// a GPU, the RTX 3090 estimate of the continuous reading.
fn print_mix_summary(
    mix: Mix,
    lengths: &[usize],
    figures: &[Figures],
    (on_gpu, bandwidth_gbs): (bool, f64),
) {
    let tokens: usize = lengths.iter().sum();
    let batches = lengths.chunks(ORACLE_BATCH);
    let groups = batches.len();
    let static_steps: usize = batches.map(|b| b.iter().max().unwrap_or(&0)).sum();
    println!(
        "{} mix: {} pages, {tokens} tokens (mean {:.0}, {} to {}); static batches of {ORACLE_BATCH}: {groups}, taking {static_steps} decode steps",
        mix.name(),
        lengths.len(),
        tokens as f64 / lengths.len() as f64,
        lengths.iter().min().unwrap_or(&0),
        lengths.iter().max().unwrap_or(&0),
    );
    if let Some(f) = figures.iter().find(|f| on_gpu && f.reading == "continuous") {
        let bandwidth = bandwidth_gbs / RTX3090_BANDWIDTH_GBS;
        let (low, high) = RTX3090_JOIN_SLOWER;
        let pages_per_s = |slower: f64| f.pages as f64 / rtx3090_seconds(f, bandwidth, slower);
        println!(
            "{} mix, RTX 3090 estimate of the continuous reading: {:.2} to {:.2} pages/s (of its {:.1} s, prefill {:.1} s on the reading thread and vision {:.1} s beside it scaled {high}× to {low}×, the rest {bandwidth:.1}× by bandwidth; the busier thread sets the pace)",
            mix.name(),
            pages_per_s(high),
            pages_per_s(low),
            f.seconds,
            f.prefill_seconds,
            f.vision_seconds,
        );
    }
}

/// The seconds a continuous reading measured here would take on the RTX 3090, with vision and prefill
/// `slower` times as slow there and decode `bandwidth` times. The reading thread runs the decode steps and
/// the prompts' prefill; the vision thread sees the pages beside it, so the busier of the two sets the pace.
/// The reading thread's waits for vision count as decode, which errs on the slow side.
fn rtx3090_seconds(f: &Figures, bandwidth: f64, slower: f64) -> f64 {
    let decode = (f.seconds - f.prefill_seconds).max(0.0) * bandwidth;
    let reading_thread = decode + f.prefill_seconds * slower;
    let vision_thread = f.vision_seconds * slower;
    reading_thread.max(vision_thread)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(seconds: f64, prefill_seconds: f64, vision_seconds: f64) -> Figures {
        Figures {
            reading: "continuous".into(),
            pages: 100,
            seconds,
            tokens: 0,
            first_token_ms: None,
            prefill_seconds,
            vision_seconds,
            memory_bytes: None,
            failed: 0,
            schedule: ScheduleReport::default(),
        }
    }

    #[test]
    fn the_busier_thread_sets_the_rtx_3090_pace() {
        // 8 s of decode and 2 s of prefill on the reading thread, 6 s of vision beside it.
        let f = reading(10.0, 2.0, 6.0);
        // Vision at 2× is 12 s, below the reading thread's 8·3 + 2·2 = 28 s.
        assert!((rtx3090_seconds(&f, 3.0, 2.0) - 28.0).abs() < 1e-9);
        // At 10× vision (60 s) outweighs the reading thread's 24 + 20 = 44 s.
        assert!((rtx3090_seconds(&f, 3.0, 10.0) - 60.0).abs() < 1e-9);
    }
}
