import { ConfigError } from '../config/config-error.js';
import { checkShape, countOrNull, describeProblem, type ObjectShape } from '../config/object-shape.js';
import { PLANS, type PlanLimits, type PlanTable } from './plans.js';

/** Plan names: lower-case, so they read the same in the config file, the CLI and the API. */
export const PLAN_NAME_PATTERN = /^[a-z][a-z0-9_-]{0,31}$/;

const PLAN_SHAPE = {
  active_tokens: { rule: countOrNull(0), required: false },
  requests_per_month: { rule: countOrNull(0), required: false },
} as const satisfies ObjectShape;

const EXAMPLE = '{"team": {"active_tokens": 50, "requests_per_month": 2000000}}';

/**
 * `"plans"` of the config file: the built-in `free` and `unlimited` with the file's overrides (a
 * field left out keeps its built-in value), plus the file's own plans, which must name both limits
 * (`null` = no cap) so nobody gets a cap they did not write down.
 */
export function parsePlans(raw: unknown, path: string | undefined): PlanTable {
  const plans: Record<string, PlanLimits> = { ...PLANS };
  if (raw === undefined) return Object.freeze(plans);
  const where = `key "plans" of ${path ?? 'the config file'}`;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError(`${where} must be an object of plans, like ${EXAMPLE}.`);
  }
  for (const [name, value] of Object.entries(raw)) {
    if (!PLAN_NAME_PATTERN.test(name)) {
      throw new ConfigError(
        `${where}: invalid plan name "${name}": use 1 to 32 lower-case letters, digits, "-" or "_", starting with a letter.`,
      );
    }
    const checked = checkShape(value, PLAN_SHAPE);
    if (!checked.ok) {
      const { problem } = checked;
      // A plan that is not an object needs no words before the example of one.
      const field = problem.kind === 'not_object' ? '' : ` ${describeProblem(problem)}`;
      throw new ConfigError(
        `${where}: plan "${name}"${field}: expected {"active_tokens": <integer ≥ 0 or null>, "requests_per_month": <integer ≥ 0 or null>}.`,
      );
    }
    const base = plans[name];
    const { active_tokens: activeTokens, requests_per_month: requestsPerMonth } = checked.value;
    if (base === undefined && (activeTokens === undefined || requestsPerMonth === undefined)) {
      throw new ConfigError(
        `${where}: plan "${name}" must give both "active_tokens" and "requests_per_month" (null for no cap), like ${EXAMPLE}.`,
      );
    }
    plans[name] = Object.freeze({
      activeTokens: activeTokens === undefined ? (base as PlanLimits).activeTokens : activeTokens,
      requestsPerMonth:
        requestsPerMonth === undefined ? (base as PlanLimits).requestsPerMonth : requestsPerMonth,
    });
  }
  return Object.freeze(plans);
}
