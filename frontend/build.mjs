// Bundles one module per page from src/pages/ into dist/js/, and copies the stylesheet.
import { build } from "esbuild";
import { copyFileSync, mkdirSync, readdirSync, rmSync } from "node:fs";

const pages = readdirSync("src/pages").filter((name) => name.endsWith(".js"));
// Source maps only when asked for (PARTDASH_SOURCEMAPS=1, development): production serves
// the minified bundles alone. dist/js/ is emptied first, so no older map lingers.
const sourcemap = process.env.PARTDASH_SOURCEMAPS === "1" ? "linked" : false;
rmSync("dist/js", { recursive: true, force: true });
mkdirSync("dist/js", { recursive: true });
await build({
  entryPoints: pages.map((name) => `src/pages/${name}`),
  outdir: "dist/js",
  bundle: true,
  format: "esm",
  minify: true,
  sourcemap,
  target: ["es2020"],
  logLevel: "info",
});
for (const asset of ["partdash.css", "favicon.svg"]) {
  copyFileSync(`src/${asset}`, `dist/${asset}`);
}
