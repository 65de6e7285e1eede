// The form over the panes that asks for an encrypted PDF's password: the file's name, the password
// field (focused; Enter opens), "Remember in the system keyring" (unchecked for every document: remembering
// is the person's choice each time; kept while a wrong password is typed again), Open and Cancel (or Esc). The field is emptied as soon as it is read.
import type { PasswordAnswer, PasswordPrompt } from "./unlock";

export class PasswordForm implements PasswordPrompt {
  private readonly name: HTMLElement;
  private readonly input: HTMLInputElement;
  private readonly remember: HTMLInputElement;
  private readonly failure: HTMLElement;
  private readonly openButton: HTMLButtonElement;
  private answer: ((answer: PasswordAnswer | null) => void) | undefined;

  constructor(private readonly form: HTMLFormElement) {
    form.replaceChildren();
    const text = document.createElement("p");
    text.className = "password-form-text";
    this.name = document.createElement("strong");
    this.name.className = "password-form-name";
    text.append(this.name, " is protected by a password.");
    this.input = document.createElement("input");
    this.input.type = "password";
    this.input.autocomplete = "off";
    this.input.setAttribute("aria-label", "Password");
    this.input.placeholder = "Password";
    this.remember = document.createElement("input");
    this.remember.type = "checkbox";
    const rememberRow = document.createElement("label");
    rememberRow.className = "password-form-remember";
    rememberRow.title =
      "Keep this password in the system keyring: DeepRead then opens this document without asking. " +
      "Forget password, beside the document's title, drops it.";
    rememberRow.append(this.remember, " Remember in the system keyring");
    this.failure = document.createElement("p");
    this.failure.className = "password-form-failure";
    this.failure.setAttribute("role", "alert");
    this.openButton = document.createElement("button");
    this.openButton.type = "submit";
    this.openButton.className = "password-form-open";
    this.openButton.textContent = "Open";
    const cancel = document.createElement("button");
    cancel.type = "button";
    cancel.className = "password-form-cancel";
    cancel.textContent = "Cancel";
    const buttons = document.createElement("div");
    buttons.className = "password-form-buttons";
    buttons.append(this.openButton, cancel);
    form.append(text, this.input, rememberRow, this.failure, buttons);
    form.hidden = true;

    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const answer = { password: this.input.value, remember: this.remember.checked };
      this.input.value = "";
      // Until the command answers: one try at a time.
      this.openButton.disabled = true;
      this.reply(answer);
    });
    cancel.addEventListener("click", () => this.reply(null));
    form.addEventListener("keydown", (event) => {
      // Esc cancels here; the window's own shortcuts (Esc stops reading) are not for keys typed in the form.
      event.stopPropagation();
      if (event.key === "Escape") {
        event.preventDefault();
        this.reply(null);
      }
    });
  }

  ask(path: string, failure: string | null): Promise<PasswordAnswer | null> {
    this.reply(null);
    const sameDocument = !this.form.hidden && this.form.title === path;
    this.failure.textContent = failure ?? "";
    this.failure.hidden = failure === null;
    this.input.value = "";
    if (!sameDocument) this.remember.checked = false;
    this.name.textContent = fileName(path);
    this.form.title = path;
    this.openButton.disabled = false;
    this.form.hidden = false;
    this.input.focus();
    return new Promise((resolve) => {
      this.answer = resolve;
    });
  }

  close(): void {
    this.reply(null);
    this.input.value = "";
    this.form.hidden = true;
  }

  private reply(answer: PasswordAnswer | null): void {
    const resolve = this.answer;
    this.answer = undefined;
    resolve?.(answer);
  }
}

/** The last part of a path, with either separator. */
export function fileName(path: string): string {
  return path.split(/[\\/]/).pop() || path;
}
