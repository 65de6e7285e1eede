// The model download as the window shows it: figures in words for the panel and the status bar.

/** `DownloadEvent` of src-tauri/src/model_download.rs. */
export type DownloadEvent =
  | { kind: "progress"; done: number; total: number; file: string; rate: number; etaSeconds: number | null }
  | { kind: "finished"; dir: string }
  | { kind: "failed"; message: string }
  | { kind: "cancelled" };

export type DownloadProgress = Extract<DownloadEvent, { kind: "progress" }>;

/** "1.2 GB of 6.8 GB · 45.3 MB/s · 2 min left". */
export function describeDownload(progress: DownloadProgress): string {
  const parts = [`${gb(progress.done)} of ${gb(progress.total)}`];
  if (progress.rate > 0) parts.push(`${(progress.rate / 1e6).toFixed(1)} MB/s`);
  if (progress.etaSeconds !== null && progress.done < progress.total) parts.push(`${timeLeft(progress.etaSeconds)} left`);
  return parts.join(" · ");
}

/** The fraction done, 0..1, for a progress bar. */
export function fractionDone(progress: DownloadProgress): number {
  return progress.total > 0 ? Math.min(1, progress.done / progress.total) : 0;
}

function gb(bytes: number): string {
  return `${(bytes / 1e9).toFixed(bytes < 1e8 && bytes > 0 ? 3 : 1)} GB`;
}

/** Seconds as a person says them: "40 s", "3 min", "1 h 5 min". */
export function timeLeft(seconds: number): string {
  if (seconds < 60) return `${Math.max(1, Math.round(seconds))} s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}
