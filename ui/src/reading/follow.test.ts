import { describe, expect, it } from "vitest";
import { boxInView, FollowState, scrollToBox, scrollToWritingEdge, writingEdgeInView, type Rect } from "./follow";

const TIMINGS = { userScrollMs: 500 };

describe("FollowState", () => {
  it("scrolls to a head out of view while following, and not to one in view or to none", () => {
    const follow = new FollowState(TIMINGS);
    expect(follow.shouldScroll(0, false)).toBe(true);
    expect(follow.shouldScroll(0, true)).toBe(false);
    expect(follow.shouldScroll(0, null)).toBe(false);
  });

  it("lets its own animated scroll run instead of starting another every frame", () => {
    const follow = new FollowState(TIMINGS);
    follow.setAnimating(true);
    expect(follow.shouldScroll(1016, false)).toBe(false);
    follow.setAnimating(false);
    expect(follow.shouldScroll(1316, false)).toBe(true);
  });

  it("takes no scroll of its own, or of a layout change, for the person's", () => {
    const follow = new FollowState(TIMINGS);
    follow.setAnimating(true);
    expect(follow.scrolled(100, false)).toBe(false);
    expect(follow.isFollowing).toBe(true);
    expect(follow.scrolled(5000, false)).toBe(false);
    expect(follow.isFollowing).toBe(true);
  });

  it("stops following when the person's wheel or keys take the head out of view, and keeps still after", () => {
    const follow = new FollowState(TIMINGS);
    follow.userIntent(1000);
    expect(follow.scrolled(1050, false)).toBe(true);
    expect(follow.isFollowing).toBe(false);
    // Long after, with the head still out of view: the pane is left where the person put it.
    expect(follow.shouldScroll(9000, false)).toBe(false);
  });

  it("keeps following when the person's scroll leaves the head in view", () => {
    const follow = new FollowState(TIMINGS);
    follow.userIntent(1000);
    expect(follow.scrolled(1050, true)).toBe(false);
    expect(follow.isFollowing).toBe(true);
  });

  it("does not pull the pane back while the person's hand is on it, and looks again once it is off", () => {
    const follow = new FollowState(TIMINGS);
    follow.userIntent(1000);
    expect(follow.shouldScroll(1200, false)).toBe(false);
    expect(follow.userScrollEnds).toBe(1500);
    expect(follow.shouldScroll(1500, false)).toBe(true);
  });

  it("counts every scroll while a button is held in the pane (its scrollbar dragged) as the person's", () => {
    const follow = new FollowState(TIMINGS);
    follow.setPointerHeld(true);
    expect(follow.scrolled(10_000, false)).toBe(true);
    expect(follow.isFollowing).toBe(false);
    follow.setPointerHeld(false);
    expect(follow.scrolled(20_000, true)).toBe(false);
    expect(follow.isFollowing).toBe(false);
  });

  it("follows again when the person scrolls back to the head", () => {
    const follow = new FollowState(TIMINGS);
    follow.userIntent(0);
    follow.scrolled(10, false);
    follow.userIntent(3000);
    expect(follow.scrolled(3050, false)).toBe(false);
    expect(follow.scrolled(3100, true)).toBe(true);
    expect(follow.isFollowing).toBe(true);
  });

  it("stops following on a scroll of the person's while there is no head yet", () => {
    const follow = new FollowState(TIMINGS);
    follow.userIntent(0);
    follow.scrolled(10, null);
    expect(follow.isFollowing).toBe(false);
  });

  it("gives the person's scroll precedence over its own animation, which is to stop", () => {
    const follow = new FollowState(TIMINGS);
    follow.setAnimating(true);
    expect(follow.userIntent(1100)).toBe(true);
    expect(follow.scrolled(1150, false)).toBe(true);
    expect(follow.isFollowing).toBe(false);
    // Nothing was running the second time.
    expect(follow.userIntent(1200)).toBe(false);
  });

  it("resumes with the Follow button, and starts over on reset", () => {
    const follow = new FollowState(TIMINGS);
    follow.detach();
    expect(follow.isFollowing).toBe(false);
    expect(follow.shouldScroll(0, false)).toBe(false);
    follow.resume();
    expect(follow.shouldScroll(0, false)).toBe(true);

    follow.userIntent(1000);
    follow.scrolled(1010, false);
    follow.setAnimating(true);
    follow.reset();
    expect(follow.isFollowing).toBe(true);
    // Nothing of before holds the next page back: neither the person's scroll nor an animation.
    expect(follow.shouldScroll(1030, false)).toBe(true);
  });
});

