-- A person's correction of one block of a page: their Markdown beside the text the reading had there (kept, never
-- overwritten) and the block's boxes, by which a later reading's block is found again. Keyed by document and page,
-- not by who read it: a correction outlives a re-read of the page and a change of engine.
CREATE TABLE corrections (
    document_hash  TEXT NOT NULL REFERENCES documents (hash) ON DELETE CASCADE,
    page_index     INTEGER NOT NULL CHECK (page_index >= 0),
    block_id       INTEGER NOT NULL CHECK (block_id >= 0),
    boxes_json     TEXT NOT NULL,
    original       TEXT NOT NULL,
    markdown       TEXT NOT NULL,
    edited_at_ms   INTEGER NOT NULL,
    PRIMARY KEY (document_hash, page_index, block_id)
);
