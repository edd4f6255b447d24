// The inbox against a server with more pending reviews than one page:
// the console asks the server for ?review_state=pending, follows
// next_page_token to the end, and shows the newest request first, which
// is not the order the server pages in (session creation order).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, watchPage } from './harness.mjs';

let srv;
let browser;
let admin;

before(async () => {
  srv = await startServer();
  admin = srv.api();
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await srv?.stop();
});

test('the inbox reads every page of pending reviews and shows the newest request first, live', async () => {
  const n = 101; // the inbox reads 100 at a time
  const ids = Array.from({ length: n }, (_, k) => `p${String(k).padStart(3, '0')}`);
  for (const id of ids) {
    await admin.must(201, 'POST', '/v1/sessions', { id, title: `Plan ${id}`, mode: 'plan' });
    await admin.must(201, 'PUT', `/v1/sessions/${id}/plan`, { content: `# ${id}\n` });
  }
  // Ask in reverse creation order: the newest request is the oldest session.
  for (const id of [...ids].reverse()) await admin.must(200, 'POST', `/v1/sessions/${id}/plan/review`, {});
  // Sessions whose review is not pending stay out: one decided, one never asked.
  await admin.must(201, 'POST', '/v1/sessions', { id: 'decided', mode: 'plan' });
  await admin.must(201, 'PUT', '/v1/sessions/decided/plan', { content: '# decided\n' });
  await admin.must(200, 'POST', '/v1/sessions/decided/plan/review', {});
  await admin.must(200, 'POST', '/v1/sessions/decided/plan/reject', { feedback: 'no' }, { 'If-Match': '"1"' });
  await admin.must(201, 'POST', '/v1/sessions', { id: 'quiet', mode: 'plan' });

  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, timezoneId: 'UTC' });
  const page = await context.newPage();
  const problems = watchPage(page, [srv.url]);
  const lists = [];
  page.on('request', (req) => {
    const u = new URL(req.url());
    if (u.pathname === '/v1/sessions') lists.push(u.search);
  });
  await page.goto(`${srv.url}/ui/`);
  await page.locator('#feed[data-state="live"]').waitFor();
  const order = await page.locator('.inbox [data-session]').evaluateAll((els) => els.map((e) => e.dataset.session));
  assert.deepEqual(order, ids);
  // Two pages, both filtered by the server.
  const pages = lists.filter((q) => q.includes('review_state=pending'));
  assert.equal(pages.length, 2, JSON.stringify(lists));
  assert.match(pages[0], /limit=100/);
  assert.match(pages[1], /page_token=/);

  // Live: a new request goes to the top.
  await admin.must(200, 'POST', `/v1/sessions/${ids[n - 1]}/plan/approve`, undefined, { 'If-Match': '"1"' });
  await page.locator(`[data-session="${ids[n - 1]}"]`).waitFor({ state: 'detached' });
  await admin.must(201, 'POST', '/v1/sessions', { id: 'latest', mode: 'plan' });
  await admin.must(201, 'PUT', '/v1/sessions/latest/plan', { content: '# latest\n' });
  await admin.must(200, 'POST', '/v1/sessions/latest/plan/review', {});
  await page.locator('.inbox [data-session="latest"]:first-child').waitFor();
  assert.deepEqual(problems, []);
  await context.close();
});
