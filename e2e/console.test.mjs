// The review console in a real browser against the real server with
// --auth token: an admin and a viewer sign in with tokens made by
// `planserver token create`, agents work through the API with their own
// tokens, and every outcome the page shows is checked through the API too.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startServer, launchBrowser, watchPage, eventually, screenshotDir } from './harness.mjs';

let srv;
let browser;
let adminToken;
let viewerToken;
let admin; // API client with the admin token
const shots = screenshotDir();

before(async () => {
  srv = await startServer({ args: ['--auth', 'token'] });
  adminToken = srv.token('admin', 'alice');
  viewerToken = srv.token('viewer', 'victor');
  admin = srv.api(adminToken);
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await srv?.stop();
});

// newPage opens a tab at 1280×800 (or the given size) that records
// console errors, CSP violations and requests to any other origin, and
// every URL it requests (to prove no token is ever put in one).
async function newPage(viewport = { width: 1280, height: 800 }) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const problems = watchPage(page, [srv.url]);
  const urls = [];
  page.on('request', (req) => urls.push(req.url()));
  return { page, context, problems, urls };
}

async function signIn(page, token) {
  await page.goto(`${srv.url}/ui/`);
  await page.getByLabel('Token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Plans waiting for review' }).waitFor();
}

// agentSession makes a session in plan mode with an agent token bound to
// it, the way a host sets up its agent.
async function agentSession(id, title) {
  await admin.must(201, 'POST', '/v1/sessions', { id, title, agent: 'coder', mode: 'plan' });
  return srv.api(srv.token('agent', `agent-${id}`.toLowerCase().slice(0, 60), id));
}

async function planAndAsk(agent, id, content, rationale) {
  const { status, data: plan } = await agent.put(`/v1/sessions/${id}/plan`, { content });
  assert.ok(status === 201 || status === 200, `write plan: ${status} ${JSON.stringify(plan)}`);
  await agent.must(200, 'POST', `/v1/sessions/${id}/plan/review`, rationale ? { rationale } : {});
  return plan.revision;
}

function noProblems(problems, urls) {
  assert.deepEqual(problems, [], 'console errors, CSP violations or foreign requests');
  for (const u of urls) {
    assert.ok(!u.includes(adminToken) && !u.includes(viewerToken), `a token went into a URL: ${u}`);
  }
}

test('sign-in refuses a bad token and keeps a good one out of URLs and localStorage', async () => {
  const { page, context, problems, urls } = await newPage();
  await page.goto(`${srv.url}/ui/sessions`);
  await page.getByLabel('Token').fill('ps_not-a-real-token');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByText('That token was refused').waitFor();
  await page.getByLabel('Token').fill(adminToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  // Signing in stays on the page that was asked for.
  await page.getByRole('heading', { name: 'Sessions' }).waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem('planserver.token')), adminToken);
  assert.equal(await page.evaluate(() => localStorage.length), 0);
  await page.getByText('admin', { exact: true }).waitFor();
  noProblems(problems, urls);
  await context.close();
});

