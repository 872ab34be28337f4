// Autoscaled vs fixed pool sizing under a step load, in the same run: for each sizing a server of
// its own (recycle pool, max_total 8), then clients running print(1) over /v1/execute back to
// back: 1 client for PHASE seconds, 8 clients for PHASE seconds, 1 client for PHASE seconds.
// /admin/pools/default is sampled every 250 ms (idle, leased, waiting, min_idle in effect), and
// /metrics' acquire-wait histogram at each phase boundary. Prints per phase: requests, latency
// p50/p95 (client side), acquire-wait p95 (histogram: the bucket it falls in), mean idle
// containers; writes the raw series to OUT.json for bench/plot_autoscale.py.
//   node bench/autoscale.mjs --bin build/src/server/sandbox-mcp [--phase 20] [--out FILE]
//   [--window 10]
// Sizings: fixed (min_idle 2) and autoscaled (floor 2, ceiling 8, headroom 1, window_s WINDOW),
// both servers under the same load at the same time (--sequential: one after the other).
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const BIN = arg('bin', 'build/src/server/sandbox-mcp');
const PHASE = Number(arg('phase', 20));
const WINDOW = Number(arg('window', 10));
const OUT = arg('out', `bench/results/${new Date().toISOString().slice(0, 10)}-autoscale.json`);
const IMAGE = process.env.SANDBOX_IMAGE ?? 'sandbox-mcp-python:latest';
const ADMIN = 'bench-admin-token-0123456789';
const STEPS = [1, 8, 1];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();
const pct = (a, p) => {
  if (a.length === 0) return NaN;
  const s = [...a].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};

function freePort() {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
function request(port, method, p, body, headers = {}) {
  return new Promise((resolve) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      {
        host: '127.0.0.1', port, method, path: p, agent, timeout: 120000,
        headers: {
          ...headers,
          ...(data ? { 'Content-Type': 'application/json',
            'Content-Length': Buffer.byteLength(data) } : {}),
        },
      },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode, text }));
      });
    req.on('error', () => resolve({ status: 0, text: '' }));
    req.on('timeout', () => req.destroy());
    if (data) req.write(data);
    req.end();
  });
}
const admin = (port, p) => request(port, 'GET', p, undefined, { Authorization: `Bearer ${ADMIN}` });

async function startServer(name, pool) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'autoscale-'));
  const port = await freePort();
  const instance = `bench-autoscale-${name}-${process.pid}`;
  const config = {
    instance_id: instance,
    server: { admin_tokens: { bench: ADMIN } },
    sessions: { enabled: false },
    pools: [{ name: 'default', image: IMAGE, max_total: 8, max_concurrent_starts: 2, ...pool }],
  };
  writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config));
  const child = spawn(BIN, ['--listen', `127.0.0.1:${port}`, '--config',
    path.join(dir, 'config.json'), '--log-level', 'warn'], { stdio: ['ignore', 'ignore', 'inherit'] });
  for (let i = 0; i < 600; i++) {
    const res = await admin(port, '/admin/pools/default');
    if (res.status === 200) {
      const p = JSON.parse(res.text);
      if (p.sandboxes.idle >= p.min_idle_target && p.sandboxes.starting === 0) break;
    }
    await sleep(250);
  }
  return { port, child, instance };
}

async function stopServer(server) {
  server.child.kill('SIGTERM');
  await new Promise((r) => server.child.on('exit', r));
  const left = execFileSync('docker', ['ps', '-aq', '--filter',
    `label=io.sandbox-mcp.instance=${server.instance}`]).toString().trim();
  if (left) {
    console.error(`leftover containers of ${server.instance}: ${left}`);
    execFileSync('docker', ['rm', '-f', ...left.split(/\s+/)]);
  }
}

// Cumulative acquire-wait histogram of the default pool: [[le, count], ...].
async function waitHistogram(port) {
  const res = await request(port, 'GET', '/metrics');
  const out = [];
  for (const line of res.text.split('\n')) {
    const m = line.match(/^sandbox_pool_acquire_wait_seconds_bucket\{(.*)\} (\S+)$/);
    if (!m || !m[1].includes('pool="default"') || !m[1].includes('result="ok"')) continue;
    const le = m[1].match(/le="([^"]+)"/)[1];
    out.push([le === '+Inf' ? Infinity : Number(le), Number(m[2])]);
  }
  return out.sort((a, b) => a[0] - b[0]);
}
// The upper bound of the bucket holding the p-th percentile of the waits between two scrapes.
function histPct(before, after, p) {
  const diff = after.map(([le, c], i) => [le, c - (before[i]?.[1] ?? 0)]);
  const total = diff.length ? diff[diff.length - 1][1] : 0;
  if (total === 0) return NaN;
  const want = Math.ceil((p / 100) * total);
  for (const [le, c] of diff) if (c >= want) return le;
  return Infinity;
}

