//! How fast the remote client reads against a fast server (issue #18): the real DeepSeek-OCR outputs
//! of the shared fixtures, each answered for its own page image (known by the exact PNG the client
//! sends) by an OpenAI-compatible server on 127.0.0.1 (tests/support's `FastServer`) that streams it
//! as vLLM does, a token a chunk, with no pause at all.
//!
//! The client is driven as the pipeline drives it: pages as the pipeline renders them for the
//! recognizer, the `Recognizer` trait's `read`, and a sink that runs every delta through the grounding
//! parser and the loop sentinel into page events (the cache aside). Every page must end as its
//! recording does (whole, or cut where the sentinel cuts a looping capture), with the recorded text:
//! the run fails otherwise.
//!
//! `cargo run --release -p deepread-core --example remote_client -- [--pages 320] [--in-flight 32]
//! [--chunk-chars K]` (K = 0, the default: the tokenizer's pieces; fixtures from DEEPREAD_FIXTURES,
//! else ../shared/fixtures beside the workspace; PDFium from DEEPREAD_PDFIUM, else .deps/pdfium).
//!
//! The pages are rendered before the clock starts (rendering is the pipeline's, the same for every
//! engine). The client's CPU is the process's CPU time over the reading less that of the server's
//! threads, each measured on the thread itself as it ends.

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/support/mod.rs"]
mod support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use deepread_core::grounding::END_OF_SENTENCE;
use deepread_core::markdown::MarkdownOptions;
use deepread_core::reading::{PageOutcome, PageReader};
use deepread_core::recognizer::remote::encode_png;
use deepread_core::recognizer::{
    Control, Fed, PageFeed, PageInput, PageSink, ReadStats, Recognizer, RemoteRecognizer,
    RemoteSettings,
};
use deepread_core::sentinel::{SentinelConfig, Verdict};
use deepread_core::PageEvent;
use deepread_engine::prompt::Tokenizer;
use deepread_pdf::{bind_pdfium, Document, PageSize, PageText};
use image::RgbImage;
use support::{stream_events, Events, FastServer};

type Error = Box<dyn std::error::Error>;

const MODEL: &str = "deepseek-ai/DeepSeek-OCR-2";
/// Pages prepared ahead of the recognizer, as the pipeline's `PREPARE_AHEAD`.
const PREPARE_AHEAD: usize = 8;

struct Args {
    pages: usize,
    in_flight: usize,
    /// 0: the tokenizer's pieces.
    chunk_chars: usize,
}

fn args() -> Result<Args, Error> {
    let mut args = Args {
        pages: 320,
        in_flight: 32,
        chunk_chars: 0,
    };
    let mut given = std::env::args().skip(1);
    while let Some(flag) = given.next() {
        let mut value = || -> Result<usize, Error> {
            let value = given.next().ok_or(format!("{flag} needs a number"))?;
            Ok(value.parse().map_err(|e| format!("{flag} {value}: {e}"))?)
        };
        match flag.as_str() {
            "--pages" => args.pages = value()?.max(1),
            "--in-flight" => args.in_flight = value()?.max(1),
            "--chunk-chars" => args.chunk_chars = value()?,
            _ => {
                return Err(format!(
                    "unknown argument {flag} (--pages N, --in-flight N, --chunk-chars K)"
                )
                .into())
            }
        }
    }
    Ok(args)
}

fn fixtures_dir() -> Result<PathBuf, Error> {
    let dir = match std::env::var_os("DEEPREAD_FIXTURES") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures"),
    };
    if !dir.join("grounding/pairs.json").is_file() {
        return Err(format!(
            "the recorded outputs are not at {} (grounding/pairs.json): set DEEPREAD_FIXTURES to \
             the shared fixtures folder",
            dir.display()
        )
        .into());
    }
    Ok(dir)
}

fn pdfium_path() -> PathBuf {
    std::env::var_os("DEEPREAD_PDFIUM").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.deps/pdfium/libpdfium.so"),
        PathBuf::from,
    )
}

/// One recorded page: its image as the pipeline renders it, what the server streams for it, and
/// how the pipeline must end it.
struct Recorded {
    name: String,
    image: RgbImage,
    size: PageSize,
    pieces: Vec<String>,
    expected: Ending,
}

/// How a page ended: its raw text as the sink read it, whether it looped, and its blocks.
#[derive(Debug, Clone, PartialEq)]
struct Ending {
    raw: String,
    looped: bool,
    blocks: usize,
}

