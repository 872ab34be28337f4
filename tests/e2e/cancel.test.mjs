// Cancellation with the official TypeScript SDK (1.32.2) over Streamable HTTP: aborting a
// running call sends notifications/cancelled, the call rejects with the abort, and the run is
// really killed. Proof in a recycle pool with a single sandbox: the next call gets a sandbox
// (a run still sleeping would hold the only one for 120 s, longer than the pool's 60 s
// acquire timeout, and the next call would fail as busy). Proof in a fresh pool: the
// container that ran the cancelled code is removed within seconds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { deadline, instanceContainers, sleep, startServer, stopAndCheck, textOf, waitForPool } from './lib/server.mjs';

const LONG_RUN = "import time\nprint('go', flush=True)\ntime.sleep(120)";

// Starts LONG_RUN, calls `whileRunning()` after the first progress notification, then aborts.
// Resolves with the error the call rejected with.
async function runAndAbort(client, whileRunning = async () => {}) {
  const controller = new AbortController();
  const t0 = Date.now();
  const seen = [];
  let firstProgress;
  const progressed = new Promise((resolve) => {
    firstProgress = resolve;
  });
  // timeout_s above the acquire timeout, so only a cancel (not the wall-clock limit) frees it.
  const args = { code: LONG_RUN, timeout_s: 150 };
  const call = client.callTool({ name: 'run_python', arguments: args }, undefined, {
    signal: controller.signal,
    onprogress: (p) => {
      seen.push({ at: Date.now() - t0, ...p });
      firstProgress(p);
    },
    timeout: 150_000,
  });
  const outcome = call.then(
    (result) => ({ result }),
    (error) => ({ error }),
  );
  const first = await Promise.race([progressed, outcome.then(() => null), deadline(60_000, 'timeout')]);
  assert.notEqual(first, 'timeout', 'no progress notification within 60 s of starting the run');
  if (!first) assert.fail(`the call ended before any progress notification: ${JSON.stringify(await outcome)}`);
  await whileRunning();
  const abortedAt = Date.now() - t0;
  controller.abort();
  const settled = await Promise.race([outcome, deadline(10_000, 'timeout')]);
  assert.notEqual(settled, 'timeout', 'the aborted call did not settle within 10 s');
  assert.ok(
    settled.error,
    `the aborted call resolved instead of rejecting (aborted at ${abortedAt} ms, progress ${JSON.stringify(seen)}): ` +
      JSON.stringify(settled.result),
  );
  return settled.error;
}

async function connect(server) {
  const client = new Client({ name: 'e2e-cancel', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(server.mcpUrl));
  return client;
}

test('recycle pool of one sandbox: a cancelled run frees it for the next call', async () => {
  const server = await startServer({ pool: { min_idle: 1, max_total: 1, acquire_timeout_ms: 60_000 } });
  const client = await connect(server);
  try {
    const error = await runAndAbort(client);
    // SDK 1.x rejects with McpError(-32001) whose message carries the AbortError.
    assert.match(String(error), /AbortError|aborted/, `rejected with ${error}`);

    const next = await client.callTool({ name: 'run_python', arguments: { code: 'print(1)' } }, undefined, {
      timeout: 90_000,
    });
    assert.equal(next.isError, false, `follow-up run after the cancel (sandbox still held?): ${textOf(next)}`);
    assert.equal(next.structuredContent.stdout, '1\n');
  } finally {
    await client.close();
    await stopAndCheck(server, assert);
  }
});

test("fresh pool: the cancelled run's container is removed", async () => {
  const server = await startServer({ pool: { mode: 'fresh', min_idle: 1, max_total: 2, acquire_timeout_ms: 60_000 } });
  const client = await connect(server);
  try {
    // The pool is warm with exactly one idle container: the run takes that one.
    const warm = await instanceContainers(server.instanceId);
    assert.equal(warm.length, 1, `one warm container before the run: ${warm}`);
    const [runContainer] = warm;

    const error = await runAndAbort(client, async () => {
      const during = await instanceContainers(server.instanceId);
      assert.ok(during.includes(runContainer), 'the run container exists while the code runs');
    });
    // SDK 1.x rejects with McpError(-32001) whose message carries the AbortError.
    assert.match(String(error), /AbortError|aborted/, `rejected with ${error}`);

    const until = Date.now() + 10_000;
    let present = await instanceContainers(server.instanceId);
    while (present.includes(runContainer) && Date.now() < until) {
      await sleep(200);
      present = await instanceContainers(server.instanceId);
    }
    assert.ok(
      !present.includes(runContainer),
      `container ${runContainer.slice(0, 12)} of the cancelled run still exists 10 s after the cancel`,
    );

    // A fresh pool replaces both containers after the cancel; once one is warm, runs go on.
    await waitForPool(server.baseUrl, { idle: 1 });
    const next = await client.callTool({ name: 'run_python', arguments: { code: 'print(2)' } });
    assert.equal(next.isError, false, textOf(next));
    assert.equal(next.structuredContent.stdout, '2\n');
  } finally {
    await client.close();
    await stopAndCheck(server, assert);
  }
});
