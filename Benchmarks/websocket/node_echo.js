// Node ws echo server for the benchmarks. Prints "PORT n".
const WebSocket = require('ws');
const wss = new WebSocket.Server({ host: '127.0.0.1', port: 0, maxPayload: 64 << 20, perMessageDeflate: false });
wss.on('listening', () => console.log('PORT ' + wss.address().port));
wss.on('connection', (ws) => ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary })));
