// Sign-in through an OIDC provider nobody here wrote: zitadel's OpenID
// Provider (github.com/zitadel/oidc/v3), run as a process of its own by
// test/oidcprovider on loopback, with its own login page, its own session
// (a returning browser is signed in without the password) and
// RP-initiated logout. A reviewer opens a review deep link, is sent to the
// provider's login page, types their username and password there, lands
// back on the same review, approves it, and the approval names them: in
// the page's header, in the review history, in the approval event and in
// the review.decided webhook a receiver on loopback gets. Then they sign
// out: planserver's cookie is refused, and the provider's session is over
// too, so signing in again asks for the password again.
// (Dex was the first choice; it does not build from the Go module proxy.)

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startServer, launchBrowser, repoRoot, eventually, watchPage, shoot } from './harness.mjs';

const email = 'reviewer@example.com';
const username = 'rita';
const password = 'rita-e2e-password';
const secret = 'planserver-e2e-secret';

let idp;
let srv;
let browser;
let admin;
let receiver;
const deliveries = [];

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
async function startProvider(base) {
  const bin = path.join(mkdtempSync(path.join(tmpdir(), 'oidcprovider-')), 'oidcprovider');
  execFileSync('go', ['build', '-o', bin, './test/oidcprovider'], { cwd: repoRoot, stdio: 'inherit' });
  const proc = spawn(bin, ['--client-secret', secret, '--redirect-uri', `${base}/auth/callback`,
    '--post-logout-redirect-uri', `${base}/ui/`, '--username', username, '--password', password, '--email', email,
    '--given-name', 'Rita', '--family-name', 'Reviewer'], { stdio: ['ignore', 'pipe', 'inherit'] });
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

// verifies a Standard Webhooks signature (docs/webhooks.md).
function signedBy(whsec, headers, body) {
  const key = Buffer.from(whsec.replace(/^whsec_/, ''), 'base64');
  const want = Buffer.from('v1,' + createHmac('sha256', key)
    .update(`${headers['webhook-id']}.${headers['webhook-timestamp']}.${body}`).digest('base64'));
  return (headers['webhook-signature'] || '').split(' ')
    .some((sig) => sig.length === want.length && timingSafeEqual(Buffer.from(sig), want));
}

before(async () => {
  receiver = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      deliveries.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  });
  await new Promise((r) => receiver.listen(0, '127.0.0.1', r));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  idp = await startProvider(base);
  srv = await startServer({
    addr: `127.0.0.1:${port}`,
    args: ['--auth', 'token', '--oidc-issuer', idp.issuer, '--oidc-client-id', 'planserver',
      '--oidc-redirect-url', `${base}/auth/callback`, '--oidc-roles', `reviewer=email:${email}`,
      '--webhook-allow-hosts', '127.0.0.1'],
    env: { PLANSERVER_OIDC_CLIENT_SECRET: secret },
  });
  admin = srv.api(srv.token('admin', 'ops'));
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await srv?.stop();
  receiver?.close();
  if (idp?.proc && idp.proc.exitCode === null) {
    idp.proc.kill('SIGTERM');
    await new Promise((r) => idp.proc.once('exit', r));
  }
});

test('a reviewer signs in on the provider\'s page from a deep link, approves, is named everywhere, and signs out of both', async () => {
  const hook = await admin.must(201, 'POST', '/v1/webhooks',
    { url: `http://127.0.0.1:${receiver.address().port}/hook`, events: ['review.decided'] });
  await admin.must(201, 'POST', '/v1/sessions', { id: 'oidc-review', title: 'Ship it', mode: 'plan' });
  const agent = srv.api(srv.token('agent', 'agent-oidc', 'oidc-review'));
  await agent.must(201, 'PUT', '/v1/sessions/oidc-review/plan', { content: '# Plan\n1. Ship it\n' });
  await agent.must(200, 'POST', '/v1/sessions/oidc-review/plan/review', {});

  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, timezoneId: 'UTC', locale: 'en-GB' });
  const page = await context.newPage();
  const deep = `${srv.url}/ui/sessions/oidc-review/review?revision=1`;
  const loginPage = `${idp.issuer}/login/username?**`;
  await page.goto(deep);
  // The console offers the organisation's sign-in; the provider asks for
  // the password on its own page.
  await page.locator('#sign-in-oidc').click();
  await page.waitForURL(loginPage);
  await page.locator('#username').fill(username);
  await page.locator('#password').fill('wrong-password');
  await page.getByRole('button', { name: 'Login' }).click();
  await page.getByText('username or password wrong').waitFor(); // the provider's page refuses it
  await page.locator('#username').fill(username);
  await page.locator('#password').fill(password);
  await page.getByRole('button', { name: 'Login' }).click();
  // Back on the deep link, signed in.
  await page.waitForURL(deep);
  await page.locator('#signed-in-as').waitFor();
  assert.match(await page.locator('#signed-in-as').textContent(), /Rita Reviewer|reviewer@example\.com/);
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
  // The review.decided webhook names the person too, signed with the
  // subscription's secret.
  await eventually(() => assert.equal(deliveries.length, 1), 20000);
  const [got] = deliveries;
  assert.ok(signedBy(hook.secret, got.headers, got.body), 'the delivery is signed with the subscription\'s secret');
  const delivered = JSON.parse(got.body);
  assert.equal(delivered.type, 'review.decided');
  assert.equal(delivered.data.type, 'session.review_approved');
  assert.equal(delivered.data.actor, email);
  assert.equal(delivered.data.person.email, email);

  // The provider remembers this browser: without planserver's cookie (a
  // sign-in that timed out, say), signing in again needs no password.
  const cookie = (await context.cookies(srv.url)).find((c) => c.name === 'planserver_session');
  assert.ok(cookie && cookie.httpOnly && cookie.sameSite === 'Lax', 'the sign-in cookie is HttpOnly and SameSite=Lax');
  await context.clearCookies({ name: 'planserver_session' });
  await page.goto(deep);
  await page.locator('#sign-in-oidc').click();
  await page.waitForURL(deep);
  await page.locator('#signed-in-as').waitFor();

  // Sign out: planserver's cookie is refused from then on, and the
  // browser passes through the provider's end_session_endpoint back to
  // the console, which ends the provider's session too.
  const second = (await context.cookies(srv.url)).find((c) => c.name === 'planserver_session');
  const ended = page.waitForRequest((r) => r.url().startsWith(`${idp.issuer}/end_session?`));
  await page.getByRole('button', { name: 'Sign out' }).click();
  const endSession = new URL((await ended).url());
  assert.equal(endSession.searchParams.get('client_id'), 'planserver');
  assert.equal(endSession.searchParams.get('post_logout_redirect_uri'), `${srv.url}/ui/`);
  assert.ok(endSession.searchParams.get('id_token_hint'), 'the logout carries the ID token as id_token_hint');
  await page.waitForURL(`${srv.url}/ui/`);
  await page.locator('#sign-in-oidc').waitFor();
  const res = await fetch(`${srv.url}/v1/me`, { headers: { Cookie: `planserver_session=${second.value}` } });
  assert.equal(res.status, 401);
  await page.locator('#sign-in-oidc').click();
  await page.waitForURL(loginPage); // the provider asks for the password again
  await page.locator('#password').waitFor();
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