/// The recorded pages of `grounding/pairs.json`, each page image once (a page recorded twice keeps
/// its first recording: the server knows a request's page by its image).
fn recorded_pages(
    fixtures: &Path,
    recognizer: &dyn Recognizer,
    chunk_chars: usize,
) -> Result<(Vec<Recorded>, usize), Error> {
    let render = recognizer
        .needs()
        .image
        .ok_or("the remote recognizer asks for no page image")?;
    let grounding = fixtures.join("grounding");
    let pairs: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(grounding.join("pairs.json"))?)?;
    let tokenizer = match chunk_chars {
        0 => Some(Tokenizer::from_file(
            &fixtures.join("tokenizer/tokenizer.json"),
        )?),
        _ => None,
    };
    let mut pages: Vec<Recorded> = Vec::new();
    let mut by_chars = 0;
    for pair in pairs.as_array().ok_or("pairs.json is not a list")? {
        let field = |name: &str| pair[name].as_str().map(|p| fixtures.join(p));
        let (Some(input), Some(output)) = (field("input"), field("output")) else {
            return Err(format!("a pair without input and output: {pair}").into());
        };
        let page = pair["page"]
            .as_u64()
            .map_or(0, |p| (p as usize).saturating_sub(1));
        let document =
            Document::open(&input, None).map_err(|e| format!("{}: {e}", input.display()))?;
        let image = document.render_page(page, render)?;
        if pages.iter().any(|p| p.image == image) {
            continue;
        }
        let capture = std::fs::read_to_string(&output)?;
        let file = output.file_name().unwrap_or_default().to_string_lossy();
        let raw = match file.ends_with("stdout.md") {
            true => common::raw_of_stdout_capture(&capture),
            false => capture,
        };
        // A server does not send the end-of-sentence token's text (vLLM drops the stop token).
        let text = raw.strip_suffix(END_OF_SENTENCE).unwrap_or(&raw).to_owned();
        let pieces = match &tokenizer {
            Some(tokenizer) => token_pieces(tokenizer, &text).unwrap_or_else(|| {
                by_chars += 1;
                char_pieces(&text, 4)
            }),
            None => char_pieces(&text, chunk_chars),
        };
        let expected = read_offline(page, &pieces);
        pages.push(Recorded {
            name: output
                .strip_prefix(&grounding)
                .unwrap_or(&output)
                .display()
                .to_string(),
            size: document.page_size(page)?,
            image,
            pieces,
            expected,
        });
    }
    Ok((pages, by_chars))
}

/// `text` as a server detokenizes it: a piece a token, a token that ends inside a character held
/// back until the character is whole. `None` if the pieces do not give back the text.
fn token_pieces(tokenizer: &Tokenizer, text: &str) -> Option<Vec<String>> {
    let ids = tokenizer.encode(text).ok()?;
    let mut pieces = Vec::with_capacity(ids.len());
    let mut start = 0;
    for end in 1..=ids.len() {
        let piece = tokenizer.decode(&ids[start..end]).ok()?;
        if piece.ends_with('\u{FFFD}') && end < ids.len() {
            continue;
        }
        pieces.push(piece);
        start = end;
    }
    (pieces.concat() == text).then_some(pieces)
}

/// The base64 of the PNG inlined in a chat-completions body, found without parsing the body.
fn inline_png(body: &[u8]) -> Option<&[u8]> {
    const PREFIX: &[u8] = b"data:image/png;base64,";
    let start = body.windows(PREFIX.len()).position(|w| w == PREFIX)? + PREFIX.len();
    let length = body[start..].iter().position(|&b| b == b'"')?;
    Some(&body[start..start + length])
}

