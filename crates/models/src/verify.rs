//! Checking a file against the hash the hub names it by: the sha256 of the content for LFS files
//! (64 hex digits), the git blob id for the others (40 hex digits: sha1 of `blob {len}\0` + content).

use sha1::Sha1;
use sha2::{Digest, Sha256};

use crate::hub::cache::is_lower_hex;

#[derive(Clone)]
enum Hasher {
    Sha256(Sha256),
    GitBlob(Sha1),
}

/// A running hash of a file's bytes, fed as they are written, compared with the etag at the end.
#[derive(Clone)]
pub(crate) struct Checksum {
    expected: String,
    size: u64,
    hasher: Hasher,
}

impl Checksum {
    /// The check an etag calls for, or `None` when it is not a hash DeepRead knows.
    pub fn for_etag(etag: &str, size: u64) -> Option<Self> {
        if !is_lower_hex(etag) {
            return None;
        }
        let hasher = match etag.len() {
            64 => Hasher::Sha256(Sha256::new()),
            40 => Hasher::GitBlob(git_blob_hasher(size)),
            _ => return None,
        };
        Some(Checksum {
            expected: etag.to_owned(),
            size,
            hasher,
        })
    }

    pub fn algorithm(&self) -> &'static str {
        match self.hasher {
            Hasher::Sha256(_) => "sha256",
            Hasher::GitBlob(_) => "git blob sha1",
        }
    }

    pub fn update(&mut self, bytes: &[u8]) {
        match &mut self.hasher {
            Hasher::Sha256(hasher) => hasher.update(bytes),
            Hasher::GitBlob(hasher) => hasher.update(bytes),
        }
    }

    /// Forgets what was fed, for a file that starts over.
    pub fn restart(&mut self) {
        if let Some(fresh) = Checksum::for_etag(&self.expected, self.size) {
            *self = fresh;
        }
    }

    pub fn matches(&self) -> bool {
        let digest = match &self.hasher {
            Hasher::Sha256(hasher) => hex::encode(hasher.clone().finalize()),
            Hasher::GitBlob(hasher) => hex::encode(hasher.clone().finalize()),
        };
        digest == self.expected
    }
}

/// Git hashes a blob with its header, so the id depends on the length too.
fn git_blob_hasher(size: u64) -> Sha1 {
    let mut hasher = Sha1::new();
    hasher.update(format!("blob {size}\0").as_bytes());
    hasher
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(etag: &str, content: &[u8]) -> bool {
        let mut sum = Checksum::for_etag(etag, content.len() as u64).unwrap();
        sum.update(content);
        sum.matches()
    }

    #[test]
    fn git_blob_ids_match_git() {
        // `printf 'hello\n' | git hash-object --stdin`
        assert!(check(
            "ce013625030ba8dba906f756967f9e9ca394464a",
            b"hello\n"
        ));
        assert!(!check(
            "ce013625030ba8dba906f756967f9e9ca394464a",
            b"hellO\n"
        ));
    }

    #[test]
    fn sha256_etags_are_the_content_hash() {
        let etag = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";
        assert!(check(etag, b"hello"));
        assert!(!check(etag, b"hellp"));
    }

    #[test]
    fn other_etags_cannot_be_checked() {
        assert!(Checksum::for_etag("abc", 1).is_none());
        assert!(Checksum::for_etag(&"Z".repeat(64), 1).is_none());
    }
}
