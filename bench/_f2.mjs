import http from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
const base = 'http://127.0.0.1:18080/mcp';
const now = () => performance.now();
const H = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
let r = await fetch(base, { method: 'POST', headers: H, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' } } }) });
const sid = r.headers.get('mcp-session-id'); await r.text();
const HS = { ...H, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' };
const pct = (a, p) => { const s = [...a].sort((x, y) => x - y); return s[Math.ceil(p / 100 * s.length) - 1].toFixed(2); };
const ping = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' });
const client = new Client({ name: 'x', version: '1' });
await client.connect(new StreamableHTTPClientTransport(new URL(base)));
const agent = new http.Agent({ keepAlive: true, noDelay: true });
const modes = {
  fetch: async () => { const r = await fetch(base, { method: 'POST', headers: HS, body: ping }); await r.json(); },
  http: () => new Promise((res, rej) => { const q = http.request(base, { method: 'POST', agent, headers: { ...HS, 'content-length': ping.length } }, (s) => { s.resume(); s.on('end', res); }); q.on('error', rej); q.end(ping); }),
  sdkping: () => client.ping(),
  sdkinfo: () => client.callTool({ name: 'sandbox_info', arguments: {} }),
};
const t = Object.fromEntries(Object.keys(modes).map((k) => [k, []]));
for (let i = 0; i < 300; i++) for (const [k, f] of Object.entries(modes)) { const t0 = now(); await f(); t[k].push(now() - t0); }
for (const k of Object.keys(modes)) console.log(k, 'p50', pct(t[k], 50), 'p90', pct(t[k], 90));
await client.close();
