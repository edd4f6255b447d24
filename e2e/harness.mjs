// harness.mjs starts the real planserver binary on a fresh database and a
// free loopback port, talks to its API the way an agent or a script does
// (no Origin header), and launches Debian's Chromium through
// playwright-core.

import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

let builtBinary = null;

// binary returns the planserver binary under test: $PLANSERVER_BIN (make
// test-ui builds it once for every test file), else one built here.
export function binary() {
  if (process.env.PLANSERVER_BIN) return process.env.PLANSERVER_BIN;
  if (!builtBinary) {
    const dir = mkdtempSync(path.join(tmpdir(), 'planserver-bin-'));
    builtBinary = path.join(dir, 'planserver');
    execFileSync('go', ['build', '-o', builtBinary, './cmd/planserver'], { cwd: repoRoot, stdio: 'inherit' });
  }
  return builtBinary;
}

// startServer serves on 127.0.0.1:0 (the kernel picks a free port; the
// address is read back from the log) with a database in a temp dir.
// A test that restarts the server passes the first one's dir and addr
// (its database and port) to the second, and stops the first with
// stop({ keep: true }).
export async function startServer({ args = [], env = {}, dir: reuse, addr = '127.0.0.1:0' } = {}) {
  const dir = reuse || mkdtempSync(path.join(tmpdir(), 'planserver-e2e-'));
  const db = path.join(dir, 'planserver.db');
  const bin = binary();
  const proc = spawn(bin, ['serve', '--addr', addr, '--db', db, '--log-format', 'json', ...args], {
    env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  const logs = [];
  const url = await new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error(`planserver did not start:\n${logs.join('\n')}`)), 30000);
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', (chunk) => {
      buf += chunk;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        logs.push(line);
        try {
          const rec = JSON.parse(line);
          if (rec.msg === 'planserver listening') {
            clearTimeout(timer);
            resolve(rec.addr);
          }
        } catch {
          // not a log record
        }
      }
    });
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`planserver exited with ${code}:\n${logs.join('\n')}`));
    });
  });
  // Wait until the database is ready.
  for (let i = 0; ; i += 1) {
    try {
      const res = await fetch(`${url}/readyz`);
      if (res.ok) break;
    } catch {
      // not yet
    }
    if (i > 100) throw new Error('planserver never became ready');
    await new Promise((r) => setTimeout(r, 100));
  }
  const server = {
    url,
    port: Number(new URL(url).port),
    addr: new URL(url).host,
    dir,
    db,
    logs,
    // token creates a token with the command line, as a user does.
    token(role, name, session) {
      const args = ['token', 'create', '--role', role, '--name', name, '--db', db];
      if (session) args.push('--session', session);
      return execFileSync(bin, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    },
    // api returns a client that calls the API with token ('' for none).
    api(token = '') {
      return client(url, token);
    },
    async stop({ keep = false } = {}) {
      if (proc.exitCode === null) {
        proc.kill('SIGTERM');
        await new Promise((r) => proc.once('exit', r));
      }
      if (!keep) rmSync(dir, { recursive: true, force: true });
    },
  };
  return server;
}

// client calls the API like curl or an agent: JSON bodies, no Origin.
export function client(base, token) {
  async function call(method, p, body, headers = {}) {
    const h = { Accept: 'application/json', ...headers };
    if (token) h.Authorization = `Bearer ${token}`;
    let payload;
    if (body !== undefined) {
      h['Content-Type'] = 'application/json';
      payload = JSON.stringify(body);
    }
    const res = await fetch(base + p, { method, headers: h, body: payload });
    const text = await res.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = text;
    }
    return { status: res.status, data, headers: res.headers };
  }
  return {
    get: (p, h) => call('GET', p, undefined, h),
    post: (p, body, h) => call('POST', p, body, h),
    put: (p, body, h) => call('PUT', p, body, h),
    patch: (p, body, h) => call('PATCH', p, body, h),
    del: (p, h) => call('DELETE', p, undefined, h),
    // must fails the test unless the answer has the expected status.
    async must(status, method, p, body, h) {
      const res = await call(method, p, body, h);
      if (res.status !== status) {
        throw new Error(`${method} ${p}: want ${status}, got ${res.status} ${JSON.stringify(res.data)}`);
      }
      return res.data;
    },
  };
}

// chromiumArgs are what Debian's Chromium needs here: as root it has no
// sandbox, there is no GPU, and the machine has no network beyond
// loopback, so every background service is off.
export const chromiumArgs = [
  '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run', '--disable-quic', '--disable-dev-shm-usage',
];

export async function launchBrowser(extraArgs = []) {
  const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
  if (!existsSync(executablePath)) {
    throw new Error(`${executablePath} is missing: run .ci/install-browser (apt-get install chromium)`);
  }
  // Playwright gives every launch a fresh temporary profile
  // (--user-data-dir) and removes it on close.
  return chromium.launch({ executablePath, headless: true, args: [...chromiumArgs, ...extraArgs] });
}

// watchPage records what a page must never do: console errors, failed
// Content-Security-Policy checks, uncaught exceptions, and requests to
// anywhere but the servers the test named.
export function watchPage(page, allowedOrigins) {
  const problems = [];
  page.on('console', (msg) => {
    // A refused request (403, 412) is logged by Chromium as "Failed to
    // load resource"; the console answers those in its own words.
    if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) {
      problems.push(`console error: ${msg.text()}`);
    }
  });
  page.on('pageerror', (err) => problems.push(`uncaught: ${err.message}`));
  page.on('request', (req) => {
    const u = new URL(req.url());
    if (!allowedOrigins.includes(u.origin)) problems.push(`request to ${req.url()}`);
  });
  return problems;
}

// newPage opens a tab of browser at viewport that records console
// errors, CSP violations and requests to any origin but the server's
// (watchPage), and every URL it requests (to prove no token is ever put
// in one). One time zone and locale, so what the pages show does not
// depend on the machine that runs the tests.
export async function newPage(browser, srv, viewport = { width: 1280, height: 800 }) {
  const context = await browser.newContext({ viewport, timezoneId: 'UTC', locale: 'en-GB' });
  const page = await context.newPage();
  const problems = watchPage(page, [srv.url]);
  const urls = [];
  page.on('request', (req) => urls.push(req.url()));
  return { page, context, problems, urls };
}

// signIn signs page in to the console of srv with token, and waits for
// the inbox.
export async function signIn(page, srv, token) {
  await page.goto(`${srv.url}/ui/`);
  await page.getByLabel('Token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Plans waiting for review' }).waitFor();
}

// shoot saves a screenshot of a page or an element as name.png, only when
// SCREENSHOTS is set: SCREENSHOTS=1 writes to docs/screenshots (the
// README's pictures), any other value names a directory (relative to the
// repository root). A plain `make test-ui` writes nothing, so running the
// suite never rewrites the committed pictures with new timestamps.
export async function shoot(target, name, opts = {}) {
  const want = process.env.SCREENSHOTS;
  if (!want) return;
  const dir = want === '1' ? path.join(repoRoot, 'docs', 'screenshots') : path.resolve(repoRoot, want);
  mkdirSync(dir, { recursive: true });
  await target.screenshot({ path: path.join(dir, `${name}.png`), animations: 'disabled', caret: 'hide', ...opts });
}

// eventually retries fn until it returns without throwing, for at most ms.
export async function eventually(fn, ms = 10000) {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
