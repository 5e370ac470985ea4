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
});
