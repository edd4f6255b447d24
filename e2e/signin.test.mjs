// Sign-in through an OIDC provider nobody here wrote: mockoidc
// (github.com/oauth2-proxy/mockoidc) run as a process of its own by
// test/oidcprovider, on loopback. (Dex, with a login page of its own, was
// the first choice; it does not build from the Go module proxy today.)
// A reviewer opens a review deep link, signs in through the provider,
// lands back on the same review, approves it, and the approval names
// them: in the page's header, in the review history and in the approval
// event. Then they sign out, and the cookie they held is refused.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startServer, launchBrowser, repoRoot } from './harness.mjs';

const email = 'reviewer@example.com';
const secret = 'planserver-e2e-secret';

let idp;
let srv;
let browser;
let admin;

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// startProvider builds and runs test/oidcprovider and reads its issuer.
async function startProvider() {
  const bin = path.join(mkdtempSync(path.join(tmpdir(), 'oidcprovider-')), 'oidcprovider');
  execFileSync('go', ['build', '-o', bin, './test/oidcprovider'], { cwd: repoRoot, stdio: 'inherit' });
  const proc = spawn(bin, ['--client-secret', secret, '--email', email], { stdio: ['ignore', 'pipe', 'pipe'] });
  const issuer = await new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error('the OIDC provider did not start')), 30000);
    proc.stdout.setEncoding('utf8');
    proc.stdout.on('data', (c) => {
      buf += c;
      const nl = buf.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(timer);
        resolve(JSON.parse(buf.slice(0, nl)).issuer);
      }
    });
    proc.on('exit', (code) => reject(new Error(`the OIDC provider exited with ${code}`)));
  });
  return { proc, issuer };
}

before(async () => {
  const port = await freePort();
  const redirect = `http://127.0.0.1:${port}/auth/callback`;
  idp = await startProvider();
  srv = await startServer({
    addr: `127.0.0.1:${port}`,
    args: ['--auth', 'token', '--oidc-issuer', idp.issuer, '--oidc-client-id', 'planserver',
      '--oidc-redirect-url', redirect, '--oidc-roles', `reviewer=email:${email}`],
    env: { PLANSERVER_OIDC_CLIENT_SECRET: secret },
  });
  admin = srv.api(srv.token('admin', 'ops'));
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await srv?.stop();
  if (idp?.proc && idp.proc.exitCode === null) {
    idp.proc.kill('SIGTERM');
    await new Promise((r) => idp.proc.once('exit', r));
  }
});

test('a reviewer signs in through the provider from a deep link, approves, and is named everywhere', async () => {
  await admin.must(201, 'POST', '/v1/sessions', { id: 'oidc-review', title: 'Ship it', mode: 'plan' });
  const agent = srv.api(srv.token('agent', 'agent-oidc', 'oidc-review'));
  await agent.must(201, 'PUT', '/v1/sessions/oidc-review/plan', { content: '# Plan\n1. Ship it\n' });
  await agent.must(200, 'POST', '/v1/sessions/oidc-review/plan/review', {});

  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, timezoneId: 'UTC', locale: 'en-GB' });
  const page = await context.newPage();
  const deep = `${srv.url}/ui/sessions/oidc-review/review?revision=1`;
  await page.goto(deep);
  // The console offers the organisation's sign-in; the provider signs
  // its user in and sends the browser back.
  await page.locator('#sign-in-oidc').click();
  // Back on the deep link, signed in.
  await page.waitForURL(deep);
  await page.locator('#signed-in-as').waitFor();
  assert.match(await page.locator('#signed-in-as').textContent(), /reviewer@example\.com|reviewer/);
  assert.match(await page.locator('#signed-in-as').textContent(), /reviewer$/);

  await page.locator('[data-action="approve"]:not([disabled])').click();
  await page.locator('[data-action="confirm-approve"]').click(); // approval asks first
  await page.locator('[data-outcome="approved"]').waitFor();

  const history = await admin.must(200, 'GET', '/v1/sessions/oidc-review/reviews');
  assert.equal(history.reviews[0].state, 'approved');
  assert.equal(history.reviews[0].ended_by, email);
  assert.equal(history.reviews[0].ended_by_person.email, email);
  const events = await admin.must(200, 'GET', '/v1/events?session_id=oidc-review');
  const approved = events.events.find((e) => e.type === 'session.review_approved');
  assert.ok(approved, 'no session.review_approved event');
  assert.equal(approved.actor, email);
  assert.equal(approved.person.email, email);

  // Sign out: the cookie this browser held is refused from then on.
  const cookie = (await context.cookies(srv.url)).find((c) => c.name === 'planserver_session');
  assert.ok(cookie && cookie.httpOnly && cookie.sameSite === 'Lax', 'the sign-in cookie is HttpOnly and SameSite=Lax');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.locator('#sign-in-oidc').waitFor();
  const res = await fetch(`${srv.url}/v1/me`, { headers: { Cookie: `planserver_session=${cookie.value}` } });
  assert.equal(res.status, 401);
  await context.close();
});

test('a login the provider cannot finish shows a page that says so', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  // A callback whose state this browser never got.
  const res = await page.goto(`${srv.url}/auth/callback?code=x&state=forged`);
  assert.equal(res.status(), 400);
  assert.match(await page.locator('h1').textContent(), /did not start in this browser/);
  assert.equal(await page.getByRole('link', { name: 'Sign in again' }).count(), 1);
  await context.close();
});
