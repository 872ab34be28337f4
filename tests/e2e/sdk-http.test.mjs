// The official TypeScript SDK (1.32.2) over Streamable HTTP (/mcp), through the real server
// and real Docker: tool listing with schemas, a plain run, a figure as a PNG image block, a
// Python exception as a tool error, and live output as progress notifications before the result.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { PNG_SIGNATURE, startServer, stopAndCheck, textOf } from './lib/server.mjs';

let server;
let client;

before(async () => {
  server = await startServer();
  client = new Client({ name: 'e2e-sdk-http', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(server.mcpUrl));
});

after(async () => {
  await client?.close();
  if (server) await stopAndCheck(server, assert);
});

test('initialize: server info, tools capability and a session id', () => {
  const info = client.getServerVersion();
  assert.equal(typeof info?.name, 'string');
  assert.ok(client.getServerCapabilities()?.tools, 'tools capability advertised');
  assert.ok(client.transport.sessionId, 'Mcp-Session-Id was set on the initialize response');
});

test('tools/list: run_python with inputSchema and outputSchema, and sandbox_info', async () => {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  assert.ok(names.includes('run_python'), `tools: ${names}`);
  assert.ok(names.includes('sandbox_info'), `tools: ${names}`);
  const run = tools.find((t) => t.name === 'run_python');
  assert.equal(run.inputSchema.type, 'object');
  assert.equal(run.inputSchema.properties.code.type, 'string');
  assert.deepEqual(run.inputSchema.required, ['code']);
  assert.equal(run.outputSchema?.type, 'object');
  for (const key of ['verdict', 'stdout', 'stderr', 'exit_code']) {
    assert.ok(run.outputSchema.properties?.[key], `outputSchema has ${key}`);
  }
  // The product has no conformance fixture tools (they are the test server's, tests/conformance).
  assert.ok(!names.some((n) => n.startsWith('test_')), `fixture tools leaked: ${names}`);
});

test('run_python print(1): verdict ok, stdout "1\\n", isError false', async () => {
  const result = await client.callTool({ name: 'run_python', arguments: { code: 'print(1)' } });
  assert.equal(result.isError, false);
  assert.equal(result.structuredContent?.verdict, 'ok');
  assert.equal(result.structuredContent.stdout, '1\n');
  assert.equal(result.structuredContent.exit_code, 0);
  assert.match(textOf(result), /1/);
});

test('run_python plot: exactly one image block holding a PNG', async () => {
  const code = 'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()';
  const result = await client.callTool({ name: 'run_python', arguments: { code } });
  assert.equal(result.isError, false, textOf(result));
  const images = result.content.filter((c) => c.type === 'image');
  assert.equal(images.length, 1, `content types: ${result.content.map((c) => c.type)}`);
  assert.equal(images[0].mimeType, 'image/png');
  const bytes = Buffer.from(images[0].data, 'base64');
  assert.ok(bytes.length > 1000, `PNG of ${bytes.length} bytes`);
  assert.deepEqual(bytes.subarray(0, 8), PNG_SIGNATURE);
  assert.equal(result.structuredContent?.images?.length, 1);
  assert.equal(result.structuredContent.images[0].mime_type, 'image/png');
});

test('run_python 1/0: isError true with a ZeroDivisionError traceback', async () => {
  const result = await client.callTool({ name: 'run_python', arguments: { code: '1/0' } });
  assert.equal(result.isError, true);
  assert.notEqual(result.structuredContent?.verdict, 'ok');
  assert.equal(result.structuredContent?.traceback?.type, 'ZeroDivisionError');
  assert.match(textOf(result), /ZeroDivisionError/);
});

test('unknown tool and bad arguments: JSON-RPC -32602 naming the problem', async () => {
  await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), (err) => {
    assert.equal(err.code, -32602, String(err));
    return true;
  });
  await assert.rejects(client.callTool({ name: 'run_python', arguments: { code: 42 } }), (err) => {
    assert.equal(err.code, -32602, String(err));
    assert.match(err.message, /code/);
    return true;
  });
});

