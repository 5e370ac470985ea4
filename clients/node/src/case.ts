/**
 * Names cross the wire in snake_case and appear in JavaScript in camelCase, converted here and
 * nowhere else, mechanically, at every depth. The only exception (ID_FIELDS) is applied by the
 * caller on the top level of a resource object.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export function camelName(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

export function snakeName(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
}

export function toCamel(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toCamel);
  if (isPlainObject(value)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [camelName(k), toCamel(v)]));
  }
  return value;
}

/** Also drops `undefined` members (so optional parameters may be passed as undefined) and turns Dates into ISO strings. */
export function toSnake(value: unknown): Json {
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map(toSnake);
  if (isPlainObject(value)) {
    const out: Record<string, Json> = {};
    for (const [k, v] of Object.entries(value)) if (v !== undefined) out[snakeName(k)] = toSnake(v);
    return out;
  }
  return value as Json;
}

/** camelCase the object and name its own id field `id`. */
export function fromWire(value: unknown, idField: string | undefined): unknown {
  if (idField !== undefined && isPlainObject(value) && idField in value) {
    const { [idField]: id, ...rest } = value;
    return { id, ...(toCamel(rest) as Record<string, unknown>) };
  }
  return toCamel(value);
}

/** The ID_FIELDS exception alone, for an object whose names are already camelCase. */
export function renameId(
  item: Record<string, unknown>,
  idField: string | undefined,
): Record<string, unknown> {
  const camel = idField === undefined ? undefined : camelName(idField);
  if (camel === undefined || !(camel in item)) return item;
  const { [camel]: id, ...rest } = item;
  return { id, ...rest };
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}
