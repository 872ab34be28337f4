// A/B of two sandbox-mcp binaries on the same machine at the same time, interleaved sample by
// sample (and window by window), so load from elsewhere hits both alike. Each gets a recycle
// pool of 4 (min_idle 4, max_total 4) and one MCP client. Measures:
//   - print the hostname, back to back on each server in turn: latency p50/p90, the harness's
//     own duration_ms, how many containers served the runs;
//   - print(1) from one client back to back for WINDOW seconds, four windows per binary
//     alternated: runs/s and latency p50;
//   - a one-figure plot: latency, duration_ms, PNG size, and plt.show() timed inside the run
//     (where the harness renders the figure).
//   cd bench && npm ci && node ab.mjs BEFORE_BIN AFTER_BIN [N=100] [WINDOW=8]
// Not part of bench/run.sh: for checking one change against the binary before it.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [beforeBin, afterBin] = process.argv.slice(2, 4);
if (!beforeBin || !afterBin) {
  console.error('usage: node ab.mjs BEFORE_BIN AFTER_BIN [N] [WINDOW_S]');
  process.exit(2);
}
const N = Number(process.argv[4] ?? 100);
const WINDOW = Number(process.argv[5] ?? 8);
const IMAGE = process.env.SANDBOX_IMAGE ?? 'sandbox-mcp-python:latest';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();
const tag = `ab-${process.pid}-${Date.now().toString(36)}`;
const pct = (a, p) => {
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
function healthz(base) {
  return new Promise((resolve) => {
    const req = http.get(`${base}/healthz`, { timeout: 3000 }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => {
        try {
          resolve(JSON.parse(body));
        } catch {
          resolve(null);
        }
      });
    });
    req.on('error', () => resolve(null));
    req.on('timeout', () => {
      req.destroy();
      resolve(null);
    });
  });
}

async function start(name, bin) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-ab-'));
  const config = path.join(dir, 'config.json');
  const instance = `${tag}-${name}`;
  writeFileSync(config, JSON.stringify({ instance_id: instance, pools: [{ name: 'default', image: IMAGE, mode: 'recycle', min_idle: 4, max_total: 4 }] }));
  const port = await freePort();
  const child = spawn(bin, ['--config', config, '--listen', `127.0.0.1:${port}`, '--log-level', 'warn'], { stdio: ['ignore', 'ignore', 'inherit'] });
  const base = `http://127.0.0.1:${port}`;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited`);
    const p = (await healthz(base))?.pools?.[0];
    if (p && p.idle >= 4 && p.starting === 0) break;
    await sleep(200);
  }
  const client = new Client({ name: `ab-${name}`, version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)));
  return { name, child, client, instance };
}

const HOST = 'import socket\nprint(socket.gethostname())';
const PLOT = 'import time\nimport matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nt = time.perf_counter()\nplt.show()\nprint(round((time.perf_counter() - t) * 1000, 1))';
async function call(server, code) {
  const t0 = now();
  const r = await server.client.callTool({ name: 'run_python', arguments: { code } });
  const ms = now() - t0;
  const sc = r.structuredContent;
  if (sc?.verdict !== 'ok') throw new Error(`${server.name}: ${JSON.stringify(sc ?? r).slice(0, 300)}`);
  const image = (r.content ?? []).find((c) => c.type === 'image');
  return { ms, inner: sc.duration_ms, stdout: sc.stdout.trim(), png: image ? Buffer.from(image.data, 'base64').length : 0 };
}
// Alternates which server goes first.
const order = (servers, i) => (i % 2 ? [...servers].reverse() : servers);

const servers = await Promise.all([start('before', beforeBin), start('after', afterBin)]);
try {
  for (const s of servers) for (let i = 0; i < 3; i++) await call(s, PLOT); // warm up, not counted
  const r = Object.fromEntries(servers.map((s) => [s.name, { host: [], hostInner: [], hosts: new Set(), rate: [], rateP50: [], plot: [], plotInner: [], show: [], png: [] }]));
  for (let i = 0; i < N; i++) {
    for (const s of order(servers, i)) {
      const x = await call(s, HOST);
      r[s.name].host.push(x.ms);
      r[s.name].hostInner.push(x.inner);
      r[s.name].hosts.add(x.stdout);
    }
  }
  for (let w = 0; w < 4; w++) {
    for (const s of order(servers, w)) {
      const end = now() + WINDOW * 1000;
      const lat = [];
      while (now() < end) lat.push((await call(s, 'print(1)')).ms);
      r[s.name].rate.push(lat.length / WINDOW);
      r[s.name].rateP50.push(pct(lat, 50));
    }
  }
  for (let i = 0; i < N; i++) {
    for (const s of order(servers, i)) {
      const x = await call(s, PLOT);
      r[s.name].plot.push(x.ms);
      r[s.name].plotInner.push(x.inner);
      r[s.name].show.push(Number(x.stdout));
      r[s.name].png.push(x.png);
    }
  }
  const f = (x) => x.toFixed(1);
  for (const s of servers) {
    const m = r[s.name];
    console.log(`${s.name}: hostname, alternating servers: p50 ${f(pct(m.host, 50))} p90 ${f(pct(m.host, 90))} ms, in harness p50 ${pct(m.hostInner, 50)} ms, ${m.hosts.size} containers`);
    console.log(`${s.name}: print(1), one client back to back: ${m.rate.map(f).join(', ')} runs/s, p50 ${m.rateP50.map(f).join(', ')} ms`);
    console.log(`${s.name}: plot: p50 ${f(pct(m.plot, 50))} p90 ${f(pct(m.plot, 90))} ms, in harness p50 ${pct(m.plotInner, 50)} ms, plt.show() p50 ${pct(m.show, 50)} p90 ${pct(m.show, 90)} ms, PNG ${pct(m.png, 50)} bytes`);
  }
  console.log(`N=${N}, window ${WINDOW} s, load average now ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
} finally {
  for (const s of servers) {
    await s.client.close().catch(() => {});
    s.child.kill('SIGTERM');
  }
  await Promise.all(servers.map((s) => new Promise((res) => (s.child.exitCode !== null ? res() : s.child.once('exit', res)))));
  for (const s of servers) {
    const left = execFileSync('docker', ['ps', '-aq', '--filter', `label=io.sandbox-mcp.instance=${s.instance}`]).toString().trim();
    if (left) {
      console.log(`WARNING: ${s.name} left containers; removing`);
      execFileSync('docker', ['rm', '-f', ...left.split('\n')]);
    }
  }
}
