// @vitest-environment happy-dom
import { afterEach, describe, expect, it, vi } from "vitest";
import { addBlock, correctBlock, readDocument, readRegion, type DocumentInfo } from "./api";
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
  readRegion: vi.fn(),
  addBlock: vi.fn(),
}));

const PAGE = { width_pt: 100, height_pt: 100 };
const DOC: DocumentInfo = {
  id: "doc-1",
  path: "/d.pdf",
  title: "d",
  pages: [PAGE, PAGE],
  password: "none",
  passwordNotice: null,
};
const READ: Block[] = [
  { id: 0, label: "title", boxes: [{ x1: 1, y1: 1, x2: 9, y2: 9 }], markdown: "# Misread", warning: null },
  { id: 1, label: "text", boxes: [{ x1: 1, y1: 10, x2: 9, y2: 19 }], markdown: "Body", warning: null },
];
const CORRECTED: CorrectedPage = {
  page: 0,
  markdown: "# Read right\n\nBody",
  blocks: [{ ...READ[0]!, markdown: "# Read right" }, READ[1]!],
  corrected: [0],
  added: [],
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
  return { session, content, pagePane, send, block, readPage, say };
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

describe("DocumentSession's regions", () => {
  const REGION = { x1: 10, y1: 20, x2: 90, y2: 40 };
  const ADDED: CorrectedPage = {
    page: 0,
    markdown: "# Misread\n\nBody\n\nFound",
    blocks: [...READ, { id: 1_000_000, label: "text", boxes: [REGION], markdown: "Found", warning: null }],
    corrected: [],
    added: [1_000_000],
    differing: [],
  };

  it("reads a region of the page shown only once the page is read, saying why not before", async () => {
    const { session, pagePane, send, say } = await setup();
    session.showPage(0);
    session.readRegion(REGION);
    expect(say).toHaveBeenCalledWith("Page 1 is not read yet: read it, then read a region of it.");
    send({ type: "started", page: 0 });
    session.readRegion(REGION);
    expect(say).toHaveBeenLastCalledWith("Page 1 is being read: read a region of it once it is done.");
    expect(readRegion).not.toHaveBeenCalled();
    expect(pagePane.querySelector("#region-panel")).toBeNull();
  });

  it("adds the region's text as a block, marked and boxed like the reading's, and says so", async () => {
    const { session, content, pagePane, block, readPage, say } = await setup();
    readPage();
    session.showPage(0);
    vi.mocked(readRegion).mockResolvedValueOnce({ page: 0, region: REGION, markdown: "Found", label: "text", overlaps: null, recognizer: "text layer", looped: false });
    vi.mocked(addBlock).mockResolvedValueOnce(ADDED);
    session.readRegion(REGION);
    expect(readRegion).toHaveBeenCalledWith({ id: "doc-1", page: 0, region: REGION, ...DEFAULT_CHOICE });
    const panel = () => pagePane.querySelector<HTMLElement>("#region-panel");
    expect(panel()?.closest(".page-frame"), "beside the region, on the page").not.toBeNull();
    await vi.waitFor(() => expect(panel()?.dataset["state"]).toBe("read"));
    pagePane.querySelector<HTMLButtonElement>("#region-add")!.click();
    await vi.waitFor(() => expect(panel()).toBeNull());
    expect(addBlock).toHaveBeenCalledWith({ id: "doc-1", page: 0, region: REGION, label: "text", markdown: "Found" });
    expect(block(1_000_000)?.dataset["added"]).toBe("true");
    expect(block(1_000_000)?.innerHTML).toBe("<p>Found</p>");
    expect(pagePane.querySelector('.grounding-box[data-block-id="1000000"]')).not.toBeNull();
    expect(session.pageMarkdown(0)).toBe("# Misread\n\nBody\n\nFound");
    expect(say).toHaveBeenLastCalledWith("Block added to page 1 from the region read by text layer.");

    // Its editor removes it rather than going back to the reading's text.
    session.editBlock(0, 1_000_000);
    expect(content.querySelector(".block-editor-revert")?.textContent).toBe("Remove this block");
  });

  it("drops the panel when another page is shown", async () => {
    const { session, pagePane, readPage } = await setup();
    readPage();
    session.showPage(0);
    vi.mocked(readRegion).mockReturnValueOnce(new Promise(() => {}));
    session.readRegion(REGION);
    expect(pagePane.querySelector("#region-panel")).not.toBeNull();
    session.showPage(1);
    expect(pagePane.querySelector("#region-panel")).toBeNull();
  });
});