test('run_python files: an input file in, a written file back as structured info and a resource', async () => {
  const csv = 'x,y\n1,2\n3,4\n';
  const code = [
    'import csv',
    "rows = list(csv.DictReader(open('data/in.csv')))",
    "total = sum(int(r['x']) + int(r['y']) for r in rows)",
    "open('out.txt', 'w').write(f'total={total}')",
    'print(total)',
  ].join('\n');
  const result = await client.callTool({
    name: 'run_python',
    arguments: { code, files: [{ path: 'data/in.csv', content_base64: Buffer.from(csv).toString('base64') }] },
  });
  assert.equal(result.isError, false, textOf(result));
  assert.equal(result.structuredContent.stdout, '10\n');
  const out = result.structuredContent.files?.find((f) => f.path === 'out.txt');
  assert.ok(out, `files: ${JSON.stringify(result.structuredContent.files)}`);
  assert.equal(out.size, 'total=10'.length);
  const resources = result.content.filter((c) => c.type === 'resource');
  const text = resources
    .map((r) => r.resource.text ?? Buffer.from(r.resource.blob ?? '', 'base64').toString())
    .join('\n');
  assert.match(text, /total=10/, `embedded resources: ${JSON.stringify(resources)}`);
});

test('a long silent run keeps a client that resets its timeout on progress waiting', async () => {
  // 22 s of silence with a 15 s request timeout: only the server's periodic progress (at
  // least every 10 s) keeps the SDK from giving up.
  const seen = [];
  const result = await client.callTool(
    { name: 'run_python', arguments: { code: 'import time\ntime.sleep(22)\nprint("done")' } },
    undefined,
    { onprogress: (p) => seen.push(p), timeout: 15_000, resetTimeoutOnProgress: true },
  );
  assert.equal(result.isError, false, textOf(result));
  assert.equal(result.structuredContent.stdout, 'done\n');
  assert.ok(seen.length >= 2, `progress during the silence: ${JSON.stringify(seen)}`);
});

test('sandbox_info: python version and packages', async () => {
  const result = await client.callTool({ name: 'sandbox_info', arguments: {} });
  assert.notEqual(result.isError, true, textOf(result));
  const all = JSON.stringify(result);
  assert.match(all, /3\.\d+/, 'a Python version');
  assert.match(all, /numpy/);
});

test('progress: five lines as progress notifications spread over time, before the result', async () => {
  const code = 'import time\nfor i in range(5):\n    print(i, flush=True)\n    time.sleep(1)';
  const events = [];
  const started = Date.now();
  const result = await client.callTool({ name: 'run_python', arguments: { code } }, undefined, {
    onprogress: (p) => events.push({ kind: 'progress', at: Date.now() - started, ...p }),
    resetTimeoutOnProgress: true,
    timeout: 60_000,
  });
  events.push({ kind: 'result', at: Date.now() - started });
  assert.equal(result.isError, false, textOf(result));
  assert.equal(result.structuredContent.stdout, '0\n1\n2\n3\n4\n');

  const progress = events.filter((e) => e.kind === 'progress');
  const dump = JSON.stringify(progress);
  assert.ok(progress.length >= 5, `at least 5 progress notifications, got ${dump}`);
  assert.equal(events.at(-1).kind, 'result', 'every notification arrived before the result');
  for (let i = 1; i < progress.length; i++) {
    assert.ok(progress[i].progress > progress[i - 1].progress, `progress strictly increasing: ${dump}`);
  }
  // Each line 0..4 appears in a notification's message, in order.
  const lineAt = [];
  for (let line = 0; line < 5; line++) {
    const re = new RegExp(`(^|\\D)${line}(\\D|$)`);
    const from = line === 0 ? 0 : lineAt[line - 1];
    const idx = progress.findIndex((p, k) => k >= from && typeof p.message === 'string' && re.test(p.message));
    assert.ok(idx >= 0, `line ${line} in a progress message at or after #${from}: ${dump}`);
    lineAt.push(idx);
  }
  const spread = progress[lineAt[4]].at - progress[lineAt[0]].at;
  assert.ok(spread >= 2000, `lines 0 and 4 arrived ${spread} ms apart (live, not batched): ${dump}`);
});

test('a 9 MB tool call is refused with 413, and the SDK error names server.max_body_bytes', async () => {
  // The connection guard answers before reading the body; the SDK shows the JSON body's text.
  const code = `x = "${'a'.repeat(9 << 20)}"`;
  await assert.rejects(
    client.callTool({ name: 'run_python', arguments: { code } }),
    (error) => {
      assert.match(String(error?.message), /413/, String(error?.message));
      assert.match(String(error?.message), /server\.max_body_bytes/, String(error?.message));
      return true;
    },
  );
  // The client's session still works afterwards.
  const result = await client.callTool({ name: 'run_python', arguments: { code: 'print(2)' } });
  assert.equal(result.structuredContent?.stdout, '2\n');
});
