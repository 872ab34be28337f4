// Memory-pressure workloads of the soak (issue 34, docs/memory-budget.md): answers at their
// byte bounds, a reader that stalls, and task results kept after their request. Each checks the
// bound it exercises and returns the verdict it observed; the soak's RSS check then shows that
// the server stays flat under them.
import http from 'node:http';
import { deadline, sleep } from '../e2e/lib/server.mjs';

// Bounds small enough that every cycle reaches them.
export const PRESSURE_CONFIG = {
  output: { max_figure_bytes: 1 << 20, max_figures_bytes: 2 << 20 },
  tasks: { max_result_bytes: 32 << 20, max_result_bytes_per_principal: 16 << 20 },
  memory: { stream_queue_bytes: 1 << 20 },
};

// The soak's own check (a failed one is a CheckFailed), set by pressureWorkloads.
let check = () => {};

// An answer's bytes as the client received them (the SDK hands over the parsed result).
const answerBytes = (result) => Buffer.byteLength(JSON.stringify(result));

// The legacy /sse stream, read until its endpoint event and never again: the socket's receive
// window fills, and the server's queue for it is all that can grow. Resolves with the messages
// URL, drain() (reads the rest and resolves with its last 4 KiB once the server ends the stream)
// and close().
function stalledSse(baseUrl) {
  return new Promise((resolve, reject) => {
    const req = http.get(`${baseUrl}/sse`, { agent: false, headers: { Accept: 'text/event-stream' } }, (res) => {
      let buffered = '';
      const onData = (chunk) => {
        buffered += chunk;
        const m = /event: endpoint\r?\ndata: (\S+)/.exec(buffered);
        if (!m) return;
        res.off('data', onData);
        res.pause();
        const drain = () => new Promise((done) => {
          let tail = '';
          res.on('data', (c) => (tail = (tail + c).slice(-4096)));
          res.on('end', () => done(tail));
          res.on('close', () => done(tail));
          res.on('error', () => done(tail));
          res.resume();
        });
        resolve({ messagesUrl: new URL(m[1], baseUrl).href, drain, close: () => req.destroy() });
      };
      res.on('data', onData);
    });
    req.on('error', reject);
  });
}

function post(url, body) {
  return new Promise((resolve) => {
    const req = http.request(url, { method: 'POST', agent: false, headers: { 'Content-Type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', () => resolve(0));
    req.end(body);
  });
}

// One 2026-07-28 request with the tasks extension; resolves with the JSON-RPC answer.
let nextId = 1;
async function rpc2026(mcpUrl, method, params, name) {
  const id = nextId++;
  const res = await fetch(mcpUrl, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': method, 'Mcp-Name': name },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
      'io.modelcontextprotocol/clientInfo': { name: 'soak-tasks', version: '1.0.0' } } } }),
  });
  const text = await res.text();
  if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) return JSON.parse(text);
  for (const line of text.split('\n')) {
    if (!line.startsWith('data: ')) continue;
    const message = JSON.parse(line.slice(6));
    if (message.id === id) return message;
  }
  throw new Error(`the stream of ${method} ended without an answer`);
}