test('a plan written through the API appears in the inbox live, without a reload or polling', async () => {
  const { page, context, problems, urls } = await newPage();
  await signIn(page, adminToken);
  await page.locator('#feed[data-state="live"]').waitFor();
  // A marker in the page's memory survives only if the page never reloads.
  await page.evaluate(() => { window.notReloaded = true; });

  const older = await agentSession('billing', 'Refactor billing');
  await planAndAsk(older, 'billing', '# Plan\n1. Move invoice totals into billing/total.go\n2. Update the callers\n', 'Callers found with grep.');
  await page.locator('[data-session="billing"]').waitFor();
  const newer = await agentSession('search', 'Speed up search');
  await planAndAsk(newer, 'search', '# Plan\nAdd an index on documents(title).\n', 'The slow query log points at title lookups.');
  await page.locator('[data-session="search"]').waitFor();

  // Newest request first.
  const order = await page.locator('.inbox [data-session]').evaluateAll((els) => els.map((e) => e.dataset.session));
  assert.deepEqual(order.slice(0, 2), ['search', 'billing']);
  assert.equal(await page.evaluate(() => window.notReloaded), true);
  // The card links to the stable review URL.
  assert.equal(await page.locator('[data-session="search"] h2 a').getAttribute('href'), '/ui/sessions/search/review?revision=1');

  // Quiet server, quiet page: nothing is fetched while nothing changes.
  const before = urls.length;
  await page.waitForTimeout(2500);
  assert.deepEqual(urls.slice(before), [], 'the inbox polled');

  // A decision made elsewhere takes the card away, live too.
  await admin.must(200, 'POST', '/v1/sessions/search/plan/reject', { feedback: 'Measure first.' }, { 'If-Match': '"1"' });
  await page.locator('[data-session="search"]').waitFor({ state: 'detached' });
  await planAndAsk(newer, 'search', '# Plan\n1. Measure the slow queries\n2. Add an index on documents(title)\n', 'Measured: 2.3 s p99 on title lookups.');
  await page.locator('[data-session="search"]').waitFor();
  // Screen readers hear about it through the aria-live region.
  await eventually(async () => assert.match(await page.locator('#announce').textContent(), /Review requested: Speed up search, plan revision 2/));

  await page.screenshot({ path: path.join(shots, 'inbox.png') });
  noProblems(problems, urls);
  await context.close();
});

test('approve by keyboard: the session goes back to build mode', async () => {
  const agent = await agentSession('approve-me', 'Fix the rounding bug');
  const rev = await planAndAsk(agent, 'approve-me', '# Plan\n1. Round half to even in billing/round.go\n2. Run go test ./billing/...\n');
  const { page, context, problems, urls } = await newPage();
  await signIn(page, adminToken);
  await page.goto(`${srv.url}/ui/sessions/approve-me/review?revision=${rev}`);
  await page.getByRole('heading', { name: `Plan revision ${rev}` }).waitFor();
  await page.locator('#feed[data-state="live"]').waitFor();

  // Tab through the page until the approve button has focus, then press
  // Enter: the button is reachable in the focus order and is a button.
  let found = false;
  for (let i = 0; i < 40 && !found; i += 1) {
    await page.keyboard.press('Tab');
    found = await page.evaluate(() => document.activeElement?.dataset?.action === 'approve');
  }
  assert.ok(found, 'Tab never reached the approve button');
  const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
  assert.notEqual(outline, 'none', 'the focused button shows no focus ring');
  await page.keyboard.press('Enter');
  await page.locator('[data-outcome="approved"]').waitFor();

  const s = await admin.must(200, 'GET', '/v1/sessions/approve-me');
  assert.equal(s.mode, 'build');
  assert.equal(s.effective_mode, 'build');
  assert.equal(s.review.state, 'approved');
  assert.equal(s.review.plan_revision, rev);
  assert.equal(s.review.decided_by, 'alice');
  noProblems(problems, urls);
  await context.close();
});

