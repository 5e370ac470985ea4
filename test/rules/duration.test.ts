import { describe, expect, it } from 'vitest';
import { parseDuration, parseWindow } from '../../src/rules/duration.js';

const S = 1000;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;

describe('parseWindow: accepted', () => {
  it.each([
    ['1s', S, '1s'],
    ['30s', 30 * S, '30s'],
    ['30 s', 30 * S, '30s'],
    ['30sec', 30 * S, '30s'],
    ['30 secs', 30 * S, '30s'],
    ['1 second', S, '1s'],
    ['45 seconds', 45 * S, '45s'],
    ['60s', M, '1m'],
    ['90s', 90 * S, '90s'],
    ['1m', M, '1m'],
    ['1 min', M, '1m'],
    ['5mins', 5 * M, '5m'],
    ['1 minute', M, '1m'],
    ['15 minutes', 15 * M, '15m'],
    ['15 MINUTES', 15 * M, '15m'],
    ['15 Minutes', 15 * M, '15m'],
    ['90m', 90 * M, '90m'],
    ['120m', 2 * H, '2h'],
    ['1h', H, '1h'],
    ['1H', H, '1h'],
    ['2hr', 2 * H, '2h'],
    ['2 hrs', 2 * H, '2h'],
    ['1 hour', H, '1h'],
    ['36 hours', 36 * H, '36h'],
    ['24h', D, '1d'],
    ['1d', D, '1d'],
    ['1 day', D, '1d'],
    ['7 days', 7 * D, '7d'],
    ['31d', 31 * D, '31d'],
    ['744h', 31 * D, '31d'],
    ['2678400s', 31 * D, '31d'],
    ['86400 seconds', D, '1d'],
  ])('%j → %d ms (%s)', (text, ms, canonical) => {
    expect(parseWindow(text)).toEqual({ ok: true, ms, canonical });
  });
});

describe('parseWindow: refused', () => {
  it.each([
    ['', 'not valid'],
    ['0s', 'out of range'],
    ['0 minutes', 'out of range'],
    ['32d', 'out of range'],
    ['745h', 'out of range'],
    ['2678401s', 'out of range'],
    ['999999999999999d', 'out of range'],
    ['500ms', 'not valid'],
    ['1000ms', 'not valid'],
    ['60', 'not valid'],
    ['m', 'not valid'],
    ['minute', 'not valid'],
    ['-1m', 'not valid'],
    ['+1m', 'not valid'],
    ['1.5h', 'not valid'],
    ['1,5h', 'not valid'],
    ['1e3s', 'not valid'],
    ['01m', 'not valid'],
    ['1  m', 'not valid'],
    ['1\tm', 'not valid'],
    [' 1m', 'not valid'],
    ['1m ', 'not valid'],
    ['1 m\n', 'not valid'],
    ['1w', 'not valid'],
    ['1 week', 'not valid'],
    ['1 month', 'not valid'],
    ['1y', 'not valid'],
    ['1mn', 'not valid'],
    ['1 minutess', 'not valid'],
    ['1h30m', 'not valid'],
    ['1 h 30 m', 'not valid'],
    ['１m', 'not valid'],
    ['1234567890123456s', 'not valid'],
    ['constructor', 'not valid'],
    ['1 constructor', 'not valid'],
  ])('%j is refused (%s)', (text, fragment) => {
    const result = parseWindow(text);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.message).toContain(fragment);
      expect(result.message).toContain(`rate_limit.window ${JSON.stringify(text)}`);
      expect(result.message).toContain('"15 minutes"');
      expect(result.message).toContain('from 1 second to 31 days');
    }
  });

  it('uses the label given by the caller', () => {
    expect(parseWindow('x', 'rateLimit.window')).toMatchObject({ ok: false });
    const result = parseWindow('x', 'rateLimit.window');
    if (!result.ok) expect(result.message.startsWith('rateLimit.window "x"')).toBe(true);
  });
});

describe('parseDuration', () => {
  it.each([
    ['0', 0, '0'],
    ['0s', 0, '0'],
    ['0ms', 0, '0'],
    ['0 minutes', 0, '0'],
    ['1ms', 1, '1ms'],
    ['250ms', 250, '250ms'],
    ['250 ms', 250, '250ms'],
    ['1500 milliseconds', 1500, '1500ms'],
    ['1000ms', S, '1s'],
    ['10s', 10 * S, '10s'],
    ['10 seconds', 10 * S, '10s'],
    ['2m', 2 * M, '2m'],
    ['1h', H, '1h'],
    ['1d', D, '1d'],
    ['24d', 24 * D, '24d'],
    ['2147483647ms', 2147483647, '2147483647ms'],
    ['10S', 10 * S, '10s'],
    ['10MS', 10, '10ms'],
  ])('%j → %d ms (%s)', (text, ms, canonical) => {
    expect(parseDuration(text)).toEqual({ ok: true, ms, canonical });
  });

  it.each([
    ['', 'not valid'],
    ['10', 'not valid'],
    ['00', 'not valid'],
    ['-1s', 'not valid'],
    ['1.5s', 'not valid'],
    ['10 s ', 'not valid'],
    [' 10s', 'not valid'],
    ['10x', 'not valid'],
    ['10us', 'not valid'],
    ['25d', 'too long'],
    ['2147483648ms', 'too long'],
    ['999999999999999d', 'too long'],
  ])('%j is refused (%s)', (text, fragment) => {
    const result = parseDuration(text, 'drain_timeout');
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.message).toContain(fragment);
      expect(result.message.startsWith(`drain_timeout ${JSON.stringify(text)}`)).toBe(true);
      expect(result.message).toContain('"10s"');
    }
  });
});
