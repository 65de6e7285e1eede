//! `deepread serve` as people start it: the real binary on 127.0.0.1, a tiny random-weights model that
//! `deepread synthesize` writes, a PDF page rendered as DeepRead renders it, and `deepread ocr` on the same
//! page as the oracle of what the server writes.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use base64::Engine as _;
use common::{fixture, fixtures, pdfium};
use deepread_core::recognizer::RENDER_DPI;
use deepread_pdf::{Document, RenderSize};
use serde_json::{json, Value};

const PDF: &str = "pdfs/born_digital_papers_math_tables/docling__code_and_formula.pdf";

fn deepread() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_deepread"));
    command
        .env("DEEPREAD_PDFIUM", pdfium())
        .env_remove("DEEPREAD_SERVE_API_KEY");
    command
}

/// The tiny checkpoint, written once per build by `deepread synthesize`.
fn model_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-serve-tiny-model");
        if !dir.join("model.safetensors").is_file() {
            let tokenizer = fixtures().join("tokenizer");
            let output = deepread()
                .args(["synthesize", "--config", "tiny", "--tokenizer"])
                .arg(&tokenizer)
                .arg("--out")
                .arg(&dir)
                .output()
                .expect("deepread synthesize runs");
            assert!(output.status.success(), "{}", common::stderr(&output));
        }
        dir
    })
}

/// A running `deepread serve`, its stderr read line by line; killed when dropped.
struct Served {
    child: Child,
    url: String,
    stderr: Receiver<String>,
    seen: Vec<String>,
}

impl Served {
    /// Starts the server with `args` (after `--model`) and waits for the URL it prints once ready.
    fn start(args: &[&str], api_key: Option<&str>) -> Served {
        let mut command = deepread();
        command
            .arg("serve")
            .arg("--model")
            .arg(model_dir())
            .args(args);
        if let Some(key) = api_key {
            command.env("DEEPREAD_SERVE_API_KEY", key);
        }
        let mut child = command
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("deepread serve starts");
        let (lines, stderr) = channel();
        let pipe = child.stderr.take().expect("stderr is piped");
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        let mut served = Served {
            child,
            url: String::new(),
            stderr,
            seen: Vec::new(),
        };
        let ready = served.wait_for_line("deepread serve: listening on ");
        served.url = ready
            .rsplit(' ')
            .next()
            .expect("the line ends with the URL")
            .to_owned();
        served
    }

    /// The first stderr line holding `text` (a minute at most).
    fn wait_for_line(&mut self, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        if let Some(line) = self.seen.iter().find(|l| l.contains(text)) {
            return line.clone();
        }
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(text) {
                        return line;
                    }
                }
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                    panic!("no line with {text:?} on stderr: {:#?}", self.seen)
                }
            }
        }
    }

    /// Sends SIGTERM, as `systemctl stop` does, and waits for the process to exit.
    fn terminate(&mut self) -> ExitStatus {
        let signalled = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(signalled.success());
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().expect("the server's status") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "deepread serve did not stop on SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into()
}

/// Status and body of a request; `body` makes it a POST.
fn call(url: &str, body: Option<&Value>, key: Option<&str>) -> (u16, String) {
    let agent = agent();
    let mut response = match body {
        Some(body) => {
            let mut request = agent.post(url).content_type("application/json");
            if let Some(key) = key {
                request = request.header("Authorization", format!("Bearer {key}"));
            }
            request.send(&serde_json::to_vec(body).expect("JSON")[..])
        }
        None => {
            let mut request = agent.get(url);
            if let Some(key) = key {
                request = request.header("Authorization", format!("Bearer {key}"));
            }
            request.call()
        }
    }
    .expect("the server answers");
    let status = response.status().as_u16();
    let body = response
        .body_mut()
        .with_config()
        .limit(64 << 20)
        .read_to_string()
        .expect("a body");
    (status, body)
}

/// Page 1 of the PDF as DeepRead renders it for the model, as a PNG data URL.
fn rendered_page_url(pdf: &Path) -> String {
    let document = Document::open(pdf, None).expect("the PDF opens");
    let page = document
        .render_page(0, RenderSize::Dpi(RENDER_DPI))
        .expect("the page renders");
    let mut png = std::io::Cursor::new(Vec::new());
    page.write_to(&mut png, image::ImageFormat::Png)
        .expect("PNG encodes");
    format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(png.into_inner())
    )
}

