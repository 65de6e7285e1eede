/// <reference types="node" />
// Reading the shared fixtures (real DeepSeek-OCR output and the reference's own drawings) in tests.
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { decode } from "jpeg-js";

/** `DEEPREAD_FIXTURES` (set by the Makefile), else ../shared/fixtures beside the repository. */
export function fixturesDir(): string {
  // A path, not a URL: under happy-dom the global URL is the DOM's, not Node's.
  return process.env["DEEPREAD_FIXTURES"] ?? resolve(dirname(fileURLToPath(import.meta.url)), "../../../shared/fixtures");
}

export function fixtureBytes(...parts: string[]): Uint8Array {
  return readFileSync(join(fixturesDir(), ...parts));
}

export function fixtureText(...parts: string[]): string {
  return readFileSync(join(fixturesDir(), ...parts), "utf8");
}

/** A JPEG's size from its start-of-frame header, independently of any decoder. */
export function jpegSize(bytes: Uint8Array): { width: number; height: number } {
  let at = 2; // after the SOI marker
  while (at + 9 < bytes.length) {
    if (bytes[at] !== 0xff) throw new Error(`not a JPEG marker at ${at}`);
    const marker = bytes[at + 1] ?? 0;
    const length = ((bytes[at + 2] ?? 0) << 8) | (bytes[at + 3] ?? 0);
    // SOF0..SOF15, except DHT (C4), JPG (C8) and DAC (CC), hold the frame size.
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      const height = ((bytes[at + 5] ?? 0) << 8) | (bytes[at + 6] ?? 0);
      const width = ((bytes[at + 7] ?? 0) << 8) | (bytes[at + 8] ?? 0);
      return { width, height };
    }
    at += 2 + length;
  }
  throw new Error("no JPEG frame header");
}

export interface RgbImage {
  width: number;
  height: number;
  /** RGBA, row by row. */
  data: Uint8Array;
}

export function decodeJpeg(bytes: Uint8Array): RgbImage {
  const image = decode(bytes, { useTArray: true, formatAsRGBA: true, maxMemoryUsageInMB: 1024 });
  return { width: image.width, height: image.height, data: image.data };
}

/** One `<|ref|>LABEL<|/ref|><|det|>[[...]]<|/det|>` block of a capture, with the text that follows it. */
export interface CapturedBlock {
  label: string;
  boxes: { x1: number; y1: number; x2: number; y2: number }[];
  /** Everything after the tags up to the next `<|ref|>`, as the model wrote it. */
  body: string;
}

const TAG = /<\|ref\|>(.*?)<\|\/ref\|><\|det\|>(.*?)<\|\/det\|>/gs;

/** The grounding blocks of a model output, found with the reference's own tag regex. */
export function capturedBlocks(output: string): CapturedBlock[] {
  const matches = [...output.matchAll(TAG)];
  return matches.map((match, i) => {
    const start = (match.index ?? 0) + match[0].length;
    const end = matches[i + 1]?.index ?? output.length;
    const numbers = [...(match[2] ?? "").matchAll(/-?\d+/g)].map((n) => Number(n[0]));
    const boxes = [];
    for (let k = 0; k + 3 < numbers.length; k += 4) {
      const [x1, y1, x2, y2] = numbers.slice(k, k + 4) as [number, number, number, number];
      boxes.push({ x1, y1, x2, y2 });
    }
    return { label: match[1] ?? "", boxes, body: output.slice(start, end) };
  });
}
