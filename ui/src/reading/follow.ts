// Following the reading head: while the page shown is read, each pane keeps the block being written in
// view, until the person scrolls the pane themselves. This is the decision, with time passed in; the
// DOM side (pane-follower.ts) feeds it events and does the scrolling.

/** How long after a wheel turn or a scroll key the pane's scroll events are the person's: WebKit
 *  animates a wheel turn over a few hundred milliseconds. */
export const USER_SCROLL_MS = 500;

export interface FollowTimings {
  userScrollMs: number;
}

/** Whether the reading head is in view: null when there is no head to follow. */
export type HeadInView = boolean | null;

export class FollowState {
  private following = true;
  /** The person's hand is on the pane until then (a wheel turn, a scroll key). */
  private userUntil = -Infinity;
  /** The app's own animated scroll is running. */
  private animating = false;
  private pointerHeld = false;
  private readonly timings: FollowTimings;

  constructor(timings: Partial<FollowTimings> = {}) {
    this.timings = { userScrollMs: USER_SCROLL_MS, ...timings };
  }

  get isFollowing(): boolean {
    return this.following;
  }

  /** Another page shown, or a new reading: follow again, whatever happened before. */
  reset(): void {
    this.following = true;
    this.userUntil = -Infinity;
    this.animating = false;
  }

  /** The Follow button. */
  resume(): void {
    this.following = true;
  }

  /** The app took the pane elsewhere at the person's asking (a clicked box, `j`/`k`, a search match). */
  detach(): void {
    this.following = false;
  }

  /** A wheel turn or a scroll key aimed at the pane: its scroll events for a while are the person's.
   *  Their hand wins over an animation of ours: returns whether one runs, to be stopped. */
  userIntent(now: number): boolean {
    this.userUntil = now + this.timings.userScrollMs;
    const stop = this.animating;
    this.animating = false;
    return stop;
  }

  /** A button held down in the pane (its scrollbar dragged, text selected past its edge). */
  setPointerHeld(held: boolean): void {
    this.pointerHeld = held;
  }

  /** The app's animated scroll to the head starts, or ends (done, or stopped). */
  setAnimating(animating: boolean): void {
    this.animating = animating;
  }

  /** The pane scrolled. The person's scroll decides: following again once the head is back in view,
   *  not while it is out of it. Any other scroll (ours, a layout change, a linked block brought into
   *  view) decides nothing.
   *  Returns whether following changed. */
  scrolled(now: number, head: HeadInView): boolean {
    if (!this.isUsers(now)) return false;
    const following = head === true;
    const changed = following !== this.following;
    this.following = following;
    return changed;
  }

  /** Asked at most once a frame: whether the app should scroll the head into view now. Not while the
   *  person is scrolling, nor while an animation of ours still runs. */
  shouldScroll(now: number, head: HeadInView): boolean {
    return this.following && head === false && !this.isUsers(now) && !this.animating;
  }

  /** When the person's hand is off the pane again: the moment to look once more. */
  get userScrollEnds(): number {
    return this.userUntil;
  }

  private isUsers(now: number): boolean {
    return this.pointerHeld || now < this.userUntil;
  }
}

/** A rectangle in viewport pixels. */
export interface Rect {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

export interface ScrollPosition {
  left: number;
  top: number;
}

/** Slack for sub-pixel layout, so a box on the view's edge counts as inside. */
const EDGE_PX = 1;

/** A box is in view when it is inside the view, or, larger than the view, covers it (each axis). */
export function boxInView(view: Rect, box: Rect): boolean {
  return coversAxis(view.top, view.bottom, box.top, box.bottom) && coversAxis(view.left, view.right, box.left, box.right);
}

function coversAxis(viewStart: number, viewEnd: number, start: number, end: number): boolean {
  const shown = Math.min(viewEnd, end) - Math.max(viewStart, start);
  return shown >= Math.min(end - start, viewEnd - viewStart) - EDGE_PX;
}

/** Where the text is written is the block's bottom edge: in view when that edge is. */
export function writingEdgeInView(view: Rect, block: Rect): boolean {
  return block.bottom >= view.top - EDGE_PX && block.bottom <= view.bottom + EDGE_PX;
}

/** Of the view's height, how far down a box is put when the view moves to it: near the top, so the
 *  blocks that follow it down the page fit below before the view has to move again. */
const BOX_PLACE = 0.25;

/** The scroll position that shows `box`, moving only along an axis where it is out of view: down,
 *  a quarter down the view (its top at the view's top when it is nearly as tall); across, centred
 *  (its left edge at the view's left when it is wider). */
export function scrollToBox(view: Rect, box: Rect, scroll: ScrollPosition): ScrollPosition {
  const height = view.bottom - view.top;
  const width = view.right - view.left;
  const boxWidth = box.right - box.left;
  const down = box.bottom - box.top > height * (1 - BOX_PLACE) ? 0 : height * BOX_PLACE;
  const across = boxWidth >= width ? 0 : (width - boxWidth) / 2;
  const top = coversAxis(view.top, view.bottom, box.top, box.bottom) ? scroll.top : scroll.top + box.top - view.top - down;
  const left = coversAxis(view.left, view.right, box.left, box.right) ? scroll.left : scroll.left + box.left - view.left - across;
  return { top: Math.max(0, top), left: Math.max(0, left) };
}

/** Room left under the text being written, so the block's outline does not sit on the pane's edge. */
const WRITING_MARGIN_PX = 16;

/** The scroll position that puts the block's bottom edge, where text is being added, at the view's bottom. */
export function scrollToWritingEdge(view: Rect, block: Rect, scroll: ScrollPosition): ScrollPosition {
  return { top: Math.max(0, scroll.top + block.bottom - (view.bottom - WRITING_MARGIN_PX)), left: scroll.left };
}
