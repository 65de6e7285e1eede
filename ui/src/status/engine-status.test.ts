import { describe, expect, it } from "vitest";
import { describeEngine, gigabytes } from "./engine-status";

describe("describeEngine", () => {
  it("names the model, its device and the memory in use", () => {
    const line = describeEngine({
      recognizer: "DeepSeek-OCR-2",
      device: "CUDA, bf16",
      memoryBytes: 7_412_000_000,
      readingModes: true,
      notice: null,
    });
    expect(line.text).toBe("DeepSeek-OCR-2 · CUDA, bf16 · 7.4 GB in use");
  });

  it("leaves memory out where the device has none of its own (the CPU)", () => {
    const line = describeEngine({
      recognizer: "DeepSeek-OCR-2",
      device: "CPU, f32",
      memoryBytes: null,
      readingModes: true,
      notice: null,
    });
    expect(line.text).toBe("DeepSeek-OCR-2 · CPU, f32");
  });

  it("says 'text layer only' without weights, and why in the tooltip", () => {
    const why = "no DeepSeek-OCR-2 weights in models/DeepSeek-OCR-2. Reading the PDF's own text layer instead.";
    const line = describeEngine({ recognizer: "text layer", device: null, memoryBytes: null, readingModes: false, notice: why });
    expect(line).toEqual({ text: "text layer only", title: why });
  });
});

describe("gigabytes", () => {
  it("rounds to a tenth", () => {
    expect(gigabytes(6_800_000_000)).toBe("6.8 GB");
    expect(gigabytes(0)).toBe("0.0 GB");
  });
});
