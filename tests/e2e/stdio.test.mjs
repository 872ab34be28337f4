// The official TypeScript SDK (1.32.2) over stdio: the SDK spawns `sandbox-mcp --stdio` itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { instanceContainers, sleep, stdioServerParams, textOf } from './lib/server.mjs';

test('stdio: initialize, run_python print(1), no container left when the client closes', async (t) => {
  const { instanceId, configDir, params } = stdioServerParams();
  const transport = new StdioClientTransport(params);
  let stderr = '';
  transport.stderr?.on('data', (chunk) => {
    stderr += chunk.toString();
  });
  const client = new Client({ name: 'e2e-stdio', version: '1.0.0' });
  let exit;
  try {
    await client.connect(transport);
    // Not public API: the child process, to see how it ended.
    const child = transport._process;
    exit = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'run_python'));
    // The pool warms in the background; the first call waits for a sandbox.
    const result = await client.callTool({ name: 'run_python', arguments: { code: 'print(1)' } }, undefined, {
      timeout: 120_000,
    });
    assert.equal(result.isError, false, `${textOf(result)}\n${stderr}`);
    assert.equal(result.structuredContent?.stdout, '1\n');
  } finally {
    const pid = transport.pid;
    const closing = Date.now();
    await client.close(); // closes stdin; 2 s later SIGTERM; 2 s later SIGKILL
    const status = exit ? { ...(await exit), afterMs: Date.now() - closing } : null;
    rmSync(configDir, { recursive: true, force: true });
    // The server removes its containers on the way out; give it the time it takes.
    const deadline = Date.now() + 30_000;
    let left = await instanceContainers(instanceId);
    while (left.length > 0 && Date.now() < deadline) {
      await sleep(500);
      left = await instanceContainers(instanceId);
    }
    const how = `exit ${JSON.stringify(status)} (pid ${pid}); stderr:\n${stderr.slice(-3000)}`;
    // How fast the server exits is checked by stdio-shutdown.test.mjs (known failing); here:
    // whichever way it ended, none of its containers may survive it.
    t.diagnostic(`stdio server ended: ${JSON.stringify(status)}`);
    assert.deepEqual(left, [], `containers left after the stdio server exited: ${how}`);
  }
});
