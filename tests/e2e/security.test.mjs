// Transport security against the real server: DNS-rebinding protection (Host and Origin) and the
// bearer token (SANDBOX_MCP_TOKEN), checked with raw HTTP and with the official TS SDK.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startServer, stopAndCheck, textOf } from './lib/server.mjs';

const TOKEN = 'e2e-token-4f1c9a7d2b8e6053';

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'e2e-raw', version: '1.0.0' } },
});

// A raw POST of an initialize request; `headers` may override Host (fetch cannot).
function postInitialize(port, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path: '/mcp',
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          'Content-Length': Buffer.byteLength(INITIALIZE),
          ...headers,
        },
        timeout: 15_000,
      },
      (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('request timed out')));
    req.on('error', reject);
    req.end(INITIALIZE);
  });
}

test('DNS rebinding: a foreign Host or Origin is refused, loopback is served', async () => {
  const server = await startServer({ waitIdle: 0 });
  try {
    const evilHost = await postInitialize(server.port, { Host: 'evil.example.com' });
    assert.ok(evilHost.status >= 400 && evilHost.status < 500, `Host: evil.example.com -> ${evilHost.status} ${evilHost.body}`);

    const evilOrigin = await postInitialize(server.port, { Origin: 'http://evil.example.com' });
    assert.equal(evilOrigin.status, 403, `Origin: http://evil.example.com -> ${evilOrigin.status} ${evilOrigin.body}`);

    const ok = await postInitialize(server.port, { Host: `localhost:${server.port}` });
    assert.equal(ok.status, 200, `Host: localhost -> ${ok.status} ${ok.body}`);
    assert.ok(ok.headers['mcp-session-id'], 'a session id on the initialize response');
  } finally {
    await stopAndCheck(server, assert);
  }
});

test('bearer token: 401 without it or with a wrong one, served with Authorization: Bearer', async () => {
  const server = await startServer({ env: { SANDBOX_MCP_TOKEN: TOKEN } });
  try {
    const none = await postInitialize(server.port);
    assert.equal(none.status, 401, `no token -> ${none.status} ${none.body}`);
    assert.match(String(none.headers['www-authenticate'] ?? ''), /^Bearer/i, 'WWW-Authenticate: Bearer');

    const wrong = await postInitialize(server.port, { Authorization: `Bearer ${TOKEN}x` });
    assert.equal(wrong.status, 401, `wrong token -> ${wrong.status} ${wrong.body}`);

    // The SDK without the token cannot connect.
    const anonymous = new Client({ name: 'e2e-no-token', version: '1.0.0' });
    await assert.rejects(anonymous.connect(new StreamableHTTPClientTransport(server.mcpUrl)), (err) => {
      assert.match(String(err?.message ?? err), /401|nauthorized/);
      return true;
    });

    // The SDK with the token runs code.
    const client = new Client({ name: 'e2e-token', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(server.mcpUrl, {
        requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
      }),
    );
    try {
      const result = await client.callTool({ name: 'run_python', arguments: { code: 'print(1)' } });
      assert.equal(result.isError, false, textOf(result));
      assert.equal(result.structuredContent.stdout, '1\n');
    } finally {
      await client.close();
    }
  } finally {
    await stopAndCheck(server, assert);
  }
});
