import { getPublicSuffix } from 'tldts';

/**
 * Whether `domain` is itself a public suffix (the Public Suffix List, its private section included):
 * a name under which anyone can have a site of their own, as `co.uk`, `github.io` or `vercel.app`.
 */
export function isPublicSuffix(domain: string): boolean {
  return getPublicSuffix(domain, { allowPrivateDomains: true }) === domain;
}
