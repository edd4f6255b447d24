// The review console in a real browser against the real server with
// --auth token: an admin and a viewer sign in with tokens made by
// `planserver token create`, agents work through the API with their own
// tokens, and every outcome the page shows is checked through the API too.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startServer, launchBrowser, newPage, signIn, eventually, shoot } from './harness.mjs';

let srv;
let browser;
let adminToken;
let viewerToken;
let admin; // API client with the admin token

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

// confirmFits checks the approval's confirmation and the setting below it
// as a reader sees them: every button's label shows whole (nothing is
// clipped by its box or by the panel), and the checkbox sits on the line
// of its label, just before it.
async function confirmFits(page) {
  const faults = await page.evaluate(() => {
    const out = [];
    const panel = document.querySelector('.decision').getBoundingClientRect();
    const question = document.querySelector('[data-confirm="approve"]').getBoundingClientRect();
    if (question.top < panel.top - 1 || question.bottom > panel.bottom + 1 || question.bottom > window.innerHeight + 1) {
      out.push(`the confirmation is cut off by the panel or the window (${question.top}-${question.bottom} in ${panel.top}-${panel.bottom}, window ${window.innerHeight})`);
    }
    for (const b of document.querySelectorAll('[data-confirm="approve"] button')) {
      const r = b.getBoundingClientRect();
      if (b.scrollWidth > b.clientWidth + 1) out.push(`button "${b.textContent}" clips its label (${b.scrollWidth} > ${b.clientWidth})`);
      if (r.right > panel.right + 1 || r.left < panel.left - 1) out.push(`button "${b.textContent}" sticks out of the panel`);
    }
    const box = document.querySelector('[data-setting="confirm-approve"]');
    if (box) {
      const label = box.closest('label');
      const b = box.getBoundingClientRect();
      const range = document.createRange();
      range.selectNodeContents(label);
      const text = [...range.getClientRects()].filter((r) => r.width > 0 && r.left >= b.right - 1);
      if (b.width > 40) out.push(`the checkbox is ${b.width}px wide`);
      if (!text.length || Math.abs(text[0].top + text[0].height / 2 - (b.top + b.height / 2)) > 12 || text[0].left - b.right > 16) {
        out.push('the checkbox does not sit just before its label, on its line');
      }
    }
    return out;
  });
  assert.deepEqual(faults, [], 'the approval confirmation as a reader sees it');
}

function noProblems(problems, urls) {
  assert.deepEqual(problems, [], 'console errors, CSP violations or foreign requests');
  for (const u of urls) {
    assert.ok(!u.includes(adminToken) && !u.includes(viewerToken), `a token went into a URL: ${u}`);
  }
}

