import { describe, expect, it } from "vitest";
import {
  describeOpenError,
  needsPassword,
  Unlocker,
  WRONG_PASSWORD,
  type OpenError,
  type PasswordAnswer,
  type PasswordPrompt,
} from "./unlock";

const required: OpenError = { kind: "passwordRequired", message: "this document is protected by a password" };
const wrong: OpenError = { kind: "wrongPassword", message: "the password is not correct for this document" };
const damaged: OpenError = { kind: "other", message: "the file is damaged" };

/** A prompt that answers from a script and records what it was asked. */
function scripted(answers: (PasswordAnswer | null)[]) {
  const asked: { path: string; failure: string | null }[] = [];
  let open = false;
  const prompt: PasswordPrompt = {
    ask(path, failure) {
      asked.push({ path, failure });
      open = true;
      return Promise.resolve(answers.shift() ?? null);
    },
    close() {
      open = false;
    },
  };
  return { prompt, asked, isOpen: () => open };
}

/** The person typing `password`, not asking for it to be remembered. */
function typed(password: string): PasswordAnswer {
  return { password, remember: false };
}

/** A document that opens with `password` only. */
function lockedWith(password: string) {
  const tried: PasswordAnswer[] = [];
  const open = (given: PasswordAnswer) => {
    tried.push(given);
    return given.password === password ? Promise.resolve("the document") : Promise.reject(wrong);
  };
  return { open, tried };
}

describe("Unlocker", () => {
  it("opens with the password entered and takes the form down", async () => {
    const { prompt, asked, isOpen } = scripted([typed("password")]);
    const doc = lockedWith("password");
    expect(await new Unlocker(prompt).unlock("/f/crazyones.pdf", doc.open)).toBe("the document");
    expect(asked).toEqual([{ path: "/f/crazyones.pdf", failure: null }]);
    expect(doc.tried).toEqual([typed("password")]);
    expect(isOpen()).toBe(false);
  });

  it("asks again after a wrong password, saying so, until the right one", async () => {
    const { prompt, asked } = scripted([typed("guess"), typed(""), typed("1234")]);
    const doc = lockedWith("1234");
    expect(await new Unlocker(prompt).unlock("a.pdf", doc.open)).toBe("the document");
    expect(asked.map((a) => a.failure)).toEqual([null, WRONG_PASSWORD, WRONG_PASSWORD]);
    expect(doc.tried.map((a) => a.password)).toEqual(["guess", "", "1234"]);
  });

  it("hands the open command whether each try is to be remembered", async () => {
    const remembered = { password: "1234", remember: true };
    const { prompt } = scripted([{ password: "guess", remember: true }, remembered]);
    const doc = lockedWith("1234");
    expect(await new Unlocker(prompt).unlock("a.pdf", doc.open)).toBe("the document");
    expect(doc.tried).toEqual([{ password: "guess", remember: true }, remembered]);
  });

  it("opens nothing when the person cancels, even after a wrong try", async () => {
    const { prompt, asked, isOpen } = scripted([typed("guess"), null]);
    const doc = lockedWith("1234");
    expect(await new Unlocker(prompt).unlock("a.pdf", doc.open)).toBeNull();
    expect(asked).toHaveLength(2);
    expect(doc.tried).toEqual([typed("guess")]);
    expect(isOpen()).toBe(false);
  });

  it("gives up on any other failure, closing the form", async () => {
    const { prompt, isOpen } = scripted([typed("password")]);
    await expect(new Unlocker(prompt).unlock("a.pdf", () => Promise.reject(damaged))).rejects.toBe(damaged);
    expect(isOpen()).toBe(false);
  });

  it("asks for one document at a time", async () => {
    const events: string[] = [];
    let answer: (answer: PasswordAnswer | null) => void = () => {};
    const prompt: PasswordPrompt = {
      ask(path) {
        events.push(`ask ${path}`);
        return new Promise((resolve) => {
          answer = resolve;
        });
      },
      close() {
        events.push("close");
      },
    };
    const unlocker = new Unlocker(prompt);
    const first = unlocker.unlock("first.pdf", () => Promise.resolve("first"));
    const second = unlocker.unlock("second.pdf", () => Promise.resolve("second"));
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(events).toEqual(["ask first.pdf"]);
    answer(null);
    expect(await first).toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 0));
    answer(typed("pw"));
    expect(await second).toBe("second");
    expect(events).toEqual(["ask first.pdf", "close", "ask second.pdf", "close"]);
  });
});

describe("open errors", () => {
  it("tell a missing password from a wrong one and from other failures", () => {
    expect(needsPassword(required)).toBe(true);
    expect(needsPassword(wrong)).toBe(false);
    expect(needsPassword(damaged)).toBe(false);
    expect(needsPassword("this document is protected by a password")).toBe(false);
    expect(needsPassword({ kind: "passwordRequired" })).toBe(false);
  });

  it("are described by their message, anything else as it stands", () => {
    expect(describeOpenError(damaged)).toBe("the file is damaged");
    expect(describeOpenError("this document is not open")).toBe("this document is not open");
    expect(describeOpenError(new Error("boom"))).toBe("Error: boom");
  });
});
