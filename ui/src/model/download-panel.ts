// The first-run panel: with no DeepSeek-OCR-2 weights on this computer, offer to download them, show the
// download's progress (here and in the status bar), and let the person cancel it.
import { cancelModelDownload, downloadModel } from "../api";
import { describeDownload, fractionDone, type DownloadEvent } from "./download";

export interface DownloadPanelHooks {
  /** The status bar's line. */
  say(message: string): void;
  /** The model is on disk: ask the engine again (it loads it). */
  onFinished(): void;
}

export class ModelDownloadPanel {
  private readonly text: HTMLElement;
  private readonly bar: HTMLProgressElement;
  private readonly downloadButton: HTMLButtonElement;
  private readonly cancelButton: HTMLButtonElement;
  private downloading = false;

  constructor(
    private readonly panel: HTMLElement,
    private readonly hooks: DownloadPanelHooks,
  ) {
    panel.replaceChildren();
    this.text = append(panel, "p", "model-panel-text");
    this.bar = append(panel, "progress", "model-panel-bar");
    this.downloadButton = append(panel, "button", "model-panel-download");
    this.cancelButton = append(panel, "button", "model-panel-cancel");
    this.downloadButton.type = this.cancelButton.type = "button";
    this.downloadButton.textContent = "Download DeepSeek-OCR-2, 6.8 GB";
    this.cancelButton.textContent = "Cancel";
    this.downloadButton.addEventListener("click", () => void this.start());
    this.cancelButton.addEventListener("click", () => void cancelModelDownload());
    this.offer(null);
    panel.hidden = true;
  }

  /** Shown while the engine has no weights to read with; hidden once it has. */
  setModelMissing(missing: boolean): void {
    if (!this.downloading) this.panel.hidden = !missing;
  }

  private offer(failure: string | null): void {
    this.panel.dataset["state"] = failure ? "failed" : "offer";
    this.text.textContent =
      failure ??
      "DeepSeek-OCR-2 is not on this computer yet, so PDFs are read through their own text layer. " +
        "Download it to read scans and layouts on your GPU; it goes into the Hugging Face cache, " +
        "where other tools find it too.";
    this.downloadButton.textContent = failure ? "Try again" : "Download DeepSeek-OCR-2, 6.8 GB";
    this.downloadButton.hidden = false;
    this.cancelButton.hidden = true;
    this.bar.hidden = true;
  }

  private async start(): Promise<void> {
    this.downloading = true;
    this.panel.dataset["state"] = "downloading";
    this.text.textContent = "Downloading DeepSeek-OCR-2…";
    this.downloadButton.hidden = true;
    this.cancelButton.hidden = false;
    this.bar.hidden = false;
    this.bar.removeAttribute("value");
    try {
      await downloadModel((event) => this.apply(event));
    } catch (error) {
      this.end();
      this.offer(String(error));
    }
  }

  private apply(event: DownloadEvent): void {
    switch (event.kind) {
      case "progress": {
        const line = describeDownload(event);
        this.text.textContent = `Downloading DeepSeek-OCR-2: ${line}`;
        this.bar.max = 1;
        this.bar.value = fractionDone(event);
        this.bar.title = event.file;
        this.hooks.say(`Downloading DeepSeek-OCR-2: ${line}`);
        break;
      }
      case "finished":
        this.end();
        this.panel.hidden = true;
        this.hooks.say(`DeepSeek-OCR-2 is ready (${event.dir}).`);
        this.hooks.onFinished();
        break;
      case "failed":
        this.end();
        this.offer(`The download stopped: ${event.message}`);
        this.hooks.say("The model download stopped.");
        break;
      case "cancelled":
        this.end();
        this.offer(null);
        this.hooks.say("Download cancelled; what was fetched is kept, and the next download resumes it.");
        break;
    }
  }

  private end(): void {
    this.downloading = false;
  }
}

function append<K extends keyof HTMLElementTagNameMap>(
  parent: HTMLElement,
  tag: K,
  className: string,
): HTMLElementTagNameMap[K] {
  const child = document.createElement(tag);
  child.className = className;
  parent.append(child);
  return child;
}
