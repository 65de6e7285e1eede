//! The pages' vision beside the decode steps: a thread of the reading sees the next pages (SAM, encoder,
//! projector, every view of a page in one pass) on the vision tower's own stream, while the reading's thread
//! decodes. Pages are taken from the source a few ahead, so that a freed slot finds the next page seen.

use std::collections::VecDeque;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::Scope;
use std::time::Instant;

use candle_core::Tensor;

use crate::device::hand_over;
use crate::engine::PageInput;
use crate::error::{EngineError, Result};
use crate::model::{Model, PageImage};

/// Pages taken ahead of the slots: seen or being seen. A few, so that the vision thread works on while the
/// slots are full and has pages ready when several free at once.
pub(super) const PAGES_AHEAD: usize = 4;

/// A page whose vision is done: its prompt and image embeddings on the model's device.
pub(super) struct SeenPage {
    pub index: usize,
    pub prompt_ids: Vec<u32>,
    pub image: Option<Tensor>,
    pub vision_ms: f64,
}

/// A page the vision thread could not see, with its image where it can be seen again.
pub(super) struct Unseen {
    pub index: usize,
    pub prompt_ids: Vec<u32>,
    pub image: Option<PageImage>,
    pub error: EngineError,
}

struct Job {
    index: usize,
    image: PageImage,
}

/// The vision thread's answer for one page.
struct Answer {
    index: usize,
    seen: Result<Tensor>,
    /// The image back when it was not seen.
    image: Option<PageImage>,
    ms: f64,
}

/// A page taken from the source, in source order.
struct Ahead {
    index: usize,
    prompt_ids: Vec<u32>,
    answer: Option<Answer>,
    /// No image: nothing to see.
    text_only: bool,
}

/// The pages ahead of the slots and the thread that sees them. Dropping it ends the thread.
pub(super) struct VisionAhead {
    jobs: Sender<Job>,
    answers: Receiver<Answer>,
    pages: VecDeque<Ahead>,
}

impl VisionAhead {
    /// Starts the vision thread in `scope`; it ends when this is dropped.
    pub(super) fn start<'scope>(
        scope: &'scope Scope<'scope, '_>,
        model: &'scope Model,
    ) -> Result<Self> {
        let (jobs, job_rx) = mpsc::channel::<Job>();
        let (answer_tx, answers) = mpsc::channel();
        std::thread::Builder::new()
            .name("deepread-vision".into())
            .spawn_scoped(scope, move || see_pages(model, job_rx, answer_tx))
            .map_err(|e| EngineError::Input(format!("could not start the vision thread: {e}")))?;
        Ok(VisionAhead {
            jobs,
            answers,
            pages: VecDeque::new(),
        })
    }

    pub(super) fn len(&self) -> usize {
        self.pages.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// A page taken from the source: its image goes to the vision thread.
    pub(super) fn submit(&mut self, index: usize, input: PageInput) {
        let text_only = input.image.is_none();
        if let Some(image) = input.image {
            self.send(index, image);
        }
        self.pages.push_back(Ahead {
            index,
            prompt_ids: input.prompt_ids,
            answer: None,
            text_only,
        });
    }

    /// A page that could not be seen for memory, back at the front to be seen again.
    pub(super) fn retry(&mut self, page: Unseen, image: PageImage) {
        self.send(page.index, image);
        self.pages.push_front(Ahead {
            index: page.index,
            prompt_ids: page.prompt_ids,
            answer: None,
            text_only: false,
        });
    }

    /// The first page, once it is seen, with its embeddings on `model`'s device.
    pub(super) fn pop_seen(
        &mut self,
        model: &Model,
    ) -> Option<std::result::Result<SeenPage, Unseen>> {
        self.collect(false);
        let front = self.pages.front()?;
        if !front.text_only && front.answer.is_none() {
            return None;
        }
        let page = self.pages.pop_front()?;
        let Some(answer) = page.answer else {
            return Some(Ok(SeenPage {
                index: page.index,
                prompt_ids: page.prompt_ids,
                image: None,
                vision_ms: 0.0,
            }));
        };
        let seen = answer
            .seen
            .and_then(|features| hand_over(features, model.device()));
        Some(match seen {
            Ok(image) => Ok(SeenPage {
                index: page.index,
                prompt_ids: page.prompt_ids,
                image: Some(image),
                vision_ms: answer.ms,
            }),
            Err(error) => Err(Unseen {
                index: page.index,
                prompt_ids: page.prompt_ids,
                image: answer.image,
                error,
            }),
        })
    }

    /// Blocks until the first page is seen (nothing else to run meanwhile).
    pub(super) fn wait_front(&mut self) {
        self.collect(true);
    }

    fn send(&mut self, index: usize, image: PageImage) {
        // The thread lives as long as `self`; a send fails only if it panicked, which the scope re-raises.
        let _ = self.jobs.send(Job { index, image });
    }

    /// Files the thread's answers with their pages; with `wait`, until the first page has its answer.
    fn collect(&mut self, wait: bool) {
        loop {
            let front_waits = self
                .pages
                .front()
                .is_some_and(|p| !p.text_only && p.answer.is_none());
            let answer = match wait && front_waits {
                true => self
                    .answers
                    .recv()
                    .unwrap_or_else(|_| thread_gone(&self.pages[0])),
                false => match self.answers.try_recv() {
                    Ok(answer) => answer,
                    Err(_) => return,
                },
            };
            if let Some(page) = self.pages.iter_mut().find(|p| p.index == answer.index) {
                page.answer = Some(answer);
            }
        }
    }
}

/// The answer for a page whose vision thread is gone (it panicked; the reading's scope raises that at its end).
fn thread_gone(page: &Ahead) -> Answer {
    Answer {
        index: page.index,
        seen: Err(EngineError::Input("the vision thread stopped".into())),
        image: None,
        ms: 0.0,
    }
}

/// The vision thread: each page's views through the tower, in the order sent, until the reading ends.
fn see_pages(model: &Model, jobs: Receiver<Job>, answers: Sender<Answer>) {
    for Job { index, image } in jobs {
        let t0 = Instant::now();
        let seen = model.see(&image);
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        tracing::debug!(page = index, ms, "page seen");
        let image = seen.is_err().then_some(image);
        if answers
            .send(Answer {
                index,
                seen,
                image,
                ms,
            })
            .is_err()
        {
            return;
        }
    }
}