fn char_pieces(text: &str, size: usize) -> Vec<String> {
    support::pieces(text, size.max(1))
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// How the pipeline ends the page when `pieces` arrive one delta each.
fn read_offline(page: usize, pieces: &[String]) -> Ending {
    let mut reader = PageReader::new(SentinelConfig::default());
    for piece in pieces {
        if matches!(reader.push(piece, 1).verdict, Verdict::Looped { .. }) {
            break;
        }
    }
    ending(page, reader)
}

fn ending(page: usize, reader: PageReader) -> Ending {
    let raw = reader.parser().raw().to_owned();
    match reader.finish(&MarkdownOptions::for_page(page)) {
        PageOutcome::Complete { blocks, .. } => Ending {
            raw,
            looped: false,
            blocks: blocks.len(),
        },
        PageOutcome::Looped { blocks, .. } => Ending {
            raw,
            looped: true,
            blocks: blocks.len(),
        },
    }
}

// ---- CPU time ----

fn clock(id: libc::clockid_t) -> Duration {
    let mut time = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `time` is a valid timespec for the call to fill.
    let status = unsafe { libc::clock_gettime(id, &mut time) };
    assert_eq!(status, 0, "clock_gettime");
    Duration::new(time.tv_sec as u64, time.tv_nsec as u32)
}

/// CPU time of the whole process, threads that ended included.
fn process_cpu() -> Duration {
    clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

fn thread_cpu() -> Duration {
    clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time of the server's connection threads that have ended, in ns, and how many are alive.
static SERVER_NS: AtomicU64 = AtomicU64::new(0);
static SERVER_LIVE: AtomicUsize = AtomicUsize::new(0);

/// Lives as long as a server thread; adds its CPU time to [`SERVER_NS`] as the thread ends.
struct ServerThread;

impl ServerThread {
    fn new() -> Self {
        SERVER_LIVE.fetch_add(1, Ordering::SeqCst);
        ServerThread
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        SERVER_NS.fetch_add(thread_cpu().as_nanos() as u64, Ordering::SeqCst);
        SERVER_LIVE.fetch_sub(1, Ordering::SeqCst);
    }
}

thread_local! {
    static SERVER_THREAD: ServerThread = ServerThread::new();
}

fn task_ids() -> Vec<u32> {
    std::fs::read_dir("/proc/self/task")
        .map(|dir| {
            dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// A live thread's CPU time from /proc (clock ticks: for the server's long-lived accepting thread).
fn task_cpu(tid: u32) -> Duration {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")) else {
        return Duration::ZERO;
    };
    // The fields after the command name, which is in parentheses: utime and stime are 14 and 15.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks: u64 = fields[11..13]
        .iter()
        .filter_map(|f| f.parse::<u64>().ok())
        .sum();
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_nanos(ticks * 1_000_000_000 / per_second)
}

// ---- the pipeline's side ----

/// Pages for the recognizer: all rendered before the clock starts (rendering is the pipeline's, the
/// same for every engine), or, when they would not fit in memory, copied on a thread into a bounded
/// channel as the pipeline's `PreparedPages` hands them over (that thread's CPU time is subtracted).
enum Feed {
    Ready(std::vec::IntoIter<PageInput>),
    Thread(Receiver<PageInput>),
}

impl PageFeed for Feed {
    fn pull(&mut self, wait: bool) -> Fed {
        let receiver = match self {
            Feed::Ready(pages) => return pages.next().map_or(Fed::End, Fed::Page),
            Feed::Thread(receiver) => receiver,
        };
        if wait {
            return receiver.recv().map_or(Fed::End, Fed::Page);
        }
        match receiver.try_recv() {
            Ok(page) => Fed::Page(page),
            Err(TryRecvError::Empty) => Fed::NotReady,
            Err(TryRecvError::Disconnected) => Fed::End,
        }
    }
}

/// Page `page` of the reading: the recorded pages in turn.
fn page_input(recorded: &[Recorded], page: usize) -> PageInput {
    let recorded = &recorded[page % recorded.len()];
    PageInput {
        page,
        size: recorded.size,
        image: Some(recorded.image.clone()),
        text: PageText::default(),
        model_input: None,
    }
}

/// Leaves the allocator as a running pipeline leaves it, before the pages are made all at once: glibc
/// maps every large block afresh (and unmaps it when freed) until it has freed one, then serves blocks
/// up to that size (32 MiB at most) from its heap. A pipeline has freed pages of its size long before
/// its steady state; pages made all at once before any was freed would each be unmapped when the
/// client lets it go, which a pipeline does not pay.
fn settle_allocator() {
    let block = vec![1u8; (32 << 20) - (64 << 10)];
    drop(std::hint::black_box(block));
}

/// Memory this machine can still give, in bytes (0 when unknown).
fn memory_available() -> usize {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|kb| {
            kb.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<usize>()
                .ok()
        })
        .map_or(0, |kb| kb * 1024)
}

/// What the pipeline's sink does with a reading, the cache aside: each delta through the parser and
/// the sentinel into page events, a page ended into its Markdown.
struct Sink<'a> {
    readers: HashMap<usize, PageReader>,
    on_event: &'a mut dyn FnMut(PageEvent),
    endings: Vec<Option<Result<Ending, String>>>,
    deltas: usize,
}

impl PageSink for Sink<'_> {
    fn started(&mut self, page: usize) {
        self.readers
            .insert(page, PageReader::new(SentinelConfig::default()));
        (self.on_event)(PageEvent::Started { page });
    }

    fn delta(&mut self, page: usize, text: &str, tokens: usize) -> Control {
        let Some(reader) = self.readers.get_mut(&page) else {
            return Control::StopPage;
        };
        self.deltas += 1;
        let step = reader.push(text, tokens);
        (self.on_event)(PageEvent::Delta {
            page,
            text: text.to_owned(),
            tokens,
        });
        for event in step.events {
            (self.on_event)(event.into_page_event(page));
        }
        match step.verdict {
            Verdict::Continue => Control::Continue,
            Verdict::Looped { .. } => Control::StopPage,
        }
    }

    fn finished(&mut self, page: usize, outcome: Result<ReadStats, String>) {
        let Some(reader) = self.readers.remove(&page) else {
            return;
        };
        self.endings[page] = Some(outcome.map(|_| ending(page, reader)));
    }

    fn fewer_pages_at_once(&mut self, _pages: usize) {}

    fn cancelled(&self) -> bool {
        false
    }
}

fn main() -> Result<(), Error> {
    let args = args()?;
    let fixtures = fixtures_dir()?;
    bind_pdfium(Some(&pdfium_path()))?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            let line = info.lines().find(|l| l.starts_with("model name"))?;
            Some(line.split_once(':')?.1.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());

    let setup = Instant::now();
    // The size the pipeline renders pages at for this recognizer (no request is sent by asking).
    let asked = RemoteRecognizer::new(RemoteSettings::new("http://127.0.0.1:9/v1", MODEL))?;
    let (recorded, by_chars) = recorded_pages(&fixtures, &asked, args.chunk_chars)?;
    eprintln!(
        "{} recorded pages rendered and cut into chunks in {:.1} s",
        recorded.len(),
        setup.elapsed().as_secs_f64()
    );
    let recorded = Arc::new(recorded);
    let distinct = recorded.len();

    // What the client sends for each page (the encoder is deterministic), and the page's events.
    let mut replies: HashMap<usize, Vec<(Vec<u8>, Events)>> = HashMap::new();
    for page in recorded.iter() {
        let png = encode_png(&page.image)?;
        let url = base64::engine::general_purpose::STANDARD
            .encode(png)
            .into_bytes();
        let pieces: Vec<&str> = page.pieces.iter().map(String::as_str).collect();
        let events = Arc::new(stream_events(&pieces));
        replies.entry(url.len()).or_default().push((url, events));
    }
    let before_server = task_ids();
    let server = FastServer::start(move |body| {
        SERVER_THREAD.with(|_| ());
        let url = inline_png(body)?;
        let candidates = replies.get(&url.len())?;
        let (_, events) = candidates.iter().find(|(sent, _)| sent == url)?;
        Some(Arc::clone(events))
    });
    let accepting: Vec<u32> = task_ids()
        .into_iter()
        .filter(|t| !before_server.contains(t))
        .collect();
    let recognizer = RemoteRecognizer::new(RemoteSettings {
        concurrency: args.in_flight,
        ..RemoteSettings::new(server.url.clone(), MODEL)
    })?;

    let pages = args.pages;
    let bytes: usize = (0..pages)
        .map(|p| recorded[p % distinct].image.as_raw().len())
        .sum();
    let ready: Option<Vec<PageInput>> = (bytes < memory_available() / 2).then(|| {
        settle_allocator();
        (0..pages).map(|p| page_input(&recorded, p)).collect()
    });
    let feeding = match ready {
        Some(_) => format!(
            "all rendered before the clock starts ({:.1} GB)",
            bytes as f64 / 1e9
        ),
        None => format!(
            "copied on a thread as they are pulled ({:.1} GB would not fit in memory)",
            bytes as f64 / 1e9
        ),
    };
    let mut events = 0usize;
    let mut on_event = |_: PageEvent| events += 1;
    let mut sink = Sink {
        readers: HashMap::new(),
        on_event: &mut on_event,
        endings: vec![None; pages],
        deltas: 0,
    };

    let accept_before: Duration = accepting.iter().map(|&t| task_cpu(t)).sum();
    let cpu_before = process_cpu();
    let started = Instant::now();
    let (mut feed, feeder) = match ready {
        Some(ready) => (Feed::Ready(ready.into_iter()), None),
        None => {
            let (sender, receiver) = sync_channel(PREPARE_AHEAD);
            let recorded = Arc::clone(&recorded);
            let feeder = std::thread::spawn(move || {
                for page in 0..pages {
                    if sender.send(page_input(&recorded, page)).is_err() {
                        break;
                    }
                }
                thread_cpu()
            });
            (Feed::Thread(receiver), Some(feeder))
        }
    };
    let reading_before = thread_cpu();
    recognizer.read(&mut feed, &mut sink);
    let wall = started.elapsed();
    let reading_cpu = thread_cpu() - reading_before;
    let feed_cpu = match feeder {
        Some(feeder) => feeder.join().map_err(|_| "the feeding thread panicked")?,
        None => Duration::ZERO,
    };
    let until = Instant::now() + Duration::from_secs(10);
    while SERVER_LIVE.load(Ordering::SeqCst) > 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(1));
    }
    let process = process_cpu() - cpu_before;
    let accept_cpu = accepting.iter().map(|&t| task_cpu(t)).sum::<Duration>() - accept_before;
    let server_cpu = Duration::from_nanos(SERVER_NS.load(Ordering::SeqCst)) + accept_cpu;
    let client_cpu = process.saturating_sub(server_cpu + feed_cpu);
    let deltas = sink.deltas;

    // The checks: every page ends as its recording does.
    let (mut done, mut looped, mut failed, mut mismatched) = (0, 0, 0, 0);
    for (page, ending) in sink.endings.iter().enumerate() {
        let recorded = &recorded[page % distinct];
        match ending {
            Some(Ok(ending)) if *ending == recorded.expected => match ending.looped {
                true => looped += 1,
                false => done += 1,
            },
            Some(Ok(ending)) => {
                mismatched += 1;
                eprintln!(
                    "page {page} ({}): {} bytes{}, the recording {} bytes{}",
                    recorded.name,
                    ending.raw.len(),
                    if ending.looped { " (looped)" } else { "" },
                    recorded.expected.raw.len(),
                    if recorded.expected.looped {
                        " (looped)"
                    } else {
                        ""
                    },
                );
            }
            Some(Err(error)) => {
                failed += 1;
                eprintln!("page {page} ({}) failed: {error}", recorded.name);
            }
            None => {
                failed += 1;
                eprintln!("page {page} ({}) never finished", recorded.name);
            }
        }
    }

    // The PNG encoding alone, on one thread, for the same pages.
    let mut png_cpu = Duration::ZERO;
    let mut png_bytes = 0usize;
    for page in 0..pages {
        let image = &recorded[page % distinct].image;
        let before = thread_cpu();
        let png = encode_png(image)?;
        png_cpu += thread_cpu() - before;
        png_bytes += png.len();
    }

    let per_page = |time: Duration| time.as_secs_f64() * 1e3 / pages as f64;
    let pixels: f64 = (0..pages)
        .map(|p| {
            let (w, h) = recorded[p % distinct].image.dimensions();
            f64::from(w) * f64::from(h)
        })
        .sum::<f64>()
        / pages as f64;
    let chunking = match args.chunk_chars {
        0 if by_chars == 0 => "the tokenizer's pieces".to_owned(),
        0 => format!("the tokenizer's pieces ({by_chars} pages by 4 characters)"),
        k => format!("{k} characters"),
    };
    let seconds = wall.as_secs_f64();
    println!("machine           {cores} cores, {cpu}");
    println!(
        "pages             {pages} ({distinct} recorded pages in turn, {:.2} MP on average), {} in \
         flight; a chunk = {chunking}; pages {feeding}",
        pixels / 1e6,
        args.in_flight
    );
    println!(
        "wall              {seconds:.3} s, CPU busy {:.2} of {cores} cores",
        process.as_secs_f64() / seconds
    );
    println!("pages/s           {:.1}", pages as f64 / seconds);
    println!(
        "tokens/s          {:.0} ({deltas} chunks with text)",
        deltas as f64 / seconds
    );
    println!(
        "CPU ms/page       client {:.2} = process {:.2} - server {:.2} - feed {:.2}",
        per_page(client_cpu),
        per_page(process),
        per_page(server_cpu),
        per_page(feed_cpu)
    );
    println!(
        "  reading thread  {:.2} (the recognizer's loop, the parser, the sentinel, page events)",
        per_page(reading_cpu)
    );
    println!(
        "  PNG encode      {:.2} alone on one thread ({:.0} % of the client's); {:.2} MB a page",
        per_page(png_cpu),
        100.0 * png_cpu.as_secs_f64() / client_cpu.as_secs_f64().max(1e-9),
        png_bytes as f64 / pages as f64 / 1e6
    );
    println!(
        "client alone      {:.0} pages/s on {cores} cores ({cores} / its CPU per page)",
        cores as f64 * 1e3 / per_page(client_cpu).max(1e-9)
    );
    println!(
        "pages             {done} done and {looped} looped, as recorded; {mismatched} not as \
         recorded, {failed} failed; {events} page events"
    );
    drop(server);
    if mismatched + failed > 0 {
        return Err(format!("{mismatched} pages not as recorded, {failed} failed").into());
    }
    Ok(())
}
