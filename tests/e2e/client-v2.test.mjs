// The v2 TypeScript client (@modelcontextprotocol/client 2.4.0) over Streamable HTTP: the plain
// (legacy-era) connect, and `versionNegotiation: {mode: 'auto'}`, which probes `server/discover`
// first and, since this server speaks 2026-07-28, stays in the modern era without initialize
// (clients-2026.test.mjs runs the longer flows in that era).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startServer, stopAndCheck, textOf } from './lib/server.mjs';

let server;

before(async () => {
  server = await startServer();
});

after(async () => {
  if (server) await stopAndCheck(server, assert);
});

async function runWithProgress(client) {
  const code = "import time\nfor i in range(3):\n    print('v2 line', i, flush=True)\n    time.sleep(0.5)";
  const events = [];
  const result = await client.callTool(
    { name: 'run_python', arguments: { code } },
    { onprogress: (p) => events.push({ kind: 'progress', ...p }) },
  );
  events.push({ kind: 'result' });
  assert.equal(result.isError, false, textOf(result));
  assert.equal(result.structuredContent?.verdict, 'ok');
  assert.equal(result.structuredContent.stdout, 'v2 line 0\nv2 line 1\nv2 line 2\n');
  const progress = events.filter((e) => e.kind === 'progress');
  const messages = progress.map((e) => e.message ?? '').join('\n');
  assert.ok(progress.length >= 3, `progress notifications: ${JSON.stringify(progress)}`);
  for (let i = 0; i < 3; i++) assert.match(messages, new RegExp(`v2 line ${i}`));
  assert.equal(events.at(-1).kind, 'result', 'progress arrived before the result');
}

test('v2 client, default (legacy) negotiation: connect, list, run_python with onprogress', async () => {
  const client = new Client({ name: 'e2e-client-v2', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(server.mcpUrl));
  try {
    assert.equal(client.getProtocolEra(), 'legacy');
    assert.match(client.getNegotiatedProtocolVersion() ?? '', /^\d{4}-\d{2}-\d{2}$/);
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'run_python'));
    await runWithProgress(client);
  } finally {
    await client.close();
  }
});

test('v2 client, versionNegotiation auto: the discover probe settles on 2026-07-28', async () => {
  const client = new Client(
    { name: 'e2e-client-v2-auto', version: '1.0.0' },
    // A generous probe timeout: on HTTP a timeout rejects the connect, so passing proves the
    // server answered the probe instead of leaving it hanging.
    { versionNegotiation: { mode: 'auto', probe: { timeoutMs: 15_000 } } },
  );
  const t0 = Date.now();
  await client.connect(new StreamableHTTPClientTransport(server.mcpUrl));
  const elapsed = Date.now() - t0;
  try {
    assert.equal(client.getProtocolEra(), 'modern');
    assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
    assert.ok(elapsed < 10_000, `connect with the probe took ${elapsed} ms`);
    await runWithProgress(client);
  } finally {
    await client.close();
  }
});