test('the plan changes while the review page is open: the change is shown and the stale approval refused', async () => {
  const agent = await agentSession('rewrite', 'Migrate the cache');
  const v1 = '# Plan\n1. Add Redis\n2. Move sessions to Redis\n3. Remove the old cache\n';
  const v2 = '# Plan\n1. Add Redis behind a flag\n2. Move sessions to Redis\n3. Remove the old cache after a week\n4. Roll back by turning the flag off\n';
  await planAndAsk(agent, 'rewrite', v1, 'One cache instead of two.');
  const { page, context, problems, urls } = await newPage();
  await signIn(page, adminToken);
  await page.goto(`${srv.url}/ui/sessions/rewrite/review?revision=1`);
  await page.getByRole('heading', { name: 'Plan revision 1' }).waitFor();
  await page.locator('#feed[data-state="live"]').waitFor();
  assert.equal(await page.locator('[data-action="approve"]').isEnabled(), true);

  // The agent rewrites its plan (which withdraws the pending review) and
  // asks again, while the human is still reading revision 1.
  await agent.must(200, 'PUT', '/v1/sessions/rewrite/plan', { content: v2 });
  const notice = page.locator('[data-notice="plan-changed"]');
  await notice.waitFor();
  assert.match(await notice.textContent(), /revision 1 → 2/);
  // The diff shows what changed, added and removed lines alike.
  assert.ok(await notice.locator('tr.add', { hasText: 'Roll back by turning the flag off' }).count() === 1);
  assert.ok(await notice.locator('tr.del', { hasText: '1. Add Redis' }).count() === 1);
  // Approving what is on screen is no longer offered...
  assert.equal(await page.locator('[data-action="approve"]').isDisabled(), true);
  assert.equal(await page.locator('[data-action="reject"]').isDisabled(), true);
  // ...and the server refuses it anyway, even once the agent asked again.
  await agent.must(200, 'POST', '/v1/sessions/rewrite/plan/review', {});
  await page.getByText('The pending review is for plan revision 2.').waitFor();
  const stale = await admin.post('/v1/sessions/rewrite/plan/approve', undefined, { 'If-Match': '"1"' });
  assert.equal(stale.status, 412);
  assert.equal(stale.data.code, 'version_conflict');
  assert.equal(stale.data.current_revision, 2);
  assert.equal((await admin.must(200, 'GET', '/v1/sessions/rewrite')).mode, 'plan');
  await page.screenshot({ path: path.join(shots, 'review-changed.png'), fullPage: true });

  // The human reads revision 2 and approves that.
  await page.locator('[data-action="read-newer"]').click();
  await page.getByRole('heading', { name: 'Plan revision 2' }).waitFor();
  assert.match(page.url(), /\/ui\/sessions\/rewrite\/review\?revision=2$/);
  await page.locator('[data-action="approve"]:not([disabled])').click();
  await page.locator('[data-outcome="approved"]').waitFor();
  const s = await admin.must(200, 'GET', '/v1/sessions/rewrite');
  assert.equal(s.mode, 'build');
  assert.equal(s.review.plan_revision, 2);
  noProblems(problems, urls);
  await context.close();
});

test('without the event feed, an approval of a rewritten plan is refused by the server and the page says so', async () => {
  const agent = await agentSession('offline', 'Rotate the keys');
  await planAndAsk(agent, 'offline', '# Plan\n1. Rotate the signing key\n');
  const { page, context, problems, urls } = await newPage();
  // Cut the page off from the feed: it cannot learn of the rewrite, so
  // only the If-Match of its approval protects the human.
  await page.route('**/v1/events?**', (route) => (route.request().headers().accept === 'text/event-stream' ? route.abort() : route.continue()));
  await signIn(page, adminToken);
  await page.goto(`${srv.url}/ui/sessions/offline/review?revision=1`);
  await page.getByRole('heading', { name: 'Plan revision 1' }).waitFor();
  await agent.must(200, 'PUT', '/v1/sessions/offline/plan', { content: '# Plan\n1. Rotate the signing key\n2. Delete the old key at once\n' });
  await agent.must(200, 'POST', '/v1/sessions/offline/plan/review', {});
  await page.locator('[data-action="approve"]').click();
  const refusal = page.locator('[data-outcome="stale"]');
  await refusal.waitFor();
  assert.match(await refusal.textContent(), /refused.*revision 2/s);
  await page.locator('[data-notice="plan-changed"] tr.add', { hasText: 'Delete the old key at once' }).waitFor();
  const s = await admin.must(200, 'GET', '/v1/sessions/offline');
  assert.equal(s.mode, 'plan', 'the stale approval changed the mode');
  assert.equal(s.review.state, 'pending');
  assert.equal(s.review.plan_revision, 2);
  // The feed is cut, so the header says updates are not live.
  assert.notEqual(await page.locator('#feed').getAttribute('data-state'), 'live');

  // The link the agent handed out for revision 1, opened now: the page
  // says the plan moved on, and what it offers to approve is what it
  // shows, revision 2.
  await page.goto(`${srv.url}/ui/sessions/offline/review?revision=1`);
  await page.getByRole('heading', { name: 'Plan revision 2' }).waitFor();
  assert.match(await page.locator('[data-notice="link-revision"]').textContent(),
    /This link is for plan revision 1; the plan is now at revision 2/);
  assert.equal(await page.locator('[data-action="approve"]').textContent(), 'Approve revision 2');
  noProblems(problems.filter((p) => !p.includes('ERR_FAILED')), urls);
  await context.close();
});