test('sign-in refuses a bad token and keeps a good one out of URLs and localStorage', async () => {
  const { page, context, problems, urls } = await newPage(browser, srv);
  await page.goto(`${srv.url}/ui/sessions`);
  await page.getByLabel('Token').fill('ps_not-a-real-token');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByText('That token was refused').waitFor();
  // Signed out, the console offers no navigation: every page would
  // answer with this form.
  const nav = page.getByRole('navigation', { name: 'Main' });
  assert.equal(await nav.isVisible(), false, 'navigation shown to a signed-out reader');
  assert.equal(await page.getByRole('link', { name: 'Webhooks' }).count(), 0);
  await page.getByLabel('Token').fill(adminToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  // Signing in stays on the page that was asked for.
  await page.getByRole('heading', { name: 'Sessions' }).waitFor();
  await nav.getByRole('link', { name: 'Shared plans' }).waitFor();
  // Signing out takes the navigation away again.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('heading', { name: 'Sign in to the review console' }).waitFor();
  assert.equal(await nav.isVisible(), false, 'navigation left after signing out');
  await page.getByLabel('Token').fill(adminToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Sessions' }).waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem('planserver.token')), adminToken);
  assert.equal(await page.evaluate(() => localStorage.length), 0);
  await page.getByText('admin', { exact: true }).waitFor();
  noProblems(problems, urls);
  await context.close();
});

test('a plan written through the API appears in the inbox live, without a reload or polling', async () => {
  const { page, context, problems, urls } = await newPage(browser, srv);
  await signIn(page, srv, adminToken);
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

  await shoot(page, 'inbox');
  noProblems(problems, urls);
  await context.close();
});

test('approve by keyboard: the session goes back to build mode', async () => {
  const agent = await agentSession('approve-me', 'Fix the rounding bug');
  const rev = await planAndAsk(agent, 'approve-me', '# Plan\n1. Round half to even in billing/round.go\n2. Run go test ./billing/...\n');
  const { page, context, problems, urls } = await newPage(browser, srv);
  await signIn(page, srv, adminToken);
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
  // Approval asks first, naming the revision and what it unlocks; the
  // confirmation takes the focus, so Enter again approves.
  const confirm = page.locator('[data-confirm="approve"]');
  await confirm.waitFor();
  assert.match(await confirm.textContent(), new RegExp(`Approve revision ${rev}\\?.*The agent leaves plan mode and can change files\\.`, 's'));
  assert.equal(await page.evaluate(() => document.activeElement?.dataset?.action), 'confirm-approve');
  assert.equal((await admin.must(200, 'GET', '/v1/sessions/approve-me')).review.state, 'pending', 'approved before the confirmation');
  await confirmFits(page);
  await shoot(page.locator('.decision'), 'review-confirm');
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
  const { page, context, problems, urls } = await newPage(browser, srv);
  await signIn(page, srv, adminToken);
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
  await shoot(page, 'review-changed', { fullPage: true });

  // The human reads revision 2 and approves that.
  await page.locator('[data-action="read-newer"]').click();
  await page.getByRole('heading', { name: 'Plan revision 2' }).waitFor();
  assert.match(page.url(), /\/ui\/sessions\/rewrite\/review\?revision=2$/);
  await page.locator('[data-action="approve"]:not([disabled])').click();
  await page.locator('[data-action="confirm-approve"]').click();
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
  const { page, context, problems, urls } = await newPage(browser, srv);
  // Cut the page off from the feed: it cannot learn of the rewrite, so
  // only the If-Match of its approval protects the human.
  await page.route('**/v1/events?**', (route) => (route.request().headers().accept === 'text/event-stream' ? route.abort() : route.continue()));
  await signIn(page, srv, adminToken);
  await page.goto(`${srv.url}/ui/sessions/offline/review?revision=1`);
  await page.getByRole('heading', { name: 'Plan revision 1' }).waitFor();
  await agent.must(200, 'PUT', '/v1/sessions/offline/plan', { content: '# Plan\n1. Rotate the signing key\n2. Delete the old key at once\n' });
  await agent.must(200, 'POST', '/v1/sessions/offline/plan/review', {});
  await page.locator('[data-action="approve"]').click();
  await page.locator('[data-action="confirm-approve"]').click();
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
  // The notice offers what changed since the link's revision.
  await page.locator('[data-action="compare-link"]').click();
  await page.locator('.changes figure.diff[data-diff="1-2"] tr.add', { hasText: 'Delete the old key at once' }).waitFor();
  noProblems(problems.filter((p) => !p.includes('ERR_FAILED')), urls);
  await context.close();
});

test('reject with feedback: the agent reads it through the API', async () => {
  const agent = await agentSession('reject-me', 'Drop the legacy API');
  await planAndAsk(agent, 'reject-me', '# Plan\n1. Delete /v0 handlers\n');
  const { page, context, problems, urls } = await newPage(browser, srv);
  await signIn(page, srv, adminToken);
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

// The plan the comment tests review: its lines, numbered as the server
// numbers them (line 1 is the heading).
const cachePlan = [
  '# Plan: cache the product pages',           // 1
  '',                                          // 2
  'Product pages take 900 ms at p99; most of', // 3
  'it is the price lookup.',                   // 4
  '',                                          // 5
  '1. Cache prices in Redis for 10 minutes',   // 6
  '2. Invalidate on every price change',       // 7
  '3. Load-test with 2000 rps',                // 8
  '',
].join('\n');

test('reject with line comments: written by click and by keyboard, edited before sending; the agent reads them', async () => {
  const agent = await agentSession('comment-me', 'Cache the product pages');
  await planAndAsk(agent, 'comment-me', cachePlan, 'The price lookup dominates.');
  const { page, context, problems, urls } = await newPage(browser, srv);
  await signIn(page, srv, adminToken);
  await page.goto(`${srv.url}/ui/sessions/comment-me/review?revision=1`);
  await page.getByRole('heading', { name: 'Plan revision 1' }).waitFor();
  await page.locator('#feed[data-state="live"]').waitFor();
  const plan = page.locator('article.plan .markdown');
  // Blocks know their source lines: the paragraph is lines 3-4.
  const para = plan.locator('.commentable[data-line="3"]');
  assert.equal(await para.getAttribute('data-line-end'), '4');
  // The first revision has nothing before it to compare with.
  assert.match(await page.locator('[data-field="diff-basis"]').textContent(), /first revision/);

  // Keyboard: Tab into the plan (one stop), arrows to the step on line 6,
  // Enter opens the comment box there.
  let line;
  for (let k = 0; k < 30 && !line; k += 1) {
    await page.keyboard.press('Tab');
    line = await page.evaluate(() => document.activeElement?.closest('article.plan') && document.activeElement.dataset.line);
  }
  assert.equal(line, '1', 'Tab did not reach the plan at its first line');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowDown');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.line), '6');
  await page.keyboard.press('Enter');
  await page.keyboard.type('10 minutes is long for prices; why not 1?');
  await page.keyboard.press('Control+Enter');
  await plan.locator('.line-note.draft[data-note-line="6"]').waitFor();
  // Focus went back to the line.
  assert.equal(await page.evaluate(() => document.activeElement.dataset.line), '6');

  // Click: the paragraph spans lines 3-4, so the box asks which line.
  await para.click();
  await page.locator('#comment-line').selectOption('4');
  await page.locator('#comment-body').fill('Measure the lookup alone first.');
  await page.locator('[data-action="save-comment"]').click();
  await plan.locator('.line-note.draft[data-note-line="4"]').waitFor();
  // Escape closes a box without adding anything.
  await plan.locator('.commentable[data-line="8"]').click();
  await page.locator('#comment-body').fill('never mind');
  await page.keyboard.press('Escape');
  assert.equal(await page.locator('.composer').count(), 0);

  // The comments are listed with the decision, in line order, editable.
  const listed = page.locator('.decision .draft-comments li');
  assert.deepEqual(await listed.evaluateAll((els) => els.map((e) => e.dataset.commentLine)), ['4', '6']);
  await page.locator('.decision [data-comment-line="6"] [data-action="edit-comment"]').click();
  await page.locator('#comment-body').fill('10 minutes is long for prices: use 60 seconds.');
  await page.locator('[data-action="save-comment"]').click();
  await plan.locator('.line-note.draft[data-note-line="6"]', { hasText: 'use 60 seconds' }).waitFor();
  // A third, removed again before sending.
  await plan.locator('.commentable[data-line="7"]').click();
  await page.locator('#comment-body').fill('Fine.');
  await page.locator('[data-action="save-comment"]').click();
  await page.locator('.decision [data-comment-line="7"] [data-action="remove-comment"]').click();
  assert.equal(await listed.count(), 2);
  assert.equal(await plan.locator('.line-note[data-note-line="7"]').count(), 0);

  await page.getByLabel('Feedback for the agent').fill('Cache for less time, and measure first.');
  await page.getByRole('button', { name: 'Reject revision 1' }).click();
  await page.locator('[data-outcome="rejected"]', { hasText: 'with 2 line comments' }).waitFor();

  // The agent reads the decision with its plan.
  const read = await agent.must(200, 'GET', '/v1/sessions/comment-me/plan');
  assert.equal(read.review.state, 'rejected');
  assert.equal(read.review.plan_revision, 1);
  assert.equal(read.review.feedback, 'Cache for less time, and measure first.');
  assert.deepEqual(read.review.comments, [
    { line: 4, body: 'Measure the lookup alone first.', author: 'alice' },
    { line: 6, body: '10 minutes is long for prices: use 60 seconds.', author: 'alice' },
  ]);

  // The page's review history shows the decision, each comment with its line.
  const entry = page.locator('.review-history li[data-review-state="rejected"][data-plan-revision="1"]');
  await entry.waitFor();
  assert.match(await entry.textContent(), /Rejected.*plan revision 1.*by alice/s);
  assert.match(await entry.locator('.feedback').textContent(), /measure first/);
  assert.match(await entry.locator('[data-comment-line="6"]').textContent(), /Line 6\s*1\. Cache prices in Redis for 10 minutes\s*10 minutes is long/);
  // The sent comments stay on the plan's lines, no longer editable.
  await plan.locator('.line-note.sent[data-note-line="6"]').waitFor();
  assert.equal(await plan.locator('.line-note.draft').count(), 0);
  assert.equal(await plan.locator('.line-note.sent button').count(), 0);

  // And on the session page.
  await page.goto(`${srv.url}/ui/sessions/comment-me`);
  const onSession = page.locator('.review-history li[data-review-state="rejected"]');
  await onSession.waitFor();
  assert.match(await onSession.textContent(), /Measure the lookup alone first/);
  noProblems(problems, urls);
  await context.close();
});

test('after a rewrite the diff is against the last decided revision; any two revisions can be compared; approval carries comments', async () => {
  // Follows the rejection above: revision 1 was rejected by alice.
  const agent = srv.api(srv.token('agent', 'comment-me-2', 'comment-me'));
  const v2 = cachePlan.replace('10 minutes', '60 seconds');
  const v3 = v2.replace('3. Load-test with 2000 rps', '3. Measure the price lookup alone\n4. Load-test with 2000 rps');
  await agent.must(200, 'PUT', '/v1/sessions/comment-me/plan', { content: v2 });
  await agent.must(200, 'PUT', '/v1/sessions/comment-me/plan', { content: v3 });
  await agent.must(200, 'POST', '/v1/sessions/comment-me/plan/review', { rationale: 'Shorter TTL, and a measurement step.' });

  const { page, context, problems, urls } = await newPage(browser, srv);
  await signIn(page, srv, adminToken);
  await page.goto(`${srv.url}/ui/sessions/comment-me/review?revision=3`);
  await page.getByRole('heading', { name: 'Plan revision 3' }).waitFor();
  // Against revision 1, the one a human decided on, not revision 2.
  assert.match(await page.locator('[data-field="diff-basis"]').textContent(), /Since revision 1, the last revision a human decided on: rejected by alice/);
  const changes = page.locator('.changes .diff-out');
  const base = changes.locator('figure.diff[data-diff="1-3"]');
  await base.waitFor();
  assert.equal(await base.locator('tr.del', { hasText: 'Cache prices in Redis for 10 minutes' }).count(), 1);
  assert.equal(await base.locator('tr.add', { hasText: 'Cache prices in Redis for 60 seconds' }).count(), 1);
  assert.equal(await base.locator('tr.add', { hasText: 'Measure the price lookup alone' }).count(), 1);
  assert.match(await base.locator('figcaption').textContent(), /since revision 1 \(rejected\)/i);
  assert.equal(await page.locator('#rev-from').inputValue(), '1');
  assert.equal(await page.locator('#rev-to').inputValue(), '3');

  // Any two kept revisions: 2 → 3 holds only the new step...
  await page.locator('#rev-from').selectOption('2');
  await page.getByRole('button', { name: 'Show changes' }).click();
  const two = changes.locator('figure.diff[data-diff="2-3"]');
  await two.waitFor();
  assert.equal(await two.locator('tr.add').count(), 2);
  assert.equal(await two.locator('tr.del').count(), 1);
  assert.equal(await two.locator('tr', { hasText: '10 minutes' }).count(), 0);
  // ...and 3 → 1 runs backwards.
  await page.locator('#rev-from').selectOption('3');
  await page.locator('#rev-to').selectOption('1');
  await page.getByRole('button', { name: 'Show changes' }).click();
  await changes.locator('figure.diff[data-diff="3-1"] tr.add', { hasText: '10 minutes' }).waitFor();

  // Approval may carry comments too.
  await page.locator('article.plan .commentable[data-line="8"]').click();
  await page.locator('#comment-body').fill('Post the numbers in the PR.');
  await page.locator('[data-action="save-comment"]').click();
  // A comment box left open with text holds the decision back.
  await page.locator('article.plan .commentable[data-line="9"]').click();
  await page.locator('#comment-body').fill('half-written');
  await page.locator('[data-action="approve"]').click();
  await page.locator('[data-field="decision-error"]', { hasText: 'line 9' }).waitFor();
  assert.equal((await admin.must(200, 'GET', '/v1/sessions/comment-me')).review.state, 'pending');
  await page.locator('[data-action="cancel-comment"]').click();
  await page.locator('[data-action="approve"]').click();
  await page.locator('[data-action="confirm-approve"]').click();
  await page.locator('[data-outcome="approved"]', { hasText: 'with 1 line comment' }).waitFor();
  const read = await agent.must(200, 'GET', '/v1/sessions/comment-me/plan');
  assert.equal(read.review.state, 'approved');
  assert.equal(read.review.plan_revision, 3);
  assert.deepEqual(read.review.comments, [{ line: 8, body: 'Post the numbers in the PR.', author: 'alice' }]);
  const s = await admin.must(200, 'GET', '/v1/sessions/comment-me');
  assert.equal(s.mode, 'build');
  // The history holds both decisions, newest first, and the withdrawn
  // nothing: revision 2 was never asked about.
  const states = await page.locator('.review-history > li').evaluateAll((els) => els.map((e) => `${e.dataset.reviewState} ${e.dataset.planRevision}`));
  assert.deepEqual(states, ['approved 3', 'rejected 1']);
  noProblems(problems, urls);
  await context.close();
});

test('a viewer sees everything read-only, and the API refuses its approval', async () => {
  const agent = await agentSession('viewed', 'Tune the GC');
  await planAndAsk(agent, 'viewed', '# Plan\nSet GOGC=200 on the workers.\n');
  const { page, context, problems, urls } = await newPage(browser, srv);
  await signIn(page, srv, viewerToken);
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

test('the header names the token: an agent token is told from a viewer token, both read-only', async () => {
  const agentToken = srv.token('agent', 'label-agent', 'viewed');
  for (const [token, label] of [[adminToken, 'admin'], [viewerToken, 'viewer · read-only'], [agentToken, 'agent · read-only']]) {
    const { page, context, problems, urls } = await newPage(browser, srv);
    await signIn(page, srv, token);
    assert.equal(await page.locator('#who .badge').textContent(), label);
    if (token === agentToken) {
      // Its own session, read-only: an agent never decides its own review.
      await page.goto(`${srv.url}/ui/sessions/viewed/review?revision=1`);
      await page.getByRole('heading', { name: 'Plan revision 1' }).waitFor();
      await page.locator('[data-field="read-only"]').waitFor();
      assert.equal(await page.locator('[data-action="approve"]').count(), 0);
    }
    noProblems(problems, urls);
    await context.close();
  }
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
  const { page, context, problems, urls } = await newPage(browser, srv);
  await signIn(page, srv, adminToken);
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

  const { page, context, problems, urls } = await newPage(browser, srv);
  await signIn(page, srv, adminToken);
  await page.getByRole('link', { name: 'Shared plans' }).click();
  const row = page.locator('[data-plan="csv-upload"]');
  await row.waitFor();
  assert.match(await row.textContent(), /in-progress/);
  // The last revision is the claim alice's token made: every revision
  // names who wrote it (architect wrote the first).
  assert.match(await row.textContent(), /alice/);
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
  // Each node says what its step is, whole or cut short with an ellipsis.
  assert.equal(await graph.locator('[data-step="3"] text.description').textContent(), 'Upload form and results table');
  assert.match(await graph.locator('[data-step="3"]').getAttribute('aria-label'), /Upload form and results table/);

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
  // ... and its step is ready to claim again, as the server says.
  await page.locator('svg.dag [data-step="3"].ready').waitFor();
  const ready = await worker.must(200, 'GET', '/v1/plans/csv-upload/steps?ready=true');
  assert.deepEqual(ready.steps.map((s) => s.id), ['3']);
  // Every line of every node stays inside its box.
  const spill = await graph.locator('g.node').evaluateAll((gs) => gs.flatMap((g) => {
    const w = Number(g.querySelector('rect.box').getAttribute('width'));
    return [...g.querySelectorAll('text')].filter((t) => {
      const b = t.getBBox();
      return b.x < 0 || b.x + b.width > w - 4;
    }).map((t) => `${g.dataset.step}: ${t.textContent}`);
  }));
  assert.deepEqual(spill, []);

  // Revisions, and what changed between any two of them: the content as
  // the server's diff, the steps field by field.
  const edited = await admin.must(200, 'PUT', '/v1/plans/csv-upload', { content: '# CSV upload\n\nUsers upload a CSV; we validate it, show the rows and keep the file for a week.\n' });
  // Until the user picks, "with" follows the newest revision, live.
  await eventually(async () => assert.equal(await page.locator('#diff-to').inputValue(), String(edited.revision)));
  await page.locator('#diff-from').selectOption('1');
  await page.getByRole('button', { name: 'Show changes' }).click();
  const out = page.locator('.diff-out[data-compare="diff"]');
  await out.locator('figure.diff tr.add', { hasText: 'keep the file for a week' }).waitFor();
  await out.locator('figure.diff tr.del', { hasText: 'show the rows.' }).waitFor();
  const claim = out.locator('.step-changes tr[data-step-change="3"]', { hasText: 'claimed by' });
  assert.match(await claim.textContent(), /step 3 · claimed by\s*—\s*ui-worker-2/);
  await out.locator('.step-changes tr[data-step-change="1"]', { hasText: 'status' }).getByText('complete').waitFor();
  // And back: any two, in either order.
  const last = String(edited.revision);
  await page.locator('#diff-from').selectOption(last);
  await page.locator('#diff-to').selectOption('1');
  await page.getByRole('button', { name: 'Show changes' }).click();
  await out.locator(`figure.diff[data-diff="${last}-1"] tr.del`, { hasText: 'keep the file for a week' }).waitFor();

  // The svg is drawn anew on every event (the PUT above may still be
  // arriving), so scroll its section, which stays in the page.
  const graphSection = page.locator('section[aria-labelledby="graph-h"]');
  await graphSection.scrollIntoViewIfNeeded();
  await shoot(graphSection, 'step-graph');
  noProblems(problems, urls);
  await context.close();
});

test('a tool run nobody judged is a red alarm on the session page, live, and Enforced by says when hooks last decided and reported', async () => {
  await admin.must(201, 'POST', '/v1/sessions', { id: 'slipped', title: 'Hooks that slipped', mode: 'plan' });
  const hook = (input) => admin.must(200, 'POST', '/v1/hooks/claude-code?session=slipped',
    { session_id: 'conv-9', transcript_path: '', cwd: '/work', permission_mode: 'default', ...input });
  // The before-tool hook decides a Read; the after-tool hook reports its
  // run, which matches: judged.
  const read = { tool_name: 'Read', tool_input: { file_path: '/work/README.md' }, tool_use_id: 'toolu_read' };
  await hook({ hook_event_name: 'PreToolUse', ...read });
  await hook({ hook_event_name: 'PostToolUse', tool_response: {}, ...read });

  const { page, context, problems, urls } = await newPage(browser, srv);
  await signIn(page, srv, adminToken);
  await page.goto(`${srv.url}/ui/sessions/slipped`);
  await page.getByRole('heading', { name: 'Hooks that slipped' }).waitFor();
  assert.match(await page.locator('[data-field="enforcement"]').textContent(), /claude-code \(http: last decision .+, last report .+\)/);
  assert.equal(await page.locator('[data-field="unjudged-alarm"]').count(), 0);
  assert.equal(await page.locator('[data-field="enforcement-warning"]').count(), 0);

  // The before-tool hook is gone: a Write runs, and its report finds no
  // decision. The page raises the alarm as the event arrives.
  await hook({ hook_event_name: 'PostToolUse', tool_name: 'Write', tool_input: { file_path: '/work/out.txt', content: 'x' },
    tool_response: {}, tool_use_id: 'toolu_write' });
  const alarm = page.locator('[data-field="unjudged-alarm"]');
  await alarm.waitFor();
  const text = await alarm.textContent();
  assert.match(text, /1 tool run nobody judged/);
  assert.match(text, /claude-code \(http\): 1; the last, Write/);
  assert.match(text, /ran with no decision of planserver's in plan mode/);
  assert.equal(await alarm.getAttribute('role'), 'alert');
  assert.match(await page.locator('[data-field="enforcement-warning"]').textContent(), /Plan mode did not hold every tool run/);
  await page.locator('.history li', { hasText: 'tool Write ran with no decision (claude-code)' }).waitFor();
  const s = await admin.must(200, 'GET', '/v1/sessions/slipped');
  assert.equal(s.enforcement[0].unjudged_runs, 1);
  assert.equal(s.enforcement[0].last_unjudged.tool, 'Write');

  // Another host whose after-tool hook reports while no before-tool hook
  // ever decides: warned by name.
  await admin.must(200, 'POST', '/v1/hooks/gemini-cli?session=slipped', { session_id: 'g1', hook_event_name: 'AfterTool',
    tool_name: 'read_file', tool_input: { file_path: '/work/a' }, tool_response: {} });
  await page.locator('[data-field="enforcement-warning"] [data-host="gemini-cli"]', { hasText: 'sends no decisions' }).waitFor();
  const modeSection = page.locator('section[aria-labelledby="mode-h"]');
  await modeSection.scrollIntoViewIfNeeded();
  await shoot(modeSection, 'unjudged-alarm');
  noProblems(problems, urls);
  await context.close();
});

test('the session page: tree, where plan mode comes from, mode switch with its warning, todos and history, live', async () => {
  await admin.must(201, 'POST', '/v1/sessions', { id: 'tree', title: 'Release 2.0', mode: 'plan' });
  await admin.must(201, 'POST', '/v1/sessions', { id: 'tree.worker', parent_id: 'tree', title: 'Worker' });
  await admin.must(201, 'POST', '/v1/sessions', { id: 'tree.worker.sub', parent_id: 'tree.worker', title: 'Sub-worker' });
  const agent = srv.api(srv.token('agent', 'tree-agent', 'tree'));
  await planAndAsk(agent, 'tree', '# Plan\n1. Cut the release branch\n');

  const { page, context, problems, urls } = await newPage(browser, srv);
  await signIn(page, srv, adminToken);
  await page.goto(`${srv.url}/ui/sessions/tree.worker`);
  await page.getByRole('heading', { name: 'Worker' }).waitFor();
  // Own mode build, effective plan, and where it comes from.
  assert.equal(await page.locator('[data-field="mode"]').textContent(), 'build');
  assert.match(await page.locator('[data-field="effective_mode"]').textContent(), /plan/);
  assert.match(await page.locator('[data-field="mode_source"]').textContent(), /plan mode comes from tree/);
  // No host hook has asked about it: plan mode warns that the host's own
  // tools may not be held.
  assert.equal(await page.locator('[data-field="enforcement"]').textContent(), 'no host hook seen');
  await page.locator('[data-field="enforcement-warning"]').waitFor();
  // The tree: its parent above it, its child below.
  await page.locator('.tree [data-session="tree"]').waitFor();
  await page.locator('.tree .children [data-session="tree.worker.sub"]').waitFor();

  // Todos and history follow the feed.
  await agent.must(200, 'PUT', '/v1/sessions/tree.worker/todos', { todos: [{ content: 'Tag v2.0.0', status: 'in_progress' }] });
  await page.locator('.todos', { hasText: 'Tag v2.0.0' }).waitFor();
  // The history read from the log's JSON pages, then the feed.
  await page.locator('.history li', { hasText: 'session.created' }).first().waitFor();
  await page.locator('.history code', { hasText: 'todos.updated' }).waitFor();

  // A hook asks about tree: its page names the host and warns no more.
  await agent.must(200, 'POST', '/v1/hooks/claude-code?session=tree',
    { session_id: 'c1', hook_event_name: 'PreToolUse', tool_name: 'Read', tool_input: { file_path: '/etc/hostname' } });
  // Leaving plan mode directly warns that it cancels the pending review.
  await page.locator('.tree a', { hasText: 'Release 2.0' }).click();
  await page.getByRole('heading', { name: 'Release 2.0' }).waitFor();
  assert.match(await page.locator('[data-field="enforcement"]').textContent(), /claude-code \(http: last decision /);
  assert.equal(await page.locator('[data-field="enforcement-warning"]').count(), 0);
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
  // The review history keeps the review that leaving plan mode cancelled.
  const cancelled = page.locator('.review-history li[data-review-state="cancelled"][data-plan-revision="1"]');
  await cancelled.waitFor();
  assert.match(await cancelled.textContent(), /Cancelled.*by alice, who took the session out of plan mode/s);
  await page.locator('.history li', { hasText: 'effective mode now build, because tree changed its mode' }).first().waitFor();
  // The child follows: its effective mode is build now.
  await page.locator('.tree [data-session="tree.worker"] .mode-build').waitFor();
  await shoot(page, 'session', { fullPage: true });
  noProblems(problems, urls);
  await context.close();
});

test('readable on a phone: no sideways scrolling on the inbox, review and plan pages', async () => {
  const agent = await agentSession('phone', 'Shorten the onboarding flow');
  await planAndAsk(agent, 'phone', '# Plan\n\n| step | owner | risk |\n|---|---|---|\n| Merge the two consent screens into one | web | low |\n| Drop the optional survey | product | none |\n\n```\na-very-long-line-of-code-that-would-push-the-page-sideways-if-nothing-wrapped-or-scrolled-it-aside()\n```\n', 'Two screens fewer.');
  const { page, context, problems, urls } = await newPage(browser, srv, { width: 390, height: 844 });
  await signIn(page, srv, adminToken);
  for (const p of ['/ui/', '/ui/sessions/phone/review?revision=1', '/ui/plans/csv-upload', '/ui/sessions/tree']) {
    await page.goto(srv.url + p);
    await page.locator('h1').first().waitFor();
    await page.locator('#feed[data-state="live"]').waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `${p} scrolls sideways by ${overflow}px`);
    if (p.includes('review')) await shoot(page, 'review-phone', { fullPage: true });
  }
  noProblems(problems, urls);
  await context.close();
});

test('the review page at 1280×800: what changed since the rejection, with a comment on a line', async () => {
  const agent = await agentSession('invoice-totals', 'Move invoice totals');
  const v1 = [
    '# Plan: move invoice totals into billing/total.go',
    '',
    'Totals are computed in three places today; they disagree on rounding.',
    '',
    '1. Add `billing.Total(lines []Line) Money`, rounding half up',
    '2. Replace the three call sites:',
    '   - `api/invoice.go`',
    '   - `cli/report.go`',
    '   - `jobs/monthly.go`',
    '3. Run the tests',
    '',
    '| risk | mitigation |',
    '|---|---|',
    '| cents change on old invoices | totals of stored invoices are never recomputed |',
    '',
    '- [x] read every caller',
    '- [ ] write the table test first',
  ].join('\n');
  await planAndAsk(agent, 'invoice-totals', v1, 'Callers found with grep; billing has tests.');
  await admin.must(200, 'POST', '/v1/sessions/invoice-totals/plan/reject', {
    feedback: 'Rounding must match what the invoices already say.',
    comments: [{ line: 5, body: 'Half up changes old totals: round half to even, as the ledger does.' }, { line: 10, body: 'Which tests?' }],
  }, { 'If-Match': '"1"' });
  const v2 = v1.replace('rounding half up', 'rounding half to even (as the ledger)')
    .replace('3. Run the tests', '3. Run `go test ./billing/... ./api/...`');
  await planAndAsk(agent, 'invoice-totals', v2, 'Half to even now, and the tests named.');
  const { page, context, problems, urls } = await newPage(browser, srv);
  await signIn(page, srv, adminToken);
  await page.goto(`${srv.url}/ui/sessions/invoice-totals/review?revision=2`);
  await page.getByRole('heading', { name: 'Plan revision 2' }).waitFor();
  await page.locator('#feed[data-state="live"]').waitFor();
  await page.locator('.changes figure.diff[data-diff="1-2"]').waitFor();
  await page.locator('article.plan .commentable[data-line="7"]').click();
  await page.locator('#comment-body').fill('jobs/monthly.go runs at midnight UTC: deploy after it.');
  await page.locator('[data-action="save-comment"]').click();
  await page.locator('article.plan .line-note.draft[data-note-line="7"]').waitFor();
  await page.mouse.move(0, 0); // no hover highlight in the picture
  await page.evaluate(() => { document.activeElement?.blur(); window.scrollTo(0, 0); });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the review page scrolls sideways by ${overflow}px`);
  await shoot(page, 'review', { fullPage: true });
  noProblems(problems, urls);
  await context.close();
});

test('approving asks first; the question can be turned off, and the browser remembers', async () => {
  const agent = await agentSession('confirm-me', 'Tidy the logs');
  const rev = await planAndAsk(agent, 'confirm-me', '# Plan\n1. Drop the debug lines in log.go\n');
  const { page, context, problems, urls } = await newPage(browser, srv);
  await signIn(page, srv, adminToken);
  await page.goto(`${srv.url}/ui/sessions/confirm-me/review?revision=${rev}`);
  await page.getByRole('heading', { name: `Plan revision ${rev}` }).waitFor();

  // Cancel takes the question away and approves nothing.
  await page.locator('[data-action="approve"]').click();
  await page.locator('[data-confirm="approve"]').waitFor();
  await page.locator('[data-action="cancel-approve"]').click();
  await page.locator('[data-action="approve"]').waitFor();
  assert.equal(await page.locator('[data-confirm="approve"]').count(), 0);
  assert.equal((await admin.must(200, 'GET', '/v1/sessions/confirm-me')).review.state, 'pending');

  // Turned off, and the page reloaded: one click approves.
  const setting = page.locator('[data-setting="confirm-approve"]');
  assert.equal(await setting.isChecked(), true);
  await setting.uncheck();
  await page.reload();
  await page.getByRole('heading', { name: `Plan revision ${rev}` }).waitFor();
  assert.equal(await page.locator('[data-setting="confirm-approve"]').isChecked(), false);
  await page.locator('[data-action="approve"]').click();
  await page.locator('[data-outcome="approved"]').waitFor();
  assert.equal(await page.locator('[data-confirm="approve"]').count(), 0);
  assert.equal((await admin.must(200, 'GET', '/v1/sessions/confirm-me')).review.state, 'approved');
  noProblems(problems, urls);
  await context.close();
});

test('a plan without steps shows no step panels', async () => {
  await admin.must(201, 'PUT', '/v1/plans/prose-only', { content: '# Notes\n\nJust prose, no steps.\n' });
  const { page, context, problems, urls } = await newPage(browser, srv);
  await signIn(page, srv, adminToken);
  await page.goto(`${srv.url}/ui/plans/prose-only`);
  await page.getByText('This plan has no structured steps.').waitFor();
  assert.equal(await page.locator('[data-panels="steps"]').isVisible(), false);
  assert.equal(await page.getByRole('heading', { name: 'Steps', exact: true }).isVisible(), false);
  assert.equal(await page.getByText('Choose a step in the graph').isVisible(), false);
  assert.equal(await page.locator('svg.dag').count(), 0);
  noProblems(problems, urls);
  await context.close();
});

// edgeCrossings samples every drawn edge of the step graph along its real
// geometry (getPointAtLength, so curves count) and lists each edge that
// passes through a node it does not connect.
async function edgeCrossings(page) {
  return page.locator('svg.dag').evaluate((root) => {
    const boxes = [...root.querySelectorAll('g.node')].map((g) => {
      const m = g.transform.baseVal.consolidate().matrix;
      const r = g.querySelector('rect.box');
      return { id: g.dataset.step, x: m.e, y: m.f, w: r.width.baseVal.value, h: r.height.baseVal.value };
    });
    const found = [];
    for (const path of root.querySelectorAll('path.edge')) {
      const { from, to } = path.dataset;
      const len = path.getTotalLength();
      for (let l = 0; l <= len; l += 2) {
        const p = path.getPointAtLength(l);
        const hit = boxes.find((b) => b.id !== from && b.id !== to &&
          p.x > b.x + 1 && p.x < b.x + b.w - 1 && p.y > b.y + 1 && p.y < b.y + b.h - 1);
        if (hit) {
          found.push(`${from}→${to} passes through ${hit.id} at (${Math.round(p.x)}, ${Math.round(p.y)})`);
          break;
        }
      }
    }
    return { found, edges: root.querySelectorAll('path.edge').length, nodes: boxes.length };
  });
}

test('the step graph: no edge passes through a node it does not connect', async () => {
  // The shipped example, as a user would upload it.
  const yaml = readFileSync(new URL('../docs/examples/csv-upload-plan.yaml', import.meta.url), 'utf8');
  const res = await fetch(`${srv.url}/v1/plans/example-csv`, {
    method: 'PUT', body: yaml,
    headers: { Authorization: `Bearer ${adminToken}`, 'Content-Type': 'application/yaml', Accept: 'application/json' },
  });
  assert.equal(res.status, 201, await res.text());
  // 60 steps: a chain with skips of every length back to the start, and
  // fan-ins, so long edges must find their way past whole layers.
  const steps = [];
  for (let i = 1; i <= 60; i += 1) {
    const deps = new Set();
    if (i > 1) deps.add(String(i - 1));
    if (i > 6 && i % 3 === 0) deps.add(String(Math.max(1, i - 5 - (i % 11))));
    if (i > 20 && i % 7 === 0) deps.add(String(i - 19));
    if (i % 10 === 0) deps.add('1');
    steps.push({ id: String(i), description: `Step ${i}`, owner: `agent-${i % 4}`, deps: [...deps] });
  }
  await admin.must(201, 'PUT', '/v1/plans/sixty', { content: '# Sixty steps\n', steps });

  const { page, context, problems, urls } = await newPage(browser, srv);
  await signIn(page, srv, adminToken);
  for (const [name, nodes] of [['example-csv', 4], ['sixty', 60]]) {
    await page.goto(`${srv.url}/ui/plans/${name}`);
    await page.locator('svg.dag g.node').first().waitFor();
    const { found, edges, nodes: drawn } = await edgeCrossings(page);
    assert.equal(drawn, nodes, `${name}: nodes drawn`);
    const want = (await admin.must(200, 'GET', `/v1/plans/${name}`)).steps.reduce((n, s) => n + s.deps.length, 0);
    assert.equal(edges, want, `${name}: one edge per dependency`);
    assert.deepEqual(found, [], `${name}: edges through nodes`);
  }
  noProblems(problems, urls);
  await context.close();
});
