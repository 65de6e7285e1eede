//! The little URL handling the hub needs: a server's origin, redirect targets, percent-encoding.

/// `scheme://host[:port]` of a URL, which is how errors name the server.
pub(crate) fn origin(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    url[after_scheme..]
        .find('/')
        .map_or(url, |i| &url[..after_scheme + i])
}

pub(crate) fn absolute(base: &str, location: &str) -> String {
    if location.starts_with("http://") || location.starts_with("https://") {
        location.to_owned()
    } else {
        format!("{}/{}", origin(base), location.trim_start_matches('/'))
    }
}

/// Percent-encodes a path segment (keeping `/` between a file's folders when asked).
pub(crate) fn encode(text: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        let plain = byte.is_ascii_alphanumeric()
            || matches!(byte, b'-' | b'_' | b'.' | b'~')
            || (keep_slash && byte == b'/');
        if plain {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_and_redirect_targets() {
        assert_eq!(origin("http://127.0.0.1:9/a/b?c"), "http://127.0.0.1:9");
        assert_eq!(origin("https://huggingface.co"), "https://huggingface.co");
        assert_eq!(absolute("http://h:1/x/y", "/cdn/z"), "http://h:1/cdn/z");
        assert_eq!(absolute("http://h:1/x", "https://cdn/z"), "https://cdn/z");
    }

    #[test]
    fn names_are_percent_encoded() {
        assert_eq!(encode("refs/pr/1", false), "refs%2Fpr%2F1");
        assert_eq!(encode("sub/a b.json", true), "sub/a%20b.json");
    }
}
