// The layout labels the model writes, and how the overlay groups them (deepseek-ocr2.md §6).
export const LABELS = [
  "text",
  "title",
  "sub_title",
  "table",
  "image",
  "image_caption",
  "table_caption",
  "table_footnote",
  "equation",
  "other",
] as const;

export type LabelKind = (typeof LABELS)[number];

/** The label's colour group; labels outside the known set (OCR-2's set is unverified) are "other". */
export function labelKind(label: string): LabelKind {
  return (LABELS as readonly string[]).includes(label) ? (label as LabelKind) : "other";
}