/// The streamed text of a reply, its finish reason, and whether it ended with `[DONE]`.
fn streamed_text(body: &str) -> (String, Option<String>, bool) {
    let mut text = String::new();
    let mut finish = None;
    let mut done = false;
    for data in body.lines().filter_map(|l| l.strip_prefix("data: ")) {
        if data == "[DONE]" {
            done = true;
            continue;
        }
        let chunk: Value = serde_json::from_str(data).expect("a JSON chunk");
        assert!(chunk.get("error").is_none(), "{chunk}");
        if let Some(choice) = chunk["choices"].get(0) {
            text.push_str(choice["delta"]["content"].as_str().unwrap_or(""));
            if let Some(reason) = choice["finish_reason"].as_str() {
                finish = Some(reason.to_owned());
            }
        }
    }
    (text, finish, done)
}

#[test]
fn serve_streams_a_pdf_page_as_deepread_ocr_reads_it_and_stops_on_sigterm() {
    let pdf = fixture(PDF);
    let max_tokens = 16;
    let mut served = Served::start(&["--port", "0", "--slots", "2"], None);
    assert!(
        served.url.starts_with("http://127.0.0.1:"),
        "{}",
        served.url
    );

    let body = json!({
        "model": "deepseek-ai/DeepSeek-OCR-2",
        "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": rendered_page_url(&pdf)}},
            {"type": "text", "text": "<|grounding|>Convert the document to markdown."},
        ]}],
        "stream": true,
        "stream_options": {"include_usage": true},
        "temperature": 0,
        "max_tokens": max_tokens,
    });
    let (status, reply) = call(
        &format!("{}/v1/chat/completions", served.url),
        Some(&body),
        None,
    );
    assert_eq!(status, 200, "{reply}");
    let (text, finish, done) = streamed_text(&reply);

    let oracle = deepread()
        .arg("ocr")
        .arg(&pdf)
        .arg("--model")
        .arg(model_dir())
        .args(["--max-new-tokens", &max_tokens.to_string()])
        .output()
        .expect("deepread ocr runs");
    assert!(oracle.status.success(), "{}", common::stderr(&oracle));
    let written = String::from_utf8(oracle.stdout).expect("UTF-8");
    let expected = written.strip_suffix('\n').unwrap_or(&written);
    assert!(!expected.is_empty());
    assert_eq!(text, expected);
    assert!(finish.is_some() && done, "{reply}");

    let status = served.terminate();
    assert!(status.success(), "{status}");
    served.wait_for_line("terminated, stopping");
    served.wait_for_line("deepread serve: stopped");
}

#[test]
fn serve_asks_for_its_api_key_and_warns_when_serving_the_network_without_one() {
    let key = "team-key";
    let served = Served::start(&["--port", "0", "--served-model-name", "ocr"], Some(key));
    assert!(
        !served.seen.iter().any(|l| l.contains("warning")),
        "{:#?}",
        served.seen
    );
    let models = format!("{}/v1/models", served.url);
    let (status, body) = call(&models, None, None);
    assert_eq!(status, 401, "{body}");
    assert_eq!(call(&models, None, Some("other-key")).0, 401);
    let (status, body) = call(&models, None, Some(key));
    assert_eq!(status, 200, "{body}");
    let models: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(models["data"][0]["id"], "ocr");
    let (status, _) = call(&format!("{}/health", served.url), None, None);
    assert_eq!(status, 200, "the health check needs no key");
    drop(served);

    let mut open = Served::start(&["--host", "0.0.0.0", "--port", "0"], None);
    let warning = open.wait_for_line("warning:");
    assert!(
        warning.contains("without an API key") && warning.contains("DEEPREAD_SERVE_API_KEY"),
        "{warning}"
    );
}

#[test]
fn serve_without_model_weights_exits_4() {
    let empty = tempfile::tempdir().expect("a folder");
    let output = deepread()
        .arg("serve")
        .arg("--model")
        .arg(empty.path())
        .args(["--port", "0"])
        .output()
        .expect("deepread serve runs");
    assert_eq!(output.status.code(), Some(4), "{}", common::stderr(&output));
    assert!(common::stderr(&output).contains("config.json"));
}
