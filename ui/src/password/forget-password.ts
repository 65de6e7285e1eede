// A password remembered in the system keyring, as the window shows it: a line in the status bar when a
// document opens with it, and the top bar's Forget password button, which drops it so that the next
// opening asks again.
import type { DocumentInfo } from "../api";

/** What the status bar says when a document opened with a remembered password and Rust had nothing to add. */
export const OPENED_REMEMBERED = "Opened with the password remembered in the system keyring.";

/** What the status bar says about `doc`'s password once it is open; null for nothing. */
export function describePassword(doc: DocumentInfo): string | null {
  return doc.passwordNotice ?? (doc.password === "remembered" ? OPENED_REMEMBERED : null);
}

export class ForgetPasswordButton {
  /** The document shown, while its password is remembered. */
  private remembered: DocumentInfo | undefined;

  constructor(
    private readonly button: HTMLButtonElement,
    private readonly forget: (id: string) => Promise<void>,
    private readonly say: (message: string) => void,
  ) {
    button.hidden = true;
    button.addEventListener("click", () => void this.forgetShown());
  }

  /** Shows the button while `doc`, just opened, has a remembered password; hides it otherwise. */
  show(doc: DocumentInfo): void {
    this.remembered = doc.password === "remembered" ? doc : undefined;
    this.button.hidden = this.remembered === undefined;
  }

  private async forgetShown(): Promise<void> {
    const doc = this.remembered;
    if (!doc) return;
    // One click, one answer.
    this.button.disabled = true;
    try {
      await this.forget(doc.id);
      // Another document may have been opened meanwhile: its button is its own.
      if (this.remembered === doc) {
        this.remembered = undefined;
        this.button.hidden = true;
      }
      this.say(`The password of ${doc.title} is forgotten: it will be asked for next time.`);
    } catch (error) {
      this.say(`Could not forget the password of ${doc.title}: ${String(error)}`);
    } finally {
      this.button.disabled = false;
    }
  }
}
