// Webhooks: the subscriptions that push events to chat channels and other
// systems (admin only). The list page creates one (its secret is shown
// once, here); a subscription's page shows its state (a failing one says
// why), its delivery log, and redelivers. Deliveries make no events, so
// the log is re-read every few seconds while the page is open.

import { request, enc } from '../api.js';
import { h, clear, append, time, announce } from '../dom.js';

// TYPES are the webhook event types offered (docs/webhooks.md).
const TYPES = ['review.requested', 'review.decided', 'step.completed', 'step.claim_expired', 'plan.changed', 'tool_call.denied', 'tool_call.unjudged'];

// REFRESH is how often an open subscription page re-reads its log.
const REFRESH = 2000;

function stateBadge(wh) {
  return h('span', { class: `badge webhook-${wh.state}`, 'data-state': wh.state }, wh.state);
}

export async function webhooksView(main, _params, app) {
  document.title = 'Webhooks · planserver';
  main.append(h('h1', {}, 'Webhooks'),
    h('p', { class: 'muted' }, 'Signed HTTP deliveries of events to chat channels and other systems (Standard Webhooks). ',
      'Subscribing needs an admin token.'));
  const { data } = await request('/v1/webhooks?limit=1000');
  const table = h('table', { class: 'list webhooks' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Subscription'), h('th', {}, 'State'), h('th', {}, 'Format'), h('th', {}, 'Events'))),
    h('tbody', {}, data.webhooks.map((wh) => h('tr', { 'data-webhook': wh.id },
      h('th', {}, h('a', { href: `/ui/webhooks/${enc(wh.id)}` }, wh.url), h('br'), h('code', {}, wh.id)),
      h('td', {}, stateBadge(wh)),
      h('td', {}, wh.format),
      h('td', {}, wh.events.join(', '))))));
  main.append(data.webhooks.length ? table : h('p', { class: 'empty' }, 'No subscriptions yet.'));
  if (app.canWrite) main.append(createForm(app));
}

function createForm(app) {
  const url = h('input', { id: 'wh-url', type: 'url', required: true, placeholder: 'https://hooks.slack.com/services/…', autocomplete: 'off' });
  const format = h('select', { id: 'wh-format' }, h('option', { value: 'standard' }, 'standard (signed JSON)'),
    h('option', { value: 'slack' }, 'slack (Slack, Mattermost, Rocket.Chat)'));
  const boxes = TYPES.map((t) => h('input', { type: 'checkbox', id: `wh-type-${t}`, value: t, checked: t.startsWith('review.') }));
  const status = h('p', { class: 'error-text', role: 'alert' });
  const out = h('div', { class: 'secret-once' });
  const form = h('form', { class: 'webhook-create', novalidate: true },
    h('h2', {}, 'New subscription'),
    h('label', { for: 'wh-url' }, 'Target URL'), url,
    h('label', { for: 'wh-format' }, 'Format'), format,
    h('fieldset', {}, h('legend', {}, 'Events'),
      boxes.map((b) => h('span', { class: 'check' }, b, h('label', { for: b.id, class: 'inline' }, b.value)))),
    h('button', { type: 'submit', class: 'primary' }, 'Subscribe'),
    status, out);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    status.textContent = '';
    clear(out);
    const events = boxes.filter((b) => b.checked).map((b) => b.value);
    try {
      const { data: wh } = await request('/v1/webhooks', { method: 'POST', body: { url: url.value.trim(), events, format: format.value } });
      out.append(
        h('p', {}, 'Subscribed ', h('a', { href: `/ui/webhooks/${enc(wh.id)}` }, h('code', {}, wh.id)), '. Its signing secret, shown only now:'),
        h('pre', { class: 'secret', 'data-secret': '' }, wh.secret));
      announce('Subscribed. Copy the secret now: it is not shown again.');
    } catch (err) {
      status.textContent = err.message;
    }
  });
  return form;
}

export async function webhookView(main, params, app) {
  const id = params[0];
  document.title = `Webhook ${id} · planserver`;
  const head = h('div');
  const log = h('tbody');
  const msg = h('p', { class: 'error-text', role: 'alert' });
  main.append(h('h1', {}, 'Webhook ', h('code', {}, id)), head, msg,
    h('h2', {}, 'Delivery log'),
    h('p', { class: 'muted' }, 'Every attempt, newest first: status, latency, the first bytes of the answer, the next retry.'),
    h('table', { class: 'list deliveries' },
      h('thead', {}, h('tr', {}, ['Delivery', 'Event', 'Type', 'State', 'Status', 'Latency', 'Answer', 'Next retry', 'At', ''].map((c) => h('th', {}, c)))),
      log));

  async function load() {
    const [{ data: wh }, { data: page }] = await Promise.all([
      request(`/v1/webhooks/${enc(id)}`), request(`/v1/webhooks/${enc(id)}/deliveries?limit=100`)]);
    append(clear(head), [
      h('p', { class: 'meta' }, h('span', {}, wh.url), ' ', stateBadge(wh)),
      h('p', { class: 'muted' }, `${wh.format} · ${wh.events.join(', ')} · cursor ${wh.cursor}`,
        wh.attempts ? ` · ${wh.attempts} failed attempts, next ` : '', wh.attempts ? time(wh.next_attempt_at) : null),
      wh.state_reason ? h('p', { class: 'error', role: 'status', 'data-reason': '' }, wh.state_reason) : null,
      app.canWrite && wh.state !== 'active'
        ? h('p', {}, h('button', { type: 'button', onclick: () => act(() => request(`/v1/webhooks/${enc(id)}`, { method: 'PATCH', body: { state: 'active' } }), 'Resumed.') }, 'Resume'))
        : null]);
    append(clear(log), page.deliveries.map((d) => h('tr', { 'data-delivery': d.id, 'data-state': d.state },
      h('td', {}, String(d.id), d.manual ? ' (redelivery)' : ''),
      h('td', {}, String(d.event_seq)),
      h('td', {}, d.type),
      h('td', {}, d.state),
      h('td', {}, d.status_code ? String(d.status_code) : '—'),
      h('td', {}, d.latency_ms !== undefined ? `${d.latency_ms} ms` : '—'),
      h('td', {}, h('code', {}, [d.error, d.response].filter(Boolean).join(' — ').slice(0, 200))),
      h('td', {}, d.next_retry_at ? time(d.next_retry_at) : '—'),
      h('td', {}, time(d.created_at)),
      h('td', {}, app.canWrite && d.state !== 'pending'
        ? h('button', { type: 'button', class: 'redeliver', onclick: () => act(() => request(`/v1/webhooks/${enc(id)}/deliveries/${d.id}/redeliver`, { method: 'POST' }), `Delivery ${d.id} will be sent again.`) }, 'Redeliver')
        : null))));
  }

  async function act(fn, done) {
    msg.textContent = '';
    try {
      await fn();
      announce(done);
      await load();
    } catch (err) {
      msg.textContent = err.message;
    }
  }

  await load();
  const timer = setInterval(() => { load().catch((err) => { msg.textContent = err.message; }); }, REFRESH);
  return () => clearInterval(timer);
}
