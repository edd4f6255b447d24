// A web page the user visits cannot drive the server on the user's own
// machine (issue 20). The server runs as most developers run it: --auth
// none on loopback. Real Chromium loads pages from other loopback ports
// and tries what an attacker would; the API then shows that nothing
// changed, and the server's own metrics show that the requests did arrive
// and were refused. A page on a --cors-origins origin still works, and so
// does the console on the server's own origin.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startServer, launchBrowser, watchPage } from './harness.mjs';

let srv;
let api;
let evil;
let trusted;
let browser;

// pageServer serves one HTML page on a free loopback port: another origin
// than planserver's, as a site in another tab would be.
function pageServer(render) {
  const server = http.createServer((req, res) => {
    if (req.url === '/favicon.ico') { res.writeHead(404).end(); return; }
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(render());
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({ url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) });
    });
  });
}

let target = '';

before(async () => {
  // The page servers start first: the trusted one's origin goes into
  // --cors-origins.
  evil = await pageServer(() => `<!doctype html><title>cute cats</title>
<p>Nothing to see here.</p>
<iframe name="sink" hidden></iframe>
<form id="f" method="POST" target="sink" enctype="text/plain" action="${target}/v1/sessions">
  <input name='{"id":"evil-form","x":"' value='"}'>
</form>
<script>
(async () => {
  const target = ${JSON.stringify(target)};
  const attempts = [
    // Issue 20's attack: a Blob body has no type, so there is no
    // Content-Type and no preflight; mode no-cors sends it regardless.
    fetch(target + '/v1/sessions/victim/plan/reject', { method: 'POST', mode: 'no-cors',
      body: new Blob([JSON.stringify({ feedback: 'pwned' })]) }),
    fetch(target + '/v1/sessions', { method: 'POST', mode: 'no-cors',
      body: new Blob([JSON.stringify({ id: 'evil', title: 'made by a web page' })]) }),
    // A bodiless POST needs no media type at all.
    fetch(target + '/v1/sessions', { method: 'POST', mode: 'no-cors' }),
  ];
  const results = await Promise.allSettled(attempts);
  // The classic form post, text/plain, into a hidden frame.
  const sink = document.querySelector('iframe');
  await new Promise((resolve) => { sink.onload = resolve; document.getElementById('f').submit(); });
  document.title = 'done ' + results.map((r) => r.status).join(',');
})();
</script>`);
  trusted = await pageServer(() => `<!doctype html><title>trusted console</title>
<script>
(async () => {
  const target = ${JSON.stringify(target)};
  try {
    const created = await fetch(target + '/v1/sessions', { method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ id: 'from-console', title: 'made by a trusted console' }) });
    const body = await created.json();
    const etag = created.headers.get('ETag');
    const moved = await fetch(target + '/v1/sessions/from-console/mode', { method: 'PATCH',
      headers: { 'Content-Type': 'application/json', 'If-Match': etag },
      body: JSON.stringify({ mode: 'plan' }) });
    document.title = ['done', created.status, body.id, etag, moved.status].join(' ');
  } catch (err) {
    document.title = 'failed ' + err;
  }
})();
</script>`);
  srv = await startServer({ args: ['--cors-origins', trusted.url] });
  target = srv.url;
  api = srv.api();
  await api.must(201, 'POST', '/v1/sessions', { id: 'victim', title: 'Payments refactor', mode: 'plan' });
  await api.must(201, 'PUT', '/v1/sessions/victim/plan', { content: '# Plan\n1. Split the payments module\n' });
  await api.must(200, 'POST', '/v1/sessions/victim/plan/review', { rationale: 'Ready.' });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await srv?.stop();
  await evil?.close();
  await trusted?.close();
});

async function refusals(route) {
  const res = await fetch(`${srv.url}/metrics`);
  const text = await res.text();
  const line = text.split('\n').find((l) => l.startsWith(`planserver_http_requests_total{method="POST",route="${route}",status="403"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

test('a page on another origin cannot reject a review or create sessions', async () => {
  const before = (await api.must(200, 'GET', '/v1/sessions')).sessions.map((s) => s.id);
  const page = await browser.newPage();
  await page.goto(evil.url);
  await page.waitForFunction(() => document.title.startsWith('done'), null, { timeout: 15000 });

  const victim = await api.must(200, 'GET', '/v1/sessions/victim');
  assert.equal(victim.review.state, 'pending', 'the cross-site reject went through');
  assert.equal(victim.mode, 'plan');
  const after = (await api.must(200, 'GET', '/v1/sessions')).sessions.map((s) => s.id);
  assert.deepEqual(after, before, 'a cross-site request created a session');
  // The requests did reach the server, and were refused there: one
  // reject, three session creations (two fetches and the form).
  assert.equal(await refusals('/v1/sessions/{id}/plan/reject'), 1);
  assert.equal(await refusals('/v1/sessions'), 3);
  await page.close();
});

test('a page on a --cors-origins origin makes a proper CORS request that succeeds', async () => {
  const page = await browser.newPage();
  await page.goto(trusted.url);
  await page.waitForFunction(() => /^(done|failed)/.test(document.title), null, { timeout: 15000 });
  assert.equal(await page.title(), 'done 201 from-console "1" 200');
  const s = await api.must(200, 'GET', '/v1/sessions/from-console');
  assert.equal(s.mode, 'plan');
  assert.equal(s.title, 'made by a trusted console');
  await page.close();
});

test('the console on the server\'s own origin needs no token under --auth none, and its approval works', async () => {
  const page = await browser.newPage();
  const problems = watchPage(page, [srv.url]);
  await page.goto(`${srv.url}/ui/`);
  await page.getByText('no authentication (loopback)').waitFor();
  await page.locator('[data-session="victim"] h2 a').click();
  await page.getByRole('heading', { name: 'Plan revision 1' }).waitFor();
  await page.getByRole('button', { name: 'Approve revision 1' }).click();
  await page.locator('[data-action="confirm-approve"]').click();
  await page.locator('[data-outcome="approved"]').waitFor();
  const s = await api.must(200, 'GET', '/v1/sessions/victim');
  assert.equal(s.mode, 'build');
  assert.equal(s.review.decided_by, 'anonymous');
  assert.deepEqual(problems, []);
  await page.close();
});

test('a DNS-rebinding page (its name resolves to 127.0.0.1) gets 403 for the console and the API', async () => {
  // Chromium resolves attacker.example to 127.0.0.1, as a rebinding DNS
  // server would make it: the browser thinks the server is the page's own
  // origin, but the Host header still says attacker.example.
  const rebound = await launchBrowser(['--host-resolver-rules=MAP attacker.example 127.0.0.1',
    '--disable-features=HttpsUpgrades,HttpsFirstBalancedModeAutoEnable']);
  try {
    const page = await rebound.newPage();
    const ui = await page.goto(`http://attacker.example:${srv.port}/ui/`);
    assert.equal(ui.status(), 403);
    assert.match(await page.textContent('body'), /permission_denied/);
    const list = await page.goto(`http://attacker.example:${srv.port}/v1/sessions`);
    assert.equal(list.status(), 403);
    // From that origin, its own script gets nothing either.
    const status = await page.evaluate(async () => (await fetch('/v1/sessions/victim', { method: 'DELETE' })).status);
    assert.equal(status, 403);
    await api.must(200, 'GET', '/v1/sessions/victim');
    // The same browser, at a loopback name, is served.
    assert.equal((await page.goto(`http://localhost:${srv.port}/ui/`)).status(), 200);
  } finally {
    await rebound.close();
  }
});
