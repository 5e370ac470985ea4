import type { Transporter } from 'nodemailer';
import type { EventRecord, TokenRecord } from '../store/records.js';
import type { AttemptResult } from './webhook-sender.js';
import { shownOrigin, shownPath } from '../rules/sent-values.js';

/** Breach alerts by e-mail (DESIGN §6), over the SMTP server of `smtp_url`. */

export interface Mailer {
  send(message: { to: string; subject: string; text: string; html: string }): Promise<AttemptResult>;
  close(): void;
}

export function createMailer(smtpUrl: string, from: string, timeoutMs: number): Mailer {
  // nodemailer (~2 MB of heap) is loaded with the first alert to send, not by every start.
  let transport: Promise<Transporter> | undefined;
  const open = (): Promise<Transporter> =>
    (transport ??= import('nodemailer').then(
      ({ createTransport }) =>
        createTransport({
          url: smtpUrl,
          connectionTimeout: timeoutMs,
          greetingTimeout: timeoutMs,
          socketTimeout: timeoutMs,
        }),
      (error: unknown) => {
        // Not kept: the next alert tries again.
        transport = undefined;
        throw error;
      },
    ));
  return {
    async send(message) {
      try {
        await (await open()).sendMail({ from, ...message });
        return { ok: true };
      } catch (error) {
        // SMTP errors carry the server's reply, never the URL (and so never its password).
        const code = (error as { code?: unknown; responseCode?: unknown }).code;
        const reply = (error as { responseCode?: unknown }).responseCode;
        return {
          ok: false,
          error: `SMTP ${typeof code === 'string' ? code : 'error'}${typeof reply === 'number' ? ` ${reply}` : ''}`,
        };
      }
    },
    close: () => {
      void transport?.then(
        (opened) => {
          opened.close();
        },
        () => undefined,
      );
    },
  };
}

