import { defineConfig } from "vitest/config";

// The app embeds ui/dist; Tauri serves it, so paths must be relative and the build self-contained.
export default defineConfig({
  base: "./",
  clearScreen: false,
  build: { target: "safari15", outDir: "dist", emptyOutDir: true },
  test: { setupFiles: ["src/test-setup.ts"] },
});