test('an admin ends a person\'s sign-in on the console\'s sign-ins page, and the person\'s open page is signed out at once', async () => {
  await admin.must(201, 'POST', '/v1/sessions', { id: 'oidc-watch', title: 'Watched', mode: 'plan' });
  // The person signs in on the provider's page and keeps the inbox open,
  // its live updates flowing.
  const personCtx = await browser.newContext({ viewport: { width: 1280, height: 800 }, timezoneId: 'UTC', locale: 'en-GB' });
  const person = await personCtx.newPage();
  const personProblems = watchPage(person, [srv.url, idp.issuer]);
  await person.goto(`${srv.url}/ui/`);
  await person.locator('#sign-in-oidc').click();
  await person.waitForURL(`${idp.issuer}/login/username?**`);
  await person.locator('#username').fill(username);
  await person.locator('#password').fill(password);
  await person.getByRole('button', { name: 'Login' }).click();
  await person.waitForURL(`${srv.url}/ui/`);
  await person.locator('#signed-in-as').waitFor();
  await person.locator('#feed[data-state="live"]').waitFor();
  // A reviewer is not offered the sign-ins page.
  assert.equal(await person.locator('a[data-nav="signins"]').isVisible(), false);
  const cookie = (await personCtx.cookies(srv.url)).find((c) => c.name === 'planserver_session');
  const me = await (await fetch(`${srv.url}/v1/me`, { headers: { Cookie: `planserver_session=${cookie.value}` } })).json();
  assert.match(me.signin_id, /^si_[A-Za-z0-9_-]{22}$/);

  // The admin, with a token, opens the sign-ins page from the navigation.
  const adminCtx = await browser.newContext({ viewport: { width: 1280, height: 720 }, timezoneId: 'UTC', locale: 'en-GB' });
  const page = await adminCtx.newPage();
  const problems = watchPage(page, [srv.url]);
  await page.goto(`${srv.url}/ui/`);
  await page.locator('#token').fill(srv.token('admin', 'console-admin'));
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('link', { name: 'Sign-ins' }).click();
  await page.getByRole('heading', { name: 'Sign-ins', exact: true }).waitFor();
  // The reviewer's sign-in of the first test whose cookie the browser
  // dropped is still on record beside this one: two rows, one person.
  const row = page.locator(`tr[data-signin="${me.signin_id}"]`);
  await row.waitFor();
  assert.match(await row.textContent(), new RegExp(`Rita Reviewer.*${email.replace('.', '\\.')}.*reviewer`));
  const listed = (await admin.must(200, 'GET', '/v1/signins')).signins.filter((s) => s.email === email);
  assert.equal(await page.locator('tr[data-signin]', { hasText: email }).count(), listed.length);
  await shoot(page, 'console-signins', { fullPage: true });

  await row.locator('button[data-action="end"]').click();
  await row.waitFor({ state: 'detached' });
  assert.equal((await admin.must(200, 'GET', '/v1/signins')).signins.some((s) => s.id === me.signin_id), false);
  // The person's page, untouched, learns it from its event stream: it is
  // back at the sign-in screen, saying why.
  await person.locator('#sign-in-oidc').waitFor({ timeout: 10000 });
  assert.match(await person.locator('main').textContent(), /Your sign-in has ended/);
  const res = await fetch(`${srv.url}/v1/me`, { headers: { Cookie: `planserver_session=${cookie.value}` } });
  assert.equal(res.status, 401);
  assert.deepEqual(problems, []);
  assert.deepEqual(personProblems, []);
  await adminCtx.close();
  await personCtx.close();
});
