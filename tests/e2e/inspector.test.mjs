// The MCP Inspector CLI (@modelcontextprotocol/inspector 1.0.3) against the real server over
// Streamable HTTP and legacy SSE. The CLI prints the final result as JSON and exits 0 even when
// the result has isError: true, so the assertions read its stdout.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { E2E_DIR, startServer, stopAndCheck } from './lib/server.mjs';

const execFileAsync = promisify(execFile);
const INSPECTOR = path.join(E2E_DIR, 'node_modules', '.bin', 'mcp-inspector');

let server;

before(async () => {
  server = await startServer();
});

after(async () => {
  if (server) await stopAndCheck(server, assert);
});

async function inspector(url, transport, ...args) {
  const { stdout, stderr } = await execFileAsync(INSPECTOR, ['--cli', url, '--transport', transport, ...args], {
    cwd: E2E_DIR,
    timeout: 90_000,
    maxBuffer: 16 << 20,
  }).catch((err) => {
    throw new Error(`mcp-inspector failed (${err.code ?? err.signal}):\n${err.stdout}\n${err.stderr}`);
  });
  try {
    return JSON.parse(stdout);
  } catch {
    throw new Error(`mcp-inspector printed no JSON:\nstdout: ${stdout}\nstderr: ${stderr}`);
  }
}

test('inspector CLI over http: tools/list', async () => {
  const out = await inspector(`${server.baseUrl}/mcp`, 'http', '--method', 'tools/list');
  const names = out.tools.map((t) => t.name);
  assert.ok(names.includes('run_python'), `tools: ${names}`);
  assert.ok(names.includes('sandbox_info'), `tools: ${names}`);
});

test('inspector CLI over http: tools/call run_python print(6*7) -> 42', async () => {
  const out = await inspector(
    `${server.baseUrl}/mcp`,
    'http',
    '--method',
    'tools/call',
    '--tool-name',
    'run_python',
    '--tool-arg',
    'code=print(6*7)',
  );
  assert.notEqual(out.isError, true, JSON.stringify(out));
  assert.equal(out.structuredContent?.stdout, '42\n', JSON.stringify(out));
  assert.ok(out.content.some((c) => c.type === 'text' && c.text.includes('42')), JSON.stringify(out));
});

test('inspector CLI over legacy sse: tools/call sees isError for a failing run', async () => {
  const out = await inspector(
    `${server.baseUrl}/sse`,
    'sse',
    '--method',
    'tools/call',
    '--tool-name',
    'run_python',
    '--tool-arg',
    'code=raise ValueError("e2e")',
  );
  assert.equal(out.isError, true, JSON.stringify(out));
  assert.equal(out.structuredContent?.traceback?.type, 'ValueError', JSON.stringify(out));
});
