// The user flows every MCP client must get through, written once against a small adapter so
// that the official clients of both eras and @ai-sdk/mcp run exactly the same checks:
//   call(name, args, {signal}) -> CallToolResult   (rejects on a JSON-RPC error or an abort)
//   readResource(uri) -> ReadResourceResult
import assert from 'node:assert/strict';
import { deadline, PNG_SIGNATURE, textOf } from './server.mjs';

// run_python draws a figure: the result carries it as a PNG image block.
export async function plotFlow({ call }) {
  const result = await call('run_python', {
    code: "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.title('squares')\nplt.show()\nprint('drawn')",
  });
  assert.equal(result.isError, false, textOf(result));
  assert.equal(result.structuredContent?.stdout, 'drawn\n');
  const images = result.content.filter((c) => c.type === 'image');
  assert.equal(images.length, 1, `one image block: ${JSON.stringify(result.content.map((c) => c.type))}`);
  assert.equal(images[0].mimeType, 'image/png');
  assert.ok(Buffer.from(images[0].data, 'base64').subarray(0, 8).equals(PNG_SIGNATURE));
}

// A session: upload a file, compute with it across two runs, download what the code wrote,
// read it as a resource too, close the session.
export async function sessionFilesFlow({ call, readResource }) {
  const created = await call('session_create', {});
  assert.equal(created.isError, false, textOf(created));
  const id = created.structuredContent?.session_id;
  assert.match(id ?? '', /^[0-9a-f]{32}$/, `session_create returned ${JSON.stringify(created)}`);
  try {
    const csv = 'x,y\n1,2\n3,4\n';
    const up = await call('session_upload_file', {
      session_id: id,
      path: 'points.csv',
      content_base64: Buffer.from(csv).toString('base64'),
    });
    assert.equal(up.isError, false, textOf(up));
    const load = await call('run_python', {
      session_id: id,
      code: "import csv\nrows = list(csv.DictReader(open('points.csv')))\nprint(len(rows))",
    });
    assert.equal(load.isError, false, textOf(load));
    assert.equal(load.structuredContent?.stdout, '2\n');
    const write = await call('run_python', {
      session_id: id,
      code: "total = sum(int(r['x']) * int(r['y']) for r in rows)\nopen('total.txt', 'w').write(str(total))\ntotal",
    });
    assert.equal(write.isError, false, textOf(write));
    assert.equal(write.structuredContent?.value, '14');
    const down = await call('session_download_file', { session_id: id, path: 'total.txt' });
    assert.equal(down.isError, false, textOf(down));
    const embedded = down.content.find((c) => c.type === 'resource');
    assert.equal(embedded?.resource?.text, '14');
    const read = await readResource(`sandbox://sessions/${id}/files/points.csv`);
    assert.equal(read.contents[0].text, csv);
  } finally {
    const closed = await call('session_close', { session_id: id });
    assert.equal(closed.isError, false, textOf(closed));
  }
}

// A run the client gives up on is killed: abort a 120 s sleep, then the only sandbox of the
// pool (max_total 1, acquire timeout below the sleep) must serve the next call. `abortable`
// is false for clients whose abort cannot reach a running request.
export async function cancelFlow({ call }) {
  const controller = new AbortController();
  const started = call(
    'run_python',
    { code: "import time\nprint('go', flush=True)\ntime.sleep(120)", timeout_s: 150 },
    { signal: controller.signal },
  ).then(
    (result) => ({ result }),
    (error) => ({ error }),
  );
  // No progress callback is common to every client: give the run time to start.
  await deadline(3_000);
  controller.abort();
  const settled = await Promise.race([started, deadline(15_000, 'timeout')]);
  assert.notEqual(settled, 'timeout', 'the aborted call did not settle within 15 s');
  assert.ok(settled.error, `the aborted call resolved: ${JSON.stringify(settled.result)}`);
  const t0 = Date.now();
  const next = await call('run_python', { code: 'print("after")' });
  assert.equal(next.isError, false, textOf(next));
  assert.equal(next.structuredContent?.stdout, 'after\n');
  assert.ok(Date.now() - t0 < 60_000, 'the next run waited for the cancelled one');
}
