// Scoped build in the console (issue 45): the review page shows the scope
// a human grants beside the plan, with what it adds to the revision
// decided before; the approve control grants that scope (an admin may
// choose a full build, warned); the session page shows the scope in force,
// the calls refused against it, live, and lets an admin lift it.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, newPage, signIn, eventually, shoot } from './harness.mjs';

let srv;
let browser;
let adminToken;
let viewerToken;
let admin;

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

// The scope's pages are tall: every tab opens at 1280×900.
const tall = { width: 1280, height: 900 };

function plan(files, connect = []) {
  return '# Bump the version\n\n1. Set V in src/app.go\n2. Run the tests\n\n```scope\n' +
    `files: [${files.join(', ')}]\ncommands: [go test ./...]\nconnect: [${connect.map((c) => `'${c}'`).join(', ')}]\n` + '```\n';
}

// session makes id in plan mode, its agent writing plan content and
// asking for review; it returns the agent's client.
async function session(id, content) {
  await admin.must(201, 'POST', '/v1/sessions', { id, title: `Scoped ${id}`, agent: 'coder', mode: 'plan' });
  const agent = srv.api(srv.token('agent', `agent-${id}`, id));
  await agent.must(201, 'PUT', `/v1/sessions/${id}/plan`, { content });
  await agent.must(200, 'POST', `/v1/sessions/${id}/plan/review`, { rationale: 'Scoped to the one file.' });
  return agent;
}

// writeOutside is Claude Code's hook asking about a Write in project /p.
function hookWrite(file, agentId) {
  const input = {
    session_id: 'conv', transcript_path: '/home/u/.claude/projects/p/x.jsonl', cwd: '/p', hook_event_name: 'PreToolUse',
    tool_name: 'Write', tool_input: { file_path: file, content: 'x' }, tool_use_id: 'toolu_1',
  };
  if (agentId) Object.assign(input, { agent_id: agentId, agent_type: 'general-purpose' });
  return input;
}

test('the review page shows the scope granted beside the plan, and its diff against the revision decided before', async () => {
  const agent = await session('scoped', plan(['src/app.go'], ['proxy.golang.org:443']));
  await admin.must(200, 'POST', '/v1/sessions/scoped/plan/reject', { feedback: 'Update the README too.' }, { 'If-Match': '"1"' });
  await agent.must(200, 'PUT', '/v1/sessions/scoped/plan', { content: plan(['src/app.go', 'README.md']) });
  await agent.must(200, 'POST', '/v1/sessions/scoped/plan/review', {});

  const { page, context, problems } = await newPage(browser, srv, tall);
  await signIn(page, srv, adminToken);
  await page.goto(`${srv.url}/ui/sessions/scoped/review?revision=2`);
  const grant = page.locator('[data-field="scope-grant"]');
  await grant.getByRole('heading', { name: 'The scope you grant' }).waitFor();
  // The lists, readable at a glance: files, commands, network.
  assert.deepEqual(await grant.locator('[data-scope-field="files"] [data-scope-item]').evaluateAll((els) => els.map((e) => e.dataset.scopeItem)),
    ['src/app.go', 'README.md']);
  assert.deepEqual(await grant.locator('[data-scope-field="commands"] [data-scope-item]').evaluateAll((els) => els.map((e) => e.dataset.scopeItem)),
    ['go test ./...']);
  // Against revision 1 (rejected): README.md is new, the network is gone.
  assert.match(await grant.locator('[data-scope-item="README.md"]').getAttribute('class'), /added/);
  assert.equal(await grant.locator('[data-scope-item="src/app.go"]').getAttribute('class'), '');
  await grant.locator('[data-scope-field="connect"] [data-scope-removed="proxy.golang.org:443"]').waitFor();
  assert.match(await grant.locator('[data-field="scope-change"]').innerText(), /Against revision 1: 1 entry added, 1 removed/);
  // The plan and the scope sit side by side.
  const planBox = await page.locator('article.plan').boundingBox();
  const grantBox = await grant.boundingBox();
  assert.ok(grantBox.x > planBox.x + planBox.width - 1, 'the scope is beside the plan');
  await shoot(page, 'review-scope');

  // The approve control grants this scope.
  await page.getByRole('button', { name: 'Approve with this scope' }).click();
  await page.locator('[data-confirm="approve"]').getByText('may change only what the scope names').waitFor();
  await page.locator('[data-action="confirm-approve"]').click();
  await page.locator('[data-outcome="approved"]').getByText('with its scope').waitFor();
  const s = await admin.must(200, 'GET', '/v1/sessions/scoped');
  assert.equal(s.review.scope, 'plan');
  assert.deepEqual(s.build_scope.files, ['src/app.go', 'README.md']);
  assert.equal(s.build_scope.plan_revision, 2);
  assert.deepEqual(problems, []);
  await context.close();
});

