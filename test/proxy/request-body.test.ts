import { PassThrough, Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { collectBody, collectedLength, COLLECTED_BODY_MAX_BYTES } from '../../src/proxy/request-body.js';

describe('collectedLength: which bodies are read whole', () => {
  it.each([
    ['no content-length: streamed', undefined, null],
    ['empty', '0', 0],
    ['small', '512', 512],
    ['at the limit', String(COLLECTED_BODY_MAX_BYTES), COLLECTED_BODY_MAX_BYTES],
    ['one byte over the limit: streamed', String(COLLECTED_BODY_MAX_BYTES + 1), null],
    ['large upload: streamed', String(50 * 1024 * 1024), null],
    ['not a number: streamed (the parser decides)', 'abc', null],
    ['negative: streamed', '-1', null],
    ['absurdly long: streamed', '99999999999999999999', null],
    ['a list: streamed', '5, 5', null],
  ])('%s', (_, value, expected) => {
    const headers = value === undefined ? {} : { 'content-length': value };
    expect(collectedLength(headers)).toBe(expected);
  });

  it('takes its limit as an argument', () => {
    expect(collectedLength({ 'content-length': '10' }, 9)).toBeNull();
    expect(collectedLength({ 'content-length': '9' }, 9)).toBe(9);
  });
});

describe('collectBody: a small body, whole', () => {
  it('takes a body that has fully arrived at once, and lets the stream end', async () => {
    const body = new PassThrough();
    body.end(Buffer.from('{"model":"gpt-4o"}'));
    const got = collectBody(body, 18);
    expect(Buffer.isBuffer(got)).toBe(true);
    expect((got as Buffer).toString()).toBe('{"model":"gpt-4o"}');
    await new Promise((resolve) => body.once('end', resolve));
  });

  it('waits for a body that arrives in pieces', async () => {
    const body = new PassThrough();
    body.write('{"model":');
    const got = collectBody(body, 18);
    expect(got).toBeInstanceOf(Promise);
    setTimeout(() => body.end('"gpt-4o"}'), 5);
    expect((await got)?.toString()).toBe('{"model":"gpt-4o"}');
  });

  it('an empty body is an empty Buffer', () => {
    const body = new PassThrough();
    body.end();
    expect(collectBody(body, 0)).toEqual(Buffer.alloc(0));
  });

  it('null when the client goes away mid-body', async () => {
    const body = new PassThrough();
    body.write('{"model":');
    const got = collectBody(body, 18);
    body.destroy();
    expect(await got).toBeNull();
  });

  it('null when the body ends short of its declared length', async () => {
    const body = new PassThrough();
    const got = collectBody(body, 18);
    body.end('{"model":');
    expect(await got).toBeNull();
  });

  it('null when more arrives than was declared', async () => {
    const body = Readable.from([Buffer.from('0123456789'), Buffer.from('0123456789')], { objectMode: false });
    expect(await collectBody(body, 12)).toBeNull();
  });

  it('null for a body that already ended, instead of waiting for an end that has passed', async () => {
    const body = new PassThrough();
    body.end('x');
    body.resume();
    await new Promise((resolve) => body.once('end', resolve));
    expect(await collectBody(body, 1)).toBeNull();
  });
});
