import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { mockBigByte, mockStreamPiece } from './canned.js';
import { intParam, sendError, sendJson, startSse, write, type Ctx } from './respond.js';

// Routes that stress the proxy's handling of time, status codes, broken connections and large bodies.

export async function slow(ctx: Ctx): Promise<void> {
  const ms = intParam(ctx.url.searchParams.get('ms'), 1000);
  await sleep(ms, undefined, { signal: ctx.signal });
  sendJson(ctx.res, 200, { ok: true, waited_ms: ms });
}

export async function slowBody(ctx: Ctx): Promise<void> {
  const ms = intParam(ctx.url.searchParams.get('ms'), 1000);
  ctx.res.writeHead(200, { 'content-type': 'application/json' });
  ctx.res.flushHeaders();
  await sleep(ms, undefined, { signal: ctx.signal });
  ctx.res.end(JSON.stringify({ ok: true, waited_ms: ms }));
}

/** Names sent more than once: two cookies, two values of one header, and a `vary` of its own. */
export function repeatedHeaders(ctx: Ctx): Promise<void> {
  ctx.res.writeHead(200, [
    ['content-type', 'application/json'],
    ['set-cookie', 'a=1; Secure'],
    ['x-mock-multi', 'one'],
    ['set-cookie', 'b=2; Secure'],
    ['x-mock-multi', 'two'],
    ['vary', 'Accept'],
  ]);
  ctx.res.end('{"ok":true}');
  return Promise.resolve();
}

export function status(ctx: Ctx, match: RegExpExecArray): Promise<void> {
  const code = Number(match[1]);
  if (code < 200 || code > 599) {
    sendError(ctx.res, 400, `Mock cannot answer status ${code}`);
  } else if (code === 204 || code === 205 || code === 304) {
    ctx.res.writeHead(code, { 'x-mock-error': 'yes' });
    ctx.res.end();
  } else {
    sendError(ctx.res, code, `Mock provider error with status ${code}`, { 'x-mock-error': 'yes' });
  }
  return Promise.resolve();
}

export async function resetMidStream(ctx: Ctx): Promise<void> {
  startSse(ctx.res);
  for (let i = 0; i < 2; i++) {
    await write(ctx.res, `data: ${JSON.stringify({ index: i, text: mockStreamPiece(i) })}\n\n`);
  }
  // Let the two events reach the client before the connection dies, so it sees a partial stream.
  await sleep(20, undefined, { signal: ctx.signal });
  // `resetAndDestroy()` throws on a TLS socket (its handle is not TCP), so the RST goes out on the raw TCP
  // socket underneath, found by its (unique on loopback) peer address. The client sees ECONNRESET mid-body.
  const tlsSocket = ctx.req.socket;
  const raw = ctx
    .tcpSockets()
    .find((s) => s.remotePort === tlsSocket.remotePort && s.remoteAddress === tlsSocket.remoteAddress);
  if (raw) raw.resetAndDestroy();
  else tlsSocket.destroy();
}

export async function big(ctx: Ctx): Promise<void> {
  const total = intParam(ctx.url.searchParams.get('bytes'), 1024 * 1024, 1024 * 1024 * 1024);
  const block = Buffer.alloc(64 * 1024);
  for (let i = 0; i < block.length; i++) block[i] = mockBigByte(i);
  ctx.res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(total) });
  let sent = 0;
  while (sent < total) {
    const n = Math.min(total - sent, block.length - (sent % 26));
    // Slicing at `sent % 26` keeps the pattern continuous across blocks.
    const piece = block.subarray(sent % 26, (sent % 26) + n);
    sent += n;
    if (!ctx.res.write(piece)) {
      await once(ctx.res, 'drain', { signal: ctx.signal });
    }
  }
  ctx.res.end();
}
