/**
 * Pure rules of `npm run bench -- --only cpu --perf` (bench/perf-record.ts): reading `perf script`
 * lines and sorting each sample into what kind of work it was.
 *
 * Why Linux perf beside `--profile`: V8's profiler samples a thread on a wall-clock timer, so on a
 * CPU shared with other threads its samples also land on whatever the thread resumes into, and V8's
 * own slow paths (runtime calls, inline-cache misses, allocation) are charged to the JavaScript
 * function that called them. `perf record` samples CPU time only, and names native code exactly. JIT
 * code stays anonymous (no `--perf-basic-prof`: its map files go stale when V8 moves or frees code,
 * which put start-up functions' names on request work in a trial), so it is one category here.
 */

/** One sample as `perf script -F comm,pid,tid,ip,sym,dso` prints it. */
export interface PerfSample {
  readonly thread: string;
  readonly pid: number;
  readonly tid: number;
  readonly symbol: string;
  readonly dso: string;
}

const LINE = /^\s*(.+?)\s+(\d+)\/(\d+)\s+[0-9a-f]+\s+(.*?)\s+\(([^()]*)\)\s*$/;

export function parsePerfLine(line: string): PerfSample | undefined {
  const m = LINE.exec(line);
  if (m === null) return undefined;
  return {
    thread: m[1] as string,
    pid: Number(m[2]),
    tid: Number(m[3]),
    symbol: m[4] as string,
    dso: m[5] as string,
  };
}

/** The categories, in the order the table prints them. */
export const PERF_CATEGORIES = [
  'JavaScript (JIT code)',
  'V8 builtins',
  'V8 inline caches',
  'V8 runtime (slow paths, lookups)',
  'V8 garbage collector',
  'V8 compilers',
  'Node and V8 C++',
  'OpenSSL (TLS, AES-GCM, SHA-256)',
  'C library (malloc, free, memcpy)',
  'native addons (SQLite)',
  'kernel (syscalls, TCP, scheduler)',
  'other',
] as const;
export type PerfCategory = (typeof PERF_CATEGORIES)[number];

const GC =
  /Scaveng|MarkCompact|Marking|Sweeper|ArrayBufferSweeper|Evacuat|RememberedSet|SlotSet|GlobalHandles|MemoryAllocator|MinorMS|PagedSpace|LargeObjectSpace|MemoryChunk|GCTracer|v8::internal::Heap::|WeakObjects|HeapVisitor|MarkingVisitor|Compactor/;
const COMPILER =
  /v8::internal::(compiler|maglev|baseline|interpreter|turboshaft)::|v8::internal::(Parser|Scanner|Compiler|BytecodeGenerator)\b/;
const RUNTIME =
  /Runtime_|v8::internal::(LookupIterator|FeedbackNexus|TransitionsAccessor|TransitionArray|Map::|JSObject::|Object::|IC::|LoadIC|StoreIC|KeyedLoadIC|KeyedStoreIC|DescriptorArray|MapUpdater|UpdateDescriptorForValue)/;
const IC = /^Builtins_\w*IC(_|Trampoline|Baseline|$)/;
const OPENSSL =
  /^_?(aesni|gcm|ghash|ossl|EVP|evp|SSL|ssl\d*|tls\d*|dtls\d*|BIO|CRYPTO|OPENSSL|ERR|sha\d+|SHA\d+|bn|BN|RAND|EC|ecp|x25519|X25519|HMAC|OSSL|aes|ChaCha20|Poly1305|OBJ|ASN1|PACKET|WPACKET)_/;

export function perfCategory(symbol: string, dso: string): PerfCategory {
  if (dso === '[kernel.kallsyms]' || dso === '[vdso]') return 'kernel (syscalls, TCP, scheduler)';
  // JIT code and wasm live in anonymous memory perf cannot name.
  if (dso === '[unknown]' || dso.startsWith('//anon') || dso.startsWith('/tmp/perf-'))
    return 'JavaScript (JIT code)';
  if (/\/libc\.so|\/libc-/.test(dso)) return 'C library (malloc, free, memcpy)';
  if (dso.endsWith('.node')) return 'native addons (SQLite)';
  if (/\/(node|libnode\.so[.\d]*)$/.test(dso)) return nodeBinaryCategory(symbol);
  return 'other';
}

/** Node's binary holds V8 (its builtins embedded), Node's C++, OpenSSL and llhttp. */
function nodeBinaryCategory(symbol: string): PerfCategory {
  if (IC.test(symbol)) return 'V8 inline caches';
  if (symbol.startsWith('Builtins_')) return 'V8 builtins';
  if (OPENSSL.test(symbol)) return 'OpenSSL (TLS, AES-GCM, SHA-256)';
  if (GC.test(symbol)) return 'V8 garbage collector';
  if (COMPILER.test(symbol)) return 'V8 compilers';
  if (RUNTIME.test(symbol)) return 'V8 runtime (slow paths, lookups)';
  return 'Node and V8 C++';
}

/** Samples per category, per thread kind, and in all, for one process. */
export interface PerfTally {
  samples: number;
  readonly byCategory: Map<PerfCategory, number>;
  /** Thread names as the kernel has them (`MainThread`, `WorkerThread`, `V8Worker`, …). */
  readonly byThread: Map<string, number>;
}

export function emptyTally(): PerfTally {
  return { samples: 0, byCategory: new Map(), byThread: new Map() };
}

export function addSample(tally: PerfTally, sample: PerfSample): void {
  tally.samples++;
  const category = perfCategory(sample.symbol, sample.dso);
  tally.byCategory.set(category, (tally.byCategory.get(category) ?? 0) + 1);
  tally.byThread.set(sample.thread, (tally.byThread.get(sample.thread) ?? 0) + 1);
}

/**
 * Each category's share of a process's samples, times its measured CPU per request: µs per request
 * by category, adding up to `usPerRequest`. Empty when the process was never sampled.
 */
export function perRequest(tally: PerfTally, usPerRequest: number): Map<PerfCategory, number> {
  const out = new Map<PerfCategory, number>();
  if (tally.samples === 0) return out;
  for (const category of PERF_CATEGORIES) {
    out.set(category, ((tally.byCategory.get(category) ?? 0) / tally.samples) * usPerRequest);
  }
  return out;
}
