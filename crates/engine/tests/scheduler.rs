//! Continuous batching on the tiny model (CPU, f32 and bf16): whatever joins or leaves beside a page, while its
//! vision runs on the vision thread beside other pages' steps and its prefill between them, its tokens are those
//! it gets when read alone; a freed slot is taken at once; a page set aside for memory goes on where it was; a
//! page that cannot be read fails alone.

use std::collections::BTreeMap;
use std::time::Duration;

use candle_core::{DType, Device};
use deepread_engine::engine::{Engine, FinishReason, Flow, GenerateEvent, PageInput};
use deepread_engine::generate::{GenerateOptions, NoRepeatNgram};
use deepread_engine::model::Model;
use deepread_engine::scheduler::{page_cache_bytes, Admission, Schedule, ScheduleReport};

#[path = "support/tiny_oracle.rs"]
mod tiny_oracle;
use tiny_oracle::{fixtures, page_input};
#[path = "support/many_pages.rs"]
mod many_pages;
use many_pages::pages;

fn engine(dtype: DType) -> Engine {
    let model = Model::load(&fixtures().join("tiny_native"), &Device::Cpu, dtype).unwrap();
    Engine::new(model).unwrap()
}

fn options(max_new_tokens: usize, eos: Option<u32>) -> GenerateOptions {
    GenerateOptions {
        max_new_tokens,
        eos_token_id: eos,
        no_repeat_ngram: NoRepeatNgram::official_image(),
    }
}

