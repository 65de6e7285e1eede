import { describe, expect, it } from "vitest";
import type { Block, CorrectedPage } from "../events";
import { canCorrect, describeCorrected } from "./corrected-page";

const block = (id: number): Block => ({ id, label: "text", boxes: [], markdown: "", warning: null });
const answer = (corrected: number[], added: number[] = []): CorrectedPage => ({
  page: 1,
  markdown: "",
  blocks: [0, 1, 2, ...added].map(block),
  corrected,
  added,
  differing: [],
});

describe("corrections", () => {
  it("are made to the blocks of a page read, not of one queued or being read", () => {
    for (const status of ["done", "fromCache", "looped"] as const) expect(canCorrect(status)).toBe(true);
    for (const status of ["queued", "reading", "failed", undefined] as const) expect(canCorrect(status)).toBe(false);
  });

  it("are told in the status bar by what the answer shows of the block", () => {
    expect(describeCorrected(answer([2]), 2)).toBe("Block 3 of page 2 corrected: exports use your text.");
    expect(describeCorrected(answer([0]), 2)).toBe("Block 3 of page 2 shows the reading's text.");
    expect(describeCorrected(answer([]), null)).toBe("Your correction on page 2 was dropped.");
    expect(describeCorrected(answer([], [1_000_000]), 1_000_000)).toBe(
      "The block you added to page 2 was changed: exports use your text.",
    );
    expect(describeCorrected(answer([]), 1_000_000)).toBe("The block you added to page 2 was removed.");
  });
});
