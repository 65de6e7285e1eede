//! The hub's URLs: the file list, `resolve` (with the LFS redirect), the CDN, and the faults.

use std::io::Write;
use std::net::TcpStream;
use std::sync::Mutex;
use std::thread;

use super::http::{read_request, respond, write_head, Request};
use super::{HubFile, Seen, State, REPO};

pub(crate) fn handle(
    mut stream: TcpStream,
    state: &Mutex<State>,
    cdn_port: u16,
) -> std::io::Result<()> {
    let request = read_request(&stream)?;
    state.lock().unwrap().seen.push(Seen {
        method: request.method.clone(),
        path: request.path.clone(),
        range: request.headers.get("range").cloned(),
        authorization: request.headers.get("authorization").cloned(),
    });
    let head = request.method == "HEAD";
    if let Some(hash) = request.path.strip_prefix("/cdn/") {
        let file = state
            .lock()
            .unwrap()
            .files
            .iter()
            .find(|f| f.lfs && f.etag() == hash)
            .cloned();
        return match file {
            Some(file) => serve_bytes(&mut stream, state, &file, &request, head),
            None => respond(&mut stream, 404, &[], b"", head),
        };
    }
    let (token, commit) = {
        let state = state.lock().unwrap();
        (state.faults.token.clone(), state.commit.clone())
    };
    if let Some(token) = token {
        if request.headers.get("authorization") != Some(&format!("Bearer {token}")) {
            return respond(
                &mut stream,
                401,
                &[("X-Error-Code", "RepoNotFound".into())],
                b"",
                head,
            );
        }
    }
    let revision_ok = |rev: &str| rev == commit || rev == "main";
    if let Some(rest) = request.path.strip_prefix("/api/models/") {
        let Some((repo, revision)) = rest.split_once("/revision/") else {
            return respond(&mut stream, 404, &[], b"", head);
        };
        if repo != REPO {
            return respond(
                &mut stream,
                404,
                &[("X-Error-Code", "RepoNotFound".into())],
                b"",
                head,
            );
        }
        if !revision_ok(revision) {
            let code = ("X-Error-Code", "RevisionNotFound".into());
            return respond(&mut stream, 404, &[code], b"", head);
        }
        let listing = listing(&state.lock().unwrap());
        return respond(&mut stream, 200, &[], listing.as_bytes(), head);
    }
    let Some(rest) = request.path.strip_prefix(&format!("/{REPO}/resolve/")) else {
        return respond(
            &mut stream,
            404,
            &[("X-Error-Code", "RepoNotFound".into())],
            b"",
            head,
        );
    };
    let (revision, name) = rest.split_once('/').unwrap_or((rest, ""));
    if !revision_ok(revision) {
        return respond(
            &mut stream,
            404,
            &[("X-Error-Code", "RevisionNotFound".into())],
            b"",
            head,
        );
    }
    let file = state
        .lock()
        .unwrap()
        .files
        .iter()
        .find(|f| f.name == name)
        .cloned();
    let Some(file) = file else {
        return respond(
            &mut stream,
            404,
            &[("X-Error-Code", "EntryNotFound".into())],
            b"",
            head,
        );
    };
    let commit_header = ("X-Repo-Commit", commit);
    if file.lfs {
        let headers = [
            commit_header,
            ("X-Linked-Etag", format!("\"{}\"", file.etag())),
            ("X-Linked-Size", file.content.len().to_string()),
            ("ETag", "\"git-pointer-not-the-content\"".into()),
            (
                "Location",
                format!("http://127.0.0.1:{cdn_port}/cdn/{}", file.etag()),
            ),
        ];
        return respond(&mut stream, 302, &headers, b"", head);
    }
    if head {
        let headers = [
            commit_header,
            ("ETag", format!("W/\"{}\"", file.etag())),
            ("Content-Length", file.content.len().to_string()),
        ];
        return write_head(&mut stream, 200, &headers);
    }
    serve_bytes(&mut stream, state, &file, &request, head)
}

fn listing(state: &State) -> String {
    let siblings: Vec<String> = state
        .files
        .iter()
        .map(|f| format!("{{\"rfilename\": \"{}\"}}", f.name))
        .collect();
    format!(
        "{{\"id\": \"{REPO}\", \"sha\": \"{}\", \"siblings\": [{}]}}",
        state.commit,
        siblings.join(", ")
    )
}

/// A file's bytes, honouring `Range: bytes=N-` and the faults switched on.
fn serve_bytes(
    stream: &mut TcpStream,
    state: &Mutex<State>,
    file: &HubFile,
    request: &Request,
    head: bool,
) -> std::io::Result<()> {
    let (content, cut_at, ignore_range, pause) = {
        let mut state = state.lock().unwrap();
        let faults = &mut state.faults;
        let mut content = file.content.clone();
        if let Some((name, times)) = faults.corrupt.as_mut() {
            if *name == file.name && *times > 0 {
                *times -= 1;
                content[file.content.len() / 2] ^= 0xFF;
            }
        }
        let cut_at = match faults.cut.as_mut() {
            Some(cut) if cut.file == file.name && cut.times > 0 => {
                cut.times -= 1;
                Some(cut.at)
            }
            _ => None,
        };
        let pause = faults
            .slow
            .as_ref()
            .filter(|(name, _)| *name == file.name)
            .map(|(_, pause)| *pause);
        (content, cut_at, faults.ignore_range, pause)
    };
    let start = request
        .headers
        .get("range")
        .filter(|_| !ignore_range)
        .and_then(|range| {
            range
                .strip_prefix("bytes=")?
                .strip_suffix('-')?
                .parse::<usize>()
                .ok()
        });
    let len = content.len();
    let (status, start, mut headers) = match start {
        Some(start) if start >= len => {
            let headers = [("Content-Range", format!("bytes */{len}"))];
            return respond(stream, 416, &headers, b"", head);
        }
        Some(start) => (
            206,
            start,
            vec![("Content-Range", format!("bytes {start}-{}/{len}", len - 1))],
        ),
        None => (200, 0, vec![]),
    };
    headers.push(("Content-Length", (len - start).to_string()));
    headers.push(("Accept-Ranges", "bytes".into()));
    write_head(stream, status, &headers)?;
    if head {
        return Ok(());
    }
    // A cut sends the bytes before `at` and closes, the header having promised them all.
    let end = cut_at.map_or(len, |at| at.clamp(start, len));
    match pause {
        Some(pause) => {
            for piece in content[start..end].chunks(16 * 1024) {
                stream.write_all(piece)?;
                thread::sleep(pause);
            }
        }
        None => stream.write_all(&content[start..end])?,
    }
    stream.flush()
}