/// What a reading reported, page by page, and in which order.
#[derive(Default)]
struct Log {
    tokens: BTreeMap<usize, Vec<u32>>,
    finished: BTreeMap<usize, FinishReason>,
    failed: BTreeMap<usize, String>,
    fewer_slots: Vec<usize>,
    /// (page, first token or finish) in the order they came.
    order: Vec<(usize, &'static str)>,
}

/// How long the decode waits after each token of a page decoding alone while pages are still to come: on a
/// CPU shared with the vision thread (2 cores, bf16 in a debug build) a page's vision can outlast a whole page
/// of decode, and then no page would ever decode beside another.
const PACE_ALONE: Duration = Duration::from_millis(20);

fn read(
    engine: &Engine,
    inputs: &[PageInput],
    schedule: &Schedule,
    opts: &GenerateOptions,
    stop_after: impl Fn(usize) -> Option<usize>,
) -> (Log, ScheduleReport) {
    let mut log = Log::default();
    let pace = schedule.admission == Admission::Continuous;
    let report = engine
        .read_pages(&mut inputs.iter().cloned(), schedule, opts, &mut |event| {
            match event {
                GenerateEvent::Token { page, token_id } => {
                    let tokens = log.tokens.entry(page).or_default();
                    if tokens.is_empty() {
                        log.order.push((page, "first token"));
                    }
                    tokens.push(token_id);
                    if stop_after(page).is_some_and(|n| tokens.len() >= n) {
                        return Flow::StopPage;
                    }
                    let decoding = log.tokens.len() - log.finished.len();
                    if pace && decoding == 1 && log.tokens.len() < inputs.len() {
                        std::thread::sleep(PACE_ALONE);
                    }
                }
                GenerateEvent::Finished { page, stats } => {
                    assert_eq!(
                        stats.generated_tokens,
                        log.tokens.get(&page).map_or(0, Vec::len)
                    );
                    log.order.push((page, "finished"));
                    assert!(
                        log.finished.insert(page, stats.finish).is_none(),
                        "page {page} finished twice"
                    );
                }
                GenerateEvent::Failed { page, error } => {
                    log.failed.insert(page, error);
                }
                GenerateEvent::FewerSlots { slots } => log.fewer_slots.push(slots),
            }
            Flow::Continue
        })
        .unwrap();
    (log, report)
}

/// Each page read on its own.
fn alone(engine: &Engine, inputs: &[PageInput], opts: &GenerateOptions) -> Vec<Vec<u32>> {
    inputs
        .iter()
        .map(|page| {
            let out = engine
                .generate(std::slice::from_ref(page), opts, |_| Flow::Continue)
                .unwrap();
            out[0].tokens.clone()
        })
        .collect()
}

/// Whether some page took its first token after another page finished, while a page that began before that
/// finish was still decoding: a freed slot was taken without waiting for the others to end.
fn joined_mid_flight(log: &Log) -> bool {
    let at = |page: usize, what: &str| log.order.iter().position(|&e| e == (page, what));
    log.order.iter().enumerate().any(|(joined, &(page, what))| {
        what == "first token"
            && log.order[..joined]
                .iter()
                .enumerate()
                .any(|(left, &(q, w))| {
                    w == "finished"
                        && q != page
                        && log.tokens.keys().any(|&r| {
                            r != page
                                && at(r, "first token").is_some_and(|first| first < left)
                                && at(r, "finished").is_some_and(|end| end > joined)
                        })
                })
    })
}

fn continuous(slots: usize) -> Schedule {
    Schedule {
        slots,
        admission: Admission::Continuous,
        cache_budget: None,
    }
}

/// `count` pages read under each slot count of `slot_counts`, against each read alone.
fn same_tokens_whatever_runs_beside(dtype: DType, count: usize, slot_counts: &[usize]) {
    let engine = engine(dtype);
    let inputs = pages(&engine, count);
    // Long enough, with the pacing in `read`, that a page's decode outlasts the next page's vision, which runs
    // beside it on the vision thread: pages decode together (checked below).
    let opts = options(300, None);
    let solo = alone(&engine, &inputs, &opts);
    // Pages 1 and 4 are stopped by the caller part way, as the loop sentinel or the Stop button would.
    let stop_after = |page: usize| match page {
        1 => Some(3),
        4 => Some(11),
        _ => None,
    };
    for &slots in slot_counts {
        let (log, report) = read(&engine, &inputs, &continuous(slots), &opts, stop_after);
        assert!(log.failed.is_empty(), "{:?}", log.failed);
        for (page, want) in solo.iter().enumerate() {
            let want = match stop_after(page) {
                Some(n) => &want[..n.min(want.len())],
                None => &want[..],
            };
            assert_eq!(
                log.tokens.get(&page).map(Vec::as_slice),
                Some(want),
                "{dtype:?}, page {page}, {slots} slots"
            );
            if stop_after(page).is_some_and(|n| n < solo[page].len()) {
                assert_eq!(log.finished[&page], FinishReason::Stopped);
            }
        }
        assert_eq!(log.finished.len(), inputs.len());
        assert_eq!(report.pages, inputs.len());
        assert!(
            report.widest_step >= 2 && report.widest_step <= slots,
            "{report:?}"
        );
    }
    // Grouped reading, as before continuous batching: no page joins while another decodes.
    let (log, _) = read(&engine, &inputs, &Schedule::grouped(3), &opts, stop_after);
    assert!(!joined_mid_flight(&log));
    assert_eq!(log.finished.len(), inputs.len());
}

#[test]
fn every_page_gets_its_tokens_read_alone_whatever_joins_or_leaves_f32() {
    same_tokens_whatever_runs_beside(DType::F32, 7, &[2, 3, 7]);
}

#[test]
fn every_page_gets_its_tokens_read_alone_whatever_joins_or_leaves_bf16() {
    // bf16 on the CPU is slow in a debug build: fewer pages, the tightest slots.
    same_tokens_whatever_runs_beside(DType::BF16, 5, &[2]);
}

/// Text-only pages, seen at once, so that when a page joins depends on the slots alone and not on how long
/// the vision thread takes.
fn text_pages(engine: &Engine, count: usize) -> Vec<PageInput> {
    let image_token = engine.model().config().image_token_id;
    let mut prompt_ids = page_input(0).prompt_ids;
    prompt_ids.retain(|&id| id != image_token);
    (0..count)
        .map(|_| PageInput {
            prompt_ids: prompt_ids.clone(),
            image: None,
        })
        .collect()
}

#[test]
fn a_freed_slot_is_taken_at_once_and_a_group_waits_for_its_last_page() {
    let engine = engine(DType::F32);
    let inputs = text_pages(&engine, 6);
    let opts = options(30, Some(u32::MAX));
    // Pages of 30, 3, 30, 7, 30 and 11 tokens.
    let stop_after = |page: usize| [None, Some(3), None, Some(7), None, Some(11)][page];
    let (log, report) = read(&engine, &inputs, &continuous(2), &opts, stop_after);
    assert_eq!(log.finished.len(), inputs.len());
    assert_eq!(report.widest_step, 2);
    assert!(
        joined_mid_flight(&log),
        "a freed slot waited for the group: {:?}",
        log.order
    );
    let (log, _) = read(&engine, &inputs, &Schedule::grouped(2), &opts, stop_after);
    assert_eq!(log.finished.len(), inputs.len());
    assert!(!joined_mid_flight(&log), "{:?}", log.order);
}

#[test]
fn a_page_set_aside_for_memory_goes_on_where_it_was() {
    let engine = engine(DType::F32);
    let inputs = pages(&engine, 4);
    // No EOS: every page writes 600 tokens, so every cache must grow past its first 512 positions.
    let opts = GenerateOptions {
        max_new_tokens: 600,
        eos_token_id: Some(u32::MAX),
        no_repeat_ngram: NoRepeatNgram::Off,
    };
    let solo = alone(&engine, &inputs, &opts);
    let text = &engine.model().config().text;
    let bytes = |positions: usize| page_cache_bytes(text, DType::F32, positions);
    // Three pages' first caches fit, and one growth: the second page to grow must make room.
    let first: u64 = inputs[..3]
        .iter()
        .map(|p| bytes(p.prompt_ids.len() + 512))
        .sum();
    let schedule = Schedule {
        cache_budget: Some(first + bytes(520)),
        ..continuous(3)
    };
    let (log, report) = read(&engine, &inputs, &schedule, &opts, |_| None);
    assert!(log.failed.is_empty(), "{:?}", log.failed);
    assert!(report.preempted >= 1, "{report:?}");
    assert_eq!(log.fewer_slots, vec![2], "said once, with the slots left");
    assert_eq!(report.final_slots, 2);
    for (page, want) in solo.iter().enumerate() {
        assert_eq!(log.tokens[&page].len(), 600, "page {page}");
        assert_eq!(
            &log.tokens[&page], want,
            "page {page}: each token once, the same ones"
        );
        assert_eq!(log.finished[&page], FinishReason::MaxNewTokens);
    }
}

#[test]
fn a_page_that_cannot_be_read_fails_alone() {
    let engine = engine(DType::F32);
    let mut inputs = pages(&engine, 4);
    inputs[1]
        .prompt_ids
        .retain(|&id| id != engine.model().config().image_token_id);
    inputs[2].prompt_ids.clear();
    let opts = options(12, None);
    let (log, _) = read(&engine, &inputs, &continuous(2), &opts, |_| None);
    assert!(log.failed[&1].contains("<image>"), "{}", log.failed[&1]);
    assert!(
        log.failed[&2].contains("empty prompt"),
        "{}",
        log.failed[&2]
    );
    let solo = alone(&engine, &[inputs[0].clone(), inputs[3].clone()], &opts);
    assert_eq!(log.tokens[&0], solo[0]);
    assert_eq!(log.tokens[&3], solo[1]);
    assert_eq!(log.finished.len(), 2);
}
