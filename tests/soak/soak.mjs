// Soak test: a real sandbox-mcp (SANDBOX_MCP_BIN) in a recycle pool, then in a fresh pool, each
// driven for half of DURATION (a fifth of it warm-up; the waits for rest, the calls in flight at
// the end, server starts and shutdowns come on top) by 8 concurrent clients of the official TypeScript SDK (1.32.2,
// tests/e2e's node_modules) over Streamable HTTP, through the real Docker engine. The clients mix
// every kind of run a model makes: print, matplotlib plots, exceptions, timeouts, memory kills,
// output floods, file round trips, sessions and cancellations; and the memory pressure of
// pressure.mjs: answers at their byte bounds, a stalled SSE reader, kept task results.
//
// It fails (exit 1) on any unexpected error (a call that rejects, a client or transport error,
// a response to a cancelled request), on any verdict other than the workload's, when the
// server's RSS, thread count or open fds grew by 10 % or more between the end of warm-up and
// the end (both measured at rest: clients disconnected, pool refilled, no session open), when the
// pool still has a run leased after the clients stopped (a cancelled run that was not killed),
// when the server does not exit 0 on SIGTERM, or when a container of its instance is left.
//
//   SANDBOX_MCP_BIN=build/src/server/sandbox-mcp node tests/soak/soak.mjs --duration 5m \
//     [--out DIR] [--clients 8] [--modes recycle,fresh]
// Writes DIR/soak-<stamp>.json (every figure and sample), .md (the summary printed) and .png
// (RSS, threads and fds over time, drawn by the server under test itself: host Python has no
// matplotlib, the sandbox image does).
import { createRequire } from 'node:module';
import { createWriteStream, existsSync, mkdirSync, readFileSync, readdirSync, readlinkSync, writeFileSync } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { E2E_DIR, PNG_SIGNATURE, deadline, sleep, startServer, textOf } from '../e2e/lib/server.mjs';
import { PRESSURE_CONFIG, PRESSURE_EXPECTED, PRESSURE_WEIGHTS, pressureWorkloads } from './pressure.mjs';

