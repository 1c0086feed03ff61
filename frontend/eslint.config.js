// ESLint for the page scripts (browser) and the build and lint configs (Node). Formatting
// is Prettier's (npm run format); eslint-config-prettier turns off the rules it owns.
import js from "@eslint/js";
import prettier from "eslint-config-prettier";
import globals from "globals";

export default [
  { ignores: ["dist/", "node_modules/"] },
  js.configs.recommended,
  { files: ["src/**/*.js"], languageOptions: { globals: globals.browser } },
  { files: ["*.js", "*.mjs"], languageOptions: { globals: globals.node } },
  prettier,
];
