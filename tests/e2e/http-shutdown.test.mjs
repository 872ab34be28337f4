// SIGTERM must stop an HTTP server promptly. Clients keep idle keep-alive connections open
// (Node's fetch, which the TypeScript SDK uses, keeps them as long as the server's Keep-Alive
// timeout allows), and httplib's keep-alive wait ignores stop(): with a 30 s keep-alive the
// server took ~30 s to exit after SIGTERM with one idle connection (fixed by a 3 s keep-alive).
// Service managers and `docker stop` (10 s) would kill it before it removes its containers.
// This test closes its client cleanly, sends SIGTERM and allows 10 s.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { deadline, startServer } from './lib/server.mjs';

test('http: SIGTERM after a client has closed: the server exits within 10 s', async () => {
  const server = await startServer({ pool: { min_idle: 1, max_total: 1 } });
  const client = new Client({ name: 'e2e-http-shutdown', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(server.mcpUrl));
  const result = await client.callTool({ name: 'run_python', arguments: { code: 'print(1)' } });
  assert.equal(result.isError, false);
  await client.close();

  const t0 = Date.now();
  server.child.kill('SIGTERM');
  const status = await Promise.race([server.exited, deadline(10_000, null)]);
  const elapsed = Date.now() - t0;
  const stopped = await server.stop(); // waits for the exit (SIGKILL after 45 s) and cleans up
  assert.ok(
    status,
    `sandbox-mcp still running 10 s after SIGTERM (exited after ${Date.now() - t0} ms: ` +
      `${JSON.stringify(stopped)}); log:\n${server.stderrTail(8)}`,
  );
  assert.equal(status.code, 0, `exit ${JSON.stringify(status)} after ${elapsed} ms`);
  assert.deepEqual(stopped.leftovers, []);
});
