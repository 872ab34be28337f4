// MCP 2026-07-28 with the official v2 client (@modelcontextprotocol/client 2.4.0, versionNegotiation
// auto: server/discover first, no initialize) and, beside it, the v1 SDK (1.32.2, the legacy era
// with initialize): the same flows on one server: a plot, a session with files, cancellation.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { cancelFlow, plotFlow, sessionFilesFlow } from './lib/flows.mjs';
import { startServer, stopAndCheck } from './lib/server.mjs';

let server;

before(async () => {
  // One sandbox, and an acquire timeout shorter than the cancelled run's sleep.
  server = await startServer({ pool: { min_idle: 1, max_total: 1, acquire_timeout_ms: 60_000 } });
});

after(async () => {
  if (server) await stopAndCheck(server, assert);
});

async function connectV2() {
  const client = new ClientV2(
    { name: 'e2e-client-v2-modern', version: '1.0.0' },
    { versionNegotiation: { mode: 'auto' } },
  );
  await client.connect(new TransportV2(server.mcpUrl));
  assert.equal(client.getProtocolEra(), 'modern');
  assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
  return {
    client,
    call: (name, args, { signal } = {}) =>
      client.callTool({ name, arguments: args }, { signal, timeout: 150_000 }),
    readResource: (uri) => client.readResource({ uri }),
  };
}

async function connectV1() {
  const client = new ClientV1({ name: 'e2e-sdk-v1', version: '1.0.0' });
  await client.connect(new TransportV1(server.mcpUrl));
  assert.equal(client.getServerVersion()?.name, 'sandbox-mcp');
  return {
    client,
    call: (name, args, { signal } = {}) =>
      client.callTool({ name, arguments: args }, undefined, { signal, timeout: 150_000 }),
    readResource: (uri) => client.readResource({ uri }),
  };
}

for (const [label, connect] of [['v2 client, 2026-07-28', connectV2], ['v1 SDK, 2025-11-25', connectV1]]) {
  test(`${label}: run_python draws a plot`, async () => {
    const c = await connect();
    try {
      await plotFlow(c);
    } finally {
      await c.client.close();
    }
  });

  test(`${label}: a session with files`, async () => {
    const c = await connect();
    try {
      await sessionFilesFlow(c);
    } finally {
      await c.client.close();
    }
  });

  test(`${label}: an aborted run is killed`, async () => {
    const c = await connect();
    try {
      await cancelFlow(c);
    } finally {
      await c.client.close();
    }
  });
}

test('v2 client, 2026-07-28: the server identifies itself and lists its tools with caching hints', async () => {
  const c = await connectV2();
  try {
    const listed = await c.client.listTools();
    assert.ok(listed.tools.some((t) => t.name === 'run_python'));
    assert.equal(c.client.getServerVersion()?.name, 'sandbox-mcp');
  } finally {
    await c.client.close();
  }
});
