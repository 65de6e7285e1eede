import { describe, expect, it } from "vitest";
import { describeDownload, fractionDone, timeLeft, type DownloadProgress } from "./download";

function progress(done: number, total: number, rate: number, etaSeconds: number | null): DownloadProgress {
  return { kind: "progress", done, total, file: "model-00001-of-000001.safetensors", rate, etaSeconds };
}

describe("describeDownload", () => {
  it("gives bytes done of all, the rate and the time left", () => {
    expect(describeDownload(progress(1_234_000_000, 6_780_000_000, 45_310_000, 122))).toBe(
      "1.2 GB of 6.8 GB · 45.3 MB/s · 2 min left",
    );
  });

  it("leaves out a rate and a time it does not know yet", () => {
    expect(describeDownload(progress(0, 6_780_000_000, 0, null))).toBe("0.0 GB of 6.8 GB");
  });

  it("shows small downloads in enough digits to move", () => {
    expect(describeDownload(progress(12_500_000, 40_000_000, 2_000_000, 14))).toBe(
      "0.013 GB of 0.040 GB · 2.0 MB/s · 14 s left",
    );
  });

  it("drops the time left once everything is there", () => {
    expect(describeDownload(progress(40_000_000, 40_000_000, 2_000_000, 0))).toBe("0.040 GB of 0.040 GB · 2.0 MB/s");
    expect(fractionDone(progress(40_000_000, 40_000_000, 2_000_000, 0))).toBe(1);
    expect(fractionDone(progress(0, 0, 0, null))).toBe(0);
  });
});

describe("timeLeft", () => {
  it("says seconds, minutes or hours", () => {
    expect(timeLeft(0.2)).toBe("1 s");
    expect(timeLeft(59)).toBe("59 s");
    expect(timeLeft(150)).toBe("3 min");
    expect(timeLeft(3900)).toBe("1 h 5 min");
  });
});
