// Latency the connection guard adds per request: the same requests, interleaved in rounds, to
// two server binaries (e.g. main's, without the guard, and this branch's) on one keep-alive
// connection each: GET /openapi.json (a static answer) and an MCP ping POST on a session.
// Usage: node bench/guard_latency.mjs --before BIN --after BIN [--n 2000] [--rounds 10]
// Needs the Docker engine (the servers check it at start-up); no container is started
// (min_idle 0).
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, a, i, all) => (a.startsWith('--') ? [...pairs, [a.slice(2), all[i + 1]]] : pairs), []),
);
const n = Number(args.n ?? 2000);
const rounds = Number(args.rounds ?? 10);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function start(bin, name) {
  const port = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'guard-bench-'));
  const config = path.join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ instance_id: `test-guard-bench-${name}-${process.pid}`, pools: [{ name: 'default', min_idle: 0, max_total: 1 }] }));
  const child = spawn(bin, ['--listen', `127.0.0.1:${port}`, '--config', config, '--log-level', 'warn'], { stdio: ['ignore', 'ignore', 'inherit'] });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  for (let i = 0; i < 600; ++i) {
    try {
      const r = await request(agent, port, 'GET', '/openapi.json');
      if (r.status === 200) break;
    } catch {}
    await sleep(100);
  }
  const init = await request(agent, port, 'POST', '/mcp', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } }));
  const session = init.headers['mcp-session-id'];
  return { child, port, agent, session, name };
}

function request(agent, port, method, pathname, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: pathname, agent, headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...(body ? { 'Content-Length': Buffer.byteLength(body) } : {}), ...headers } }, (res) => {
      let data = '';
      res.on('data', (c) => (data += c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: data }));
    });
    req.on('error', reject);
    if (body) req.write(body);
    req.end();
  });
}

const ping = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' });
async function sample(server, kind) {
  const t0 = performance.now();
  const r = kind === 'openapi'
    ? await request(server.agent, server.port, 'GET', '/openapi.json')
    : await request(server.agent, server.port, 'POST', '/mcp', ping, { 'Mcp-Session-Id': server.session, 'MCP-Protocol-Version': '2025-06-18' });
  if (r.status !== 200) throw new Error(`${server.name} ${kind}: ${r.status} ${r.body}`);
  return performance.now() - t0;
}

const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.floor(q * (xs.length - 1))];

const servers = [await start(args.before, 'before'), await start(args.after, 'after')];
const results = {};
for (const kind of ['openapi', 'ping']) {
  for (const s of servers) results[`${s.name} ${kind}`] = [];
  for (let r = 0; r < rounds; ++r) {
    for (const s of servers) {
      for (let i = 0; i < n / rounds; ++i) results[`${s.name} ${kind}`].push(await sample(s, kind));
    }
  }
}
for (const [key, xs] of Object.entries(results)) {
  console.log(`${key.padEnd(16)} n=${xs.length} median ${quantile(xs, 0.5).toFixed(3)} ms  p90 ${quantile(xs, 0.9).toFixed(3)} ms  p99 ${quantile(xs, 0.99).toFixed(3)} ms`);
}
for (const kind of ['openapi', 'ping']) {
  const d = quantile(results[`after ${kind}`], 0.5) - quantile(results[`before ${kind}`], 0.5);
  console.log(`added by the guard (${kind}, median): ${(d * 1000).toFixed(0)} us`);
}
for (const s of servers) {
  s.agent.destroy();
  s.child.kill('SIGTERM');
}
