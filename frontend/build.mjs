// Bundles one module per page from src/pages/ into dist/js/, and copies the stylesheet.
import { build } from "esbuild";
import { copyFileSync, mkdirSync, readdirSync } from "node:fs";

const pages = readdirSync("src/pages").filter((name) => name.endsWith(".js"));
mkdirSync("dist/js", { recursive: true });
await build({
  entryPoints: pages.map((name) => `src/pages/${name}`),
  outdir: "dist/js",
  bundle: true,
  format: "esm",
  minify: true,
  sourcemap: true,
  target: ["es2020"],
  logLevel: "info",
});
for (const asset of ["partdash.css", "favicon.svg"]) {
  copyFileSync(`src/${asset}`, `dist/${asset}`);
}
