// Which pages a re-read or a retry reads. A new reading of a document replaces the one running, so
// the pages that one still had to read go on after the page asked for.

export function pagesForReRead(page: number, statuses: ReadonlyMap<number, string | undefined>): number[] {
  const unfinished = [...statuses]
    .filter(([p, status]) => p !== page && (status === "queued" || status === "reading"))
    .map(([p]) => p)
    .sort((a, b) => a - b);
  return [page, ...unfinished];
}
