// Where a print(1) run's end-to-end latency goes, layer by layer, on one idle recycle pool:
// the same server answers an MCP ping, a tool call that needs no sandbox (sandbox_info), and
// run_python; /v1/execute answers the same run without MCP; docker exec runs the same code in
// a warm container. Samples are interleaved and spaced (PAUSE ms) so the pool is prepared.
//   cd bench && npm ci && node breakdown.mjs BIN [N=100] [PAUSE_MS=150]
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const bin = process.argv[2];
if (!bin) {
  console.error('usage: node breakdown.mjs BIN [N] [PAUSE_MS]');
  process.exit(2);
}
const N = Number(process.argv[3] ?? 100);
const PAUSE = Number(process.argv[4] ?? 150);
const IMAGE = process.env.SANDBOX_IMAGE ?? 'sandbox-mcp-python:latest';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();
const tag = `breakdown-${process.pid}-${Date.now().toString(36)}`;
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
function request(base, method, p, body, agent, headers = {}) {
  return new Promise((resolve, reject) => {
    const t0 = now();
    const req = http.request(`${base}${p}`, { method, agent, headers: { ...headers, ...(body ? { 'Content-Length': Buffer.byteLength(body) } : {}) } }, (res) => {
      const chunks = [];
      res.on('data', (d) => chunks.push(d));
      res.on('end', () => resolve({ ms: now() - t0, status: res.statusCode, text: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(body);
  });
}
function timed(args) {
  return new Promise((resolve) => {
    const t0 = now();
    const child = spawn(args[0], args.slice(1), { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('close', (code) => resolve({ ms: now() - t0, code, out }));
  });
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-breakdown-'));
const config = path.join(dir, 'config.json');
writeFileSync(config, JSON.stringify({ instance_id: tag, pools: [{ name: 'default', image: IMAGE, mode: 'recycle', min_idle: 4, max_total: 4 }] }));
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const child = spawn(bin, ['--config', config, '--listen', `127.0.0.1:${port}`, '--log-level', 'warn'], { stdio: ['ignore', 'ignore', 'inherit'] });
const warm = `${tag}-exec`;
try {
  for (;;) {
    if (child.exitCode !== null) throw new Error('server exited');
    const h = await request(base, 'GET', '/healthz').catch(() => null);
    const p = h && JSON.parse(h.text).pools?.[0];
    if (p && p.idle >= 4 && p.starting === 0) break;
    await sleep(200);
  }
  execFileSync('docker', ['run', '-d', '--rm', '--name', warm, '--label', `io.sandbox-mcp.bench=${tag}`, '--network', 'none', IMAGE, 'sleep', 'infinity']);
  const client = new Client({ name: 'breakdown', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)));
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const rows = {
    'MCP ping': async () => {
      const t0 = now();
      await client.ping();
      return { ms: now() - t0 };
    },
    'MCP tools/call sandbox_info (no sandbox)': async () => {
      const t0 = now();
      await client.callTool({ name: 'sandbox_info', arguments: {} });
      return { ms: now() - t0 };
    },
    'MCP run_python print(1)': async () => {
      const t0 = now();
      const r = await client.callTool({ name: 'run_python', arguments: { code: 'print(1)' } });
      const ms = now() - t0;
      if (r.structuredContent?.stdout !== '1\n') throw new Error(JSON.stringify(r).slice(0, 300));
      return { ms, inner: r.structuredContent.duration_ms };
    },
    'GET /healthz': async () => request(base, 'GET', '/healthz', null, agent),
    'POST /v1/execute print(1)': async () => {
      const r = await request(base, 'POST', '/v1/execute', JSON.stringify({ code: 'print(1)' }), agent, { 'Content-Type': 'application/json' });
      const j = JSON.parse(r.text);
      if (j.stdout !== '1\n') throw new Error(r.text.slice(0, 300));
      return { ms: r.ms, inner: j.duration_ms };
    },
    'docker exec python3 -c print(1)': async () => {
      const r = await timed(['docker', 'exec', warm, 'python3', '-c', 'print(1)']);
      if (r.out !== '1\n') throw new Error(`docker exec: ${r.code} ${r.out}`);
      return r;
    },
    'docker exec true': async () => timed(['docker', 'exec', warm, 'true']),
  };
  const names = Object.keys(rows);
  const got = Object.fromEntries(names.map((n) => [n, { ms: [], inner: [] }]));
  for (const n of names) for (let i = 0; i < 3; i++) await rows[n]();
  for (let i = 0; i < N; i++) {
    const order = names.map((_, k) => names[(k + i) % names.length]);
    for (const n of order) {
      await sleep(PAUSE);
      const r = await rows[n]();
      got[n].ms.push(r.ms);
      if (r.inner !== undefined) got[n].inner.push(r.inner);
    }
  }
  console.log(`| what | n | p50 ms | p90 ms | in harness p50 ms |`);
  console.log(`|---|---:|---:|---:|---:|`);
  for (const n of names) {
    const g = got[n];
    console.log(`| ${n} | ${g.ms.length} | ${pct(g.ms, 50).toFixed(2)} | ${pct(g.ms, 90).toFixed(2)} | ${g.inner.length ? pct(g.inner, 50) : ''} |`);
  }
  console.log(`N=${N}, pause ${PAUSE} ms, load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  await client.close();
} finally {
  child.kill('SIGTERM');
  await new Promise((res) => (child.exitCode !== null ? res() : child.once('exit', res)));
  try {
    execFileSync('docker', ['rm', '-f', warm], { stdio: 'ignore' });
  } catch {}
  const left = execFileSync('docker', ['ps', '-aq', '--filter', `label=io.sandbox-mcp.instance=${tag}`]).toString().trim();
  if (left) {
    console.log('WARNING: containers left; removing');
    execFileSync('docker', ['rm', '-f', ...left.split('\n')]);
  }
}
