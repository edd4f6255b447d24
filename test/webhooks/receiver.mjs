// A webhook receiver for planserver's tests. Every delivery is verified
// with the official Standard Webhooks library (npm standardwebhooks), not
// with planserver's code, and recorded as one JSON line in LOG:
//   {path, id, timestamp, signature_count, type, seq, verified, error, mode, status}
//
// Usage: node receiver.mjs PORT LOG SECRETS
//   PORT     the loopback port to listen on (0: any; the port is printed
//            as the first line of stdout, {"port": N})
//   LOG      the file every delivery is appended to
//   SECRETS  a JSON file {"/path": "whsec_..."} read at every request: the
//            secret each path verifies with
// The answer mode is set with POST /mode?mode=ok|fail|hang|close:
//   ok     verify, answer 204 (a verification failure answers 400)
//   fail   answer 500
//   hang   never answer
//   close  close the connection without an answer
// and ?redirect=URL makes every answer a 307 to URL instead.
import http from 'node:http';
import fs from 'node:fs';
import { Webhook } from 'standardwebhooks';

const [port, logFile, secretsFile] = process.argv.slice(2);
let mode = 'ok';
let redirect = '';

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://receiver');
  if (url.pathname === '/mode') {
    mode = url.searchParams.get('mode') || 'ok';
    redirect = url.searchParams.get('redirect') || '';
    res.writeHead(204).end();
    return;
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    const rec = {
      path: url.pathname,
      id: req.headers['webhook-id'] || '',
      timestamp: req.headers['webhook-timestamp'] || '',
      signature_count: (req.headers['webhook-signature'] || '').split(' ').filter(Boolean).length,
      mode,
      verified: false,
    };
    try {
      const secrets = JSON.parse(fs.readFileSync(secretsFile, 'utf8'));
      const secret = secrets[url.pathname];
      if (!secret) throw new Error(`no secret for ${url.pathname}`);
      const payload = new Webhook(secret).verify(body, req.headers);
      rec.verified = true;
      rec.type = payload.type;
      rec.seq = payload.data && payload.data.seq;
      rec.text = payload.text;
    } catch (err) {
      rec.error = String(err && err.message ? err.message : err);
    }
    let status = 0;
    if (redirect) status = 307;
    else if (mode === 'fail') status = 500;
    else if (mode === 'ok') status = rec.verified ? 204 : 400;
    rec.status = status;
    fs.appendFileSync(logFile, JSON.stringify(rec) + '\n');
    if (mode === 'hang' && !redirect) return; // never answer
    if (mode === 'close' && !redirect) {
      req.socket.destroy();
      return;
    }
    if (redirect) res.writeHead(307, { Location: redirect }).end();
    else res.writeHead(status).end(status === 500 ? 'receiver is failing on purpose' : '');
  });
});
server.listen(Number(port), '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n');
});
