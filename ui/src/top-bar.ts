// The top bar's reading controls: Read / Stop, the reading mode, and the engine status.
import { engineStatus } from "./api";
import {
  DEFAULT_CHOICE,
  fillSelect,
  MODE_OPTIONS,
  readingChoice,
  RESOLUTION_OPTIONS,
  type ReadingChoice,
} from "./reading/modes";
import { describeEngine, type EngineStatus } from "./status/engine-status";

/** How often the memory in use is asked for while a reading runs. */
const ENGINE_POLL_MS = 3000;

export class TopBar {
  private status: EngineStatus | null = null;
  private polling: number | undefined;

  constructor(
    private readonly readButton: HTMLButtonElement,
    private readonly modeSelect: HTMLSelectElement,
    private readonly resolutionSelect: HTMLSelectElement,
    private readonly engineLine: HTMLElement,
    /** Told each engine status as it arrives (the model panel follows it). */
    private readonly onStatus: (status: EngineStatus) => void = () => {},
  ) {
    fillSelect(modeSelect, MODE_OPTIONS, DEFAULT_CHOICE.mode);
    fillSelect(resolutionSelect, RESOLUTION_OPTIONS, DEFAULT_CHOICE.resolution);
    this.engineLine.textContent = "Starting the engine…";
    this.setReading(false, false);
  }

  choice(): ReadingChoice {
    return readingChoice(this.modeSelect.value, this.resolutionSelect.value);
  }

  /** Read when idle, Stop while reading; disabled with no document open. */
  setReading(reading: boolean, documentOpen: boolean): void {
    this.readButton.textContent = reading ? "Stop" : "Read";
    this.readButton.dataset["reading"] = String(reading);
    this.readButton.title = reading ? "Stop reading (Esc)" : "Read the document with the chosen mode";
    this.readButton.disabled = !documentOpen;
    if (reading && this.polling === undefined) {
      this.polling = window.setInterval(() => void this.refreshEngine(), ENGINE_POLL_MS);
    } else if (!reading && this.polling !== undefined) {
      window.clearInterval(this.polling);
      this.polling = undefined;
      void this.refreshEngine();
    }
  }

  /** Asks the engine who reads and on what; the first time, this loads the model. */
  async refreshEngine(): Promise<void> {
    try {
      this.status = await engineStatus();
    } catch (error) {
      this.engineLine.textContent = "engine status unknown";
      this.engineLine.title = String(error);
      return;
    }
    const line = describeEngine(this.status);
    this.engineLine.textContent = line.text;
    this.engineLine.title = line.title;
    this.engineLine.dataset["recognizer"] = this.status.recognizer;
    this.onStatus(this.status);
    const why = this.status.readingModes
      ? ""
      : `The ${this.status.recognizer} is read as it is: reading modes apply to DeepSeek-OCR-2.`;
    for (const select of [this.modeSelect, this.resolutionSelect]) {
      select.disabled = !this.status.readingModes;
      select.title = why || select.getAttribute("aria-label") || "";
    }
  }
}
