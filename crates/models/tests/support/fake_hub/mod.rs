//! A small stand-in for the Hugging Face hub on 127.0.0.1: the real URL layout, headers and redirects
//! (`/api/models/…/revision/…`, `/{repo}/resolve/{rev}/{file}`, LFS files through a 302 to `/cdn/…`),
//! `Range` support, and faults a test can switch on: a cut connection, a wrong byte, a slow line,
//! a server that ignores `Range`, a token it insists on. Every request is logged for assertions.
//!
//! Plain std::net and HTTP/1.1 with `Connection: close`: small enough to read, and a cut connection is
//! just a socket closed early. Shared by this crate's tests and the CLI's (through `#[path]`).

#![allow(dead_code)]

mod http;
mod routes;

use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use sha1::Sha1;
use sha2::{Digest, Sha256};

pub const REPO: &str = "deepseek-ai/DeepSeek-OCR-2";
pub const PINNED: &str = "aaa02f3811945a91062062994c5c4a3f4c0af2b0";
pub const WEIGHTS: &str = "model-00001-of-000001.safetensors";
pub const WEIGHTS_LEN: usize = 384 * 1024;

/// One file of the served repository.
#[derive(Clone)]
pub struct HubFile {
    pub name: String,
    pub content: Vec<u8>,
    /// Served as the hub serves LFS files: a 302 to the CDN, `X-Linked-Etag` = sha256.
    pub lfs: bool,
}

impl HubFile {
    /// What the hub names the file by: sha256 for LFS files, the git blob id for the others.
    pub fn etag(&self) -> String {
        if self.lfs {
            hex::encode(Sha256::digest(&self.content))
        } else {
            let mut hasher = Sha1::new();
            hasher.update(format!("blob {}\0", self.content.len()).as_bytes());
            hasher.update(&self.content);
            hex::encode(hasher.finalize())
        }
    }
}

/// A small model repository: what the engine needs, plus files a download must leave out.
pub fn model_files() -> Vec<HubFile> {
    let file = |name: &str, content: Vec<u8>, lfs| HubFile {
        name: name.into(),
        content,
        lfs,
    };
    vec![
        file(
            "config.json",
            br#"{"model_type": "deepseek_vl_v2"}"#.to_vec(),
            false,
        ),
        file(
            "tokenizer.json",
            br#"{"version": "1.0", "model": {}}"#.to_vec(),
            false,
        ),
        file(WEIGHTS, random_bytes(WEIGHTS_LEN, 7), true),
        file("README.md", b"# DeepSeek-OCR-2\n".to_vec(), false),
        file(
            "modeling_deepseekocr2.py",
            b"import torch\n".to_vec(),
            false,
        ),
        file("assets/fig1.png", random_bytes(1000, 9), true),
    ]
}

/// Deterministic noise (xorshift), standing in for weights.
pub fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

/// A connection closed after the bytes up to `at` (counted from the file's start), `times` times.
#[derive(Clone, Debug)]
pub struct Cut {
    pub file: String,
    pub at: usize,
    pub times: usize,
}

/// Faults to serve; all off by default.
#[derive(Clone, Debug, Default)]
pub struct Faults {
    pub cut: Option<Cut>,
    /// A file served with one byte wrong, this many times.
    pub corrupt: Option<(String, usize)>,
    /// Answer `Range` requests with the whole file (200), as some servers do.
    pub ignore_range: bool,
    /// A file sent in 16 KiB pieces with this pause between them.
    pub slow: Option<(String, Duration)>,
    /// Requests to the hub (not the CDN) without `Authorization: Bearer <this>` get 401.
    pub token: Option<String>,
}

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub range: Option<String>,
    pub authorization: Option<String>,
}

pub(crate) struct State {
    pub(crate) files: Vec<HubFile>,
    pub(crate) commit: String,
    pub(crate) faults: Faults,
    pub(crate) seen: Vec<Seen>,
}

pub struct FakeHub {
    port: u16,
    cdn_port: u16,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

impl FakeHub {
    /// Serves `files` as `REPO` at commit `commit` (reachable as that commit or as `main`).
    pub fn start(files: Vec<HubFile>, commit: &str) -> FakeHub {
        let state = Arc::new(Mutex::new(State {
            files,
            commit: commit.to_owned(),
            faults: Faults::default(),
            seen: Vec::new(),
        }));
        let stop = Arc::new(AtomicBool::new(false));
        // The CDN is another server, as on the real hub, so the token must not follow the redirect.
        let hub = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let cdn = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = hub.local_addr().unwrap().port();
        let cdn_port = cdn.local_addr().unwrap().port();
        for listener in [hub, cdn] {
            serve(listener, state.clone(), stop.clone(), cdn_port);
        }
        FakeHub {
            port,
            cdn_port,
            state,
            stop,
        }
    }

    /// The model repository at the pinned commit.
    pub fn model() -> FakeHub {
        FakeHub::start(model_files(), PINNED)
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn set_faults(&self, faults: Faults) {
        self.state.lock().unwrap().faults = faults;
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    /// `Range` headers of the requests for a file's bytes (its CDN path or resolve path).
    pub fn content_requests(&self, name: &str) -> Vec<Option<String>> {
        let file = self.file(name);
        let cdn = format!("/cdn/{}", file.etag());
        self.seen()
            .into_iter()
            .filter(|seen| seen.method == "GET")
            .filter(|seen| {
                if file.lfs {
                    seen.path == cdn
                } else {
                    seen.path.ends_with(&format!("/{name}")) && seen.path.contains("/resolve/")
                }
            })
            .map(|seen| seen.range)
            .collect()
    }

    pub fn file(&self, name: &str) -> HubFile {
        let state = self.state.lock().unwrap();
        state.files.iter().find(|f| f.name == name).unwrap().clone()
    }
}

impl Drop for FakeHub {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loops so they see the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        let _ = TcpStream::connect(("127.0.0.1", self.cdn_port));
    }
}

fn serve(listener: TcpListener, state: Arc<Mutex<State>>, stop: Arc<AtomicBool>, cdn_port: u16) {
    thread::spawn(move || {
        for stream in listener.incoming() {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            let Ok(stream) = stream else { continue };
            let state = state.clone();
            thread::spawn(move || {
                let _ = routes::handle(stream, &state, cdn_port);
            });
        }
    });
}
