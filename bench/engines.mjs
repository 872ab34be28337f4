// One engine against three (issue 28 item 7): the same server binary and pool over the machine's
// engine alone, then over it and two more dockerd on this machine (tests/support/extra_engines.sh
// start 2: tcp://127.0.0.1 with mutual TLS), driven by the same closed loop of concurrent
// /v1/execute clients. Rounds alternate between the two set-ups so drift on a shared machine
// hits both alike. All engines share this machine's cores, so the question here is whether the
// placement and the TLS hop cost throughput, not whether three engines add any.
//
//   tests/support/extra_engines.sh start 2
//   node bench/engines.mjs --bin build/src/server/sandbox-mcp [--clients 8] [--seconds 20]
//       [--rounds 3] [--mode recycle|fresh] [--out docs-table.md]
//   tests/support/extra_engines.sh stop
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync, appendFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function parseArgs(argv) {
  const o = { bin: path.join(REPO_ROOT, 'build/src/server/sandbox-mcp'), clients: 8, seconds: 20,
    warmup: 5, rounds: 3, mode: 'recycle', out: '' };
  for (let i = 2; i < argv.length; i++) {
    const a = argv[i];
    const v = () => argv[++i];
    if (a === '--bin') o.bin = path.resolve(v());
    else if (a === '--clients') o.clients = Number(v());
    else if (a === '--seconds') o.seconds = Number(v());
    else if (a === '--warmup') o.warmup = Number(v());
    else if (a === '--rounds') o.rounds = Number(v());
    else if (a === '--mode') o.mode = v();
    else if (a === '--out') o.out = v();
    else throw new Error(`unknown argument ${a}`);
  }
  return o;
}

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function request(port, method, pathname, body) {
  return new Promise((resolve) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request({ host: '127.0.0.1', port, method, path: pathname,
      headers: data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {} },
    (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        let json = null;
        try { json = JSON.parse(Buffer.concat(chunks).toString()); } catch { /* not JSON */ }
        resolve({ status: res.statusCode, json });
      });
    });
    req.on('error', () => resolve({ status: 0, json: null }));
    req.setTimeout(120000, () => req.destroy());
    if (data) req.write(data);
    req.end();
  });
}

function extraEngines() {
  const out = execFileSync('bash', [path.join(REPO_ROOT, 'tests/support/extra_engines.sh'), 'engines-json']).toString();
  const engines = JSON.parse(out.slice(out.indexOf('[')));
  if (engines.length < 2) throw new Error('start two extra engines first: tests/support/extra_engines.sh start 2');
  return engines.slice(0, 2);
}

async function startServer(o, engines, tag) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'engines-bench-'));
  const instance = `bench-engines-${tag}-${process.pid}`;
  const config = {
    instance_id: instance,
    docker: { engines },
    sessions: { enabled: false },
    pools: [{ name: 'default', mode: o.mode, min_idle: o.clients, max_total: o.clients + 2,
      max_concurrent_starts: 2 }],
  };
  writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config));
  const port = await freePort();
  const child = spawn(o.bin, ['--listen', `127.0.0.1:${port}`, '--config', path.join(dir, 'config.json'),
    '--log-level', 'warn'], { stdio: ['ignore', 'ignore', 'inherit'] });
  for (let i = 0; i < 600; i++) {
    const r = await request(port, 'GET', '/healthz');
    if (r.status === 200 && r.json.pools[0].idle >= o.clients) return { child, port, dir };
    await sleep(500);
  }
  child.kill('SIGTERM');
  throw new Error(`${tag}: the server did not fill its pool`);
}

async function stopServer(s) {
  await new Promise((resolve) => { s.child.on('exit', resolve); s.child.kill('SIGTERM'); });
  rmSync(s.dir, { recursive: true, force: true });
}

// A closed loop of `clients` callers for `seconds`: runs per second and latency percentiles.
async function window(port, clients, seconds) {
  const lat = [];
  const byEngine = {};
  let failed = 0;
  const until = performance.now() + seconds * 1000;
  await Promise.all(Array.from({ length: clients }, async () => {
    while (performance.now() < until) {
      const t0 = performance.now();
      const r = await request(port, 'POST', '/v1/execute', { code: 'print(1)' });
      const ms = performance.now() - t0;
      if (r.status === 200 && r.json.verdict === 'ok') {
        lat.push(ms);
        byEngine[r.json.engine] = (byEngine[r.json.engine] ?? 0) + 1;
      } else {
        failed++;
      }
    }
  }));
  lat.sort((a, b) => a - b);
  const pct = (p) => (lat.length ? lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] : NaN);
  return { rps: lat.length / seconds, p50: pct(0.5), p95: pct(0.95), failed, byEngine };
}

const o = parseArgs(process.argv);
const local = { name: 'local', host: 'unix:///var/run/docker.sock' };
const setups = [['1 engine', [local]], ['3 engines', [local, ...extraEngines()]]];
const results = Object.fromEntries(setups.map(([name]) => [name, []]));
for (let round = 1; round <= o.rounds; round++) {
  for (const [name, engines] of round % 2 ? setups : [...setups].reverse()) {
    const s = await startServer(o, engines, name.replace(' ', ''));
    await window(s.port, o.clients, o.warmup);
    const w = await window(s.port, o.clients, o.seconds);
    await stopServer(s);
    results[name].push(w);
    console.error(`round ${round} ${name}: ${w.rps.toFixed(1)} runs/s p50 ${w.p50.toFixed(1)} ms ` +
      `p95 ${w.p95.toFixed(1)} ms failed ${w.failed} by engine ${JSON.stringify(w.byEngine)}`);
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const row = (name) => {
  const ws = results[name];
  return { rps: median(ws.map((w) => w.rps)), p50: median(ws.map((w) => w.p50)),
    p95: median(ws.map((w) => w.p95)), failed: ws.reduce((a, w) => a + w.failed, 0) };
};
const one = row('1 engine');
const three = row('3 engines');
const lines = [
  `| set-up (${o.mode}, ${o.clients} clients, ${o.rounds} rounds of ${o.seconds} s) | runs/s (median) | p50 ms | p95 ms | failed | ratio to 1 engine |`,
  '|---|---|---|---|---|---|',
  `| 1 engine (local) | ${one.rps.toFixed(1)} | ${one.p50.toFixed(1)} | ${one.p95.toFixed(1)} | ${one.failed} | 1.00 |`,
  `| 3 engines (local + 2 over TLS) | ${three.rps.toFixed(1)} | ${three.p50.toFixed(1)} | ${three.p95.toFixed(1)} | ${three.failed} | ${(three.rps / one.rps).toFixed(2)} |`,
];
console.log(lines.join('\n'));
if (o.out) appendFileSync(o.out, lines.join('\n') + '\n');