test('reject with feedback: the agent reads it through the API', async () => {
  const agent = await agentSession('reject-me', 'Drop the legacy API');
  await planAndAsk(agent, 'reject-me', '# Plan\n1. Delete /v0 handlers\n');
  const { page, context, problems, urls } = await newPage();
  await signIn(page, adminToken);
  await page.goto(`${srv.url}/ui/sessions/reject-me/review?revision=1`);
  await page.getByRole('heading', { name: 'Plan revision 1' }).waitFor();
  await page.getByLabel('Feedback for the agent').fill('Announce the removal first; two clients still call /v0.');
  await page.getByRole('button', { name: 'Reject revision 1' }).click();
  await page.locator('[data-outcome="rejected"]').waitFor();

  const s = await agent.must(200, 'GET', '/v1/sessions/reject-me');
  assert.equal(s.review.state, 'rejected');
  assert.equal(s.review.feedback, 'Announce the removal first; two clients still call /v0.');
  assert.equal(s.review.decided_by, 'alice');
  assert.equal(s.mode, 'plan');
  const plan = await agent.must(200, 'GET', '/v1/sessions/reject-me/plan');
  assert.equal(plan.revision, 1);
  // The page shows the decision and the feedback it sent.
  await page.locator('.decision blockquote.feedback', { hasText: 'two clients still call /v0' }).waitFor();
  noProblems(problems, urls);
  await context.close();
});

test('a viewer sees everything read-only, and the API refuses its approval', async () => {
  const agent = await agentSession('viewed', 'Tune the GC');
  await planAndAsk(agent, 'viewed', '# Plan\nSet GOGC=200 on the workers.\n');
  const { page, context, problems, urls } = await newPage();
  await signIn(page, viewerToken);
  await page.getByText('read-only', { exact: false }).first().waitFor();
  await page.locator('[data-session="viewed"]').waitFor();
  await page.goto(`${srv.url}/ui/sessions/viewed/review?revision=1`);
  await page.getByRole('heading', { name: 'Plan revision 1' }).waitFor();
  await page.locator('[data-field="read-only"]').waitFor();
  assert.equal(await page.locator('[data-action="approve"]').count(), 0);
  assert.equal(await page.locator('[data-action="reject"]').count(), 0);
  await page.goto(`${srv.url}/ui/sessions/viewed`);
  await page.getByRole('heading', { name: 'Tune the GC' }).waitFor();
  assert.equal(await page.locator('[data-action="toggle-mode"]').count(), 0);

  const viewer = srv.api(viewerToken);
  const res = await viewer.post('/v1/sessions/viewed/plan/approve', undefined, { 'If-Match': '"1"' });
  assert.equal(res.status, 403);
  assert.equal(res.data.code, 'permission_denied');
  assert.equal((await admin.must(200, 'GET', '/v1/sessions/viewed')).review.state, 'pending');
  noProblems(problems, urls);
  await context.close();
});

test('plan Markdown is rendered sanitised: no HTML, no scripts, no loaded images, only http(s) links', async () => {
  const agent = await agentSession('hostile', 'A plan with HTML in it');
  const content = [
    '# Plan <script>window.pwned = 1</script>',
    '',
    'Run <img src=x onerror="window.pwned = 2"> and <b onclick="window.pwned = 3">this</b>.',
    '',
    '- [docs](https://example.com/docs "the docs")',
    '- [click](javascript:window.pwned=4)',
    '- [data](data:text/html,<script>window.pwned=5</script>)',
    '- [tricky](jav&#x09;ascript:window.pwned=6)',
    '- ![tracking pixel](http://tracker.example/p.png)',
    '- [relative](../../plans)',
    '',
    '```html',
    '<iframe src="https://evil.example"></iframe>',
    '```',
  ].join('\n');
  await planAndAsk(agent, 'hostile', content);
  const { page, context, problems, urls } = await newPage();
  await signIn(page, adminToken);
  await page.goto(`${srv.url}/ui/sessions/hostile/review?revision=1`);
  await page.getByRole('heading', { name: 'Plan revision 1' }).waitFor();
  const plan = page.locator('article.plan .markdown');
  for (const tag of ['script', 'img', 'iframe', 'b', 'object', 'embed']) {
    assert.equal(await plan.locator(tag).count(), 0, `a <${tag}> element was created`);
  }
  assert.match(await plan.textContent(), /<img src=x onerror="window.pwned = 2">/);
  assert.match(await plan.textContent(), /<iframe src="https:\/\/evil.example"><\/iframe>/);
  const links = await plan.locator('a').evaluateAll((as) => as.map((a) => ({ href: a.href, rel: a.rel, target: a.target, text: a.textContent })));
  for (const l of links) {
    assert.match(l.href, /^https?:/, `unsafe link ${l.href}`);
    assert.equal(l.rel, 'noopener noreferrer');
    assert.equal(l.target, '_blank');
  }
  assert.ok(links.some((l) => l.href === 'https://example.com/docs'));
  assert.ok(links.some((l) => l.text === '[image: tracking pixel]' && l.href === 'http://tracker.example/p.png'));
  assert.equal(links.filter((l) => /click|data|tricky/.test(l.text)).length, 0);
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  // watchPage fails on any request to tracker.example or evil.example.
  noProblems(problems, urls);
  await context.close();
});

