//! The server's base URL, checked once: http or https, and plain http only to this machine unless the
//! user allowed it, since every page image and its text would cross the network readable by anyone on
//! the way.

use std::net::IpAddr;

use ureq::http::Uri;

use super::fault::RemoteError;

/// A checked base URL such as `http://127.0.0.1:8000/v1`, without a trailing slash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    base: String,
}

impl Endpoint {
    pub fn parse(endpoint: &str, allow_plain_http: bool) -> Result<Self, RemoteError> {
        let base = endpoint.trim().trim_end_matches('/').to_owned();
        let bad = |reason: &str| RemoteError::BadEndpoint {
            endpoint: base.clone(),
            reason: reason.to_owned(),
        };
        let uri: Uri = base.parse().map_err(|_| bad("not a URL"))?;
        let host = uri
            .host()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| bad("no host"))?;
        match uri.scheme_str() {
            Some("https") => {}
            Some("http") if allow_plain_http || is_loopback(host) => {}
            Some("http") => return Err(RemoteError::PlainHttp { endpoint: base }),
            _ => return Err(bad("it must start with http:// or https://")),
        }
        if uri.query().is_some() {
            return Err(bad("a base URL has no query (?…)"));
        }
        Ok(Endpoint { base })
    }

    /// `{base}/chat/completions`.
    pub fn chat_completions(&self) -> String {
        format!("{}/chat/completions", self.base)
    }

    /// `{base}/models`: what the server serves, for a connection test.
    pub fn models(&self) -> String {
        format!("{}/models", self.base)
    }

    /// The base URL as the user gave it, for messages and the fingerprint.
    pub fn as_str(&self) -> &str {
        &self.base
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.base)
    }
}

/// `localhost`, 127.0.0.0/8 and ::1: traffic that never leaves the machine.
fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<IpAddr>()
            .is_ok_and(|address| address.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_is_taken_only_to_this_machine_unless_allowed() {
        for local in [
            "http://127.0.0.1:8000/v1",
            "http://127.3.2.1/v1",
            "http://localhost:30000/v1/",
            "http://LOCALHOST/v1",
            "http://[::1]:8000/v1",
        ] {
            assert!(Endpoint::parse(local, false).is_ok(), "{local}");
        }
        for remote in [
            "http://10.0.0.5:8000/v1",
            "http://gpu.example.com/v1",
            "http://[2001:db8::1]/v1",
            "http://localhost.example.com/v1",
        ] {
            assert!(
                matches!(
                    Endpoint::parse(remote, false),
                    Err(RemoteError::PlainHttp { .. })
                ),
                "{remote}"
            );
            assert!(Endpoint::parse(remote, true).is_ok(), "{remote}");
        }
        assert!(Endpoint::parse("https://gpu.example.com/v1", false).is_ok());
    }

    #[test]
    fn what_is_not_a_server_address_is_refused_with_a_reason() {
        for bad in [
            "",
            "gpu:8000",
            "ftp://gpu/v1",
            "http:///v1",
            "http://h/v1?x=1",
        ] {
            let error = Endpoint::parse(bad, true).unwrap_err();
            assert!(
                matches!(error, RemoteError::BadEndpoint { .. }),
                "{bad}: {error}"
            );
        }
    }

    #[test]
    fn requests_go_to_chat_completions_under_the_base() {
        let endpoint = Endpoint::parse("http://127.0.0.1:8000/v1/", false).unwrap();
        assert_eq!(endpoint.as_str(), "http://127.0.0.1:8000/v1");
        assert_eq!(
            endpoint.chat_completions(),
            "http://127.0.0.1:8000/v1/chat/completions"
        );
    }
}
