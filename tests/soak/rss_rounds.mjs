// Diagnosis aid for the soak's RSS check: one workload in rounds, the server's RSS by kind of
// mapping (thread stacks = 8 MiB anonymous mappings, other anonymous memory incl. malloc arenas,
// [heap], files) measured at rest (clients disconnected, 6 s) after each round.
//   SANDBOX_MCP_BIN=build/src/server/sandbox-mcp node tests/soak/rss_rounds.mjs \
//     MODE WORKLOAD ROUNDS RUNS_PER_ROUND [CLIENTS]     e.g. recycle print 6 150 2
// WORKLOAD: print, exception, plot, timeout, flood, files.
import { createRequire } from 'node:module';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { E2E_DIR, sleep, startServer } from '../e2e/lib/server.mjs';
const require = createRequire(path.join(E2E_DIR, 'package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const [mode, workload, rounds, perRound, conc] = [process.argv[2], process.argv[3], Number(process.argv[4]), Number(process.argv[5]), Number(process.argv[6] ?? 2)];
const CODES = {
  print: { code: 'print(1)' },
  exception: { code: 'raise ValueError("x")' },
  plot: { code: 'import matplotlib.pyplot as plt\nplt.plot([1,2]); plt.show()' },
  timeout: { code: 'import time\ntime.sleep(9)', timeout_s: 0.5 },
  flood: { code: "import sys\nwhile True: sys.stdout.write('x'*65536)", output_bytes: 65536 },
  files: { code: "open('o.bin','wb').write(open('i.bin','rb').read())", files: [{ path: 'i.bin', content_base64: Buffer.alloc(4096, 7).toString('base64') }] },
};
const server = await startServer({ pool: { mode, min_idle: 2, max_total: 4, acquire_timeout_ms: 120000 }, config: { sessions: { warm: 0 } }, waitIdle: 2 });
const pid = server.child.pid;
const smaps = () => {
  const out = { stack: 0, anon: 0, heap: 0, file: 0 };
  let cur = null;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (m) {
      const kb = (parseInt(m[2], 16) - parseInt(m[1], 16)) / 1024;
      const name = m[3].trim();
      cur = name === '[heap]' ? 'heap' : name ? 'file' : kb === 8192 ? 'stack' : 'anon';
      continue;
    }
    if (line.startsWith('Rss:')) out[cur] += Number(line.split(/\s+/)[1]);
  }
  return JSON.stringify(out);
};
const snap = () => { const st = readFileSync(`/proc/${pid}/status`, 'utf8'); return `rss=${/VmRSS:\s+(\d+)/.exec(st)[1]} thr=${/Threads:\s+(\d+)/.exec(st)[1]} fds=${readdirSync(`/proc/${pid}/fd`).length} ${smaps()}`; };
console.log('start', snap());
for (let r = 0; r < rounds; r++) {
  const clients = await Promise.all(Array.from({ length: conc }, async () => { const c = new Client({ name: 'p', version: '1' }); await c.connect(new StreamableHTTPClientTransport(server.mcpUrl)); return c; }));
  let left = perRound;
  await Promise.all(clients.map(async (c) => { while (left-- > 0) { const res = await c.callTool({ name: 'run_python', arguments: CODES[workload] }, undefined, { timeout: 120000 }); if (!res.structuredContent) console.log('bad', res); } }));
  for (const c of clients) { await c.transport.terminateSession().catch(() => {}); await c.close(); }
  await sleep(6000);
  console.log(`round ${r + 1} (${(r + 1) * perRound} runs)`, snap());
}
const st = await server.stop();
console.log('stopped', st.code, 'leftovers', st.leftovers.length);
