// Sessions through the official TypeScript SDK (1.32.2) over Streamable HTTP, against the real
// server and engine: the walk-through (create a session, upload a CSV, load it with
// pandas, plot a column, download a file written by a later call, read it as an MCP
// resource), a session that outlives the client that created it, the stated condition after a
// limit kill (restarted empty), and ownership across two bearer tokens.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { PNG_SIGNATURE, startServer, stopAndCheck, textOf } from './lib/server.mjs';

const ALICE = 'alice-token-0123456789abcdef';
const BOB = 'bob-token-0123456789abcdef';

let server;

before(async () => {
  server = await startServer({
    config: {
      server: { tokens: { alice: ALICE, bob: BOB } },
      // restart_grace_s 0: the sessions end with the server (stopAndCheck expects no leftovers).
      sessions: { warm: 1, max_per_principal: 3, restart_grace_s: 0 },
    },
  });
});

after(async () => {
  if (server) await stopAndCheck(server, assert);
});

async function connect(token, name = 'e2e-sessions') {
  const client = new Client({ name, version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(server.mcpUrl, {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

async function call(client, name, args) {
  return client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 });
}

async function createSession(client) {
  const created = await call(client, 'session_create', {});
  assert.equal(created.isError, false, textOf(created));
  const id = created.structuredContent?.session_id;
  assert.match(id ?? '', /^[0-9a-f]{32}$/, `session_create returned ${JSON.stringify(created)}`);
  return id;
}

test('tools/list offers the session tools and resources are announced', async () => {
  const client = await connect(ALICE);
  try {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const n of ['session_create', 'session_list', 'session_close', 'session_upload_file',
      'session_list_files', 'session_download_file']) {
      assert.ok(names.includes(n), `missing tool ${n}: ${names}`);
    }
    const run = tools.find((t) => t.name === 'run_python');
    assert.ok(run.inputSchema.properties.session_id, 'run_python takes session_id');
    assert.ok(client.getServerCapabilities()?.resources, 'resources capability advertised');
  } finally {
    await client.close();
  }
});

test('walk-through: upload a CSV, load it with pandas, plot a column, download a written file', async () => {
  const client = await connect(ALICE);
  try {
    const id = await createSession(client);
    const csv = 'day,temp\n1,20.5\n2,22.0\n3,19.5\n4,24.0\n';
    const up = await call(client, 'session_upload_file', {
      session_id: id,
      path: 'weather.csv',
      content_base64: Buffer.from(csv).toString('base64'),
    });
    assert.equal(up.isError, false, textOf(up));

    const load = await call(client, 'run_python', {
      session_id: id,
      code: "import pandas as pd\ndf = pd.read_csv('weather.csv')\nprint(len(df), df['temp'].max())",
    });
    assert.equal(load.isError, false, textOf(load));
    assert.equal(load.structuredContent?.stdout, '4 24.0\n');

    const plot = await call(client, 'run_python', {
      session_id: id,
      code: "import matplotlib.pyplot as plt\ndf.plot(x='day', y='temp')\nplt.show()",
    });
    assert.equal(plot.isError, false, textOf(plot));
    const images = plot.content.filter((c) => c.type === 'image');
    assert.equal(images.length, 1, `one image block: ${JSON.stringify(plot.content.map((c) => c.type))}`);
    assert.ok(Buffer.from(images[0].data, 'base64').subarray(0, 8).equals(PNG_SIGNATURE));

    const write = await call(client, 'run_python', {
      session_id: id,
      code: "df['temp'].describe().to_csv('summary.csv')\nround(df['temp'].mean(), 2)",
    });
    assert.equal(write.isError, false, textOf(write));
    assert.equal(write.structuredContent?.value, '21.5');

    const listed = await call(client, 'session_list_files', { session_id: id });
    assert.equal(listed.isError, false, textOf(listed));
    assert.match(textOf(listed), /summary\.csv/);
    assert.match(textOf(listed), /weather\.csv/);

    const down = await call(client, 'session_download_file', { session_id: id, path: 'summary.csv' });
    assert.equal(down.isError, false, textOf(down));
    const res = down.content.find((c) => c.type === 'resource');
    assert.ok(res, `an embedded resource: ${JSON.stringify(down.content.map((c) => c.type))}`);
    assert.equal(res.resource.uri, `sandbox://sessions/${id}/files/summary.csv`);
    assert.match(res.resource.text, /^,temp\ncount,4\.0\n/);

    // The same file as an MCP resource.
    const { resources } = await client.listResources();
    const uris = resources.map((r) => r.uri);
    assert.ok(uris.includes(`sandbox://sessions/${id}/files/summary.csv`), `resources: ${uris}`);
    const read = await client.readResource({ uri: `sandbox://sessions/${id}/files/weather.csv` });
    assert.equal(read.contents[0].text, csv);

    const missing = await call(client, 'session_download_file', { session_id: id, path: 'nope.txt' });
    assert.equal(missing.isError, true);
    assert.match(textOf(missing), /no such file/);

    const closed = await call(client, 'session_close', { session_id: id });
    assert.equal(closed.isError, false, textOf(closed));
    const after = await call(client, 'run_python', { session_id: id, code: 'print(1)' });
    assert.equal(after.isError, true);
    assert.match(textOf(after), /session/);
  } finally {
    await client.close();
  }
});

test('a session outlives the client connection that created it', async () => {
  const first = await connect(ALICE, 'e2e-first');
  const id = await createSession(first);
  const set = await call(first, 'run_python', { session_id: id, code: "answer = 6 * 7\nopen('kept.txt', 'w').write('yes')" });
  assert.equal(set.isError, false, textOf(set));
  await first.close();

  const second = await connect(ALICE, 'e2e-second');
  try {
    const list = await call(second, 'session_list', {});
    assert.equal(list.isError, false, textOf(list));
    assert.match(textOf(list), new RegExp(id));
    const got = await call(second, 'run_python', { session_id: id, code: "answer, open('kept.txt').read()" });
    assert.equal(got.isError, false, textOf(got));
    assert.equal(got.structuredContent?.value, "(42, 'yes')");
    await call(second, 'session_close', { session_id: id });
  } finally {
    await second.close();
  }
});

test('a run killed by its time limit leaves the session restarted empty, and says so', async () => {
  const client = await connect(ALICE);
  try {
    const id = await createSession(client);
    await call(client, 'run_python', { session_id: id, code: 'x = 1' });
    const killed = await call(client, 'run_python', { session_id: id, code: 'while True:\n    pass', timeout_s: 1 });
    assert.equal(killed.isError, true);
    assert.equal(killed.structuredContent?.verdict, 'timeout');
    assert.equal(killed.structuredContent?.session_reset, true);
    assert.match(textOf(killed), /restarted empty/);
    const next = await call(client, 'run_python', { session_id: id, code: 'x' });
    assert.equal(next.structuredContent?.verdict, 'error');
    assert.match(textOf(next), /NameError/);
    await call(client, 'session_close', { session_id: id });
  } finally {
    await client.close();
  }
});

test('sessions belong to their token: another token cannot list, run in or read them', async () => {
  const alice = await connect(ALICE, 'e2e-alice');
  const bob = await connect(BOB, 'e2e-bob');
  try {
    const id = await createSession(alice);
    await call(alice, 'session_upload_file', { session_id: id, path: 'secret.txt', content_base64: Buffer.from('s3cret').toString('base64') });
    const list = await call(bob, 'session_list', {});
    assert.doesNotMatch(textOf(list), new RegExp(id));
    const run = await call(bob, 'run_python', { session_id: id, code: 'print(1)' });
    assert.equal(run.isError, true);
    assert.match(textOf(run), /no session/);
    await assert.rejects(bob.readResource({ uri: `sandbox://sessions/${id}/files/secret.txt` }));
    const { resources } = await bob.listResources();
    assert.ok(!resources.some((r) => r.uri.includes(id)), 'bob sees none of alice\'s files');
    await call(alice, 'session_close', { session_id: id });
  } finally {
    await alice.close();
    await bob.close();
  }
});