test('an admin may approve for a full build instead, warned first; a viewer sees the scope read-only', async () => {
  await session('lifted', plan(['docs/']));
  const viewer = await newPage(browser, srv, tall);
  await signIn(viewer.page, srv, viewerToken);
  await viewer.page.goto(`${srv.url}/ui/sessions/lifted/review?revision=1`);
  await viewer.page.locator('[data-field="scope-grant"] [data-scope-item="docs/"]').waitFor();
  assert.equal(await viewer.page.locator('[data-action="approve"]').count(), 0);
  assert.equal(await viewer.page.locator('[data-setting="full-build"]').count(), 0);
  await viewer.context.close();

  const { page, context, problems } = await newPage(browser, srv, tall);
  await signIn(page, srv, adminToken);
  await page.goto(`${srv.url}/ui/sessions/lifted/review?revision=1`);
  await page.locator('[data-setting="full-build"]').check();
  const warning = page.locator('[data-field="full-build-warning"]');
  await warning.getByText('Full build lifts the scope.').waitFor();
  await shoot(page.locator('section.decision'), 'review-full-build');
  await page.getByRole('button', { name: 'Approve revision 1 for a full build' }).click();
  await page.locator('[data-confirm="approve"]').getByText('can change any file').waitFor();
  await page.locator('[data-action="confirm-approve"]').click();
  await page.locator('[data-outcome="approved"]').getByText('the scope is lifted').waitFor();
  const s = await admin.must(200, 'GET', '/v1/sessions/lifted');
  assert.equal(s.review.scope, 'full');
  assert.equal(s.build_scope, null);
  assert.deepEqual(problems, []);
  await context.close();
});

test('the session page shows the scope in force and the calls refused against it, live, and an admin lifts it', async () => {
  await session('inforce', plan(['src/app.go']));
  await admin.must(201, 'POST', '/v1/sessions', { id: 'inforce-sub', parent_id: 'inforce', title: 'Sub-agent work' });
  await admin.must(200, 'POST', '/v1/sessions/inforce/plan/approve', {}, { 'If-Match': '"1"' });
  await admin.must(200, 'POST', '/v1/hooks/claude-code?session=inforce', hookWrite('/p/README.md'));

  const { page, context, problems } = await newPage(browser, srv, tall);
  await signIn(page, srv, adminToken);
  await page.goto(`${srv.url}/ui/sessions/inforce`);
  const scope = page.locator('[data-field="build_scope"]');
  await scope.getByText('Scoped build:').waitFor();
  await scope.locator('[data-scope-field="files"] [data-scope-item="src/app.go"]').waitFor();
  assert.match(await scope.innerText(), /its own plan declares \(revision 1\)/);
  assert.match(await scope.innerText(), /Granted by alice/);
  const denials = page.locator('[data-field="out-of-scope"]');
  await denials.locator('[data-denial] [data-field="path"]', { hasText: 'README.md' }).waitFor();

  // A sub-session's refusal arrives live.
  await admin.must(200, 'POST', '/v1/hooks/claude-code?session=inforce-sub', hookWrite('/etc/hosts', 'agent-9'));
  await denials.locator('[data-denial]', { hasText: '/etc/hosts' }).waitFor();
  assert.match(await denials.locator('[data-denial]').first().innerText(), /in inforce-sub, by a sub-agent \(general-purpose\)/);
  await shoot(page, 'session-scope', { fullPage: true });

  // The sub-session shows where its scope comes from.
  const sub = await newPage(browser, srv, tall);
  await signIn(sub.page, srv, adminToken);
  await sub.page.goto(`${srv.url}/ui/sessions/inforce-sub`);
  await sub.page.locator('[data-field="build_scope"]').getByRole('link', { name: 'inforce' }).waitFor();
  assert.equal(await sub.page.locator('[data-action="lift-scope"]').count(), 0);
  await sub.context.close();

  // The admin lifts it: full build, recorded.
  await page.locator('[data-action="lift-scope"]').click();
  await page.locator('[data-action="confirm-lift"]').click();
  await page.locator('[data-field="scope-state"]').getByText('Full build:').waitFor();
  await eventually(async () => {
    const s = await admin.must(200, 'GET', '/v1/sessions/inforce');
    assert.equal(s.build_scope, null);
  });
  const ev = await admin.must(200, 'GET', '/v1/events?session_id=inforce&types=session.scope_changed');
  const lifted = ev.events.find((e) => e.data.reason === 'lifted');
  assert.equal(lifted?.actor, 'alice');
  assert.deepEqual(problems, []);
  await context.close();
});
