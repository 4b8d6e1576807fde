// A `solc`-compatible command line over solcjs, for tools that want a solc
// executable (brownie through py-solc-x). Supports `--version` and
// `--standard-json` (stdin to stdout); imports resolve from the working
// directory and the include paths in SOLC_INCLUDE (":"-separated).
"use strict";
const fs = require("fs");
const path = require("path");

const roots = [process.cwd(), ...(process.env.SOLC_INCLUDE || "").split(":").filter(Boolean)];
const solc = require(require.resolve("solc", { paths: roots }));
const args = process.argv.slice(2);

if (args.includes("--version")) {
  const v = solc.version().replace(".Emscripten.clang", ".Linux.g++");
  fs.writeSync(1, `solc, the solidity compiler commandline interface\nVersion: ${v}\n`);
} else if (args.includes("--standard-json")) {
  const findImport = (p) => {
    for (const base of roots) {
      const candidate = path.isAbsolute(p) ? p : path.join(base, p);
      if (fs.existsSync(candidate)) return { contents: fs.readFileSync(candidate, "utf8") };
    }
    return { error: `File not found: ${p}` };
  };
  fs.writeSync(1, solc.compile(fs.readFileSync(0, "utf8"), { import: findImport }));
} else {
  fs.writeSync(2, "only --version and --standard-json are supported\n");
  process.exitCode = 2;
}
