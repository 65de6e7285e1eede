import { describe, expect, it } from "vitest";
import { describeEngine, gigabytes } from "./engine-status";

const h100 = "NVIDIA H100 80GB HBM3, 85.0 GB, compute capability 9.0; built for compute capability 8.6 and newer; bf16";

describe("describeEngine", () => {
  it("names the model, its GPU and the memory in use, with the card's details in the tooltip", () => {
    const line = describeEngine({
      recognizer: "DeepSeek-OCR-2",
      device: "NVIDIA H100 80GB HBM3, bf16",
      deviceDetail: h100,
      memoryBytes: 7_412_000_000,
      readingModes: true,
      notice: null,
      modelMissing: false,
    });
    expect(line.text).toBe("DeepSeek-OCR-2 · NVIDIA H100 80GB HBM3, bf16 · 7.4 GB in use");
    expect(line.title).toContain("compute capability 9.0");
    expect(line.title).toContain("built for compute capability 8.6");
  });

  it("leaves memory out where the device has none of its own (the CPU), and says why a GPU is not used", () => {
    const why = "This DeepRead was built without CUDA, so the NVIDIA GeForce RTX 3090 is not used: build it with `make run CUDA=1`.";
    const line = describeEngine({
      recognizer: "DeepSeek-OCR-2",
      device: "CPU, f32",
      deviceDetail: "CPU, f32",
      memoryBytes: null,
      readingModes: true,
      notice: why,
      modelMissing: false,
    });
    expect(line.text).toBe("DeepSeek-OCR-2 · CPU, f32");
    expect(line.title.split("\n")[0]).toBe(why);
  });

  it("says 'text layer only' without weights, and why in the tooltip", () => {
    const why = "no DeepSeek-OCR-2 weights in models/DeepSeek-OCR-2. Reading the PDF's own text layer instead.";
    const line = describeEngine({
      recognizer: "text layer",
      device: null,
      deviceDetail: null,
      memoryBytes: null,
      readingModes: false,
      notice: why,
      modelMissing: true,
    });
    expect(line).toEqual({ text: "text layer only", title: why });
  });
});

describe("gigabytes", () => {
  it("rounds to a tenth", () => {
    expect(gigabytes(6_800_000_000)).toBe("6.8 GB");
    expect(gigabytes(0)).toBe("0.0 GB");
  });
});
