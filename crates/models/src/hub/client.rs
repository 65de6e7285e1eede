//! The few hub requests a download needs: a revision's file list, one file's metadata (hash, size),
//! and its bytes from an offset. Every failure becomes a [`DownloadError`] that says what to do.

use std::io::ErrorKind;

use serde::Deserialize;
use ureq::http::Response;
use ureq::typestate::WithoutBody;
use ureq::{Agent, Body, BodyReader, RequestBuilder};

use super::url::{absolute, encode, origin};
use crate::download::Timeouts;
use crate::error::DownloadError;

const USER_AGENT: &str = concat!("deepread/", env!("CARGO_PKG_VERSION"));

const NO_NAME: &str = "its name does not resolve (no network, or a wrong address)";

/// Enough for the hub's own hops (a renamed repo) plus the CDN; more is a loop.
const MAX_REDIRECTS: usize = 5;

/// A revision's files, as the hub lists them, and the commit the revision stands for.
#[derive(Debug, Clone)]
pub(crate) struct Listing {
    pub commit: String,
    pub files: Vec<String>,
}

/// What the hub says about one file before it is downloaded.
#[derive(Debug, Clone)]
pub(crate) struct FileMeta {
    /// The content's sha256 for LFS files, the git blob sha1 for the others.
    pub etag: String,
    pub size: u64,
}

/// A file's bytes on their way: from the offset asked for, or from the start when the server ignored it.
pub(crate) struct Fetched {
    pub from_start: bool,
    pub body: BodyReader<'static>,
}

#[derive(Deserialize)]
struct RepoInfo {
    sha: String,
    #[serde(default)]
    siblings: Vec<Sibling>,
}

#[derive(Deserialize)]
struct Sibling {
    rfilename: String,
}

/// What a request was for, so a 404 can say which thing is missing.
#[derive(Clone, Copy)]
enum Target<'a> {
    Listing { revision: &'a str },
    File { file: &'a str, revision: &'a str },
}

pub(crate) struct HubClient {
    agent: Agent,
    endpoint: String,
    token: Option<String>,
    repo: String,
    timeouts: Timeouts,
}

impl HubClient {
    pub fn new(endpoint: &str, token: Option<String>, repo: &str, timeouts: Timeouts) -> Self {
        let agent: Agent = Agent::config_builder()
            // Statuses are turned into sentences here, and redirects followed by hand so the token
            // never goes to the CDN and `Range` always does.
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_resolve(Some(timeouts.connect))
            .timeout_connect(Some(timeouts.connect))
            .timeout_recv_response(Some(timeouts.read))
            .timeout_per_read(Some(timeouts.read))
            .user_agent(USER_AGENT)
            .build()
            .into();
        HubClient {
            agent,
            endpoint: endpoint.trim_end_matches('/').to_owned(),
            token,
            repo: repo.to_owned(),
            timeouts,
        }
    }

