// Light or dark: the system's choice unless the person picks one in the top bar, remembered for the
// next start. The choice is resolved here and set as `data-theme` on the document, so styles.css
// has one set of dark colours; the page image is left as it is either way.
import { fillSelect } from "./reading/modes";

export type ThemeChoice = "system" | "light" | "dark";
export type Theme = "light" | "dark";

const STORAGE_KEY = "deepread.theme";
const SYSTEM_DARK = "(prefers-color-scheme: dark)";

export const THEME_OPTIONS: readonly { value: ThemeChoice; label: string }[] = [
  { value: "system", label: "System theme" },
  { value: "light", label: "Light" },
  { value: "dark", label: "Dark" },
];

/** A stored choice; anything else (nothing yet, an older app's value) follows the system. */
export function parseThemeChoice(stored: string | null): ThemeChoice {
  return stored === "light" || stored === "dark" ? stored : "system";
}

export function resolveTheme(choice: ThemeChoice, systemDark: boolean): Theme {
  if (choice === "system") return systemDark ? "dark" : "light";
  return choice;
}

/** The top bar's theme menu, applied to `root` and kept in `storage`. */
export class ThemeControl {
  private choice: ThemeChoice;
  private readonly system: MediaQueryList;

  constructor(
    private readonly select: HTMLSelectElement,
    private readonly root: HTMLElement = document.documentElement,
    private readonly storage: Storage = localStorage,
  ) {
    this.choice = parseThemeChoice(storage.getItem(STORAGE_KEY));
    this.system = window.matchMedia(SYSTEM_DARK);
    fillSelect(select, THEME_OPTIONS, this.choice);
    select.addEventListener("change", () => this.choose(parseThemeChoice(select.value)));
    // Following the system means following it when it changes, too.
    this.system.addEventListener("change", () => this.apply());
    this.apply();
  }

  private choose(choice: ThemeChoice): void {
    this.choice = choice;
    if (choice === "system") this.storage.removeItem(STORAGE_KEY);
    else this.storage.setItem(STORAGE_KEY, choice);
    this.apply();
  }

  private apply(): void {
    const theme = resolveTheme(this.choice, this.system.matches);
    this.root.dataset["theme"] = theme;
    this.select.value = this.choice;
    this.select.title = this.choice === "system" ? `Following the system: ${theme}` : `Always ${theme}`;
  }
}
