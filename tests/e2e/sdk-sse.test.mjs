// The official TypeScript SDK (1.32.2) over the legacy HTTP+SSE transport (GET /sse, POST
// /messages), through the real server and real Docker.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { startServer, stopAndCheck, textOf } from './lib/server.mjs';

let server;
let client;

before(async () => {
  server = await startServer();
  client = new Client({ name: 'e2e-sdk-sse', version: '1.0.0' });
  await client.connect(new SSEClientTransport(server.sseUrl));
});

after(async () => {
  await client?.close();
  if (server) await stopAndCheck(server, assert);
});

test('legacy SSE: initialize and tools/list', async () => {
  assert.ok(client.getServerCapabilities()?.tools, 'tools capability advertised');
  const { tools } = await client.listTools();
  assert.ok(tools.some((t) => t.name === 'run_python'));
});

test('legacy SSE: run_python print(1)', async () => {
  const result = await client.callTool({ name: 'run_python', arguments: { code: 'print(1)' } });
  assert.equal(result.isError, false, textOf(result));
  assert.equal(result.structuredContent?.verdict, 'ok');
  assert.equal(result.structuredContent.stdout, '1\n');
});

test('legacy SSE: progress notifications arrive before the result', async () => {
  const code = "import time\nfor i in range(2):\n    print('line', i, flush=True)\n    time.sleep(0.5)";
  const events = [];
  const result = await client.callTool({ name: 'run_python', arguments: { code } }, undefined, {
    onprogress: (p) => events.push({ kind: 'progress', ...p }),
  });
  events.push({ kind: 'result' });
  assert.equal(result.isError, false, textOf(result));
  const messages = events.filter((e) => e.kind === 'progress').map((e) => e.message ?? '').join('\n');
  assert.match(messages, /line 0/);
  assert.match(messages, /line 1/);
  assert.equal(events.at(-1).kind, 'result');
});
