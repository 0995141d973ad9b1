// eslint's flat config for the pages' modules (web/js) and their unit tests (web/test):
// eslint's recommended rules, ES modules, the browser's globals for the pages and node's
// for the tests. .ci/run lints with it (`npx eslint js test`, from web/).
import js from "@eslint/js";
import globals from "globals";

export default [
  js.configs.recommended,
  {
    rules: {
      // Not off, narrowed: `_` names what a catch, a callback or a destructuring must
      // take but does not use (`catch (_)`, `(_, i) =>`), as the pages write it.
      "no-unused-vars": ["error", {
        argsIgnorePattern: "^_$",
        caughtErrorsIgnorePattern: "^_$",
        destructuredArrayIgnorePattern: "^_$",
        varsIgnorePattern: "^_$",
      }],
    },
  },
  {
    files: ["js/**/*.js"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module",
      globals: { ...globals.browser },
    },
  },
  {
    files: ["test/**/*.js", "eslint.config.js"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module",
      globals: { ...globals.node },
    },
  },
];
