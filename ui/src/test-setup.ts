// happy-dom does not say whether a document is in standards mode, and KaTeX refuses to typeset in
// quirks mode; the app's index.html has a doctype, so the tests' documents stand in for it.
if (typeof document !== "undefined" && document.compatMode === undefined) {
  Object.defineProperty(document, "compatMode", { value: "CSS1Compat" });
}
