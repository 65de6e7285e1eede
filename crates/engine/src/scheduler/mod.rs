//! Continuous batching. Pages decode together in a set of slots; a page that ends (EOS, the cap, or stopped by
//! the caller) leaves its slot at once and the next page takes it, on the key/value cache the last one left.
//! The next pages' vision runs on a thread of its own, on a second stream of the GPU, beside the decode steps;
//! a joining page's prefill runs a chunk at a time between them, so the pages already decoding wait for one
//! chunk, not for a whole page. Every page's tokens are those it has read alone: rows of a decode step never
//! mix, and a page's own work does not depend on what runs beside it.

mod active;
mod join;
mod memory;
mod vision;

use std::collections::VecDeque;
use std::time::Instant;

use crate::engine::{Engine, Flow, GenerateEvent, PageInput};
use crate::error::Result;
use crate::generate::GenerateOptions;
use crate::lm::SequenceCache;
use active::ActivePage;
use join::Joining;
use memory::Caches;
use vision::{SeenPage, Unseen, VisionAhead, PAGES_AHEAD};

pub use memory::{page_cache_bytes, TYPICAL_PAGE_POSITIONS};

/// Most pages decoding together: past 64, a step reads every expert anyway and only the attention grows.
pub const MAX_SLOTS: usize = 64;
/// Pages decoding together on the CPU, where a step's cost grows with every row.
pub const CPU_SLOTS: usize = 4;
/// Prompt positions prefilled in one piece, between two decode steps: a few milliseconds at full size. Every
/// reading prefills in these chunks, grouped or not, so that a page's numbers never depend on how it was
/// scheduled.
pub const PREFILL_CHUNK: usize = 256;

/// How pages share the engine.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    /// Most pages decoding together.
    pub slots: usize,
    pub admission: Admission,
    /// Bytes the pages' key/value caches may hold together (`None`: no limit but the device's).
    pub cache_budget: Option<u64>,
}

/// When a waiting page may take a free slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// At once, its vision and prefill interleaved with the decode steps of the pages already in.
    Continuous,
    /// Only when every slot is empty: a group joins, then decodes until its last page ends (how pages were
    /// read before continuous batching; the benchmarks compare the two).
    Grouped,
}

impl Schedule {
    /// Continuous batching sized for `engine`'s device: on a GPU as many slots as the free memory holds
    /// pages of [`TYPICAL_PAGE_POSITIONS`] (at most [`MAX_SLOTS`]), with the caches kept inside it; on the
    /// CPU [`CPU_SLOTS`].
    pub fn for_engine(engine: &Engine) -> Self {
        let (slots, cache_budget) = memory::size_slots(engine.model());
        Schedule {
            slots,
            admission: Admission::Continuous,
            cache_budget,
        }
    }

    /// `slots` pages joining as a group.
    pub fn grouped(slots: usize) -> Self {
        Schedule {
            slots,
            admission: Admission::Grouped,
            cache_budget: None,
        }
    }

    /// At most `slots` pages at a time, whatever the memory would hold.
    pub fn with_slots(mut self, slots: usize) -> Self {
        self.slots = slots.max(1);
        self
    }
}

/// Where pages come from: pulled one at a time as slots free up.
pub trait PageSource {
    /// The next page. With `wait` false, answers at once ([`Pull::NotReady`] when no page is ready yet) so
    /// that the pages decoding are not held up; with `wait` true, blocks until a page is ready or none is left.
    fn pull(&mut self, wait: bool) -> Pull;
}

pub enum Pull {
    Page(PageInput),
    NotReady,
    End,
}

/// Pages already in memory are always ready.
impl<I: Iterator<Item = PageInput>> PageSource for I {
    fn pull(&mut self, _wait: bool) -> Pull {
        self.next().map_or(Pull::End, Pull::Page)
    }
}

/// How a reading was scheduled.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScheduleReport {
    /// Pages taken from the source.
    pub pages: usize,
    /// Slots at the start and at the end (fewer when memory ran short).
    pub slots: usize,
    pub final_slots: usize,
    pub decode_steps: usize,
    /// The most pages that decoded in one step.
    pub widest_step: usize,
    /// The longest time between two decode steps with a piece of a joining page between them (the step
    /// included): how long the pages already decoding waited for a page to join.
    pub longest_join_stall_ms: f64,
    /// Pages set aside for memory and taken up again later.
    pub preempted: usize,
}