test('shared plans: list with progress, and the step graph drawn as a DAG, live', async () => {
  await admin.must(201, 'PUT', '/v1/plans/csv-upload', {
    title: 'CSV upload', author: 'architect', status: 'in-progress',
    content: '# CSV upload\n\nUsers upload a CSV; we validate it and show the rows.\n',
    steps: [
      { id: '1', description: 'Design the csv_uploads table', owner: 'DB-Agent' },
      { id: '2', description: 'POST /uploads endpoint', owner: 'Backend-Agent', deps: ['1'] },
      { id: '3', description: 'Upload form and results table', owner: 'UI-Agent', deps: ['1'] },
      { id: '4', description: 'End-to-end test', owner: 'QA-Agent', deps: ['2', '3'] },
    ],
  });
  const worker = admin; // the coordinator and its workers, all through the API
  await worker.must(200, 'POST', '/v1/plans/csv-upload/steps/claim', { worker: 'db-worker-1', owner: 'DB-Agent', lease_seconds: 600 });
  await worker.must(201, 'POST', '/v1/plans/csv-upload/steps/1/reports', {
    worker: 'db-worker-1', outcome: 'success', details: 'Added the csv_uploads table.',
    artifacts: [{ file: 'migrations/0042_csv_uploads.sql', status: 'created' }],
  });
  await worker.must(200, 'POST', '/v1/plans/csv-upload/steps/claim', { worker: 'api-worker-1', owner: 'Backend-Agent', lease_seconds: 900 });
  await worker.must(200, 'POST', '/v1/plans/csv-upload/steps/claim', { worker: 'ui-worker-1', owner: 'UI-Agent', lease_seconds: 1 });
  await worker.must(201, 'POST', '/v1/plans/csv-upload/steps/3/reports', {
    worker: 'ui-worker-1', outcome: 'failure', details: 'The results table does not render on Safari.',
  });

  const { page, context, problems, urls } = await newPage();
  await signIn(page, adminToken);
  await page.getByRole('link', { name: 'Shared plans' }).click();
  const row = page.locator('[data-plan="csv-upload"]');
  await row.waitFor();
  assert.match(await row.textContent(), /in-progress/);
  assert.match(await row.textContent(), /architect/);
  assert.match(await row.textContent(), /1\/4 complete, 1 in progress, 1 blocked/);

  await row.getByRole('link').click();
  await page.getByRole('heading', { name: 'Step graph' }).waitFor();
  const graph = page.locator('svg.dag');
  assert.equal(await graph.locator('g.node').count(), 4);
  assert.equal(await graph.locator('path.edge').count(), 4);
  // Layered by dependency depth: 1 on top, 2 and 3 below it, 4 last.
  const ys = await graph.locator('g.node').evaluateAll((gs) => Object.fromEntries(gs.map((g) => [g.dataset.step, g.transform.baseVal[0].matrix.f])));
  assert.ok(ys['1'] < ys['2'] && ys['2'] === ys['3'] && ys['3'] < ys['4'], JSON.stringify(ys));
  const node2 = graph.locator('[data-step="2"]');
  assert.match(await node2.textContent(), /in progress/);
  assert.match(await node2.textContent(), /Backend-Agent/);
  assert.match(await node2.textContent(), /api-worker-1, lease 1\d min left/);
  assert.match(await graph.locator('[data-step="3"]').textContent(), /blocked.*1 report · last failure/s);
  assert.match(await graph.locator('[data-step="1"]').textContent(), /complete.*1 report · last success/s);

  // Keyboard: Tab to a node and press Enter to see its reports.
  await graph.locator('[data-step="1"]').focus();
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Step 1' }).waitFor();
  await page.locator('.reports', { hasText: 'Added the csv_uploads table.' }).waitFor();
  await page.locator('.reports code', { hasText: 'migrations/0042_csv_uploads.sql' }).waitFor();

  // Live: step 2 completes through the API; the graph follows.
  await worker.must(201, 'POST', '/v1/plans/csv-upload/steps/2/reports', { worker: 'api-worker-1', outcome: 'success', details: 'Endpoint done.' });
  await page.locator('svg.dag [data-step="2"].st-complete').waitFor();
  // A lease that ran out shows as such.
  await worker.must(200, 'PATCH', '/v1/plans/csv-upload/steps/3', { status: 'pending' });
  await worker.must(200, 'POST', '/v1/plans/csv-upload/steps/claim', { worker: 'ui-worker-2', owner: 'UI-Agent', lease_seconds: 1 });
  await eventually(async () => assert.match(await page.locator('svg.dag [data-step="3"] text.lease').textContent(), /lease of ui-worker-2 expired/), 8000);

  // Revisions, and what changed between two of them.
  // Steps live in the document, not the content: compare the YAML.
  await page.locator('#diff-what').selectOption('document');
  await page.locator('#diff-from').selectOption('1');
  await page.getByRole('button', { name: 'Show changes' }).click();
  await page.locator('.diff-out figure.diff tr.add', { hasText: 'claimed_by: ui-worker-2' }).waitFor();

  await graph.scrollIntoViewIfNeeded();
  await page.locator('section[aria-labelledby="graph-h"]').screenshot({ path: path.join(shots, 'step-graph.png') });
  noProblems(problems, urls);
  await context.close();
});