export function pressureWorkloads({ call, expectVerdict, check: soakCheck }) {
  check = soakCheck;
  return {
    // Two noise figures: one within max_figure_bytes (kept), one far over it (dropped).
    async bigplot(client, n) {
      const code = [
        'import numpy as np', 'import matplotlib.pyplot as plt',
        `rng = np.random.default_rng(${n})`,
        'for side in (300, 1500):',
        '    fig = plt.figure(figsize=(side / 100, side / 100), dpi=100)',
        '    fig.figimage(rng.integers(0, 255, (side, side, 3), dtype=np.uint8))',
        '    plt.show()',
      ].join('\n');
      const r = await call(client, 'run_python', { code, output_bytes: 1024 });
      expectVerdict(r, 'ok');
      check(r.structuredContent.images_truncated === true, 'images_truncated not set with a 1500 px noise figure');
      const blocks = r.content.filter((c) => c.type === 'image');
      check(blocks.length === 1, `${blocks.length} image blocks, expected the small figure only`);
      const png = Buffer.from(blocks[0].data, 'base64').length;
      check(png <= PRESSURE_CONFIG.output.max_figure_bytes, `a figure of ${png} bytes passed max_figure_bytes`);
      // The figures' bound in base64, twice over for everything else in the answer.
      const bound = 2 * Math.ceil((PRESSURE_CONFIG.output.max_figures_bytes * 4) / 3);
      check(answerBytes(r) <= bound, `answer of ${answerBytes(r)} bytes, above ${bound}`);
      return 'ok';
    },

    // Output made of control bytes (six characters each when JSON escapes them naively).
    async ctrlflood(client) {
      const limit = 256 << 10;
      const code = `import sys\nsys.stdout.write('\\x01' * ${limit - 1024})`;
      const r = await call(client, 'run_python', { code, output_bytes: limit });
      expectVerdict(r, 'ok');
      // docs/memory-budget.md: an answer's output is bounded as sent, escapes included.
      const bound = 2 * limit + (128 << 10);
      check(answerBytes(r) <= bound, `answer of ${answerBytes(r)} bytes for ${limit} bytes of output, above ${bound}`);
      return 'ok';
    },

    // A legacy SSE reader that stops reading while requests keep answering into its stream:
    // the server drops it once its queue passes memory.stream_queue_bytes. A paused stream
    // shows its end only once read, so the sign is the POST the server refuses (404: the
    // session is gone); then the reader drains what was sent and finds the last event.
    async stalled(_client, n, baseUrl) {
      const sse = await stalledSse(baseUrl);
      try {
        const id = `soak-${n}-${'i'.repeat(256 << 10)}`;
        let refused = 0;
        for (let i = 0; i < 64 && !refused; i += 1) {
          const status = await post(sse.messagesUrl, JSON.stringify({ jsonrpc: '2.0', id: `${id}-${i}`, method: 'ping' }));
          if (status !== 202) refused = status;
        }
        check(refused === 404, `a stalled /sse reader owed 16 MiB was not dropped (POST answered ${refused || 202})`);
        const tail = await Promise.race([sse.drain(), deadline(60_000, null)]);
        check(tail !== null, 'the dropped /sse stream did not end within 60 s');
        check(/stream_queue_bytes|inflight_bytes/.test(tail), `the dropped stream's last event does not say why: ${JSON.stringify(tail.slice(-300))}`);
        return 'dropped';
      } finally {
        sse.close();
      }
    },

    // A task with 4 MiB of output, polled to its end and left to be kept (or evicted) by the
    // server within tasks.max_result_bytes_per_principal.
    async task(_client, n, baseUrl) {
      const mcpUrl = `${baseUrl}/mcp`;
      const size = 4 << 20;
      const code = `import sys\nsys.stdout.write('${n % 10}' * ${size})`;
      const created = await rpc2026(mcpUrl, 'tools/call', { name: 'run_python', arguments: { code, output_bytes: 8 << 20 } }, 'run_python');
      const taskId = created.result?.taskId;
      check(created.result?.resultType === 'task' && taskId, `not a task: ${JSON.stringify(created).slice(0, 300)}`);
      for (const until = Date.now() + 120_000; Date.now() < until; await sleep(250)) {
        const got = await rpc2026(mcpUrl, 'tasks/get', { taskId }, taskId);
        check(got.result, `tasks/get: ${JSON.stringify(got).slice(0, 300)}`);
        if (got.result.status === 'working') continue;
        // Other clients of the same token finish tasks too: this one's result may be evicted
        // before it is read, which tasks/get must then say clearly.
        if (got.result.status === 'failed' && got.result.error?.data?.evicted === true) {
          check(/tasks\.max_result_bytes/.test(got.result.error.message), `evicted without naming the bound: ${got.result.error.message}`);
          return 'ok';
        }
        check(got.result.status === 'completed', `task ${got.result.status}: ${JSON.stringify(got.result).slice(0, 300)}`);
        const out = got.result.result?.structuredContent?.stdout ?? '';
        check(out.length === size, `task stdout of ${out.length} bytes, expected ${size}`);
        return 'ok';
      }
      check(false, 'the task did not end within 120 s');
      return 'failed';
    },
  };
}

export const PRESSURE_EXPECTED = { bigplot: 'ok', ctrlflood: 'ok', stalled: 'dropped', task: 'ok' };
// SOAK_PRESSURE (comma-separated) picks the workloads; all four by default.
const PICKED = (process.env.SOAK_PRESSURE ?? 'bigplot,ctrlflood,stalled,task').split(',').filter(Boolean);
export const PRESSURE_WEIGHTS = Object.fromEntries(PICKED.map((name) => [name, 1]));
