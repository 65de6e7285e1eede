-- Documents are keyed by the hash of their content, so a moved or renamed file keeps its results.
CREATE TABLE documents (
    hash                TEXT PRIMARY KEY NOT NULL,
    path                TEXT NOT NULL,
    title               TEXT,
    page_count          INTEGER NOT NULL CHECK (page_count >= 0),
    first_opened_at_ms  INTEGER NOT NULL,
    last_opened_at_ms   INTEGER NOT NULL
);

CREATE INDEX documents_by_last_opened ON documents (last_opened_at_ms DESC);

-- One finished reading of one page by one recognizer configuration (the fingerprint covers the model,
-- its settings and the mode), so changing any of them reads the page again instead of reusing it.
CREATE TABLE page_results (
    document_hash  TEXT NOT NULL REFERENCES documents (hash) ON DELETE CASCADE,
    page_index     INTEGER NOT NULL CHECK (page_index >= 0),
    fingerprint    TEXT NOT NULL,
    recognizer     TEXT NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('done', 'failed', 'looped')),
    raw_output     TEXT NOT NULL,
    blocks_json    TEXT NOT NULL,
    markdown       TEXT NOT NULL,
    stats_json     TEXT NOT NULL,
    error          TEXT,
    created_at_ms  INTEGER NOT NULL,
    PRIMARY KEY (document_hash, fingerprint, page_index)
);
