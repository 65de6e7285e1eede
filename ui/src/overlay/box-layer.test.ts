// @vitest-environment happy-dom
import { afterEach, describe, expect, it, vi } from "vitest";
import { BoxLayer } from "./box-layer";
import { fixtureText } from "../../test/fixtures";
import { blocksOf } from "../../test/events";

const page9 = blocksOf(fixtureText("grounding", "with_source", "xiongpu1_agent", "vastera_manual", "page009.stdout.md"));
// The capture's page: "image size:  (1170, 1654)".
const PAGE = { width: 1170, height: 1654 };

function setup() {
  const root = document.createElement("div");
  document.body.append(root);
  const selected: number[] = [];
  const hovers: (number | null)[] = [];
  const layer = new BoxLayer(root, { onSelect: (id) => selected.push(id), onHover: (id) => hovers.push(id) });
  layer.setPage(PAGE, { zoom: 1, rotation: 0 });
  return { root, layer, selected, hovers };
}

const boxesOf = (root: HTMLElement, id: number) => [...root.querySelectorAll<HTMLElement>(`[data-block-id="${id}"]`)];
const click = (root: HTMLElement, x: number, y: number) =>
  root.dispatchEvent(new MouseEvent("click", { clientX: x, clientY: y, bubbles: true }));

afterEach(() => {
  document.body.replaceChildren();
  vi.useRealTimers();
});

describe("BoxLayer", () => {
  it("draws a block's box where the reference draws it, the moment the block opens", () => {
    const { root, layer } = setup();
    // Block 0: sub_title [[65, 52, 234, 80]]: int(65/999*1170) = 76, int(52/999*1654) = 86,
    // int(234/999*1170) = 274, int(80/999*1654) = 132; PIL covers 76..274 x 86..132.
    layer.addBox(0, "sub_title", [{ x1: 65, y1: 52, x2: 234, y2: 80 }]);
    const [box] = boxesOf(root, 0);
    expect(box?.className).toBe("grounding-box label-sub_title");
    expect([box?.style.left, box?.style.top, box?.style.width, box?.style.height]).toEqual(["76px", "86px", "199px", "47px"]);
    // Zoom 0.5 and a quarter turn move it with the page: column 1654 - 133 = 1521 at half size.
    layer.setPage(PAGE, { zoom: 0.5, rotation: 90 });
    expect([box?.style.left, box?.style.top, box?.style.width, box?.style.height]).toEqual(["760.5px", "38px", "23.5px", "99.5px"]);
    expect([root.style.width, root.style.height]).toEqual(["827px", "585px"]);
  });

  it("lights search matches apart from the selection, so each can change alone", () => {
    const { root, layer } = setup();
    layer.setBlocks(page9);
    const ids = page9.map((b) => b.id);
    layer.setMatched([ids[0]!, ids[2]!]);
    layer.setHighlighted([ids[2]!]);
    const lit = (cls: string) =>
      [...new Set([...root.querySelectorAll<HTMLElement>(`.${cls}`)].map((e) => Number(e.dataset["blockId"])))];
    expect(lit("matched")).toEqual([ids[0], ids[2]]);
    expect(lit("highlighted")).toEqual([ids[2]]);
    layer.setHighlighted([]);
    expect(lit("matched")).toEqual([ids[0], ids[2]]);
    layer.setMatched([]);
    expect(lit("matched")).toEqual([]);
  });

  it("colours by label and counts labels for the legend", () => {
    const { root, layer } = setup();
    layer.setBlocks(page9);
    expect(root.querySelectorAll(".grounding-box")).toHaveLength(page9.length);
    // The capture holds 11 text, 10 sub_title and 2 image tags; the legend lists them in LABELS order.
    expect(layer.legend()).toEqual([
      { label: "text", count: 11, hidden: false },
      { label: "sub_title", count: 10, hidden: false },
      { label: "image", count: 2, hidden: false },
    ]);
    layer.addBox(99, "figure_title", [{ x1: 0, y1: 0, x2: 10, y2: 10 }]);
    expect(boxesOf(root, 99)[0]?.classList.contains("label-other")).toBe(true);
  });

  it("outlines the reading head, one block at a time", () => {
    const { root, layer } = setup();
    layer.setBlocks(page9.slice(0, 3));
    layer.setReadingHead(1);
    expect([...root.querySelectorAll(".reading-head")].map((e) => (e as HTMLElement).dataset["blockId"])).toEqual(["1"]);
    layer.setReadingHead(2);
    expect([...root.querySelectorAll(".reading-head")].map((e) => (e as HTMLElement).dataset["blockId"])).toEqual(["2"]);
    layer.setReadingHead(null);
    expect(root.querySelectorAll(".reading-head")).toHaveLength(0);
  });

  it("reports a click on a box as its block, the smallest box winning", () => {
    const { root, layer, selected } = setup();
    layer.setBlocks(page9);
    // Inside block 0 (76..274 x 86..132), and inside the big image box 11 [[360, 170, 636, 585]]
    // (421..744 x 281..968) away from any other box; then outside every box.
    click(root, 100, 100);
    click(root, 600, 600);
    click(root, 5, 5);
    expect(selected).toEqual([0, 11]);
  });

  it("hides a label: its boxes vanish and cannot be clicked", () => {
    const { root, layer, selected } = setup();
    layer.setBlocks(page9);
    layer.setLabelHidden("sub_title", true);
    expect(boxesOf(root, 0)[0]?.hidden).toBe(true);
    expect(layer.legend().find((e) => e.label === "sub_title")).toEqual({ label: "sub_title", count: 10, hidden: true });
    click(root, 100, 100);
    layer.setLabelHidden("sub_title", false);
    click(root, 100, 100);
    expect(selected).toEqual([0]);
  });

  it("hovers the box under the pointer and says so once per change", () => {
    const { root, layer, hovers } = setup();
    layer.setBlocks(page9);
    for (const [x, y] of [[100, 100], [110, 110], [600, 600], [5, 5]] as const) {
      root.dispatchEvent(new MouseEvent("mousemove", { clientX: x, clientY: y }));
    }
    expect(hovers).toEqual([0, 11, null]);
    layer.setHovered(3);
    expect(boxesOf(root, 3)[0]?.classList.contains("hovered")).toBe(true);
    expect(hovers).toEqual([0, 11, null]);
  });

  it("flashes a block for a moment and lights search results", () => {
    vi.useFakeTimers();
    const { root, layer } = setup();
    layer.setBlocks(page9);
    layer.flash(2);
    expect(boxesOf(root, 2)[0]?.classList.contains("flash")).toBe(true);
    vi.advanceTimersByTime(1000);
    expect(boxesOf(root, 2)[0]?.classList.contains("flash")).toBe(false);
    layer.setHighlighted([2, 7]);
    expect([...root.querySelectorAll(".highlighted")].map((e) => (e as HTMLElement).dataset["blockId"])).toEqual(["2", "7"]);
  });
});