type OnEvent<'a> = dyn FnMut(GenerateEvent) -> Flow + 'a;

impl Engine {
    /// Reads the pages of `source` under `schedule`, greedy, reporting each token as it is chosen (the
    /// callback may stop that page), a `Finished` event per page, and a `Failed` one for a page that cannot
    /// be read. Errors only when the device fails.
    pub fn read_pages(
        &self,
        source: &mut dyn PageSource,
        schedule: &Schedule,
        opts: &GenerateOptions,
        on_event: &mut OnEvent<'_>,
    ) -> Result<ScheduleReport> {
        std::thread::scope(|scope| {
            let vision = VisionAhead::start(scope, self.model())?;
            let mut run = Run::new(self, schedule, opts, vision);
            run.drive(source, on_event)?;
            Ok(run.report)
        })
    }
}

/// One reading in progress.
struct Run<'a> {
    engine: &'a Engine,
    opts: &'a GenerateOptions,
    admission: Admission,
    slots: usize,
    eos: u32,
    caches: Caches,
    /// Pages set aside for memory, taken up again before any new page.
    set_aside: VecDeque<ActivePage>,
    /// The pages taken from the source and not yet joining, their vision done or under way.
    vision: VisionAhead,
    /// A page seen while its cache did not fit yet.
    held: Option<SeenPage>,
    joining: Option<Joining>,
    active: Vec<ActivePage>,
    source_done: bool,
    /// Grouped admission: a group is still joining.
    forming: bool,
    /// When the last decode step ended, and whether a joining piece ran since.
    last_step: Option<Instant>,
    joined_since_step: bool,
    report: ScheduleReport,
}

impl<'a> Run<'a> {
    fn new(
        engine: &'a Engine,
        schedule: &Schedule,
        opts: &'a GenerateOptions,
        vision: VisionAhead,
    ) -> Self {
        let slots = schedule.slots.max(1);
        Run {
            engine,
            opts,
            admission: schedule.admission,
            slots,
            eos: opts
                .eos_token_id
                .unwrap_or(engine.model().config().text.eos_token_id),
            caches: Caches::new(engine.model(), schedule.cache_budget),
            set_aside: VecDeque::new(),
            vision,
            held: None,
            joining: None,
            active: Vec::new(),
            source_done: false,
            forming: true,
            last_step: None,
            joined_since_step: false,
            report: ScheduleReport {
                slots,
                final_slots: slots,
                ..ScheduleReport::default()
            },
        }
    }

    fn drive(&mut self, source: &mut dyn PageSource, on_event: &mut OnEvent<'_>) -> Result<()> {
        loop {
            self.take_ahead(source, on_event);
            if self.joining.is_none() {
                self.admit(on_event)?;
            }
            if self.joining.is_some() {
                self.join_piece(on_event)?;
            }
            if self.may_decode() {
                self.decode(on_event)?;
            } else if self.joining.is_none() {
                // Nothing runs until the next page is seen.
                self.vision.wait_front();
            }
            if self.is_done() {
                self.report.final_slots = self.slots;
                return Ok(());
            }
        }
    }

    fn is_done(&self) -> bool {
        self.source_done
            && self.vision.is_empty()
            && self.held.is_none()
            && self.joining.is_none()
            && self.set_aside.is_empty()
            && self.active.is_empty()
    }

    fn may_decode(&self) -> bool {
        !self.active.is_empty() && (self.admission == Admission::Continuous || !self.forming)
    }

    /// Takes pages from the source while fewer than [`PAGES_AHEAD`] are ahead of the slots, and sends them to
    /// be seen. Waits for the source only when nothing else is left to run.
    fn take_ahead(&mut self, source: &mut dyn PageSource, on_event: &mut OnEvent<'_>) {
        while !self.source_done && self.vision.len() < PAGES_AHEAD {
            let idle = self.active.is_empty()
                && self.joining.is_none()
                && self.held.is_none()
                && self.set_aside.is_empty()
                && self.vision.is_empty();
            match source.pull(idle) {
                Pull::Page(input) => {
                    let index = self.report.pages;
                    self.report.pages += 1;
                    match join::check_prompt(self.engine.model(), &input) {
                        Ok(()) => self.vision.submit(index, input),
                        Err(error) => self.fail(index, error.to_string(), on_event),
                    }
                }
                Pull::NotReady => return,
                Pull::End => self.source_done = true,
            }
        }
    }

