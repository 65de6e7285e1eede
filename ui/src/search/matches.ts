// Stepping through Ctrl+F's matches: Enter goes forward, Shift+Enter back, both wrap around.

/** The match after (or before) `current` of `count`, wrapping; the first (or last) when none is current. */
export function stepMatch(current: number | null, count: number, direction: 1 | -1): number | null {
  if (count === 0) return null;
  if (current === null) return direction === 1 ? 0 : count - 1;
  return (((current + direction) % count) + count) % count;
}

/** The search bar's counter: "3 of 12", "12 matches", "no matches". */
export function describeMatches(current: number | null, count: number, query: string): string {
  if (query.trim() === "") return "";
  if (count === 0) return "no matches";
  if (current === null) return count === 1 ? "1 match" : `${count} matches`;
  return `${current + 1} of ${count}`;
}
