// A stdio server must exit when its stdin closes. The official TypeScript SDK (1.32.2) stops
// one the way Claude Desktop and Cursor do: StdioClientTransport.close() ends stdin, sends
// SIGTERM 2 s later and SIGKILL 2 s after that. Closing right after the handshake catches the
// first warm containers while they start (seconds; more on a loaded machine or with a larger
// preload). sandbox-mcp's shutdown used to wait for those starts and ignore SIGTERM meanwhile,
// ending in the SDK's SIGKILL on a loaded machine; now the pool cancels starts in flight
// (SandboxFactory::CancelStarts). The test asks for an exit on its own, before the SDK's
// SIGTERM (2 s).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { instanceContainers, sleep, stdioServerParams } from './lib/server.mjs';

test('stdio: closing stdin while a sandbox is starting: the server exits on its own, before the SDK signals it', async () => {
  // A larger preload makes the start long enough to show the problem on an idle machine too.
  const { instanceId, configDir, params } = stdioServerParams({
    pool: { preload: ['numpy', 'pandas', 'matplotlib', 'scipy', 'scipy.stats', 'scipy.optimize', 'sympy'] },
  });
  const transport = new StdioClientTransport(params);
  let stderr = '';
  transport.stderr?.on('data', (chunk) => {
    stderr += chunk.toString();
  });
  const client = new Client({ name: 'e2e-stdio-shutdown', version: '1.0.0' });
  await client.connect(transport);
  const child = transport._process; // not public API: to see how the process ended
  const exit = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));

  const closing = Date.now();
  await client.close();
  const status = { ...(await exit), afterMs: Date.now() - closing };
  rmSync(configDir, { recursive: true, force: true });

  const deadline = Date.now() + 30_000;
  let left = await instanceContainers(instanceId);
  while (left.length > 0 && Date.now() < deadline) {
    await sleep(500);
    left = await instanceContainers(instanceId);
  }
  const how = `exit ${JSON.stringify(status)}; stderr:\n${stderr.slice(-2000)}`;
  assert.notEqual(status.signal, 'SIGKILL', `the SDK had to SIGKILL the stdio server: ${how}`);
  assert.equal(status.code, 0, how);
  assert.ok(status.afterMs < 2000, `the server exited ${status.afterMs} ms after stdin closed (the SDK sends SIGTERM at 2 s): ${how}`);
  assert.deepEqual(left, [], `containers left 30 s after the stdio server ended: ${how}`);
});