    /// Starts the next page joining when a slot is free and its cache fits: a page set aside first, then one
    /// held back for memory, then the next page seen.
    fn admit(&mut self, on_event: &mut OnEvent<'_>) -> Result<()> {
        if self.active.len() >= self.slots || !self.admission_open() {
            return Ok(());
        }
        let alone = self.active.is_empty();
        if let Some(page) = self.set_aside.pop_front() {
            let index = page.index();
            match self.caches.take(page.positions(), self.in_use(), alone) {
                Some(cache) => match Joining::resume(self.engine, page, cache) {
                    Ok(joining) => self.joining = Some(joining),
                    Err(error) => self.fail(index, error.to_string(), on_event),
                },
                None => self.set_aside.push_front(page),
            }
            return Ok(());
        }
        let page = match self.held.take() {
            Some(page) => page,
            None => match self.vision.pop_seen(self.engine.model()) {
                Some(Ok(page)) => page,
                Some(Err(unseen)) => {
                    self.unseen(unseen, on_event);
                    return Ok(());
                }
                None => {
                    // A group closes early when the document has no more pages for it.
                    if self.source_done && self.vision.is_empty() {
                        self.forming = false;
                    }
                    return Ok(());
                }
            },
        };
        let positions = join::initial_positions(page.prompt_ids.len(), self.opts);
        match self.caches.take(positions, self.in_use(), alone) {
            Some(cache) => {
                let index = page.index;
                match Joining::start(self.engine, page, cache) {
                    Ok(joining) => self.joining = Some(joining),
                    Err(error) => self.fail(index, error.to_string(), on_event),
                }
            }
            None => self.held = Some(page),
        }
        Ok(())
    }

    /// A page whose vision failed: seen again with fewer slots when the pages decoding hold the memory it
    /// needed, else it fails alone.
    fn unseen(&mut self, mut page: Unseen, on_event: &mut OnEvent<'_>) {
        let for_memory = memory::is_out_of_memory(&page.error) && !self.active.is_empty();
        match page.image.take() {
            Some(image) if for_memory => {
                self.caches.release_pool(self.engine.model());
                self.caches.tighten(self.in_use());
                self.fewer_slots(self.active.len(), on_event);
                self.vision.retry(page, image);
            }
            _ => self.fail(page.index, page.error.to_string(), on_event),
        }
    }

    fn admission_open(&self) -> bool {
        match self.admission {
            Admission::Continuous => true,
            Admission::Grouped => self.forming,
        }
    }

    /// One piece of the joining page's work; when it has its first token it takes its slot.
    fn join_piece(&mut self, on_event: &mut OnEvent<'_>) -> Result<()> {
        let Some(joining) = self.joining.as_mut() else {
            return Ok(());
        };
        self.joined_since_step |= !self.active.is_empty();
        match joining.advance(self.engine, self.opts) {
            Ok(None) => Ok(()),
            Ok(Some(page)) => {
                self.joining = None;
                self.take_slot(page, on_event);
                Ok(())
            }
            Err(error) if memory::is_out_of_memory(&error) => {
                let Some(joining) = self.joining.take() else {
                    return Ok(());
                };
                self.out_of_memory_joining(joining, error, on_event)
            }
            Err(error) => {
                if let Some(joining) = self.joining.take() {
                    let index = joining.index();
                    self.caches.give_back(Some(joining.into_cache()));
                    self.fail(index, error.to_string(), on_event);
                }
                Ok(())
            }
        }
    }

    fn take_slot(&mut self, mut page: ActivePage, on_event: &mut OnEvent<'_>) {
        page.report_new(self.eos, self.opts, on_event);
        if page.is_finished() {
            self.caches.give_back(page.finish(on_event));
        } else {
            self.active.push(page);
        }
        if self.admission == Admission::Grouped && self.active.len() >= self.slots {
            self.forming = false;
        }
    }

