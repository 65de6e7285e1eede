-- A block a person added to a page (a region read again and kept as a block of its own) is kept as a correction
-- with no original text, under a block id past any reading's; its label is kept beside it. NULL for corrections
-- of the reading's own blocks, whose label is the reading's.
ALTER TABLE corrections ADD COLUMN label TEXT;
