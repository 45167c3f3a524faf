// Node's `ws` as a client against a peernode WebSocket server.
// Usage: node node_client.js URL. One line per case; exit 1 on any failure.
const WebSocket = require('ws');
const url = process.argv[2];
const base = url.slice(0, url.lastIndexOf('/'));
const sizes = [0, 125, 126, 65535, 65536, 1 << 20];
let failures = 0;

function check(name, ok, detail) {
  console.log((ok ? 'ok ' : 'FAIL ') + name + (ok ? '' : ' ' + (detail || '')));
  if (!ok) failures++;
}

function open(u, protocols) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(u, protocols, { maxPayload: 0 });
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (req, res) => reject(new Error('status ' + res.statusCode)));
    ws.once('error', reject);
  });
}

function next(ws) {
  return new Promise((resolve) => ws.once('message', (data, isBinary) => resolve({ data, isBinary })));
}

(async () => {
  const ws = await open(url, ['peernode.1']);
  check('subprotocol', ws.protocol === 'peernode.1', ws.protocol);
  for (const size of sizes) {
    const bin = Buffer.alloc(size);
    for (let i = 0; i < size; i++) bin[i] = (i * 7) & 0xff;
    ws.send(bin);
    let m = await next(ws);
    check('binary ' + size, m.isBinary && Buffer.compare(m.data, bin) === 0);
    const text = 'é'.repeat(Math.floor(size / 2)) + 'x'.repeat(size % 2);
    ws.send(text);
    m = await next(ws);
    check('text ' + size, !m.isBinary && m.data.toString('utf8') === text);
  }
  // Fragmented: fin=false frames then a final one.
  ws.send('frag', { fin: false });
  ws.send('mented ', { fin: false });
  ws.send('€uro', { fin: true });
  let m = await next(ws);
  check('fragmented text', m.data.toString('utf8') === 'fragmented €uro');
  const pong = new Promise((resolve) => ws.once('pong', (data) => resolve(data)));
  ws.ping(Buffer.from('are you there'));
  const pongData = await pong;
  check('ping answered', pongData.toString() === 'are you there');
  const closed = new Promise((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  ws.send('close:4002:server says bye');
  const c = await closed;
  check('server close code', c.code === 4002 && c.reason === 'server says bye', JSON.stringify(c));

  const ws2 = await open(url, ['peernode.1']);
  const closed2 = new Promise((resolve) => ws2.once('close', (code) => resolve(code)));
  ws2.close(4001, 'client says bye');
  check('client close code sent', (await closed2) === 4001);

  try {
    await open(base + '/nowhere', ['peernode.1']);
    check('refused handshake', false, 'accepted');
  } catch (e) {
    check('refused handshake', /404/.test(e.message), e.message);
  }
  process.exit(failures ? 1 : 0);
})().catch((e) => { console.log('FAIL exception ' + e); process.exit(1); });