    /// `GET /api/models/{repo}/revision/{revision}`: the commit and every file in it.
    pub fn list(&self, revision: &str) -> Result<Listing, DownloadError> {
        let url = format!(
            "{}/api/models/{}/revision/{}",
            self.endpoint,
            self.repo,
            encode(revision, false)
        );
        let mut response = self.call(self.agent.get(&url), &url, None)?;
        self.expect_success(&response, &url, Target::Listing { revision })?;
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|e| self.transport_error(&url, e))?;
        let info: RepoInfo = serde_json::from_str(&text).map_err(|e| self.bad_answer(&url, e))?;
        Ok(Listing {
            commit: info.sha,
            files: info.siblings.into_iter().map(|s| s.rfilename).collect(),
        })
    }

    /// `HEAD /{repo}/resolve/{commit}/{file}`, not following the CDN redirect: the hub's own answer
    /// carries the hash (`X-Linked-Etag` or `ETag`) and size (`X-Linked-Size` or `Content-Length`).
    pub fn file_meta(&self, commit: &str, file: &str) -> Result<FileMeta, DownloadError> {
        let mut url = self.resolve_url(commit, file);
        let mut response = self.call(self.agent.head(&url), &url, None)?;
        for _ in 0..MAX_REDIRECTS {
            // Relative redirects are the hub's (a renamed repo); an absolute one is the CDN's.
            match location(&response).filter(|target| target.starts_with('/')) {
                Some(path) => url = format!("{}{path}", origin(&url)),
                None => break,
            }
            response = self.call(self.agent.head(&url), &url, None)?;
        }
        let target = Target::File {
            file,
            revision: commit,
        };
        self.expect_success(&response, &url, target)?;
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|value| value.to_str().ok())
        };
        let etag = header("x-linked-etag")
            .or_else(|| header("etag"))
            .map(clean_etag)
            .ok_or_else(|| self.bad_answer(&url, "no ETag header"))?;
        let size = header("x-linked-size")
            .or_else(|| header("content-length"))
            .and_then(|size| size.trim().parse().ok())
            .ok_or_else(|| {
                self.bad_answer(&url, "no file size (X-Linked-Size or Content-Length)")
            })?;
        Ok(FileMeta { etag, size })
    }

    /// `GET` a file from byte `from` on, through the CDN redirect.
    pub fn fetch(&self, commit: &str, file: &str, from: u64) -> Result<Fetched, DownloadError> {
        let mut url = self.resolve_url(commit, file);
        let range = (from > 0).then_some(from);
        let mut response = self.call(self.agent.get(&url), &url, range)?;
        for _ in 0..MAX_REDIRECTS {
            let Some(next) = location(&response) else {
                break;
            };
            url = absolute(&url, next);
            response = self.call(self.agent.get(&url), &url, range)?;
        }
        let target = Target::File {
            file,
            revision: commit,
        };
        self.expect_success(&response, &url, target)?;
        let from_start = match response.status().as_u16() {
            206 => {
                check_range_start(&response, from).map_err(|e| self.bad_answer(&url, e))?;
                false
            }
            _ => true,
        };
        Ok(Fetched {
            from_start,
            body: response.into_body().into_reader(),
        })
    }

    pub fn host(&self) -> String {
        origin(&self.endpoint).to_owned()
    }

    fn resolve_url(&self, commit: &str, file: &str) -> String {
        format!(
            "{}/{}/resolve/{commit}/{}",
            self.endpoint,
            self.repo,
            encode(file, true)
        )
    }

    fn call(
        &self,
        request: RequestBuilder<WithoutBody>,
        url: &str,
        range_from: Option<u64>,
    ) -> Result<Response<Body>, DownloadError> {
        let mut request = request;
        if let Some(token) = self.token.as_ref().filter(|_| origin(url) == self.host()) {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        if let Some(from) = range_from {
            request = request.header("Range", format!("bytes={from}-"));
        }
        tracing::debug!(url, ?range_from, "hub request");
        request.call().map_err(|e| self.transport_error(url, e))
    }

    fn expect_success(
        &self,
        response: &Response<Body>,
        url: &str,
        target: Target,
    ) -> Result<(), DownloadError> {
        let status = response.status().as_u16();
        if (200..400).contains(&status) {
            return Ok(());
        }
        let host = origin(url).to_owned();
        let repo = self.repo.clone();
        Err(match status {
            401 if self.token.is_some() => DownloadError::TokenRefused { repo },
            401 => DownloadError::NeedsToken { repo },
            403 => DownloadError::Forbidden { repo },
            404 => DownloadError::NotFound {
                host,
                what: describe_missing(&self.repo, target, error_code(response)),
            },
            _ => DownloadError::Http {
                host,
                status,
                url: url.to_owned(),
            },
        })
    }

    pub(crate) fn transport_error(&self, url: &str, error: ureq::Error) -> DownloadError {
        let host = origin(url).to_owned();
        match error {
            ureq::Error::Timeout(kind) => DownloadError::Timeout {
                host,
                after: match kind {
                    ureq::Timeout::Resolve | ureq::Timeout::Connect => self.timeouts.connect,
                    _ => self.timeouts.read,
                },
            },
            ureq::Error::HostNotFound => DownloadError::Unreachable {
                host,
                detail: NO_NAME.into(),
            },
            ureq::Error::Io(e) if e.kind() == ErrorKind::TimedOut => DownloadError::Timeout {
                host,
                after: self.timeouts.read,
            },
            ureq::Error::Io(e) if e.kind() == ErrorKind::ConnectionRefused => {
                DownloadError::Unreachable {
                    host,
                    detail: "the connection was refused".into(),
                }
            }
            // With a resolve timeout ureq looks names up on a thread of its own, and a failed lookup
            // comes back as a plain io error that only its text tells apart.
            ureq::Error::Io(e) if e.to_string().contains("lookup address") => {
                DownloadError::Unreachable {
                    host,
                    detail: NO_NAME.into(),
                }
            }
            ureq::Error::Io(e) => DownloadError::Unreachable {
                host,
                detail: e.to_string(),
            },
            other => DownloadError::Unreachable {
                host,
                detail: other.to_string(),
            },
        }
    }

    fn bad_answer(&self, url: &str, detail: impl std::fmt::Display) -> DownloadError {
        DownloadError::BadAnswer {
            host: origin(url).to_owned(),
            url: url.to_owned(),
            detail: detail.to_string(),
        }
    }
}

fn describe_missing(repo: &str, target: Target, code: Option<&str>) -> String {
    match (code, target) {
        (Some("RepoNotFound"), _) => format!("there is no repository {repo} (or it is private)"),
        (Some("RevisionNotFound"), Target::File { revision, .. })
        | (_, Target::Listing { revision }) => {
            format!("{repo} has no revision {revision}, or the repository does not exist")
        }
        (_, Target::File { file, revision }) => {
            format!("{repo} has no file {file} at revision {revision}")
        }
    }
}

/// The hub names what is missing in `X-Error-Code` (RepoNotFound, RevisionNotFound, EntryNotFound).
fn error_code(response: &Response<Body>) -> Option<&str> {
    response
        .headers()
        .get("x-error-code")
        .and_then(|value| value.to_str().ok())
}

fn location(response: &Response<Body>) -> Option<&str> {
    if !response.status().is_redirection() {
        return None;
    }
    response
        .headers()
        .get("location")
        .and_then(|value| value.to_str().ok())
}

/// A 206 must start where asked; appending bytes from elsewhere would only fail the hash check later.
fn check_range_start(response: &Response<Body>, from: u64) -> Result<(), String> {
    let range = response
        .headers()
        .get("content-range")
        .and_then(|value| value.to_str().ok())
        .ok_or("a partial answer without Content-Range")?;
    let start = range
        .trim_start_matches("bytes")
        .trim()
        .split('-')
        .next()
        .and_then(|start| start.parse::<u64>().ok());
    match start {
        Some(start) if start == from => Ok(()),
        _ => Err(format!("asked for bytes from {from}, got {range}")),
    }
}

/// `"abc"` and `W/"abc"` → `abc`: the hub quotes its etags and proxies may weaken them.
pub(crate) fn clean_etag(raw: &str) -> String {
    raw.trim()
        .trim_start_matches("W/")
        .trim_matches('"')
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etags_lose_quotes_and_weakness() {
        assert_eq!(clean_etag("\"abc\""), "abc");
        assert_eq!(clean_etag("W/\"abc\""), "abc");
        assert_eq!(clean_etag("abc"), "abc");
    }
}
