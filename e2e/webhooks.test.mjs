// The console's webhooks page: create a subscription (its secret shown
// once), watch its delivery log fill as a real receiver on loopback fails
// and then accepts, and redeliver an event with the same webhook-id.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startServer, launchBrowser, watchPage, eventually } from './harness.mjs';

let srv;
let browser;
let admin;
let receiver;
const got = [];
let failing = true;

before(async () => {
  receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      got.push({ id: req.headers['webhook-id'], signature: req.headers['webhook-signature'] || '' });
      res.writeHead(failing ? 500 : 204).end(failing ? 'not yet' : '');
    });
  });
  await new Promise((r) => receiver.listen(0, '127.0.0.1', r));
  srv = await startServer({ args: ['--webhook-allow-hosts', '127.0.0.1'] });
  admin = srv.api();
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await srv?.stop();
  receiver?.close();
});

test('the console creates a subscription, shows its delivery log and redelivers', async () => {
  const target = `http://127.0.0.1:${receiver.address().port}/hook`;
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: 'UTC' });
  const page = await context.newPage();
  const problems = watchPage(page, [srv.url]);
  await page.goto(`${srv.url}/ui/webhooks`);
  await page.getByRole('heading', { name: 'Webhooks', exact: true }).waitFor();
  await page.getByLabel('Target URL').fill(target);
  await page.getByLabel('review.requested').uncheck();
  await page.getByLabel('review.decided').uncheck();
  await page.getByLabel('plan.changed').check();
  await page.getByRole('button', { name: 'Subscribe' }).click();
  const secret = await page.locator('pre.secret').textContent();
  assert.match(secret, /^whsec_[A-Za-z0-9+/]+=*$/);

  const [wh] = (await admin.must(200, 'GET', '/v1/webhooks')).webhooks;
  assert.equal(wh.url, target);
  assert.deepEqual(wh.events, ['plan.changed']);
  assert.equal(JSON.stringify(wh).includes(secret.slice(6)), false, 'the secret is not in later answers');

  await admin.must(201, 'PUT', '/v1/plans/billing', { content: '# Billing\n' });
  await page.locator('.secret-once a').click();
  await page.getByRole('heading', { name: `Webhook ${wh.id}` }).waitFor();
  // The receiver fails first: the log shows the 500 and the next retry.
  try {
    await page.locator('tr[data-state="failed"]').first().waitFor();
  } catch (err) {
    console.log(await page.locator('main').textContent(), problems, got, srv.logs.filter((l) => !l.includes('"msg":"request"')).join('\n'));
    throw err;
  }
  assert.match(await page.locator('tr[data-state="failed"]').first().textContent(), /500.*not yet/);
  failing = false;
  await page.locator('tr[data-state="succeeded"]').first().waitFor({ timeout: 20000 });

  const before = got.length;
  await page.locator('tr[data-state="succeeded"] button.redeliver').first().click();
  await page.locator('tr[data-state="succeeded"]', { hasText: '(redelivery)' }).waitFor({ timeout: 20000 });
  await eventually(() => assert.equal(got.length, before + 1));
  assert.equal(got.at(-1).id, got[0].id, 'the redelivery carries the same webhook-id');
  assert.deepEqual(problems, []);
  await context.close();
});
