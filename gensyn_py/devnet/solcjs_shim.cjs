// Standard-JSON bridge to the npm `solc` package (solcjs).
// Reads a standard JSON input on stdin, writes the standard JSON output on stdout.
// Imports resolve against the include paths given in argv (project root, node_modules).
// We never call process.exit(): that truncates piped stdout past 64 KiB.
"use strict";
const fs = require("fs");
const path = require("path");

const includePaths = process.argv.slice(2);
const solc = require(require.resolve("solc", { paths: includePaths }));

function findImport(importPath) {
  for (const base of includePaths) {
    const candidate = path.join(base, importPath);
    if (fs.existsSync(candidate)) {
      return { contents: fs.readFileSync(candidate, "utf8") };
    }
  }
  return { error: `File not found in ${includePaths.join(", ")}: ${importPath}` };
}

const input = fs.readFileSync(0, "utf8");
const output = solc.compile(input, { import: findImport });
fs.writeSync(1, JSON.stringify({ version: solc.version(), output: JSON.parse(output) }));