test('the session page: tree, where plan mode comes from, mode switch with its warning, todos and history, live', async () => {
  await admin.must(201, 'POST', '/v1/sessions', { id: 'tree', title: 'Release 2.0', mode: 'plan' });
  await admin.must(201, 'POST', '/v1/sessions', { id: 'tree.worker', parent_id: 'tree', title: 'Worker' });
  await admin.must(201, 'POST', '/v1/sessions', { id: 'tree.worker.sub', parent_id: 'tree.worker', title: 'Sub-worker' });
  const agent = srv.api(srv.token('agent', 'tree-agent', 'tree'));
  await planAndAsk(agent, 'tree', '# Plan\n1. Cut the release branch\n');

  const { page, context, problems, urls } = await newPage();
  await signIn(page, adminToken);
  await page.goto(`${srv.url}/ui/sessions/tree.worker`);
  await page.getByRole('heading', { name: 'Worker' }).waitFor();
  // Own mode build, effective plan, and where it comes from.
  assert.equal(await page.locator('[data-field="mode"]').textContent(), 'build');
  assert.match(await page.locator('[data-field="effective_mode"]').textContent(), /plan/);
  assert.match(await page.locator('[data-field="mode_source"]').textContent(), /plan mode comes from tree/);
  // The tree: its parent above it, its child below.
  await page.locator('.tree [data-session="tree"]').waitFor();
  await page.locator('.tree .children [data-session="tree.worker.sub"]').waitFor();

  // Todos and history follow the feed.
  await agent.must(200, 'PUT', '/v1/sessions/tree.worker/todos', { todos: [{ content: 'Tag v2.0.0', status: 'in_progress' }] });
  await page.locator('.todos', { hasText: 'Tag v2.0.0' }).waitFor();
  // The history read from the log's JSON pages, then the feed.
  await page.locator('.history li', { hasText: 'session.created' }).first().waitFor();
  await page.locator('.history code', { hasText: 'todos.updated' }).waitFor();

  // Leaving plan mode directly warns that it cancels the pending review.
  await page.locator('.tree a', { hasText: 'Release 2.0' }).click();
  await page.getByRole('heading', { name: 'Release 2.0' }).waitFor();
  await page.locator('[data-action="toggle-mode"]').click();
  const confirm = page.getByRole('alertdialog');
  await confirm.waitFor();
  assert.match(await confirm.textContent(), /pending review of plan revision 1 is cancelled/);
  await page.getByRole('button', { name: 'Keep plan mode' }).click();
  assert.equal((await admin.must(200, 'GET', '/v1/sessions/tree')).mode, 'plan');
  await page.locator('[data-action="toggle-mode"]').click();
  await page.locator('[data-action="confirm-mode"]').click();
  await page.locator('[data-field="mode"]', { hasText: 'build' }).waitFor();
  const s = await admin.must(200, 'GET', '/v1/sessions/tree');
  assert.equal(s.mode, 'build');
  assert.equal(s.review.state, 'none');
  await page.locator('.history li', { hasText: 'pending review cancelled' }).waitFor();
  await page.locator('[data-field="review"]', { hasText: 'no review' }).waitFor();
  await page.locator('.history li', { hasText: 'effective mode now build, because tree changed its mode' }).first().waitFor();
  // The child follows: its effective mode is build now.
  await page.locator('.tree [data-session="tree.worker"] .mode-build').waitFor();
  await page.screenshot({ path: path.join(shots, 'session.png'), fullPage: true });
  noProblems(problems, urls);
  await context.close();
});

