//! The content hash that identifies a document in the cache, whatever its file name.

use sha2::{Digest, Sha256};

/// Lowercase hex SHA-256 of the file's bytes (the same as `sha256sum` prints).
pub(crate) fn content_hash(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}
