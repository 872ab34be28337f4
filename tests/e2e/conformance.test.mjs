// The official MCP conformance suite (@modelcontextprotocol/conformance 0.1.13), server side,
// against the conformance test server (sandbox-mcp-conformance: the suite's fixture tools). Every
// server scenario runs (--suite all: the active ones and the pending ones); those that do not
// apply to a tools server are listed with their reasons in conformance-baseline.yml. The suite exits non-zero on a failure that is
// not in the baseline AND on a baseline entry that passes (stale), so both stay honest.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readResults, runSuite, summarize } from './lib/conformance.mjs';
import { E2E_DIR, conformanceServerBinary, startServer, stopAndCheck } from './lib/server.mjs';

// By path: the 0.2 suite (conformance-2026) declares the same bin name.
const CONFORMANCE = path.join(E2E_DIR, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const BASELINE = path.join(E2E_DIR, 'conformance-baseline.yml');

let server;

before(async () => {
  server = await startServer({ binary: conformanceServerBinary(), waitIdle: 0 });
});

after(async () => {
  if (server) await stopAndCheck(server, assert);
});

test('conformance 0.1.13: every server scenario (--suite all), expected failures from the baseline', async (t) => {
  const outputDir = mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-conformance-'));
  try {
    const { code, signal, out } = await runSuite(
      process.execPath,
      CONFORMANCE,
      ['server', '--url', `${server.baseUrl}/mcp`, '--suite', 'all', '--expected-failures', BASELINE, '-o', outputDir],
      240_000,
    );
    const summary = summarize(readResults(outputDir));
    t.diagnostic(`scenarios:\n${summary}`);
    assert.equal(
      code,
      0,
      `conformance exited ${code ?? signal}: a failure outside the baseline or a stale baseline entry\n` +
        `${summary}\n--- output (tail) ---\n${out.slice(-6000)}`,
    );
  } finally {
    rmSync(outputDir, { recursive: true, force: true });
  }
});
