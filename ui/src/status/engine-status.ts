// The top bar's engine status: who reads, on what device, with how much memory in use.

/** `EngineStatus` of src-tauri/src/reading.rs. */
export interface EngineStatus {
  recognizer: string;
  /** "NVIDIA GeForce RTX 3090, bf16", "CPU, f32"; null for recorded output. */
  device: string | null;
  /** The device's memory and compute capability beside the build's. */
  deviceDetail: string | null;
  memoryBytes: number | null;
  readingModes: boolean;
  /** Why there is no model, or why a GPU that is there is not used. */
  notice: string | null;
  /** No weights anywhere: the window offers to download them. */
  modelMissing: boolean;
}

export interface EngineLine {
  text: string;
  /** The longer story, for a tooltip. */
  title: string;
}

export function describeEngine(status: EngineStatus): EngineLine {
  const detail = status.deviceDetail ? [status.deviceDetail] : [];
  if (status.recognizer === "text layer") {
    const why = status.notice ?? "Reading the PDF's own text layer.";
    return { text: "text layer only", title: [why, ...detail].join("\n") };
  }
  const parts = [status.recognizer];
  if (status.device) parts.push(status.device);
  if (status.memoryBytes !== null) parts.push(`${gigabytes(status.memoryBytes)} in use`);
  const title = [status.notice ?? parts.join(", "), ...detail].join("\n");
  return { text: parts.join(" · "), title };
}

/** Bytes as GB with one decimal (10^9, as nvidia-smi and disk sizes are read). */
export function gigabytes(bytes: number): string {
  return `${(bytes / 1e9).toFixed(1)} GB`;
}
