use std::path::PathBuf;

/// Everything that can go wrong with the cache, worded for the person who has to act on it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "no data folder for DeepRead's cache could be found (is HOME set?); \
         set it, or give the cache a path of its own"
    )]
    NoDataDir,

    #[error("cannot create the cache folder {path}: {source}; check that it is writable")]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error(
        "the cache {from} is unusable ({reason}) but could not be moved aside to {to}: {source}; \
         move or delete it by hand and start DeepRead again"
    )]
    SetAsideFailed {
        from: PathBuf,
        to: PathBuf,
        reason: String,
        #[source]
        source: std::io::Error,
    },

    #[error(
        "cannot open the cache {path}: {source}; check that the file and its folder are writable"
    )]
    Open {
        path: PathBuf,
        #[source]
        source: sqlx::Error,
    },

    #[error(
        "cannot bring the cache {path} up to date: {source}; it may have been written by a different \
         build of DeepRead: move it aside or delete it, and DeepRead makes a new one"
    )]
    Migrate {
        path: PathBuf,
        #[source]
        source: sqlx::migrate::MigrateError,
    },

    #[error("the cache could not be read or written: {0}")]
    Database(#[from] sqlx::Error),

    #[error("document {hash} is not in the cache; open the document before saving its pages")]
    UnknownDocument { hash: String },

    #[error("the path {0} is not valid UTF-8, so the cache cannot remember it; rename the file")]
    PathNotUtf8(PathBuf),

    #[error("the cached {column} of {row} is damaged ({detail}); read it again to replace it")]
    DamagedRow {
        row: String,
        column: &'static str,
        detail: String,
    },
}

impl StoreError {
    /// A write's failure, where a row naming a document the cache does not have is [`StoreError::UnknownDocument`].
    pub(crate) fn of_write(error: sqlx::Error, hash: &str) -> StoreError {
        match error {
            sqlx::Error::Database(db) if db.is_foreign_key_violation() => {
                StoreError::UnknownDocument {
                    hash: hash.to_owned(),
                }
            }
            other => other.into(),
        }
    }
}
