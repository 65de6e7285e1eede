// @vitest-environment happy-dom
import { afterEach, describe, expect, it, vi } from "vitest";
import { correctBlock, readDocument, type DocumentInfo } from "./api";
import type { Block, CorrectedPage, ReadingEvent } from "./events";
import { PageView } from "./page-view";
import { DEFAULT_CHOICE } from "./reading/modes";
import { PaneFollower } from "./reading/pane-follower";
import { DocumentSession, type SessionHooks } from "./session";
import { STATS } from "../test/events";

// The session calls Rust's commands itself (no injection there): here they answer as the tests say.
vi.mock("./api", async (original) => ({
  ...(await original<typeof import("./api")>()),
  readDocument: vi.fn(() => Promise.resolve({ recognizer: "test", notice: null })),
  renderMarkdown: (markdown: string) => `<p>${markdown}</p>`,
  stopReading: vi.fn(() => Promise.resolve()),
  correctBlock: vi.fn(),
  forgetCorrection: vi.fn(),
}));

const DOC: DocumentInfo = { id: "doc-1", path: "/d.pdf", title: "d", pages: [{ width_pt: 100, height_pt: 100 }] };
const READ: Block[] = [
  { id: 0, label: "title", boxes: [{ x1: 1, y1: 1, x2: 9, y2: 9 }], markdown: "# Misread", warning: null },
  { id: 1, label: "text", boxes: [{ x1: 1, y1: 10, x2: 9, y2: 19 }], markdown: "Body", warning: null },
];
const CORRECTED: CorrectedPage = {
  page: 0,
  markdown: "# Read right\n\nBody",
  blocks: [{ ...READ[0]!, markdown: "# Read right" }, READ[1]!],
  corrected: [0],
  differing: [],
};

async function setup() {
  const pane = document.createElement("div");
  const content = document.createElement("div");
  const pagePane = document.createElement("div");
  pane.append(content);
  document.body.append(pane, pagePane);
  const say = vi.fn((_message: string) => {});
  const hooks: SessionHooks = {
    onPageStatus: () => {},
    onProgress: () => {},
    choice: () => DEFAULT_CHOICE,
    onPageShown: () => {},
    say,
  };
  const follower = new PaneFollower(pane, { inView: () => true, scrollTo: (_v, _h, s) => s, smooth: false, what: "text" });
  const view = { source: false, perPage: false };
  const session = new DocumentSession(DOC, new PageView(pagePane, {}), content, hooks, view, follower);
  await session.read(DEFAULT_CHOICE);
  const send: (event: ReadingEvent) => void = vi.mocked(readDocument).mock.lastCall![2];
  const block = (id: number) => content.querySelector<HTMLElement>(`[data-page="0"] [data-block-id="${id}"]`);
  const readPage = () => {
    send({ type: "started", page: 0 });
    send({ type: "done", page: 0, markdown: "# Misread\n\nBody", blocks: READ, stats: STATS });
  };
  return { session, content, send, block, readPage, say };
}

afterEach(() => {
  document.body.replaceChildren();
  vi.clearAllMocks();
});

describe("DocumentSession's corrections", () => {
  it("lays a page's corrections over it everywhere its text is used", async () => {
    const { session, send, block, readPage } = await setup();
    readPage();
    send({ type: "corrected", ...CORRECTED });
    expect(block(0)?.innerHTML).toBe("<p># Read right</p>");
    expect(block(0)?.dataset["corrected"]).toBe("true");
    expect(session.pageMarkdown(0)).toBe("# Read right\n\nBody");
    expect(session.search("read right")).toBe(1);
    session.selectBlock(0, 0);
    expect(session.selectedBlockMarkdown()?.markdown).toBe("# Read right");
  });

  it("edits a block of a page read with its corrected text, and shows what the save answers", async () => {
    const { session, content, send, block, say } = await setup();
    send({ type: "started", page: 0 });
    session.editBlock(0, 0);
    expect(content.querySelector(".block-editor"), "a page being read has nothing to edit").toBeNull();
    send({ type: "done", page: 0, markdown: "# Misread\n\nBody", blocks: READ, stats: STATS });
    send({ type: "corrected", ...CORRECTED });
    session.selectBlock(0, 0);
    session.editSelectedBlock();
    const text = content.querySelector<HTMLTextAreaElement>(".block-editor textarea")!;
    expect(text.value).toBe("# Read right");
    expect(content.querySelector(".block-editor-revert")).not.toBeNull();

    vi.mocked(correctBlock).mockResolvedValueOnce({ ...CORRECTED, blocks: [{ ...READ[0]!, markdown: "# Right" }, READ[1]!] });
    text.value = "# Right";
    content.querySelector<HTMLButtonElement>(".block-editor-save")!.click();
    expect(correctBlock).toHaveBeenCalledWith({ id: "doc-1", page: 0, blockId: 0, markdown: "# Right", replacing: null });
    await vi.waitFor(() => expect(content.querySelector(".block-editor")).toBeNull());
    expect(block(0)?.innerHTML).toBe("<p># Right</p>");
    expect(block(0)?.hidden).toBe(false);
    expect(say).toHaveBeenCalledWith("Block 1 of page 1 corrected: exports use your text.");
  });

  it("closes the editor and the prompts of a page read again, and shows no answer that comes meanwhile", async () => {
    const { session, content, send, block, readPage, say } = await setup();
    readPage();
    const differing = [{ correctedBlock: 1, mine: "Mine", block: 1, now: "Body" }];
    send({ type: "corrected", ...CORRECTED, differing });
    expect(content.querySelectorAll(".correction-prompt")).toHaveLength(1);
    let answer!: (page: CorrectedPage) => void;
    vi.mocked(correctBlock).mockReturnValueOnce(new Promise((resolve) => (answer = resolve)));
    session.editBlock(0, 0);
    content.querySelector<HTMLButtonElement>(".block-editor-save")!.click();

    send({ type: "started", page: 0 });
    expect(content.querySelector(".block-editor")).toBeNull();
    expect(content.querySelector(".correction-prompt")).toBeNull();
    answer(CORRECTED);
    await new Promise((resolve) => setTimeout(resolve));
    expect(block(0), "the new reading has no blocks yet").toBeNull();
    expect(say).not.toHaveBeenCalled();
  });
});
