// The top bar's engine status: who reads, on what device, with how much memory in use.

/** `EngineStatus` of src-tauri/src/reading.rs. */
export interface EngineStatus {
  recognizer: string;
  device: string | null;
  memoryBytes: number | null;
  readingModes: boolean;
  notice: string | null;
}

export interface EngineLine {
  text: string;
  /** The longer story, for a tooltip. */
  title: string;
}

export function describeEngine(status: EngineStatus): EngineLine {
  if (status.recognizer === "text layer") {
    return { text: "text layer only", title: status.notice ?? "Reading the PDF's own text layer." };
  }
  const parts = [status.recognizer];
  if (status.device) parts.push(status.device);
  if (status.memoryBytes !== null) parts.push(`${gigabytes(status.memoryBytes)} in use`);
  return { text: parts.join(" · "), title: status.notice ?? parts.join(", ") };
}

/** Bytes as GB with one decimal (10^9, as nvidia-smi and disk sizes are read). */
export function gigabytes(bytes: number): string {
  return `${(bytes / 1e9).toFixed(1)} GB`;
}
