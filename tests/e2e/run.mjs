// Runs end-to-end test files with Node's test runner (two files at a time: most of a file's
// time is spent waiting on containers and server shutdowns, not on the CPU).
// Usage: SANDBOX_MCP_BIN=build/src/server/sandbox-mcp node tests/e2e/run.mjs [file.test.mjs ...]
// Without files it runs every *.test.mjs here.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = path.dirname(fileURLToPath(import.meta.url));
if (!existsSync(path.join(dir, 'node_modules', '@modelcontextprotocol', 'sdk'))) {
  console.error(`e2e: the MCP clients are not installed: run \`npm ci\` in ${dir} (scripts/test.sh does)`);
  process.exit(1);
}
if (!process.env.SANDBOX_MCP_BIN) {
  console.error('e2e: set SANDBOX_MCP_BIN to the sandbox-mcp executable');
  process.exit(1);
}
const files = process.argv.slice(2);
const selected = files.length > 0 ? files : readdirSync(dir).filter((f) => f.endsWith('.test.mjs')).sort();
const result = spawnSync(
  process.execPath,
  ['--test', '--test-concurrency=2', '--test-reporter=spec', ...selected],
  { cwd: dir, stdio: 'inherit' },
);
process.exit(result.status ?? 1);
