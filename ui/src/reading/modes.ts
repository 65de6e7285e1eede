// The top bar's reading mode: the prompt and how much of the page the model sees. The values are
// `ReadingMode` and `Resolution` of crates/core/src/recognizer/deepseek.rs.

export type PromptMode = "layout" | "plain";
export type Resolution = "baseWithTiles" | "baseOnly";

export interface ReadingChoice {
  mode: PromptMode;
  resolution: Resolution;
}

export const DEFAULT_CHOICE: ReadingChoice = { mode: "layout", resolution: "baseWithTiles" };

export interface Option<T extends string> {
  value: T | string;
  label: string;
  /** Why the option cannot be chosen, when it cannot. */
  unavailable?: string;
}

export const MODE_OPTIONS: readonly Option<PromptMode>[] = [
  { value: "layout", label: "Document with layout" },
  { value: "plain", label: "Plain text" },
];

const V1_ONLY = "DeepSeek-OCR-2 has learned queries for 1024 px and 768 px views only; this size was DeepSeek-OCR's.";

export const RESOLUTION_OPTIONS: readonly Option<Resolution>[] = [
  { value: "baseWithTiles", label: "Base with tiles" },
  { value: "baseOnly", label: "Base only" },
  { value: "tiny", label: "Tiny (512)", unavailable: V1_ONLY },
  { value: "small", label: "Small (640)", unavailable: V1_ONLY },
  { value: "large", label: "Large (1280)", unavailable: V1_ONLY },
];

/** The choice the two selects show; an unknown or unavailable value is an error that says which. */
export function readingChoice(mode: string, resolution: string): ReadingChoice {
  if (!MODE_OPTIONS.some((o) => o.value === mode)) throw new Error(`"${mode}" is not a reading mode`);
  const option = RESOLUTION_OPTIONS.find((o) => o.value === resolution);
  if (!option) throw new Error(`"${resolution}" is not a resolution`);
  if (option.unavailable) throw new Error(`${option.label}: ${option.unavailable}`);
  return { mode: mode as PromptMode, resolution: resolution as Resolution };
}

/** What a retry of a looped page reads with: the other prompt, since greedy decoding would loop
 * again the same way. A failed page is retried as it was. */
export function retryChoice(current: ReadingChoice, status: string | undefined): ReadingChoice {
  if (status !== "looped") return current;
  return { ...current, mode: current.mode === "layout" ? "plain" : "layout" };
}

export function describeChoice(choice: ReadingChoice): string {
  const mode = MODE_OPTIONS.find((o) => o.value === choice.mode)?.label ?? choice.mode;
  const resolution = RESOLUTION_OPTIONS.find((o) => o.value === choice.resolution)?.label ?? choice.resolution;
  return `${mode}, ${resolution.toLowerCase()}`;
}

/** Fills a select with options, the unavailable ones shown but disabled with their reason. */
export function fillSelect(select: HTMLSelectElement, options: readonly Option<string>[], value: string): void {
  select.replaceChildren(
    ...options.map((o) => {
      const option = document.createElement("option");
      option.value = o.value;
      option.textContent = o.label;
      if (o.unavailable) {
        option.disabled = true;
        option.title = o.unavailable;
      }
      return option;
    }),
  );
  select.value = value;
}
