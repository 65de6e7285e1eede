// LaTeX in the Markdown pane, typeset with KaTeX. The model writes math as `\( … \)`, `\[ … \]` or
// `$$ … $$`; the Rust side keeps those spans intact as text in its sanitized HTML (export/math.rs),
// and here they are found in the text nodes again and typeset from their source text only, never
// from HTML: KaTeX builds the DOM itself, with `trust: false` so `\href` and friends stay inert.
import katex from "katex";
import "katex/dist/katex.css";

export type MathSegment = { kind: "text"; text: string } | { kind: "math"; tex: string; display: boolean };

/** Openers with their closers, as export/math.rs knows them; `\[` and `$$` are display math. */
const DELIMITERS = [
  { open: "\\[", close: "\\]", display: true },
  { open: "\\(", close: "\\)", display: false },
  { open: "$$", close: "$$", display: true },
] as const;

/** Text split into plain runs and closed math spans; an opener without its closer stays text. */
export function splitMath(text: string): MathSegment[] {
  const segments: MathSegment[] = [];
  let copied = 0;
  let i = 0;
  while (i < text.length) {
    const delimiter = DELIMITERS.find((d) => text.startsWith(d.open, i));
    if (!delimiter) {
      // `\\` is an escaped backslash: the character after it opens nothing.
      i += text[i] === "\\" ? 2 : 1;
      continue;
    }
    const start = i + delimiter.open.length;
    const end = findCloser(text, start, delimiter.close);
    const tex = end === null ? "" : text.slice(start, end).trim();
    if (end === null || tex === "") {
      i = start;
      continue;
    }
    if (i > copied) segments.push({ kind: "text", text: text.slice(copied, i) });
    segments.push({ kind: "math", tex, display: delimiter.display });
    i = copied = end + delimiter.close.length;
  }
  if (copied < text.length) segments.push({ kind: "text", text: text.slice(copied) });
  return segments;
}

/** Where the closer of a span whose content starts at `from` begins, skipping escaped characters so
 * that `\\` (a LaTeX line break) never reads as the start of `\]`. */
function findCloser(text: string, from: number, close: string): number | null {
  for (let j = from; j < text.length; j += text[j] === "\\" ? 2 : 1) {
    if (text.startsWith(close, j)) return j;
  }
  return null;
}

/** Typesets every math span in `root`'s text, except in code, which shows LaTeX as written. */
export function typesetMath(root: HTMLElement): void {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const found: Text[] = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.parentElement?.closest("code, pre, .katex")) found.push(node as Text);
  }
  for (const node of found) {
    const segments = splitMath(node.data);
    if (segments.some((s) => s.kind === "math")) node.replaceWith(...segments.map(segmentNode));
  }
}

function segmentNode(segment: MathSegment): Node {
  if (segment.kind === "text") return document.createTextNode(segment.text);
  const element = document.createElement("span");
  element.className = segment.display ? "math math-display" : "math math-inline";
  try {
    katex.render(segment.tex, element, {
      displayMode: segment.display,
      // Bad LaTeX is shown as its source, in KaTeX's error colour.
      throwOnError: false,
      trust: false,
      // Model LaTeX is often loose; KaTeX typesets what it can without a console warning each time.
      strict: "ignore",
      // Model output can expand without end; KaTeX gives up on it rather than the window.
      maxExpand: 1000,
      maxSize: 20,
    });
  } catch {
    // What KaTeX cannot typeset at all stays as the model wrote it.
    element.textContent = segment.display ? `\\[${segment.tex}\\]` : `\\(${segment.tex}\\)`;
  }
  return element;
}
