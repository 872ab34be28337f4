// Running the official conformance suite (either version) and reading its saved results.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { E2E_DIR } from './server.mjs';

// Runs `node script args...` in tests/e2e; resolves with its exit and its whole output.
export function runSuite(node, script, args, timeoutMs) {
  return new Promise((resolve, reject) => {
    const child = spawn(node, [script, ...args], { cwd: E2E_DIR, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (out += c));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`conformance did not finish within ${timeoutMs} ms:\n${out}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, out });
    });
  });
}

// scenario -> its checks, from the directories the suite saved under `outputDir`.
export function readResults(outputDir) {
  const results = new Map();
  for (const dir of readdirSync(outputDir).sort()) {
    try {
      const checks = JSON.parse(readFileSync(path.join(outputDir, dir, 'checks.json'), 'utf8'));
      results.set(dir.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T.*$/, ''), checks);
    } catch {
      // not a scenario directory
    }
  }
  return results;
}

export const failures = (checks) => checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');

// One line per scenario: "PASS scenario (n checks)" or "FAIL scenario: check: message; ...".
export function summarize(results) {
  return [...results]
    .map(([name, checks]) => {
      const failed = failures(checks);
      return failed.length === 0
        ? `PASS ${name} (${checks.length} checks)`
        : `FAIL ${name}: ${failed.map((c) => `${c.status} ${c.id}: ${c.errorMessage ?? c.description ?? ''}`).join('; ')}`;
    })
    .join('\n');
}
