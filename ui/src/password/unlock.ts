// Opening an encrypted PDF: the person is asked for its password until it opens or they cancel. The
// password goes from the form to the open command and nowhere else: it is not kept here, and Rust
// keeps it (in the system keyring) only when the person asks for it to be remembered.

/** `OpenError` of src-tauri/src/commands.rs: why a document did not open. */
export interface OpenError {
  kind: "passwordRequired" | "wrongPassword" | "other";
  message: string;
}

/** Whether `error`, as a command rejected with it, is an `OpenError`. */
export function isOpenError(error: unknown): error is OpenError {
  if (typeof error !== "object" || error === null) return false;
  const { kind, message } = error as Record<string, unknown>;
  return (kind === "passwordRequired" || kind === "wrongPassword" || kind === "other") && typeof message === "string";
}

/** What the window says when a password does not open the document. */
export const WRONG_PASSWORD = "The password is not correct.";

/** What the form answers: the password entered, and whether to remember it in the system keyring. */
export interface PasswordAnswer {
  password: string;
  remember: boolean;
}

/** The form that asks for a document's password. */
export interface PasswordPrompt {
  /** Shows the form for `path`, saying `failure` when there is one; resolves with the answer, or
   * null when the person cancels. */
  ask(path: string, failure: string | null): Promise<PasswordAnswer | null>;
  /** Takes the form down. */
  close(): void;
}

/** Whether opening failed only for want of a password. */
export function needsPassword(error: unknown): boolean {
  return isOpenError(error) && error.kind === "passwordRequired";
}

/** An open command's failure in words. */
export function describeOpenError(error: unknown): string {
  return isOpenError(error) ? error.message : String(error);
}

export class Unlocker {
  /** One form at a time: a second locked document waits for the first to be answered. */
  private turn: Promise<void> = Promise.resolve();

  constructor(private readonly prompt: PasswordPrompt) {}

  /** Asks for `path`'s password and opens it with `open`; null when the person cancels. A wrong
   * password asks again; any other failure closes the form and rejects. */
  unlock<T>(path: string, open: (answer: PasswordAnswer) => Promise<T>): Promise<T | null> {
    const mine = this.turn.then(() => this.askUntilOpen(path, open));
    this.turn = mine.then(
      () => undefined,
      () => undefined,
    );
    return mine;
  }

  private async askUntilOpen<T>(path: string, open: (answer: PasswordAnswer) => Promise<T>): Promise<T | null> {
    let failure: string | null = null;
    try {
      for (;;) {
        const answer = await this.prompt.ask(path, failure);
        if (answer === null) return null;
        try {
          return await open(answer);
        } catch (error) {
          if (!isOpenError(error) || error.kind !== "wrongPassword") throw error;
          failure = WRONG_PASSWORD;
        }
      }
    } finally {
      this.prompt.close();
    }
  }
}
