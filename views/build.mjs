// Builds dist/app.js, the one bundle of parse-mcp's views, from src/ with
// esbuild (npm ci, then node build.mjs). The first line records a
// SHA-256 over the sources, this script and the lockfile; views_test.go
// recomputes it, so a bundle that was not rebuilt after a change fails.
import { build } from "esbuild";
import { createHash } from "node:crypto";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";

export function sourcesHash() {
  const files = ["build.mjs", "package.json", "package-lock.json", ...readdirSync("src").sort().map((f) => "src/" + f)];
  const h = createHash("sha256");
  for (const f of files) {
    const b = readFileSync(f);
    h.update(f + "\0" + b.length + "\0");
    h.update(b);
  }
  return h.digest("hex");
}

const out = await build({
  entryPoints: ["src/app.js"],
  bundle: true,
  minify: true,
  format: "iife",
  target: "es2022",
  legalComments: "none",
  loader: { ".css": "text" },
  write: false,
});
// The output file: dist/app.js, or the path given (views_test.go rebuilds
// into a temporary file and compares).
writeFileSync(process.argv[2] || "dist/app.js", "/* parse-mcp views; sources sha256 " + sourcesHash() + " */\n" + out.outputFiles[0].text);