async function runSizing(name, pool, server, t0) {
  const samples = [];
  const requests = [];
  let stop = false;
  let active = STEPS[0];
  const sampler = (async () => {
    while (!stop) {
      const at = now();
      const res = await admin(server.port, '/admin/pools/default');
      if (res.status === 200) {
        const p = JSON.parse(res.text);
        samples.push({ t: (at - t0) / 1000, clients: active, ...p.sandboxes,
          min_idle_target: p.min_idle_target });
      }
      await sleep(Math.max(0, 250 - (now() - at)));
    }
  })();
  const client = async (i) => {
    while (!stop) {
      if (i >= active) {
        await sleep(20);
        continue;
      }
      const start = now();
      const res = await request(server.port, 'POST', '/v1/execute', { code: 'print(1)' });
      requests.push({ t: (start - t0) / 1000, ms: now() - start, status: res.status,
        phase: phaseOf((start - t0) / 1000) });
    }
  };
  const phaseOf = (t) => Math.min(STEPS.length - 1, Math.floor(t / PHASE));
  const clients = Array.from({ length: Math.max(...STEPS) }, (_, i) => client(i));
  const hist = [await waitHistogram(server.port)];
  for (let i = 0; i < STEPS.length; i++) {
    active = STEPS[i];
    await sleep(PHASE * 1000 - (now() - t0 - i * PHASE * 1000));
    hist.push(await waitHistogram(server.port));
  }
  stop = true;
  await Promise.all([sampler, ...clients]);
  const phases = STEPS.map((clientsInPhase, i) => {
    const done = requests.filter((r) => r.phase === i && r.status === 200).map((r) => r.ms);
    const inPhase = samples.filter((s) => s.t >= i * PHASE && s.t < (i + 1) * PHASE);
    const mean = (k) => inPhase.reduce((a, s) => a + s[k], 0) / Math.max(1, inPhase.length);
    return {
      clients: clientsInPhase,
      requests: done.length,
      failed: requests.filter((r) => r.phase === i && r.status !== 200).length,
      p50_ms: pct(done, 50),
      p95_ms: pct(done, 95),
      acquire_wait_p95_le_s: histPct(hist[i], hist[i + 1], 95),
      idle_mean: mean('idle'),
      containers_mean: inPhase.reduce((a, s) => a + s.idle + s.leased + s.starting, 0) /
        Math.max(1, inPhase.length),
      waiting_max: Math.max(0, ...inPhase.map((s) => s.waiting)),
    };
  });
  return { name, pool, phases, samples, requests };
}

const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');
const loadBefore = load();
console.error(`autoscale bench: phases of ${PHASE} s (${STEPS.join(' -> ')} clients), load ${load()}`);
const sizings = [
  ['fixed', { min_idle: 2 }],
  ['autoscaled', { autoscale: { enabled: true, min_idle_floor: 2, min_idle_ceiling: 8, headroom: 1,
    window_s: WINDOW } }],
];
// Both servers take the same step load at the same time, so load from elsewhere (and each
// other's) hits both alike; --sequential runs one after the other instead.
const SEQUENTIAL = process.argv.includes('--sequential');
const results = [];
if (SEQUENTIAL) {
  for (const [name, pool] of sizings) {
    const server = await startServer(name, pool);
    results.push(await runSizing(name, pool, server, now()));
    await stopServer(server);
  }
} else {
  const servers = await Promise.all(sizings.map(([name, pool]) => startServer(name, pool)));
  const t0 = now();
  results.push(...await Promise.all(
    sizings.map(([name, pool], i) => runSizing(name, pool, servers[i], t0))));
  await Promise.all(servers.map(stopServer));
}
writeFileSync(OUT, JSON.stringify({ phase_s: PHASE, window_s: WINDOW, steps: STEPS,
  mode: SEQUENTIAL ? 'sequential' : 'concurrent', load_before: loadBefore,
  load_after: load(), date: new Date().toISOString(), results }, null, 1));

const f = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : x === Infinity ? 'inf' : '-');
console.log('| sizing | phase | clients | runs | failed | p50 ms | p95 ms | acquire wait p95 (s, <=) | idle (mean) | containers (mean) | waiting (max) |');
console.log('|---|---|---|---|---|---|---|---|---|---|---|');
for (const r of results) {
  r.phases.forEach((p, i) => console.log(`| ${r.name} | ${i + 1} | ${p.clients} | ${p.requests} | ${p.failed} | ${f(p.p50_ms)} | ${f(p.p95_ms)} | ${f(p.acquire_wait_p95_le_s, 4)} | ${f(p.idle_mean, 1)} | ${f(p.containers_mean, 1)} | ${p.waiting_max} |`));
}
console.error(`raw series: ${OUT}; load ${load()}`);
agent.destroy();