function text(value: unknown): string {
  if (value === null || value === undefined || value === '') return '(none)';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** "3: a, b, c" or "57, of which: a, b, …" for a summary's sampled list and its count. */
function listed(sample: unknown, count: unknown, capped: unknown): string {
  const items = Array.isArray(sample) ? sample.map((v) => text(v)) : [];
  const n = typeof count === 'number' ? count : items.length;
  const total = `${capped === true ? 'at least ' : ''}${n}`;
  return items.length < n ? `${total}, among them: ${items.join(', ')}, …` : `${total}: ${items.join(', ')}`;
}

/** A value the requester sent, as `show` shows it; an absent one as `text` says so. */
function sent(value: unknown, show: (sent: string) => string): string {
  return typeof value === 'string' && value !== '' ? show(value) : text(value);
}

/** A summary's sampled origins, each as shownOrigin shows it. */
function shownOrigins(sample: unknown): unknown {
  return Array.isArray(sample) ? sample.map((origin: unknown) => sent(origin, shownOrigin)) : sample;
}

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const REASONS: Readonly<Record<string, string>> = {
  origin_not_allowed: 'the origin is not in the token’s allowed hosts',
  ip_not_allowed: 'the IP address is not in the token’s allowed IPs',
  provider_mismatch: 'the token was sent to another provider than its own, from an origin it does not allow',
  ip_backoff: 'the IP address was held back after earlier refused requests',
};

/** What the subject says the token was used for, by reason. */
const SUBJECTS: Readonly<Record<string, string>> = {
  origin_not_allowed: 'used from an unauthorized origin',
  ip_not_allowed: 'used from an unauthorized IP',
  provider_mismatch: 'sent to another provider from an unauthorized origin',
  ip_backoff: 'used again from an address held back after refused requests',
};

/** The dashboard's Anomalies view filtered to the token (DESIGN §12), from the dashboard's base URL. */
export function anomaliesLink(dashboardUrl: string, tokenId: unknown): string {
  const base = dashboardUrl.endsWith('/') ? dashboardUrl : `${dashboardUrl}/`;
  const query = typeof tokenId === 'string' ? `?token_id=${encodeURIComponent(tokenId)}` : '';
  return `${base}anomalies${query}`;
}

/**
 * The breach alert: short, plain text plus the same as simple HTML. It names the token by name, id
 * and hint (never the token itself) and says how many refused requests it covers.
 */
export function breachEmail(
  event: EventRecord,
  token: TokenRecord | undefined,
  dashboardUrl: string,
): { subject: string; text: string; html: string } {
  const d = event.data;
  const attempts = typeof d.attempts === 'number' ? d.attempts : 1;
  const tokenName = token?.name ?? 'unknown token';
  const tokenRow: [string, string] = [
    'Token',
    `${tokenName} (${text(d.token_id)}, ${token?.hint ?? 'hint unavailable'})`,
  ];
  let rows: [string, string][];
  let subject: string;
  if (d.summary === true) {
    // The summary of the attempts the alert caps held back (docs/events.md).
    const reasons =
      typeof d.reasons === 'object' && d.reasons !== null
        ? Object.entries(d.reasons as Record<string, unknown>)
            .map(([r, n]) => `${REASONS[r] ?? r}: ${text(n)}`)
            .join('; ')
        : '(unknown)';
    rows = [
      tokenRow,
      ['Origins', listed(shownOrigins(d.origins), d.origin_count, d.counts_capped)],
      ['IP addresses', listed(d.ips, d.ip_count, d.counts_capped)],
      ['Reasons', reasons],
      ['Attempts', String(attempts)],
      ['First seen', text(d.first_seen)],
      ['Last seen', text(d.last_seen)],
      ['Event', event.id],
    ];
    subject = `tokenproxy alert: ${attempts} more unauthorized requests with token "${tokenName}"`;
  } else {
    const reason = typeof d.reason === 'string' ? (REASONS[d.reason] ?? d.reason) : '(unknown)';
    rows = [
      tokenRow,
      ['Origin', sent(d.origin, shownOrigin)],
      ['IP address', text(d.ip)],
      ['Country', text(d.country)],
      ['Path', sent(d.path, shownPath)],
      ['Reason', reason],
      ['Attempts', String(attempts)],
      [
        attempts === 1 ? 'Seen' : 'Last seen',
        typeof d.last_seen === 'string' ? d.last_seen : event.createdAt,
      ],
      ['Event', event.id],
    ];
    subject = `tokenproxy alert: token "${tokenName}" ${SUBJECTS[typeof d.reason === 'string' ? d.reason : ''] ?? 'used without authorization'}`;
  }
  const intro =
    d.summary === true
      ? `tokenproxy refused ${attempts} more requests made with one of your tokens, too many to alert one by one:`
      : attempts === 1
        ? 'tokenproxy refused a request made with one of your tokens:'
        : `tokenproxy refused ${attempts} requests made with one of your tokens:`;
  const advice =
    'The requests were refused; the real key was not used. If you do not recognise them, revoke the token ' +
    'and create a new one.';
  const link = anomaliesLink(dashboardUrl, d.token_id);
  const width = Math.max(...rows.map(([k]) => k.length));
  const plain = [
    intro,
    '',
    ...rows.map(([k, v]) => `  ${`${k}:`.padEnd(width + 1)} ${v}`),
    '',
    advice,
    `See the token's anomalies: ${link}`,
    '',
  ].join('\n');
  const html = [
    '<!doctype html><html><body style="font-family:sans-serif">',
    `<p>${escapeHtml(intro)}</p>`,
    '<table cellpadding="4" style="border-collapse:collapse">',
    ...rows.map(([k, v]) => `<tr><th align="left">${escapeHtml(k)}</th><td>${escapeHtml(v)}</td></tr>`),
    '</table>',
    `<p>${escapeHtml(advice)}</p>`,
    `<p><a href="${escapeHtml(link)}">See the token's anomalies in the dashboard</a></p>`,
    '</body></html>',
  ].join('\n');
  return { subject, text: plain, html };
}
