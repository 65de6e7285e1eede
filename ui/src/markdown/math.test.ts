// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { splitMath, typesetMath } from "./math";

describe("splitMath", () => {
  it("finds inline and display spans as the model writes them (vastera manual, page 13)", () => {
    expect(splitMath("Range: \\(- 5^{\\circ}C\\) to \\(43^{\\circ}C\\) .")).toEqual([
      { kind: "text", text: "Range: " },
      { kind: "math", tex: "- 5^{\\circ}C", display: false },
      { kind: "text", text: " to " },
      { kind: "math", tex: "43^{\\circ}C", display: false },
      { kind: "text", text: " ." },
    ]);
    expect(splitMath("\\[f(x) = \\sinh(4x + 3). \\qquad (56)\\]")).toEqual([
      { kind: "math", tex: "f(x) = \\sinh(4x + 3). \\qquad (56)", display: true },
    ]);
    expect(splitMath("so $$a*b$$.")).toEqual([
      { kind: "text", text: "so " },
      { kind: "math", tex: "a*b", display: true },
      { kind: "text", text: "." },
    ]);
  });

  it("keeps LaTeX line breaks inside display math", () => {
    expect(splitMath("\\[ a \\\\ b \\] c")).toEqual([
      { kind: "math", tex: "a \\\\ b", display: true },
      { kind: "text", text: " c" },
    ]);
  });

  it("leaves an unclosed opener (a span still streaming in), an empty span and escaped backslashes as text", () => {
    for (const text of ["x \\(a + b", "C:\\\\[dir]", "\\(\\)", "costs $$ and more"]) {
      expect(splitMath(text)).toEqual([{ kind: "text", text }]);
    }
  });
});

describe("typesetMath", () => {
  it("typesets math in text and tables with KaTeX, not in code", () => {
    const root = document.createElement("div");
    root.innerHTML =
      "<p>T \\(\\geq 34^{\\circ}F\\) then</p><table><tr><td>\\[x^2\\]</td></tr></table><pre><code>\\(raw\\)</code></pre>";
    typesetMath(root);
    const inline = root.querySelector("p .math-inline .katex");
    expect(inline).not.toBeNull();
    expect(root.querySelector("p")?.firstChild?.textContent).toBe("T ");
    expect(root.querySelector("p")?.lastChild?.textContent).toBe(" then");
    // KaTeX keeps the source in its MathML annotation: what was typeset is what the model wrote.
    expect(inline?.querySelector("annotation")?.textContent).toBe("\\geq 34^{\\circ}F");
    expect(root.querySelector("td .math-display .katex-display")).not.toBeNull();
    expect(root.querySelector("code")?.textContent).toBe("\\(raw\\)");
  });

  it("leaves commands that could act (links, HTML) inert, and shows bad LaTeX instead of failing", () => {
    const root = document.createElement("div");
    root.textContent = "\\(\\href{javascript:alert(1)}{x}\\) \\(\\htmlId{a}{b}\\) \\(\\frac{1}{\\)";
    typesetMath(root);
    expect(root.querySelectorAll(".katex, .katex-error").length).toBe(3);
    expect(root.querySelector("a")).toBeNull();
    expect(root.querySelector("#a")).toBeNull();
    expect(root.querySelector(".katex-error")?.textContent).toContain("\\frac{1}{");
  });
});
