// MCP tasks (io.modelcontextprotocol/tasks, 2026-07-28) over plain HTTP, as docs/mcp.md's curl
// walk-through does it, against real containers: a run that becomes a task outlives the stream
// that started it (the client drops the stream at once), shows its output while it runs, and
// hands over its full result when done; tasks/cancel kills a run (the pool's only sandbox then
// serves the next call); another token cannot see the task; code that calls input() pauses
// with input_required and goes on with the line the client sends in tasks/update (one-shot and
// in a session), or reads EOF when the client declined or cannot answer forms.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { deadline, sleep, startServer, stopAndCheck } from './lib/server.mjs';

const TOKEN_A = 'e2e-task-token-alice-0123456789';
const TOKEN_B = 'e2e-task-token-bob-0123456789ab';
let server;

before(async () => {
  server = await startServer({
    pool: { min_idle: 1, max_total: 1, acquire_timeout_ms: 60_000, interactive_input: true },
    config: { server: { tokens: { alice: TOKEN_A, bob: TOKEN_B } } },
  });
});

after(async () => {
  if (server) await stopAndCheck(server, assert);
});

const TASKS = 'io.modelcontextprotocol/tasks';
let nextId = 1;

function meta(capabilities = {}) {
  return {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': { ...capabilities, extensions: { [TASKS]: {} } },
    'io.modelcontextprotocol/clientInfo': { name: 'e2e-tasks', version: '1.0.0' },
  };
}

