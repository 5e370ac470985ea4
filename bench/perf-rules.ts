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
  /** The sampled instruction's address, hex: tells kernel code apart when perf may not name it. */
  readonly ip: string;
  readonly symbol: string;
  readonly dso: string;
}

const LINE = /^\s*(.+?)\s+(\d+)\/(\d+)\s+([0-9a-f]+)\s+(.*?)\s+\(([^()]*)\)\s*$/;

export function parsePerfLine(line: string): PerfSample | undefined {
  const m = LINE.exec(line);
  if (m === null) return undefined;
  return {
    thread: m[1] as string,
    pid: Number(m[2]),
    tid: Number(m[3]),
    ip: m[4] as string,
    symbol: m[5] as string,
    dso: m[6] as string,
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
  'C and C++ libraries (malloc, free, memcpy)',
  'native addons (SQLite)',
  'kernel (syscalls, TCP, scheduler)',
  'other',
] as const;
export type PerfCategory = (typeof PERF_CATEGORIES)[number];

export const KERNEL: PerfCategory = 'kernel (syscalls, TCP, scheduler)';

// Only the collector's own phases: GlobalHandles::Create/Destroy, say, are Node's per-object wraps.
const GC =
  /Scaveng|MarkCompact|Marking|Sweeper|Evacuat|RememberedSet|SlotSet|MemoryAllocator|MinorMS|PagedSpace|LargeObjectSpace|MemoryChunk|GCTracer|v8::internal::Heap::|WeakObjects|HeapVisitor|Compactor|GlobalHandles::(Iterate|PostGarbageCollection|Process|Compute|Invoke)/;
const COMPILER =
  /v8::internal::(compiler|maglev|baseline|interpreter|turboshaft)::|v8::internal::(Parser|PreParser|Scanner|Compiler|BytecodeGenerator|OptimizingCompileDispatcher|Deoptimizer)\b/;
const RUNTIME =
  /Runtime_|v8::internal::(\w*IC::|LookupIterator|FeedbackNexus|TransitionsAccessor|TransitionArray|Map::|JSObject::|Object::|DescriptorArray|MapUpdater|UpdateDescriptorForValue)/;
const IC = /^Builtins_\w*IC(_|Trampoline|Baseline|InsideTypeof|$)/;
const OPENSSL =
  /^_?(aesni|gcm|ghash|generic_aes|ossl|EVP|evp|SSL|ssl\d*|tls\d*|dtls\d*|BIO|bio|CRYPTO|OPENSSL|ERR|sha\d+|SHA\d+|bn|BN|RAND|drbg|EC|ec|ecp|x25519|X25519|HMAC|OSSL|aes|ChaCha20|chacha20|Poly1305|poly1305|OBJ|ASN1|PACKET|WPACKET|RSA|rsa|X509|x509|kdf)_/;
/** x86-64 kernel space: where a kernel sample lands when perf is not allowed to name kernel symbols. */
const KERNEL_ADDRESS = /^ffff[89a-f][0-9a-f]{11}$/;

export function perfCategory(sample: Pick<PerfSample, 'ip' | 'symbol' | 'dso'>): PerfCategory {
  const { ip, symbol, dso } = sample;
  if (dso === '[kernel.kallsyms]' || dso === '[vdso]' || KERNEL_ADDRESS.test(ip)) return KERNEL;
  // JIT code and wasm live in anonymous memory perf cannot name; a diagnosis run that adds
  // --perf-basic-prof through BENCH_*_NODE_ARGS names it from /tmp/perf-<pid>.map.
  if (dso === '[unknown]' || dso.startsWith('//anon') || dso.startsWith('/tmp/perf-'))
    return 'JavaScript (JIT code)';
  // Kernel modules (`[nf_conntrack]`, …): anything else in brackets is the kernel's too.
  if (dso.startsWith('[')) return KERNEL;
  if (/\/lib(c|stdc\+\+|m|gcc_s|pthread)[.-]|\/ld-linux/.test(dso))
    return 'C and C++ libraries (malloc, free, memcpy)';
  if (/\/lib(crypto|ssl)\.so/.test(dso)) return 'OpenSSL (TLS, AES-GCM, SHA-256)';
  if (dso.endsWith('.node')) return 'native addons (SQLite)';
  if (/\/(node|libnode\.so[.\d]*)$/.test(dso)) return nodeBinaryCategory(symbol);
  return 'other';
}

/**
 * Node's binary holds V8 (its builtins embedded), Node's C++, OpenSSL, and libuv, llhttp, nghttp2,
 * simdutf, ICU, zlib and c-ares, which count as Node's C++ here. The interpreter's bytecode handlers
 * are builtins too (`Builtins_*Handler`), so code that runs before V8 compiles it counts as builtins.
 */
function nodeBinaryCategory(symbol: string): PerfCategory {
  if (IC.test(symbol)) return 'V8 inline caches';
  if (symbol.startsWith('Builtins_') || symbol.startsWith('v8::internal::Builtin_')) return 'V8 builtins';
  if (OPENSSL.test(symbol)) return 'OpenSSL (TLS, AES-GCM, SHA-256)';
  if (GC.test(symbol)) return 'V8 garbage collector';
  if (COMPILER.test(symbol)) return 'V8 compilers';
  if (RUNTIME.test(symbol)) return 'V8 runtime (slow paths, lookups)';
  return 'Node and V8 C++';
}

/** Samples per category, per thread name, and in all, for one process. */
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
  const category = perfCategory(sample);
  tally.byCategory.set(category, (tally.byCategory.get(category) ?? 0) + 1);
  tally.byThread.set(sample.thread, (tally.byThread.get(sample.thread) ?? 0) + 1);
}

/**
 * Each key's share of `total` samples times the process's measured CPU per request: µs per request
 * by key, in the order of `keys`, adding up to `usPerRequest` when the keys cover every sample.
 */
export function usByShare<K>(
  counts: ReadonlyMap<K, number>,
  keys: Iterable<K>,
  total: number,
  usPerRequest: number,
): Map<K, number> {
  const out = new Map<K, number>();
  if (total === 0) return out;
  for (const key of keys) out.set(key, ((counts.get(key) ?? 0) / total) * usPerRequest);
  return out;
}

/** µs per request by category (every category, in table order). Empty for a process never sampled. */
export function perRequest(tally: PerfTally, usPerRequest: number): Map<PerfCategory, number> {
  return usByShare(tally.byCategory, PERF_CATEGORIES, tally.samples, usPerRequest);
}

/** µs per request by thread name, the busiest first. */
export function perThread(tally: PerfTally, usPerRequest: number): Map<string, number> {
  const names = [...tally.byThread].sort((a, b) => b[1] - a[1]).map(([name]) => name);
  return usByShare(tally.byThread, names, tally.samples, usPerRequest);
}

/**
 * Why a tally cannot be trusted, or undefined. A process serving requests always makes system
 * calls: none at all means perf recorded without kernel samples (a non-root user with
 * kernel.perf_event_paranoid at 2 gets that silently), and the kernel's share would land elsewhere.
 */
export function tallyProblem(name: string, tally: PerfTally): string | undefined {
  if (tally.samples === 0) return `perf recorded no sample of the ${name}`;
  if ((tally.byCategory.get(KERNEL) ?? 0) === 0) return `perf recorded no kernel sample of the ${name}`;
  return undefined;
}