if (!existsSync(path.join(E2E_DIR, 'node_modules', '@modelcontextprotocol', 'sdk'))) {
  console.error(`soak: the MCP clients are not installed: run \`npm ci\` in ${E2E_DIR} (scripts/soak.sh does)`);
  process.exit(1);
}
// The soak uses the e2e suite's pinned SDK rather than a second copy of it.
const require = createRequire(path.join(E2E_DIR, 'package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');

// ---- options -----------------------------------------------------------------------------

function parseDuration(text) {
  const m = /^(\d+(?:\.\d+)?)(s|m|h)?$/.exec(String(text ?? '').trim());
  if (!m) throw new Error(`--duration: expected e.g. 300, 90s, 5m or 1h, got ${JSON.stringify(text)}`);
  return Number(m[1]) * { s: 1, m: 60, h: 3600 }[m[2] ?? 's'] * 1000;
}

function parseArgs(argv) {
  const opts = { duration: null, out: path.join(path.dirname(new URL(import.meta.url).pathname), 'results'),
    clients: 8, modes: ['recycle', 'fresh'] };
  for (let i = 0; i < argv.length; i += 1) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a}: missing value`);
      i += 1;
      return argv[i];
    };
    if (a === '--duration') opts.duration = parseDuration(value());
    else if (a === '--out') opts.out = path.resolve(value());
    else if (a === '--clients') opts.clients = Number(value());
    else if (a === '--modes') opts.modes = value().split(',');
    else throw new Error(`unknown argument ${a}`);
  }
  if (!opts.duration) throw new Error('--duration is required (e.g. 5m, 1h)');
  if (!(opts.clients >= 1)) throw new Error('--clients: expected a positive number');
  for (const m of opts.modes) if (!['recycle', 'fresh'].includes(m)) throw new Error(`--modes: unknown mode ${m}`);
  return opts;
}

const opts = parseArgs(process.argv.slice(2));
const PHASE_MS = opts.duration / opts.modes.length; // DURATION is split between the modes.
// Warm-up: the first fifth of a phase (at least 20 s): the pool fills, allocator arenas and
// connection caches reach their working size.
const WARMUP_MS = Math.max(20_000, PHASE_MS / 5);
const SAMPLE_MS = Math.max(2_000, Math.round(PHASE_MS / 300));
const GROWTH_LIMIT = 0.10;
// The Docker client keeps up to 8 idle engine connections (docker::TransportOptions
// max_idle_handles), each an open socket: a cache that fills once, not a leak. With ~30 fds at
// rest, 10 % is 3; open fds may also grow by up to that cache's size.
const FD_CACHE_SLACK = 8;
const CALL_TIMEOUT_MS = 180_000; // bounds a hang; far above any workload's own limit
const QUIET_TIMEOUT_MS = 90_000;
const REST_SETTLE_MS = 5_000;
const POOL = { min_idle: 2, max_total: 4, acquire_timeout_ms: 120_000, limits: { memory_bytes: 256 << 20 } };
// No restart grace: the soak checks that nothing of its instance outlives the server.
// The memory-pressure workloads (pressure.mjs) bring bounds small enough to reach every cycle.
const CONFIG = { sessions: { warm: 1, max_total: 8, max_per_principal: 8, restart_grace_s: 0 }, ...PRESSURE_CONFIG };

// ---- failures ----------------------------------------------------------------------------

class CheckFailed extends Error {}
function check(cond, message) {
  if (!cond) throw new CheckFailed(message);
}

// ---- workloads ---------------------------------------------------------------------------
// Each returns the verdict it observed after checking it is the expected one; a wrong result
// throws CheckFailed with what was wrong.

async function call(client, name, args, extra = {}) {
  return client.callTool({ name, arguments: args }, undefined, { timeout: CALL_TIMEOUT_MS, ...extra });
}

function expectVerdict(result, verdict) {
  const got = result.structuredContent?.verdict;
  check(got === verdict, `verdict ${got}, expected ${verdict}: ${textOf(result).slice(0, 300)}`);
  check(result.isError === (verdict !== 'ok'), `isError ${result.isError} with verdict ${got}`);
  return got;
}

function toolOk(result, what) {
  check(result.isError === false, `${what}: isError: ${textOf(result).slice(0, 300)}`);
  return result;
}

const WORKLOADS = {
  async print(client, n) {
    const r = await call(client, 'run_python', { code: `print('soak', ${n})\n${n} * 2` });
    expectVerdict(r, 'ok');
    check(r.structuredContent.stdout === `soak ${n}\n`, `stdout ${JSON.stringify(r.structuredContent.stdout)}`);
    check(r.structuredContent.value === String(n * 2), `value ${r.structuredContent.value}`);
    return 'ok';
  },

  async plot(client, n) {
    const code = `import matplotlib.pyplot as plt\nplt.plot([0, 1, 2], [${n % 7}, 3, 1])\nplt.title('soak ${n}')\nplt.show()`;
    const r = await call(client, 'run_python', { code });
    expectVerdict(r, 'ok');
    check(r.structuredContent.images.length === 1, `${r.structuredContent.images.length} images, expected 1`);
    const img = r.content.filter((c) => c.type === 'image');
    check(img.length === 1 && img[0].mimeType === 'image/png', `image blocks ${JSON.stringify(img.map((c) => c.mimeType))}`);
    check(Buffer.from(img[0].data, 'base64').subarray(0, 8).equals(PNG_SIGNATURE), 'image block is not a PNG');
    return 'ok';
  },

  async exception(client, n) {
    const code = `def inner(x):\n    raise ValueError(f'soak {x}')\n\ndef outer(x):\n    inner(x)\n\nouter(${n})`;
    const r = await call(client, 'run_python', { code });
    expectVerdict(r, 'error');
    const tb = r.structuredContent.traceback;
    check(tb?.type === 'ValueError' && tb.message === `soak ${n}`, `traceback ${JSON.stringify(tb)}`);
    const fns = (tb.frames ?? []).map((f) => f.function);
    check(fns.includes('outer') && fns.includes('inner'), `traceback frames ${JSON.stringify(tb.frames)}`);
    return 'error';
  },

  async timeout(client, n) {
    // A sleeping run and a CPU-bound one, in turn.
    const code = n % 2 ? 'import time\ntime.sleep(60)' : 'while True:\n    pass';
    const r = await call(client, 'run_python', { code, timeout_s: 1 });
    return expectVerdict(r, 'timeout');
  },

  async memory(client, n) {
    // In turn: the pool's limit (the cgroup's OOM killer ends the run) and a narrower limit
    // asked for by the request (RLIMIT_DATA; the uncaught MemoryError is a memory verdict).
    const code = 'chunks = []\nwhile True:\n    chunks.append(b"\\x01" * (16 << 20))';
    const args = n % 2 ? { code } : { code, memory_bytes: 64 << 20 };
    const r = await call(client, 'run_python', args);
    return expectVerdict(r, 'memory');
  },

  async flood(client) {
    const code = "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)";
    const r = await call(client, 'run_python', { code, output_bytes: 65536 });
    expectVerdict(r, 'output_limit');
    check(r.structuredContent.output_truncated === true, 'output_truncated not set');
    // Cut at exactly the limit, then the harness's marker line (docs/harness-protocol.md).
    const want = `${'x'.repeat(65536)}\n[output truncated: limit of 65536 bytes reached]\n`;
    const out = r.structuredContent.stdout;
    check(out === want, `stdout of ${out.length} bytes, expected 65536 x then the marker; ends ${JSON.stringify(out.slice(-60))}`);
    return 'output_limit';
  },

  async files(client) {
    const input = randomBytes(4096);
    const code = [
      'import json',
      "data = open('in.bin', 'rb').read()",
      "open('rev.bin', 'wb').write(data[::-1])",
      "json.dump({'size': len(data)}, open('summary.json', 'w'))",
    ].join('\n');
    const r = await call(client, 'run_python', { code, files: [{ path: 'in.bin', content_base64: input.toString('base64') }] });
    expectVerdict(r, 'ok');
    const listed = Object.fromEntries(r.structuredContent.files.map((f) => [f.path, f.size]));
    check(listed['rev.bin'] === 4096, `files ${JSON.stringify(r.structuredContent.files)}`);
    check(listed['summary.json'] > 0, `files ${JSON.stringify(r.structuredContent.files)}`);
    const res = Object.fromEntries(
      r.content.filter((c) => c.type === 'resource').map((c) => [c.resource.uri.split('/files/')[1], c.resource]),
    );
    check(res['rev.bin']?.blob, `no blob resource for rev.bin: ${JSON.stringify(Object.keys(res))}`);
    check(Buffer.from(res['rev.bin'].blob, 'base64').equals(Buffer.from(input).reverse()), 'rev.bin is not the reversed input');
    check(JSON.parse(res['summary.json']?.text ?? '{}').size === 4096, `summary.json ${JSON.stringify(res['summary.json'])}`);
    return 'ok';
  },

  async session(client, n) {
    const created = toolOk(await call(client, 'session_create', {}), 'session_create');
    const id = created.structuredContent?.session_id;
    check(/^[0-9a-f]{32}$/.test(id ?? ''), `session_create returned ${JSON.stringify(created.structuredContent)}`);
    try {
      const data = randomBytes(2048);
      toolOk(await call(client, 'session_upload_file', { session_id: id, path: 'data.bin', content_base64: data.toString('base64') }),
        'session_upload_file');
      const first = await call(client, 'run_python', {
        session_id: id,
        code: `import hashlib\nstate = {'n': ${n}}\ndata = open('data.bin', 'rb').read()\nlen(data)`,
      });
      expectVerdict(first, 'ok');
      check(first.structuredContent.value === '2048', `first call value ${first.structuredContent.value}`);
      const second = await call(client, 'run_python', {
        session_id: id,
        code: "state['n'] += 1\nopen('digest.txt', 'w').write(hashlib.sha256(data).hexdigest())\nstate['n']",
      });
      expectVerdict(second, 'ok');
      check(second.structuredContent.value === String(n + 1), `state lost between calls: value ${second.structuredContent.value}`);
      check(second.structuredContent.session_reset === false, 'session_reset on a clean call');
      const down = toolOk(await call(client, 'session_download_file', { session_id: id, path: 'digest.txt' }), 'session_download_file');
      const text = down.content.find((c) => c.type === 'resource')?.resource?.text;
      check(text === createHash('sha256').update(data).digest('hex'), `digest.txt ${JSON.stringify(text)}`);
    } finally {
      toolOk(await call(client, 'session_close', { session_id: id }), 'session_close');
    }
    return 'ok';
  },

  async cancel(client) {
    // notifications/cancelled mid-run: the call rejects with the abort and no response follows
    // (the SDK reports a late one through onerror, which the soak counts as an error). timeout_s
    // is longer than the phase's quiet wait, so a run the cancel did not kill keeps its sandbox
    // leased and the end-of-phase check fails.
    const controller = new AbortController();
    let started;
    const progressed = new Promise((resolve) => (started = resolve));
    const outcome = call(client, 'run_python', { code: "import time\nprint('go', flush=True)\ntime.sleep(150)", timeout_s: 200 }, {
      signal: controller.signal,
      onprogress: () => started(true),
    }).then((result) => ({ result }), (error) => ({ error }));
    const first = await Promise.race([progressed, outcome, deadline(CALL_TIMEOUT_MS, 'timeout')]);
    check(first === true, `no progress before the cancel: ${first === 'timeout' ? 'none within the call timeout' : JSON.stringify(first)}`);
    controller.abort();
    const settled = await Promise.race([outcome, deadline(30_000, 'timeout')]);
    check(settled !== 'timeout', 'the aborted call did not settle within 30 s');
    check(settled.error && /AbortError|aborted/.test(String(settled.error)),
      `the aborted call ended with ${settled.error ? String(settled.error) : JSON.stringify(settled.result).slice(0, 300)}`);
    return 'cancelled';
  },

  // Answers at their byte bounds, a stalled reader, kept task results (issue 34).
  ...pressureWorkloads({ call, expectVerdict, check }),
};

const EXPECTED = { print: 'ok', plot: 'ok', exception: 'error', timeout: 'timeout', memory: 'memory',
  flood: 'output_limit', files: 'ok', session: 'ok', cancel: 'cancelled', ...PRESSURE_EXPECTED };
// How often each workload comes up in a client's cycle of 20 calls.
const WEIGHTS = { print: 3, plot: 2, exception: 2, files: 2, timeout: 2, memory: 1, flood: 1, session: 2, cancel: 1,
  ...PRESSURE_WEIGHTS };

// A deterministic shuffle per client, so clients do not run the same workload in lockstep.
function cycleFor(index) {
  const items = Object.entries(WEIGHTS).flatMap(([name, w]) => Array(w).fill(name));
  let seed = 2654435761 * (index + 1);
  for (let i = items.length - 1; i > 0; i -= 1) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    const j = seed % (i + 1);
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}

// ---- the server's resources ----------------------------------------------------------------

// The server's open descriptors by kind ("socket", "pipe", "anon_inode:[eventfd]", a path).
function fdKinds(pid) {
  const kinds = {};
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let target;
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue; // closed between the listing and the readlink
    }
    const kind = target.replace(/:\[\d+\]$/, '');
    kinds[kind] = (kinds[kind] ?? 0) + 1;
  }
  return kinds;
}

function procSample(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1]);
  const fd_kinds = fdKinds(pid);
  return {
    rss_kib: field('VmRSS'),
    threads: field('Threads'),
    fds: Object.values(fd_kinds).reduce((a, b) => a + b, 0),
    load1: Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]),
    fd_kinds,
  };
}

function healthz(baseUrl) {
  return new Promise((resolve) => {
    const req = http.get(`${baseUrl}/healthz`, { agent: false, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => {
        try {
          resolve(JSON.parse(body));
        } catch {
          resolve(null);
        }
      });
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(null));
  });
}

// From the server's /metrics, in KiB (null when absent): the bytes of finished task results it
// keeps, and its allocator's figures (sandbox_heap_bytes: in use, freed but kept, arenas).
function restMetrics(baseUrl) {
  return new Promise((resolve) => {
    const none = { kept_kib: null, heap_in_use_kib: null, heap_free_kib: null, heap_arena_kib: null };
    const req = http.get(`${baseUrl}/metrics`, { agent: false, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => {
        const kib = (re) => {
          const m = re.exec(body);
          return m ? Math.round(Number(m[1]) / 1024) : null;
        };
        resolve({
          kept_kib: kib(/^sandbox_task_result_bytes(?:\{\})? ([0-9.e+]+)$/m),
          heap_in_use_kib: kib(/^sandbox_heap_bytes\{state="in_use"\} ([0-9.e+]+)$/m),
          heap_free_kib: kib(/^sandbox_heap_bytes\{state="free"\} ([0-9.e+]+)$/m),
          heap_arena_kib: kib(/^sandbox_heap_bytes\{state="arena"\} ([0-9.e+]+)$/m),
        });
      });
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(none));
  });
}

// At rest (clients disconnected): no run leased, no container starting or being removed, the pool refilled, no
// session open. Resolves with the last /healthz, or throws naming what was still busy.
async function waitQuiet(baseUrl) {
  const until = Date.now() + QUIET_TIMEOUT_MS;
  let h = null;
  while (Date.now() < until) {
    h = await healthz(baseUrl);
    const p = h?.pools?.find((x) => x.name === 'default');
    if (p && p.leased === 0 && p.starting === 0 && p.destroying === 0 && p.waiting === 0 &&
        p.idle >= POOL.min_idle && h.sessions?.active === 0) {
      // Past the server's HTTP keep-alive timeout (3 s), so the clients' idle connections are
      // closed too: the rest state has no client connection at all.
      await sleep(REST_SETTLE_MS);
      return h;
    }
    await sleep(500);
  }
  throw new CheckFailed(`not at rest ${QUIET_TIMEOUT_MS / 1000} s after the clients stopped ` +
    `(a cancelled run not killed?): /healthz ${JSON.stringify(h)}`);
}

// ---- one phase -----------------------------------------------------------------------------

function percentile(sorted, q) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

// Ends the client's MCP session (DELETE, as a well-behaved client does) and closes it, so the
// server holds no state for it when the soak measures at rest.
async function closeClient(client) {
  client.soakClosing = true;
  await client.transport?.terminateSession().catch(() => {});
  await client.close();
}

async function connect(server, index) {
  const client = new Client({ name: `soak-${index}`, version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(server.mcpUrl));
  return client;
}

async function runPhase(mode, logDir, stamp) {
  const t0 = Date.now();
  const elapsed = () => (Date.now() - t0) / 1000;
  const log = (msg) => console.log(`[soak ${mode} ${elapsed().toFixed(0).padStart(5)} s] ${msg}`);
  const errors = [];
  const addError = (client, workload, err) => {
    errors.push({ t_s: Number(elapsed().toFixed(1)), client, workload, kind: err instanceof CheckFailed ? 'check' : 'error',
      message: String(err?.stack ?? err).slice(0, 800) });
    log(`ERROR client ${client} ${workload}: ${String(err).slice(0, 300)}`);
  };
  const runs = [];
  const samples = [];
  const marks = {};

  log(`starting the server (pool ${JSON.stringify(POOL)})`);
  const server = await startServer({ pool: { mode, ...POOL }, config: CONFIG, waitIdle: POOL.min_idle });
  const serverLog = path.join(logDir, `soak-${stamp}-${mode}-server.log`);
  const logStream = createWriteStream(serverLog);
  server.child.stderr.on('data', (chunk) => logStream.write(chunk));
  const pid = server.child.pid;
  const sample = (mark) => {
    const s = { t_s: Number(elapsed().toFixed(1)), runs: runs.length, ...procSample(pid) };
    if (mark) s.mark = mark;
    samples.push(s);
    return s;
  };
  sample('start');
  const sampler = setInterval(() => {
    try {
      sample();
    } catch (err) {
      addError(-1, 'sampler', err);
    }
  }, SAMPLE_MS);

  // At the end of warm-up the clients park so the baseline is taken at rest; once released they
  // run until `stopAt`, the rest of the phase counted from the release (so the wait for rest
  // does not eat into the measured time).
  const warmupEnd = Date.now() + WARMUP_MS;
  let stopAt = Infinity;
  let parked = 0;
  let release;
  const released = new Promise((resolve) => (release = resolve));
  let allParked;
  const everyoneParked = new Promise((resolve) => (allParked = resolve));
  const clients = [];

  const parkedFlags = new Set();
  const park = async (index) => {
    if (parkedFlags.has(index)) return;
    parkedFlags.add(index);
    parked += 1;
    if (parked === opts.clients) allParked();
    await released;
  };

  const open = async (index) => {
    const client = await connect(server, index);
    // The SDK reports the streams that close() itself aborts; those are not errors.
    client.onerror = (err) => {
      if (!client.soakClosing) addError(index, 'client.onerror', err);
    };
    clients[index] = client;
    return client;
  };

  async function clientLoop(index) {
    let client = await open(index);
    const cycle = cycleFor(index);
    for (let n = index * 1000; Date.now() < stopAt; n += 1) {
      if (Date.now() >= warmupEnd && !parkedFlags.has(index)) {
        // Disconnected while parked: the baseline, like the end, is taken with no client.
        await closeClient(client);
        await park(index);
        client = await open(index);
      }
      const workload = cycle[n % cycle.length];
      const started = Date.now();
      try {
        const verdict = await WORKLOADS[workload](client, n, server.baseUrl);
        runs.push({ workload, verdict, ms: Date.now() - started, t_s: Number(elapsed().toFixed(1)) });
      } catch (err) {
        runs.push({ workload, verdict: 'failed', ms: Date.now() - started, t_s: Number(elapsed().toFixed(1)) });
        addError(index, workload, err);
        if (!(err instanceof CheckFailed)) {
          // The connection may be broken: start a new one rather than fail every later call.
          await closeClient(client).catch(() => {});
          client = await open(index);
        }
      }
    }
    await closeClient(client);
  }

  // A loop that ends early (a failed reconnect) still parks, so the others are not held.
  const loops = Array.from({ length: opts.clients }, (_, i) => clientLoop(i).catch((err) => addError(i, 'loop', err)).finally(() => park(i)));
  const health = {};
  try {
    await everyoneParked;
    log(`warm-up done (${runs.length} runs); waiting for rest`);
    health.warmup = await waitQuiet(server.baseUrl).catch((err) => {
      addError(-1, 'warm-up rest', err);
      return null;
    });
    marks.baseline = sample('baseline');
    Object.assign(marks.baseline, await restMetrics(server.baseUrl));
    log(`baseline ${JSON.stringify(marks.baseline)}`);
    stopAt = Date.now() + PHASE_MS - WARMUP_MS;
    release();
    await Promise.all(loops);
    log(`clients stopped and disconnected (${runs.length} runs); waiting for rest`);
    health.end = await waitQuiet(server.baseUrl).catch((err) => {
      addError(-1, 'end rest', err);
      return null;
    });
    marks.end = sample('end');
    Object.assign(marks.end, await restMetrics(server.baseUrl));
    log(`end ${JSON.stringify(marks.end)}`);
  } finally {
    clearInterval(sampler);
  }
  await Promise.all(clients.map((c) => c && closeClient(c).catch(() => {})));  // after a failure

  // The plot is drawn by this server once the measurements are taken (see renderPlot).
  const phase = { mode, server_pid: pid, instance_id: server.instanceId, duration_s: elapsed(), warmup_s: WARMUP_MS / 1000,
    sample_interval_s: SAMPLE_MS / 1000, runs, samples, marks, errors, health, server_log: serverLog };
  phase.finish = async () => {
    const stopped = await server.stop();
    logStream.end();
    phase.exit = { code: stopped.code, signal: stopped.signal, timed_out: Boolean(stopped.timedOut) };
    phase.leftovers = stopped.leftovers;
    log(`server stopped: ${JSON.stringify(phase.exit)}, ${stopped.leftovers.length} containers left`);
  };
  phase.server = server;
  return phase;
}

// ---- summary -------------------------------------------------------------------------------

function summarize(phase) {
  const byWorkload = {};
  for (const r of phase.runs) {
    const w = (byWorkload[r.workload] ??= { runs: 0, verdicts: {}, ms: [] });
    w.runs += 1;
    w.verdicts[r.verdict] = (w.verdicts[r.verdict] ?? 0) + 1;
    w.ms.push(r.ms);
  }
  const workloads = {};
  for (const [name, w] of Object.entries(byWorkload).sort()) {
    const sorted = w.ms.sort((a, b) => a - b);
    workloads[name] = { runs: w.runs, expected: EXPECTED[name], verdicts: w.verdicts,
      p50_ms: percentile(sorted, 0.5), p90_ms: percentile(sorted, 0.9), p99_ms: percentile(sorted, 0.99), max_ms: sorted.at(-1) };
  }
  const resources = {};
  for (const key of ['rss_kib', 'threads', 'fds']) {
    const values = phase.samples.map((s) => s[key]);
    // Kept task results fill their own byte budget (tasks.max_result_bytes_per_principal, checked
    // in failuresOf) during the phase: RSS is compared without them.
    const kept = (m) => (key === 'rss_kib' ? (phase.marks[m]?.kept_kib ?? 0) : 0);
    const base = phase.marks.baseline?.[key] === undefined ? undefined : phase.marks.baseline[key] - kept('baseline');
    const end = phase.marks.end?.[key] === undefined ? undefined : phase.marks.end[key] - kept('end');
    resources[key] = { start: values[0], baseline: base, end, max: Math.max(...values),
      growth: base && end !== undefined ? (end - base) / base : null };
  }
  const loads = phase.samples.map((s) => s.load1);
  const verdicts = {};
  for (const r of phase.runs) verdicts[r.verdict] = (verdicts[r.verdict] ?? 0) + 1;
  return { mode: phase.mode, duration_s: Number(phase.duration_s.toFixed(1)), warmup_s: phase.warmup_s, runs: phase.runs.length,
    runs_per_s: Number((phase.runs.length / phase.duration_s).toFixed(2)), verdicts, workloads, resources,
    load1: { min: Math.min(...loads), mean: Number((loads.reduce((a, b) => a + b, 0) / loads.length).toFixed(2)), max: Math.max(...loads) },
    errors: phase.errors.length, exit: phase.exit, leftovers: phase.leftovers?.length ?? null };
}

function failuresOf(phase, s) {
  const out = [];
  if (phase.errors.length) out.push(`${phase.errors.length} unexpected errors (first: ${phase.errors[0].workload}: ${phase.errors[0].message.split('\n')[0]})`);
  for (const [name, w] of Object.entries(s.workloads)) {
    const wrong = Object.entries(w.verdicts).filter(([v]) => v !== w.expected);
    if (wrong.length) out.push(`${name}: verdicts ${JSON.stringify(w.verdicts)}, expected only ${w.expected}`);
  }
  for (const name of Object.keys(WEIGHTS)) if (!s.workloads[name]) out.push(`${name}: never ran`);
  for (const [key, r] of Object.entries(s.resources)) {
    if (r.growth === null) out.push(`${key}: no baseline or end sample`);
    else if (key === 'fds' && r.end - r.baseline <= FD_CACHE_SLACK) continue;
    else if (r.growth >= GROWTH_LIMIT) out.push(`${key} grew ${(r.growth * 100).toFixed(1)} % after warm-up (${r.baseline} -> ${r.end})`);
  }
  const keptBound = PRESSURE_CONFIG.tasks.max_result_bytes_per_principal / 1024;
  for (const m of ['baseline', 'end']) {
    const kept = phase.marks[m]?.kept_kib;
    if (kept === null || kept === undefined) out.push(`kept task results at ${m}: /metrics has no sandbox_task_result_bytes`);
    else if (kept > keptBound) out.push(`kept task results at ${m}: ${kept} KiB, above their bound of ${keptBound} KiB`);
  }
  if (!phase.exit || phase.exit.code !== 0 || phase.exit.timed_out) out.push(`server exit after SIGTERM: ${JSON.stringify(phase.exit)}`);
  if (phase.leftovers?.length) out.push(`${phase.leftovers.length} containers of ${phase.instance_id} left after the server stopped`);
  return out;
}

function table(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => String(r[i]).length)));
  return rows.map((r) => r.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join('  ')).join('\n');
}

function report(summaries, phases, meta) {
  const lines = [`# sandbox-mcp soak, ${meta.started} (${meta.duration}, ${meta.clients} clients, DURATION split between ${meta.modes.join(' then ')})`, ''];
  lines.push(`host: ${meta.host.cpus} CPUs, load average at the end ${meta.host.loadavg_end}; server ${meta.binary}`, '');
  for (const [i, s] of summaries.entries()) {
    lines.push(`## ${s.mode} pool: ${s.duration_s} s, warm-up ${s.warmup_s} s, ${s.runs} runs (${s.runs_per_s}/s), ` +
      `${s.errors} unexpected errors, load1 min/mean/max ${s.load1.min}/${s.load1.mean}/${s.load1.max}`, '', '```');
    const rows = [['workload', 'runs', 'expected', 'verdicts', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms']];
    for (const [name, w] of Object.entries(s.workloads)) {
      rows.push([name, w.runs, w.expected, Object.entries(w.verdicts).map(([v, c]) => `${v}=${c}`).join(','), w.p50_ms, w.p90_ms, w.p99_ms, w.max_ms]);
    }
    lines.push(table(rows), '');
    const mk = phases[i].marks;
    lines.push(`RSS is compared without the kept task results: baseline ${mk.baseline?.kept_kib} KiB, end ${mk.end?.kept_kib} KiB`, '');
    // Not checked: says whether RSS growth is memory the server holds (in use) or memory freed
    // and kept by the allocator (free); docs/memory-budget.md, "The process at rest".
    lines.push(`allocator at rest (sandbox_heap_bytes, KiB): in use ${mk.baseline?.heap_in_use_kib} -> ${mk.end?.heap_in_use_kib} ` +
      `(the kept results included), free ${mk.baseline?.heap_free_kib} -> ${mk.end?.heap_free_kib}, arenas ${mk.baseline?.heap_arena_kib} -> ${mk.end?.heap_arena_kib}`, '');
    const res = [['server', 'start', 'baseline', 'end', 'max', 'growth']];
    for (const [key, r] of Object.entries(s.resources)) {
      res.push([key, r.start, r.baseline, r.end, r.max, r.growth === null ? '-' : `${(r.growth * 100).toFixed(1)} %`]);
    }
    lines.push(table(res), '');
    const kinds = (m) => JSON.stringify(phases[i].marks[m]?.fd_kinds ?? {});
    lines.push(`fds at rest by kind: baseline ${kinds('baseline')}, end ${kinds('end')}`, '');
    // A small series: about 12 evenly spaced samples.
    const ss = phases[i].samples;
    const step = Math.max(1, Math.floor(ss.length / 12));
    const series = [['t s', 'runs', 'rss KiB', 'threads', 'fds', 'load1']];
    ss.forEach((x, j) => {
      if (j % step === 0 || x.mark || j === ss.length - 1) series.push([`${x.t_s}${x.mark ? ` ${x.mark}` : ''}`, x.runs, x.rss_kib, x.threads, x.fds, x.load1]);
    });
    lines.push(table(series), '```', '');
    lines.push(`server exit ${JSON.stringify(s.exit)}, containers left: ${s.leftovers}`, '');
  }
  return lines.join('\n');
}

// The plot is drawn by the server under test, as any client would have it drawn: the samples go
// in as a file, the PNG comes back as the run's image.
async function renderPlot(server, phases) {
  const data = phases.map((p) => ({ mode: p.mode, warmup_s: p.marks.baseline?.t_s ?? p.warmup_s, samples: p.samples }));
  const code = `
import json
import matplotlib.pyplot as plt
phases = json.load(open('samples.json'))
fig, axes = plt.subplots(3, 1, figsize=(10, 8), sharex=True)
offset = 0.0
for i, p in enumerate(phases):
    t = [offset + s['t_s'] / 60 for s in p['samples']]
    for ax, key, scale, label in [(axes[0], 'rss_kib', 1 / 1024, 'RSS (MiB)'), (axes[1], 'threads', 1, 'threads'), (axes[2], 'fds', 1, 'open fds')]:
        ax.plot(t, [s[key] * scale for s in p['samples']], color='C%d' % i, label=p['mode'] + ' pool')
        ax.axvspan(offset, offset + p['warmup_s'] / 60, color='0.9')
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
    offset = t[-1]
axes[0].legend(loc='lower right')
axes[0].set_title('sandbox-mcp soak: server resources (grey: warm-up)')
axes[2].set_xlabel('minutes')
fig.tight_layout()
plt.show()
`;
  const client = new Client({ name: 'soak-plot', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(server.mcpUrl));
  try {
    const r = await call(client, 'run_python', {
      code, timeout_s: 120, files: [{ path: 'samples.json', content_base64: Buffer.from(JSON.stringify(data)).toString('base64') }],
    });
    expectVerdict(r, 'ok');
    const img = r.content.find((c) => c.type === 'image');
    check(img, 'the plot run returned no image');
    return Buffer.from(img.data, 'base64');
  } finally {
    await client.close();
  }
}

// ---- main ----------------------------------------------------------------------------------

const started = new Date();
const stamp = started.toISOString().slice(0, 16).replace(/[-:]/g, '').replace('T', '-');
mkdirSync(opts.out, { recursive: true });
console.log(`[soak] ${opts.duration / 1000} s split between ${opts.modes.join(', ')} (${PHASE_MS / 1000} s each), ` +
  `${opts.clients} clients, warm-up ${WARMUP_MS / 1000} s, a sample every ${SAMPLE_MS / 1000} s; results in ${opts.out}`);
const phases = [];
const failures = [];
for (const [i, mode] of opts.modes.entries()) {
  const phase = await runPhase(mode, opts.out, stamp);
  phases.push(phase);
  if (i === opts.modes.length - 1) {
    try {
      const png = await renderPlot(phase.server, phases);
      writeFileSync(path.join(opts.out, `soak-${stamp}.png`), png);
    } catch (err) {
      failures.push(`plot: ${err}`);
    }
  }
  await phase.finish();
}
const summaries = phases.map(summarize);
phases.forEach((p, i) => failures.push(...failuresOf(p, summaries[i]).map((f) => `${p.mode}: ${f}`)));
const meta = { started: started.toISOString(), duration: `${opts.duration / 1000} s`, clients: opts.clients, modes: opts.modes,
  binary: process.env.SANDBOX_MCP_BIN, pool: POOL, config: CONFIG, growth_limit: GROWTH_LIMIT,
  host: { cpus: (await import('node:os')).cpus().length, loadavg_end: (await import('node:os')).loadavg().map((x) => x.toFixed(2)).join(' ') } };
const text = `${report(summaries, phases, meta)}\n${failures.length ? `FAILED:\n${failures.map((f) => `- ${f}`).join('\n')}` : 'PASSED: every check held'}\n`;
console.log(`\n${text}`);
writeFileSync(path.join(opts.out, `soak-${stamp}.md`), text);
writeFileSync(path.join(opts.out, `soak-${stamp}.json`), JSON.stringify({
  meta, failures, summaries,
  phases: phases.map(({ server, finish, ...p }) => p),
}, null, 1));
console.log(`[soak] wrote ${path.join(opts.out, `soak-${stamp}.{md,json,png}`)}`);
process.exit(failures.length ? 1 : 0);
