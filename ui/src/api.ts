// The Rust side's commands and the page image protocol, typed.
import { invoke } from "@tauri-apps/api/core";

export interface PageSize {
  width_pt: number;
  height_pt: number;
}

export interface DocumentInfo {
  id: string;
  path: string;
  title: string;
  pages: PageSize[];
}

export function launchPaths(): Promise<string[]> {
  return invoke<string[]>("launch_paths");
}

export function openDocument(path: string): Promise<DocumentInfo> {
  return invoke<DocumentInfo>("open_document", { path });
}

// Custom protocols are `scheme://localhost/` on Linux and macOS, `http://scheme.localhost/` on Windows.
const pageOrigin = navigator.userAgent.includes("Windows") ? "http://page.localhost" : "page://localhost";

export function pageImageUrl(documentId: string, page: number, widthPx: number): string {
  return `${pageOrigin}/${encodeURIComponent(documentId)}/${page}?w=${Math.round(widthPx)}`;
}
