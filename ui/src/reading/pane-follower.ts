// One pane following the reading head (follow.ts decides): it tells the person's scrolls (wheel, scroll
// keys, a button held in the pane, as on its scrollbar) from the app's own, looks at most once a frame
// whether the head left the view, and shows a Follow pill while the person has scrolled away.
import { FollowState, type HeadInView, type Rect, type ScrollPosition } from "./follow";

/** How long the page glides to the next box. Animated here, frame by frame, not by the browser: a
 *  wheel turn must be able to stop it at once, and WebKit lets its own smooth scroll run on. */
const GLIDE_MS = 300;

/** Keys that scroll the pane that has the keyboard. ←/→ are the window's page keys, not scrolls. */
const SCROLL_KEYS = new Set(["ArrowUp", "ArrowDown", "PageUp", "PageDown", "Home", "End", " "]);

export interface PaneFollowerOptions {
  /** Whether the head is in view, seen in `view`. */
  inView: (view: Rect, head: Rect) => boolean;
  /** Where the pane scrolls to bring the head into view. */
  scrollTo: (view: Rect, head: Rect, scroll: ScrollPosition) => ScrollPosition;
  /** Smooth for a jump to a box; instant for text growing at the edge, which moves a line at a time. */
  smooth: boolean;
  /** What the pill's tooltip names. */
  what: string;
  /** The height at the pane's top that sticky content covers (the Markdown toolbar). */
  coveredTop?: () => number;
}

export class PaneFollower {
  /** Goes last in the pane: it holds the pill at the bottom of the view, whatever is scrolled. */
  readonly slot: HTMLElement;
  private readonly pill: HTMLButtonElement;
  private readonly state = new FollowState();
  private head: (() => HTMLElement | undefined) | null = null;
  private frameAsked = false;
  /** Whether the keyboard scrolls this pane: the focus is in it, or it was the last pressed on. */
  private pressedLast = false;
  private lookAgain: ReturnType<typeof setTimeout> | undefined;
  private glide: number | null = null;

  constructor(
    private readonly pane: HTMLElement,
    private readonly options: PaneFollowerOptions,
  ) {
    this.pill = document.createElement("button");
    this.pill.type = "button";
    this.pill.className = "follow-pill";
    this.pill.textContent = "Follow";
    this.pill.title = `Keep ${options.what} in view again`;
    this.pill.hidden = true;
    this.pill.addEventListener("click", () => this.resume());
    this.slot = document.createElement("div");
    this.slot.className = "follow-slot";
    this.slot.append(this.pill);
    pane.append(this.slot);
    this.listen();
  }

  /** Follows the head `head` gives (the block being written on the page shown), or nothing (null). */
  follow(head: (() => HTMLElement | undefined) | null): void {
    this.head = head;
    if (!head) this.stopGlide();
    this.showPill();
    this.look();
  }

  /** Another page shown, or a new reading: following again. */
  reset(): void {
    this.stopGlide();
    this.state.reset();
    this.showPill();
    this.look();
  }

  /** The app took the pane elsewhere at the person's asking: stop following until they ask back. */
  detach(): void {
    if (!this.head) return;
    this.stopGlide();
    this.state.detach();
    this.showPill();
  }

  get following(): boolean {
    return this.state.isFollowing;
  }

  /** The head may have moved or grown: looked at on the next frame, however often this is called. */
  look(): void {
    if (this.frameAsked || !this.head) return;
    this.frameAsked = true;
    requestAnimationFrame(() => {
      this.frameAsked = false;
      this.keepHeadInView();
    });
  }

  private resume(): void {
    this.state.resume();
    this.showPill();
    this.look();
  }

  private listen(): void {
    const pane = this.pane;
    pane.addEventListener("wheel", () => this.userIntent(), { passive: true });
    pane.addEventListener("scroll", () => this.scrolled(), { passive: true });
    pane.addEventListener("pointerdown", (event) => {
      if (this.pill.contains(event.target as Node)) return;
      this.state.setPointerHeld(true);
    });
    // Down anywhere: this pane was pressed last or not. Up anywhere: the button held here is let go.
    window.addEventListener("pointerdown", (event) => (this.pressedLast = pane.contains(event.target as Node)), true);
    for (const type of ["pointerup", "pointercancel"] as const) {
      window.addEventListener(type, () => this.state.setPointerHeld(false), true);
    }
    window.addEventListener("keydown", (event) => {
      if (SCROLL_KEYS.has(event.key) && !event.ctrlKey && this.hasKeyboard()) this.userIntent();
    }, true);
  }

  private hasKeyboard(): boolean {
    const focused = document.activeElement;
    if (focused?.closest("input, select, textarea")) return false;
    return focused && focused !== document.body ? this.pane.contains(focused) : this.pressedLast;
  }

  private userIntent(): void {
    if (this.state.userIntent(performance.now())) this.stopGlide();
    // Once the person's hand is off, the head may need following again.
    clearTimeout(this.lookAgain);
    this.lookAgain = setTimeout(() => this.look(), Math.max(0, this.state.userScrollEnds - performance.now()) + 20);
  }

  private scrolled(): void {
    if (!this.head) return;
    if (this.state.scrolled(performance.now(), this.headInView())) this.showPill();
  }

  private keepHeadInView(): void {
    const head = this.head?.();
    if (!head || !this.state.shouldScroll(performance.now(), this.headInView(head))) return;
    const target = this.options.scrollTo(this.view(), head.getBoundingClientRect(), {
      left: this.pane.scrollLeft,
      top: this.pane.scrollTop,
    });
    if (this.options.smooth && !matchMedia("(prefers-reduced-motion: reduce)").matches) this.glideTo(target);
    else this.pane.scrollTo({ ...target, behavior: "instant" });
  }

  /** Eases the pane to `target` over GLIDE_MS, then looks again: the head may have moved meanwhile. */
  private glideTo(target: ScrollPosition): void {
    const from = { left: this.pane.scrollLeft, top: this.pane.scrollTop };
    const start = performance.now();
    this.state.setAnimating(true);
    const step = (now: number) => {
      const t = Math.min(1, Math.max(0, (now - start) / GLIDE_MS));
      const eased = 1 - (1 - t) ** 3;
      const left = from.left + (target.left - from.left) * eased;
      this.pane.scrollTo({ left, top: from.top + (target.top - from.top) * eased, behavior: "instant" });
      if (t < 1) {
        this.glide = requestAnimationFrame(step);
        return;
      }
      this.glide = null;
      this.state.setAnimating(false);
      this.look();
    };
    this.glide = requestAnimationFrame(step);
  }

  private stopGlide(): void {
    if (this.glide !== null) cancelAnimationFrame(this.glide);
    this.glide = null;
    this.state.setAnimating(false);
  }

  private headInView(head = this.head?.()): HeadInView {
    return head ? this.options.inView(this.view(), head.getBoundingClientRect()) : null;
  }

  /** The pane's visible area in viewport pixels: inside its borders, less its scrollbars and what
   *  sticky content covers. */
  private view(): Rect {
    const outer = this.pane.getBoundingClientRect();
    const left = outer.left + this.pane.clientLeft;
    const top = outer.top + this.pane.clientTop;
    return {
      left,
      top: top + (this.options.coveredTop?.() ?? 0),
      right: left + this.pane.clientWidth,
      bottom: top + this.pane.clientHeight,
    };
  }

  private showPill(): void {
    this.pill.hidden = this.head === null || this.state.isFollowing;
  }
}
