import { bodyToForward, requestHasBody, type ProxyRequest } from './exchange-io.js';
import type { Readable } from 'node:stream';
import type { TokenRecord } from '../store/records.js';
import { describeBudget } from '../usage/budget.js';
import { isRefusal, type BudgetGuard, type Hold } from '../usage/budget-guard.js';
import { peekBody } from '../usage/body-peek.js';
import { costMicros } from '../usage/prices.js';
import { modelFromPath, REQUEST_PREFIX_BYTES, requestHints, worstCase } from '../usage/request-hints.js';
import { UsageScanner } from '../usage/usage-scanner.js';
import type { UsageDeps } from './deps.js';
import { budgetExceededMessage, type ProxyErrorCode } from './errors.js';

/**
 * The proxy's side of issue 19, kept out of the request flow (exchange.ts): which answers are scanned
 * for usage, what a record says about usage, and the budget reservation before forwarding.
 */

/** Only JSON and SSE answers say usage; anything else (audio, files) is not scanned at all. */
export function scannerFor(contentType: string | string[] | undefined): UsageScanner | null {
  if (typeof contentType !== 'string') return null;
  return contentType.includes('json') || contentType.includes('event-stream') ? new UsageScanner() : null;
}

export interface RecordedUsage {
  readonly model: string | null;
  readonly inputTokens: number | null;
  readonly outputTokens: number | null;
  readonly costMicros: number | null;
}

export const NO_USAGE: RecordedUsage = Object.freeze({
  model: null,
  inputTokens: null,
  outputTokens: null,
  costMicros: null,
});

/** The record's usage: the answer's counts and model, else the request's model (body, then path). */
export function recordedUsage(
  usage: UsageDeps | undefined,
  scanner: UsageScanner | null,
  provider: string,
  requestModel: string | null,
  path: string,
): RecordedUsage {
  const said = scanner?.usage();
  const model = said?.model ?? requestModel ?? modelFromPath(path);
  const input = said?.inputTokens ?? null;
  const output = said?.outputTokens ?? null;
  if (model === null && input === null && output === null) return NO_USAGE;
  const price = usage?.prices.lookup(provider, model);
  return { model, inputTokens: input, outputTokens: output, costMicros: costMicros(price, input, output) };
}

/** Answers of tokenproxy's own for a request the provider never answered. */
const NOT_FORWARDED: ReadonlySet<ProxyErrorCode> = new Set([
  'upstream_unreachable',
  'upstream_timeout',
  'internal_error',
]);

/**
 * Whether a request counts as forwarded (usage, the plan quota, the Overview's "forwarded"): sent to
 * a provider that did not fail to answer. tokenproxy's own 502/504, for a provider it could not reach
 * or that never answered, is an upstream error, not usage.
 */
export function wasForwarded(sent: boolean, errorCode: ProxyErrorCode | null): boolean {
  return sent && (errorCode === null || !NOT_FORWARDED.has(errorCode));
}

/** How a budgeted request's answer ended (its Relay, or null when none was sent upstream). */
export interface AnswerEnd {
  /** Time to the provider's status line; null when none came. */
  readonly upstreamMs: number | null;
  /** The whole answer arrived. */
  readonly completed: boolean;
  /** An event stream (its usage, if any, comes last). */
  readonly streamed: boolean;
}

/**
 * Ends a budget reservation with its request. No answer, or an error answer without usage, spent
 * nothing: released. A whole answer that is not a stream is charged what it reports (an embedding
 * says its input only, a model list nothing: the rest is 0). A stream, or an answer cut short, is
 * charged its unreported parts at their worst case: an OpenAI stream without `include_usage` says
 * nothing, and a client that leaves mid-stream takes the usage chunk with it (budget-guard.ts).
 */
export function settleHold(
  budgets: BudgetGuard | undefined,
  hold: Hold,
  usage: RecordedUsage,
  end: AnswerEnd | null,
  status: number,
  now: number,
): void {
  const reported = usage.inputTokens !== null || usage.outputTokens !== null;
  if (end === null || end.upstreamMs === null || (!reported && status >= 400)) {
    return budgets?.release(hold, now);
  }
  budgets?.settle(hold, usage, end.completed && !end.streamed ? 'zero' : 'worst', now);
}

export type BudgetAdmission =
  | {
      readonly ok: true;
      readonly hold: Hold;
      readonly body: Buffer | Readable | null;
      readonly model: string | null;
    }
  | { readonly ok: false; readonly headers: readonly string[] | null; readonly message: string }
  /** The client went away while its body was read. */
  | null
  /** Neither the token nor its account has a budget after all: forward without a reservation. */
  | typeof UNBUDGETED;

export const UNBUDGETED = Symbol('unbudgeted');

/** Waits for `applies` (a budget lookup may be remote), then reserves when there is a budget. */
export async function admitBudget(
  applies: boolean | Promise<boolean>,
  guard: BudgetGuard,
  usage: UsageDeps,
  req: ProxyRequest,
  token: TokenRecord,
  provider: string,
  now: number,
): Promise<BudgetAdmission> {
  let budgeted: boolean;
  try {
    budgeted = await applies;
  } catch {
    // The account's budget could not be read: forward without a reservation, as quotas do in an outage.
    return UNBUDGETED;
  }
  if (!budgeted) return UNBUDGETED;
  return reserveBudget(guard, usage, req, token, provider, now);
}

/**
 * Reads a bounded prefix of the body, reserves the worst case in the token's and the account's
 * budgets, and says how to go on: forward (with the body replayed), or refuse with 429.
 */
async function reserveBudget(
  guard: BudgetGuard,
  usage: UsageDeps,
  req: ProxyRequest,
  token: TokenRecord,
  provider: string,
  now: number,
): Promise<BudgetAdmission> {
  const hasBody = requestHasBody(req);
  const peeked = hasBody ? await peekBody(bodyToForward(req), REQUEST_PREFIX_BYTES) : null;
  if (hasBody && peeked === null) return null;
  const hints = peeked === null ? { model: null, maxOutputTokens: null } : requestHints(peeked.prefix);
  const length = Number(req.headers['content-length']);
  const worst = worstCase({
    hints,
    contentLength: Number.isSafeInteger(length) && length >= 0 ? length : null,
    prefixBytes: peeked?.prefix.length ?? 0,
    complete: peeked?.complete ?? true,
    defaultReservation: usage.defaultReservation,
  });
  const result = await guard.reserve(
    token,
    provider,
    { model: hints.model, inputTokens: worst.inputTokens, outputTokens: worst.outputTokens },
    now,
  );
  if (isRefusal(result)) {
    const message = budgetExceededMessage(result.scope, describeBudget(result.budget), result.resetsAt);
    const headers =
      result.resetsAt === null
        ? null
        : ['Retry-After', String(Math.max(1, Math.ceil((result.resetsAt - now) / 1000)))];
    return { ok: false, headers, message };
  }
  return { ok: true, hold: result, body: peeked?.body ?? null, model: hints.model };
}