test('readable on a phone: no sideways scrolling on the inbox, review and plan pages', async () => {
  const agent = await agentSession('phone', 'Shorten the onboarding flow');
  await planAndAsk(agent, 'phone', '# Plan\n\n| step | owner | risk |\n|---|---|---|\n| Merge the two consent screens into one | web | low |\n| Drop the optional survey | product | none |\n\n```\na-very-long-line-of-code-that-would-push-the-page-sideways-if-nothing-wrapped-or-scrolled-it-aside()\n```\n', 'Two screens fewer.');
  const { page, context, problems, urls } = await newPage({ width: 390, height: 844 });
  await signIn(page, adminToken);
  for (const p of ['/ui/', '/ui/sessions/phone/review?revision=1', '/ui/plans/csv-upload', '/ui/sessions/tree']) {
    await page.goto(srv.url + p);
    await page.locator('h1').first().waitFor();
    await page.locator('#feed[data-state="live"]').waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `${p} scrolls sideways by ${overflow}px`);
    if (p.includes('review')) await page.screenshot({ path: path.join(shots, 'review-phone.png'), fullPage: true });
  }
  noProblems(problems, urls);
  await context.close();
});

test('the review page at 1280×800', async () => {
  const agent = await agentSession('invoice-totals', 'Move invoice totals');
  await planAndAsk(agent, 'invoice-totals', [
    '# Plan: move invoice totals into billing/total.go',
    '',
    'Totals are computed in three places today; they disagree on rounding.',
    '',
    '1. Add `billing.Total(lines []Line) Money`, rounding half to even',
    '2. Replace the three call sites:',
    '   - `api/invoice.go`',
    '   - `cli/report.go`',
    '   - `jobs/monthly.go`',
    '3. Run `go test ./billing/... ./api/...`',
    '',
    '| risk | mitigation |',
    '|---|---|',
    '| cents change on old invoices | totals of stored invoices are never recomputed |',
    '',
    '- [x] read every caller',
    '- [ ] write the table test first',
  ].join('\n'), 'Callers found with grep; billing has tests.');
  const { page, context, problems, urls } = await newPage();
  await signIn(page, adminToken);
  await page.goto(`${srv.url}/ui/sessions/invoice-totals/review?revision=1`);
  await page.getByRole('heading', { name: 'Plan revision 1' }).waitFor();
  await page.locator('#feed[data-state="live"]').waitFor();
  await page.screenshot({ path: path.join(shots, 'review.png') });
  noProblems(problems, urls);
  await context.close();
});
