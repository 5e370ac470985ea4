import { connect, type ClientHttp2Session, type OutgoingHttpHeaders } from 'node:http2';

/** A raw HTTP/2 client (node:http2) to the proxy: headers as given, pseudo-headers included. */
export function h2Connect(url: string, ca: string): Promise<ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = connect(url, { ca, servername: 'localhost' });
    session.once('connect', () => {
      session.off('error', reject);
      resolve(session);
    });
    session.once('error', reject);
  });
}

export interface H2Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
}

/** One request on `session`; rejects when the stream is reset instead of answered. */
export function h2Request(
  session: ClientHttp2Session,
  headers: OutgoingHttpHeaders,
  body?: string,
): Promise<H2Answer> {
  return new Promise((resolve, reject) => {
    const stream = session.request(headers, { endStream: body === undefined });
    let status = 0;
    let responseHeaders: Record<string, string | string[] | undefined> = {};
    const pieces: Buffer[] = [];
    stream.on('response', (h) => {
      status = Number(h[':status']);
      responseHeaders = h;
    });
    stream.on('data', (piece: Buffer) => pieces.push(piece));
    stream.on('end', () =>
      resolve({ status, headers: responseHeaders, text: Buffer.concat(pieces).toString() }),
    );
    stream.on('error', reject);
    stream.on('close', () => {
      if (stream.rstCode !== 0) reject(new Error(`stream reset with code ${stream.rstCode}`));
    });
    if (body !== undefined) stream.end(body);
  });
}

export function h2Close(session: ClientHttp2Session): Promise<void> {
  return new Promise((resolve) => {
    if (session.closed || session.destroyed) return resolve();
    session.close(() => resolve());
  });
}