// One 2026-07-28 request; `name` is the Mcp-Name header. Resolves with the JSON-RPC message that
// answers it (from a JSON body or the SSE stream). With `dropStream`, the connection is aborted
// as soon as that message has arrived.
async function rpc(method, params, { name, token = TOKEN_A, dropStream = false, capabilities } = {}) {
  const id = nextId++;
  const controller = new AbortController();
  const headers = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': '2026-07-28',
    'Mcp-Method': method,
    Authorization: `Bearer ${token}`,
  };
  if (name !== undefined) headers['Mcp-Name'] = name;
  const res = await fetch(server.mcpUrl, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: meta(capabilities) } }),
    signal: controller.signal,
  });
  if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) return res.json();
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the stream of ${method} ended without an answer:\n${buffered}`);
    buffered += decoder.decode(value, { stream: true });
    for (const line of buffered.split('\n')) {
      if (!line.startsWith('data: ')) continue;
      const message = JSON.parse(line.slice(6));
      if (message.id === id) {
        if (dropStream) controller.abort();
        else await reader.cancel();
        return message;
      }
    }
  }
}

async function waitForStatus(taskId, statuses, { token = TOKEN_A, timeoutMs = 90_000, onPoll } = {}) {
  const t0 = Date.now();
  for (;;) {
    const got = await rpc('tasks/get', { taskId }, { name: taskId, token });
    assert.ok(got.result, `tasks/get: ${JSON.stringify(got)}`);
    onPoll?.(got.result);
    if (statuses.includes(got.result.status)) return got.result;
    assert.ok(Date.now() - t0 < timeoutMs, `task still ${got.result.status} after ${timeoutMs} ms`);
    await sleep(250);
  }
}

test('a run that becomes a task outlives its stream, shows live output, then its result', async () => {
  const code = "import time\nfor i in range(6):\n    print('line', i, flush=True)\n    time.sleep(1)";
  const created = await rpc('tools/call', { name: 'run_python', arguments: { code, timeout_s: 60 } },
    { name: 'run_python', dropStream: true });
  const task = created.result;
  assert.equal(task?.resultType, 'task', JSON.stringify(created));
  assert.match(task.taskId, /^[0-9a-f]{32}$/);
  assert.equal(task.status, 'working');
  assert.ok(Number.isInteger(task.ttlMs) && task.ttlMs > 0);
  assert.ok(Number.isInteger(task.pollIntervalMs));
  // The stream is gone; the run is not.
  let sawLive = false;
  const done = await waitForStatus(task.taskId, ['completed', 'failed', 'cancelled'], {
    onPoll: (r) => {
      const live = r._meta?.['dev.sandbox-mcp/output']?.text ?? '';
      if (r.status === 'working' && /line \d/.test(live)) sawLive = true;
    },
  });
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.equal(done.result.structuredContent.verdict, 'ok');
  assert.equal(done.result.structuredContent.stdout, [0, 1, 2, 3, 4, 5].map((i) => `line ${i}\n`).join(''));
  assert.ok(sawLive, 'tasks/get never showed output while the task was working');
  // Another token: the same id is unknown.
  const foreign = await rpc('tasks/get', { taskId: task.taskId }, { name: task.taskId, token: TOKEN_B });
  assert.equal(foreign.error?.code, -32602, JSON.stringify(foreign));
});

test('tasks/cancel kills the run: the pool\'s only sandbox serves the next call', async () => {
  const created = await rpc('tools/call', {
    name: 'run_python',
    arguments: { code: "import time\nprint('go', flush=True)\ntime.sleep(120)", timeout_s: 150 },
  }, { name: 'run_python', dropStream: true });
  const taskId = created.result?.taskId;
  assert.ok(taskId, JSON.stringify(created));
  await waitForStatus(taskId, ['working'], {
    onPoll: () => {},
  });
  await Promise.race([
    (async () => {
      for (;;) {
        const got = await rpc('tasks/get', { taskId }, { name: taskId });
        if ((got.result?._meta?.['dev.sandbox-mcp/output']?.text ?? '').includes('go')) return;
        await sleep(200);
      }
    })(),
    deadline(60_000).then(() => assert.fail('the run printed nothing within 60 s')),
  ]);
  const ack = await rpc('tasks/cancel', { taskId }, { name: taskId });
  assert.deepEqual(Object.keys(ack.result).filter((k) => k !== '_meta'), ['resultType']);
  const ended = await waitForStatus(taskId, ['cancelled', 'completed', 'failed'], { timeoutMs: 30_000 });
  assert.equal(ended.status, 'cancelled');
  const t0 = Date.now();
  const next = await rpc('tools/call', { name: 'run_python', arguments: { code: 'print("after")' } },
    { name: 'run_python' });
  // With the extension declared this is a task too: wait for it.
  const after = next.result.resultType === 'task'
    ? (await waitForStatus(next.result.taskId, ['completed', 'failed', 'cancelled'])).result
    : next.result;
  assert.equal(after.structuredContent.stdout, 'after\n');
  assert.ok(Date.now() - t0 < 50_000, 'the next run waited for the cancelled one');
});

// The task's next ask: waits for input_required and returns the one pending request.
async function nextAsk(taskId) {
  const waiting = await waitForStatus(taskId, ['input_required', 'completed', 'failed', 'cancelled']);
  assert.equal(waiting.status, 'input_required', JSON.stringify(waiting));
  const keys = Object.keys(waiting.inputRequests);
  assert.equal(keys.length, 1, JSON.stringify(waiting.inputRequests));
  return { key: keys[0], ask: waiting.inputRequests[keys[0]] };
}

async function answer(taskId, key, response) {
  const ack = await rpc('tasks/update', { taskId, inputResponses: { [key]: response } }, { name: taskId });
  assert.equal(ack.result?.resultType, 'complete', JSON.stringify(ack));
}

const FORMS = { elicitation: { form: {} } };
const ASKING = "name = input('Your name? ')\nprint('hello', name)\nage = input('Age? ')\n" +
  "print('age', int(age) + 1)\ntry:\n    input()\nexcept EOFError:\n    print('no more')";

test('input() asks the client through input_required and goes on with its answer', async () => {
  const created = await rpc('tools/call', { name: 'run_python', arguments: { code: ASKING, timeout_s: 120 } },
    { name: 'run_python', dropStream: true, capabilities: FORMS });
  const taskId = created.result?.taskId;
  assert.ok(taskId, JSON.stringify(created));
  let { key, ask } = await nextAsk(taskId);
  assert.equal(key, 'stdin-1');
  assert.equal(ask.method, 'elicitation/create');
  assert.equal(ask.params.mode, 'form');
  assert.equal(ask.params.message, 'Your name? ');
  assert.deepEqual(ask.params.requestedSchema.required, ['line']);
  await answer(taskId, key, { action: 'accept', content: { line: 'Ada' } });
  ({ key, ask } = await nextAsk(taskId));
  assert.deepEqual([key, ask.params.message], ['stdin-2', 'Age? ']);
  await answer(taskId, key, { action: 'accept', content: { line: '36' } });
  ({ key } = await nextAsk(taskId));
  assert.equal(key, 'stdin-3');
  await answer(taskId, key, { action: 'decline' });
  const done = await waitForStatus(taskId, ['completed', 'failed', 'cancelled']);
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.equal(done.result.structuredContent.verdict, 'ok');
  assert.equal(done.result.structuredContent.stdout, 'Your name? hello Ada\nAge? age 37\nno more\n');

  // A client that cannot answer forms: the same code reads EOF at once, as without tasks.
  const eof = await rpc('tools/call', { name: 'run_python', arguments: { code: ASKING } },
    { name: 'run_python' });
  const ended = await waitForStatus(eof.result.taskId, ['completed', 'failed', 'cancelled']);
  assert.equal(ended.result.structuredContent.verdict, 'error');
  assert.equal(ended.result.structuredContent.traceback.type, 'EOFError');
});

test('input() in a session cell asks too, and the session keeps the answer', async () => {
  const opened = await rpc('tools/call', { name: 'session_create', arguments: {} }, { name: 'session_create' });
  const sessionId = opened.result?.structuredContent?.session_id;
  assert.ok(sessionId, JSON.stringify(opened));
  const created = await rpc('tools/call', {
    name: 'run_python', arguments: { session_id: sessionId, code: "x = input('x? ')" },
  }, { name: 'run_python', capabilities: FORMS });
  const { key, ask } = await nextAsk(created.result.taskId);
  assert.equal(ask.params.message, 'x? ');
  await answer(created.result.taskId, key, { action: 'accept', content: { line: '41' } });
  const first = await waitForStatus(created.result.taskId, ['completed', 'failed', 'cancelled']);
  assert.equal(first.result.structuredContent.verdict, 'ok', JSON.stringify(first));
  const next = await rpc('tools/call', {
    name: 'run_python', arguments: { session_id: sessionId, code: 'int(x) + 1' },
  }, { name: 'run_python' });
  const second = await waitForStatus(next.result.taskId, ['completed', 'failed', 'cancelled']);
  assert.equal(second.result.structuredContent.value, '42');
  await rpc('tools/call', { name: 'session_close', arguments: { session_id: sessionId } }, { name: 'session_close' });
});