    /// The joining page did not fit: it waits until memory frees, with fewer slots from now on. Alone, the
    /// page cannot be read on this GPU.
    fn out_of_memory_joining(
        &mut self,
        joining: Joining,
        error: crate::error::EngineError,
        on_event: &mut OnEvent<'_>,
    ) -> Result<()> {
        self.caches.release_pool(self.engine.model());
        if self.active.is_empty() {
            let index = joining.index();
            drop(joining.into_cache());
            self.fail(index, error.to_string(), on_event);
            return Ok(());
        }
        self.caches.tighten(self.in_use());
        self.fewer_slots(self.active.len(), on_event);
        self.set_aside.push_front(joining.into_set_aside());
        Ok(())
    }

    /// One token for every page decoding; finished pages leave their slots.
    fn decode(&mut self, on_event: &mut OnEvent<'_>) -> Result<()> {
        self.make_room(on_event);
        let stepped = loop {
            match active::decode_step(self.engine, &mut self.active, self.opts) {
                Err(error) if memory::is_out_of_memory(&error) && self.active.len() > 1 => {
                    self.caches.release_pool(self.engine.model());
                    self.caches.tighten(self.in_use());
                    self.set_aside_newest(on_event);
                }
                other => break other,
            }
        };
        let stepped = stepped?;
        self.note_step(stepped);
        let eos = self.eos;
        for page in &mut self.active {
            page.report_new(eos, self.opts, on_event);
        }
        let (finished, going): (Vec<_>, Vec<_>) = std::mem::take(&mut self.active)
            .into_iter()
            .partition(ActivePage::is_finished);
        self.active = going;
        for page in finished {
            self.caches.give_back(page.finish(on_event));
        }
        if self.active.is_empty() && self.admission == Admission::Grouped {
            self.forming = true;
        }
        Ok(())
    }

    /// Sets pages aside, newest first, until the caches' growth in the next step fits the budget.
    fn make_room(&mut self, on_event: &mut OnEvent<'_>) {
        loop {
            let growth = self
                .active
                .iter()
                .filter_map(ActivePage::cache)
                .map(SequenceCache::growth_for_one)
                .sum();
            if self.active.len() <= 1 || self.caches.growth_fits(self.in_use(), growth) {
                return;
            }
            self.set_aside_newest(on_event);
        }
    }

    /// Bytes held by the caches of the pages decoding and of the page joining.
    fn in_use(&self) -> u64 {
        let joining = self.joining.as_ref().map(Joining::cache);
        let positions: usize = self
            .active
            .iter()
            .filter_map(ActivePage::cache)
            .chain(joining)
            .map(SequenceCache::capacity)
            .sum();
        self.caches.bytes(positions)
    }

    fn set_aside_newest(&mut self, on_event: &mut OnEvent<'_>) {
        let Some(mut page) = self.active.pop() else {
            return;
        };
        tracing::warn!(
            page = page.index(),
            generated = page.generated(),
            "GPU memory is short: a page is set aside to go on later"
        );
        drop(page.take_cache());
        self.report.preempted += 1;
        self.set_aside.push_back(page);
        self.fewer_slots(self.active.len(), on_event);
    }

    fn fewer_slots(&mut self, slots: usize, on_event: &mut OnEvent<'_>) {
        let slots = slots.max(1);
        if slots < self.slots {
            if self.slots == self.report.slots {
                on_event(GenerateEvent::FewerSlots { slots });
            }
            self.slots = slots;
        }
    }

    fn note_step(&mut self, rows: usize) {
        let now = Instant::now();
        if let (Some(last), true) = (self.last_step, self.joined_since_step) {
            let stall = (now - last).as_secs_f64() * 1e3;
            self.report.longest_join_stall_ms = self.report.longest_join_stall_ms.max(stall);
            tracing::debug!(rows, stall_ms = stall, "decode step after a join piece");
        }
        self.last_step = Some(now);
        self.joined_since_step = false;
        self.report.decode_steps += 1;
        self.report.widest_step = self.report.widest_step.max(rows);
    }

    fn fail(&mut self, page: usize, error: String, on_event: &mut OnEvent<'_>) {
        tracing::warn!(page, %error, "page could not be read");
        on_event(GenerateEvent::Failed { page, error });
    }
}
