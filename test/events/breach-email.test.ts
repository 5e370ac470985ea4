import { describe, expect, it } from 'vitest';
import { breachEmail } from '../../src/events/email.js';
import type { EventRecord } from '../../src/store/records.js';

const event = (data: Record<string, unknown>): EventRecord => ({
  id: 'evt_1',
  accountId: 'acct_1',
  type: 'breach.detected',
  data,
  createdAt: '2026-11-28T10:01:05.000Z',
});

/** The alert e-mail names why in words, and when the attempts happened, not when it was sent. */
describe('breachEmail', () => {
  it.each([
    ['origin_not_allowed', 'the origin is not in the token’s allowed hosts'],
    ['ip_not_allowed', 'the IP address is not in the token’s allowed IPs'],
    ['provider_mismatch', 'the token was sent to another provider'],
    ['ip_backoff', 'held back after earlier refused requests'],
  ])('reason %s reads as words', (reason, words) => {
    const mail = breachEmail(event({ token_id: 't', reason, attempts: 1 }), undefined, 'https://d.example/');
    expect(mail.text).toContain(words);
    expect(mail.text).not.toContain(`Reason: ${reason}`);
    // The subject says what happened, for every reason (it said "origin" for all but ip_not_allowed).
    expect(mail.subject).not.toContain('undefined');
    if (reason === 'ip_backoff') expect(mail.subject).toContain('held back');
    if (reason === 'provider_mismatch') expect(mail.subject).toContain('another provider');
  });

  it('a trailing alert says when its last attempt came; one without the field falls back to the event', () => {
    const trailing = breachEmail(
      event({
        token_id: 't',
        reason: 'origin_not_allowed',
        attempts: 199,
        last_seen: '2026-11-28T10:00:04.361Z',
      }),
      undefined,
      'https://d.example/',
    );
    expect(trailing.text).toMatch(/Last seen:?\s+2026-11-28T10:00:04\.361Z/);
    const older = breachEmail(
      event({ token_id: 't', reason: 'origin_not_allowed', attempts: 1 }),
      undefined,
      'https://d.example/',
    );
    expect(older.text).toMatch(/Seen:?\s+2026-11-28T10:01:05\.000Z/);
  });

  it('shows what a client sent only where it has the shape of an origin or a path', () => {
    const forged = '"><img src=x> please visit https://evil.example/reset';
    const mail = breachEmail(
      event({
        token_id: 't',
        reason: 'origin_not_allowed',
        attempts: 1,
        origin: forged,
        path: '/openai/v1/urgent: log in at evil.example',
      }),
      undefined,
      'https://d.example/',
    );
    for (const part of [mail.text, mail.html]) {
      expect(part).not.toContain('evil.example');
      expect(part).toContain(`a header of ${forged.length} characters`);
    }
    const plain = breachEmail(
      event({
        token_id: 't',
        reason: 'origin_not_allowed',
        attempts: 1,
        origin: 'https://app.example.com',
        path: '/openai/v1/models',
      }),
      undefined,
      'https://d.example/',
    );
    expect(plain.text).toMatch(/Origin:\s+https:\/\/app\.example\.com\n/);
    expect(plain.text).toMatch(/Path:\s+\/openai\/v1\/models\n/);
    const summary = breachEmail(
      event({
        token_id: 't',
        summary: true,
        attempts: 9,
        origins: [forged, 'https://b.example'],
        origin_count: 2,
      }),
      undefined,
      'https://d.example/',
    );
    expect(summary.text).not.toContain('evil.example');
    expect(summary.text).toContain('https://b.example');
  });
});
