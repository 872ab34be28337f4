// Diagnosis aid for the soak's RSS check: workloads in rounds, the server's memory measured at
// rest (clients disconnected, 6 s: past a trim of MemoryTrimmer) after each round: RSS by kind
// of mapping (thread stacks = 8 MiB anonymous mappings, other anonymous memory incl. malloc
// arenas, [heap], files), the allocator's figures (sandbox_heap_bytes: in use, free, arena) and
// the kept task results (sandbox_task_result_bytes). RSS that climbs with in_use is held by
// the program (a leak, or a cache: which one the owner of the bytes says); RSS that climbs with
// free is the allocator's (fragmentation); both level off when the growth is a high-water mark.
//   SANDBOX_MCP_BIN=build/src/server/sandbox-mcp node tests/soak/rss_rounds.mjs \
//     MODE WORKLOADS ROUNDS RUNS_PER_ROUND [CLIENTS]     e.g. recycle print 6 150 2
// WORKLOADS: comma-separated, each client cycles through them: print, exception, plot, timeout,
// flood, files, and the soak's memory pressure (pressure.mjs, with its config): bigplot,
// ctrlflood, stalled, task. The server gets this process's environment (e.g. MALLOC_ARENA_MAX).
import { createRequire } from 'node:module';
import { readFileSync, readdirSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { E2E_DIR, sleep, startServer } from '../e2e/lib/server.mjs';
import { PRESSURE_CONFIG, pressureWorkloads } from './pressure.mjs';
const require = createRequire(path.join(E2E_DIR, 'package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const [mode, workloads, rounds, perRound, conc] = [process.argv[2], process.argv[3].split(','), Number(process.argv[4]), Number(process.argv[5]), Number(process.argv[6] ?? 2)];
const CODES = {
  print: { code: 'print(1)' },
  exception: { code: 'raise ValueError("x")' },
  plot: { code: 'import matplotlib.pyplot as plt\nplt.plot([1,2]); plt.show()' },
  timeout: { code: 'import time\ntime.sleep(9)', timeout_s: 0.5 },
  flood: { code: "import sys\nwhile True: sys.stdout.write('x'*65536)", output_bytes: 65536 },
  files: { code: "open('o.bin','wb').write(open('i.bin','rb').read())", files: [{ path: 'i.bin', content_base64: Buffer.alloc(4096, 7).toString('base64') }] },
};
const call = (client, name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 180_000 });
const check = (cond, message) => {
  if (!cond) throw new Error(message);
};
const expectVerdict = (r, verdict) => check(r.structuredContent?.verdict === verdict, `verdict ${r.structuredContent?.verdict}, expected ${verdict}`);
const PRESSURE = pressureWorkloads({ call, expectVerdict, check });
for (const w of workloads) if (!CODES[w] && !PRESSURE[w]) throw new Error(`unknown workload ${w}`);

const server = await startServer({ pool: { mode, min_idle: 2, max_total: 4, acquire_timeout_ms: 120000 }, config: { sessions: { warm: 0 }, ...PRESSURE_CONFIG }, waitIdle: 2 });
const pid = server.child.pid;
const MiB = (kib) => (kib / 1024).toFixed(1);
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
  return Object.entries(out).map(([k, v]) => `${k}=${MiB(v)}`).join(' ');
};
const metrics = () => new Promise((resolve) => {
  http.get(`${server.baseUrl}/metrics`, { agent: false }, (res) => {
    let body = '';
    res.on('data', (c) => (body += c));
    res.on('end', () => {
      const kib = (re) => Math.round(Number(re.exec(body)?.[1] ?? NaN) / 1024);
      resolve(`kept=${MiB(kib(/^sandbox_task_result_bytes(?:\{\})? (\S+)$/m))} heap in_use=${MiB(kib(/^sandbox_heap_bytes\{state="in_use"\} (\S+)$/m))} ` +
        `free=${MiB(kib(/^sandbox_heap_bytes\{state="free"\} (\S+)$/m))} arena=${MiB(kib(/^sandbox_heap_bytes\{state="arena"\} (\S+)$/m))}`);
    });
  }).on('error', (err) => resolve(String(err)));
});
const snap = async () => {
  const st = readFileSync(`/proc/${pid}/status`, 'utf8');
  // The server's CPU time (utime + stime, fields 14 and 15 after the command name), in seconds.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8').slice(readFileSync(`/proc/${pid}/stat`, 'utf8').lastIndexOf(')') + 2).split(' ');
  const cpu = ((Number(stat[11]) + Number(stat[12])) / 100).toFixed(2);
  return `cpu=${cpu}s rss=${MiB(Number(/VmRSS:\s+(\d+)/.exec(st)[1]))} thr=${/Threads:\s+(\d+)/.exec(st)[1]} fds=${readdirSync(`/proc/${pid}/fd`).length} ${await metrics()} | ${smaps()} (MiB)`;
};
console.log('start', await snap());
let n = 0;
for (let r = 0; r < rounds; r++) {
  const clients = await Promise.all(Array.from({ length: conc }, async () => { const c = new Client({ name: 'p', version: '1' }); await c.connect(new StreamableHTTPClientTransport(server.mcpUrl)); return c; }));
  let left = perRound;
  await Promise.all(clients.map(async (c) => {
    while (left-- > 0) {
      const i = n++;
      const w = workloads[i % workloads.length];
      try {
        if (PRESSURE[w]) await PRESSURE[w](c, i, server.baseUrl);
        else if (!(await call(c, 'run_python', CODES[w])).structuredContent) console.log('no structuredContent', w);
      } catch (err) {
        console.log(`${w}: ${String(err).slice(0, 300)}`);
      }
    }
  }));
  for (const c of clients) { await c.transport.terminateSession().catch(() => {}); await c.close(); }
  await sleep(6000);
  console.log(`round ${r + 1} (${(r + 1) * perRound} runs)`, await snap());
}
const st = await server.stop();
console.log('stopped', st.code, 'leftovers', st.leftovers.length);