const VIEW: Rect = { left: 100, top: 50, right: 500, bottom: 850 };
const rect = (left: number, top: number, width: number, height: number): Rect => ({
  left,
  top,
  right: left + width,
  bottom: top + height,
});

describe("boxInView", () => {
  it("holds a box inside the view, on its edge too", () => {
    expect(boxInView(VIEW, rect(150, 60, 100, 40))).toBe(true);
    expect(boxInView(VIEW, rect(100, 810, 400, 40))).toBe(true);
  });

  it("does not hold a box partly or wholly outside the view", () => {
    expect(boxInView(VIEW, rect(150, 830, 100, 40))).toBe(false);
    expect(boxInView(VIEW, rect(150, 900, 100, 40))).toBe(false);
    expect(boxInView(VIEW, rect(450, 60, 100, 40))).toBe(false);
  });

  it("holds a box larger than the view only while it covers the view", () => {
    expect(boxInView(VIEW, rect(50, 0, 600, 1000))).toBe(true);
    expect(boxInView(VIEW, rect(50, 100, 600, 1000))).toBe(false);
  });
});

describe("scrollToBox", () => {
  it("puts a box below the view a quarter down it, leaving the other axis alone", () => {
    // The box is 1000 px below the view's top; a quarter of the 800 px view is 200 px.
    expect(scrollToBox(VIEW, rect(150, 1050, 100, 40), { left: 30, top: 400 })).toEqual({ left: 30, top: 1200 });
  });

  it("puts a box nearly as tall as the view, or taller, at its top", () => {
    expect(scrollToBox(VIEW, rect(150, 1050, 100, 700), { left: 0, top: 0 })).toEqual({ left: 0, top: 1000 });
  });

  it("centres a box out of view across, or puts the left edge of a wider one at the view's left", () => {
    // 200 px to the right of the view's right edge; a 100 px box centred in 400 px has 150 px each side.
    expect(scrollToBox(VIEW, rect(700, 60, 100, 40), { left: 0, top: 0 })).toEqual({ left: 450, top: 0 });
    expect(scrollToBox(VIEW, rect(300, 60, 800, 40), { left: 0, top: 0 })).toEqual({ left: 200, top: 0 });
  });

  it("does not scroll before the start", () => {
    expect(scrollToBox(VIEW, rect(150, -100, 100, 40), { left: 0, top: 20 })).toEqual({ left: 0, top: 0 });
  });
});

describe("the writing edge", () => {
  it("is in view while the block's bottom is", () => {
    expect(writingEdgeInView(VIEW, rect(100, -2000, 400, 2500))).toBe(true);
    expect(writingEdgeInView(VIEW, rect(100, 700, 400, 200))).toBe(false);
    expect(writingEdgeInView(VIEW, rect(100, -300, 400, 200))).toBe(false);
  });

  it("is brought to the view's bottom, less a 16 px margin, as text grows, from below or above", () => {
    // The edge at 900 is 50 px below the view's bottom at 850: 50 + 16 further down.
    expect(scrollToWritingEdge(VIEW, rect(100, 700, 400, 200), { left: 0, top: 1000 })).toEqual({ left: 0, top: 1066 });
    expect(scrollToWritingEdge(VIEW, rect(100, -300, 400, 200), { left: 0, top: 1000 })).toEqual({ left: 0, top: 66 });
  });
});
