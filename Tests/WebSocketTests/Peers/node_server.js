// Node's `ws` as an echo server for the peernode WebSocket client; same
// commands as py_server.py. Prints "PORT n" once listening.
const WebSocket = require('ws');
const http = require('http');
let lastClose = 'none';

const server = http.createServer((req, res) => { res.writeHead(404); res.end(); });
const wss = new WebSocket.Server({
  noServer: true, maxPayload: 0,
  handleProtocols: (protocols) => (protocols.has('peernode.1') ? 'peernode.1' : false),
});
server.on('upgrade', (req, socket, head) => {
  if (req.url === '/refuse') {
    socket.write('HTTP/1.1 403 Forbidden\r\nContent-Length: 3\r\nConnection: close\r\n\r\nno\n');
    socket.destroy();
    return;
  }
  wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
});
wss.on('connection', (ws) => {
  ws.on('message', (data, isBinary) => {
    const text = isBinary ? null : data.toString('utf8');
    if (text === 'fragment-me') {
      ws.send('one ', { fin: false });
      ws.send('two ', { fin: false });
      ws.send('three', { fin: true });
    } else if (text === 'last-close') {
      ws.send(lastClose);
    } else if (text !== null && text.startsWith('close:')) {
      const [, code, ...reason] = text.split(':');
      ws.close(parseInt(code, 10), reason.join(':'));
    } else {
      ws.send(data, { binary: isBinary });
    }
  });
  ws.on('close', (code, reason) => { lastClose = code + ':' + reason.toString(); });
});
server.listen(0, '127.0.0.1', () => console.log('PORT ' + server.address().port));
