import { describe, expect, it } from 'vitest';
import {
  addSample,
  emptyTally,
  parsePerfLine,
  perfCategory,
  perRequest,
  perThread,
  PERF_CATEGORIES,
  tallyProblem,
  usByShare,
  type PerfCategory,
} from '../../bench/perf-rules.js';

const NODE = '/root/.cache/tokenproxy-ci/node-24.21.0/package/bin/node';
const LIBC = '/usr/lib/x86_64-linux-gnu/libc.so.6';

describe('parsePerfLine', () => {
  const sample = (thread: string, pid: number, tid: number, ip: string, symbol: string, dso: string) => ({
    thread,
    pid,
    tid,
    ip,
    symbol,
    dso,
  });
  it.each([
    [
      '      MainThread  7708/7708            1cad11f tls_get_more_records (/opt/node/bin/node)',
      sample('MainThread', 7708, 7708, '1cad11f', 'tls_get_more_records', '/opt/node/bin/node'),
    ],
    [
      '    WorkerThread  7743/7844            12901e8 v8::internal::String::ComputeAndSetRawHash (/n/node)',
      sample('WorkerThread', 7743, 7844, '12901e8', 'v8::internal::String::ComputeAndSetRawHash', '/n/node'),
    ],
    [
      '  MainThread  7708/7708  859610 std::deque<v8::Local<v8::Object>*, std::allocator<v8::Local<v8::Object>*> >::_M_default_append (/n/node)',
      sample(
        'MainThread',
        7708,
        7708,
        '859610',
        'std::deque<v8::Local<v8::Object>*, std::allocator<v8::Local<v8::Object>*> >::_M_default_append',
        '/n/node',
      ),
    ],
    [
      '      V8Worker  7743/7751      7fbc2838743c [unknown] ([unknown])',
      sample('V8Worker', 7743, 7751, '7fbc2838743c', '[unknown]', '[unknown]'),
    ],
    [
      '  libuv worker 1  7743/7760      7fbc2838743c uv__work_done (/n/node)',
      sample('libuv worker 1', 7743, 7760, '7fbc2838743c', 'uv__work_done', '/n/node'),
    ],
    [
      '         swapper     0/0      ffffffff8225fe6b pv_native_safe_halt ([kernel.kallsyms])',
      sample('swapper', 0, 0, 'ffffffff8225fe6b', 'pv_native_safe_halt', '[kernel.kallsyms]'),
    ],
    ['', undefined],
    ['perf: some warning without a sample', undefined],
  ])('%j', (line, want) => {
    expect(parsePerfLine(line)).toEqual(want);
  });
});

describe('perfCategory', () => {
  const USER = '55d0c0ffee12';
  it.each<[string, string, PerfCategory, string?]>([
    ['tcp_sendmsg_locked', '[kernel.kallsyms]', 'kernel (syscalls, TCP, scheduler)'],
    ['__vdso_clock_gettime', '[vdso]', 'kernel (syscalls, TCP, scheduler)'],
    ['nf_conntrack_in', '[nf_conntrack]', 'kernel (syscalls, TCP, scheduler)'],
    // kernel.kptr_restrict hides kernel symbols from a non-root perf: the address still tells.
    ['[unknown]', '[unknown]', 'kernel (syscalls, TCP, scheduler)', 'ffffffff8225fe6b'],
    ['[unknown]', '[unknown]', 'JavaScript (JIT code)'],
    ["JS:*'parseHeaders util.js:436", '/tmp/perf-7743.map', 'JavaScript (JIT code)'],
    ['_int_malloc', LIBC, 'C and C++ libraries (malloc, free, memcpy)'],
    ['__memmove_avx_unaligned_erms', LIBC, 'C and C++ libraries (malloc, free, memcpy)'],
    [
      'operator new',
      '/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30',
      'C and C++ libraries (malloc, free, memcpy)',
    ],
    ['_dl_relocate_object', '/lib64/ld-linux-x86-64.so.2', 'C and C++ libraries (malloc, free, memcpy)'],
    ['EVP_DecryptUpdate', '/usr/lib/x86_64-linux-gnu/libcrypto.so.3', 'OpenSSL (TLS, AES-GCM, SHA-256)'],
    [
      'sqlite3VdbeExec',
      '/w/node_modules/better-sqlite3/build/Release/better_sqlite3.node',
      'native addons (SQLite)',
    ],
    ['Builtins_KeyedLoadIC_Megamorphic', NODE, 'V8 inline caches'],
    ['Builtins_LoadIC', NODE, 'V8 inline caches'],
    ['Builtins_LoadICTrampoline_Megamorphic', NODE, 'V8 inline caches'],
    ['Builtins_LoadGlobalIC', NODE, 'V8 inline caches'],
    ['Builtins_LoadGlobalICInsideTypeof', NODE, 'V8 inline caches'],
    ['Builtins_RecordWriteSaveFP', NODE, 'V8 builtins'],
    ['Builtins_CreateTypedArray', NODE, 'V8 builtins'],
    ['Builtins_InterpreterEntryTrampoline', NODE, 'V8 builtins'],
    ['Builtins_GetNamedPropertyHandler', NODE, 'V8 builtins'],
    ['v8::internal::Builtin_DatePrototypeToISOString', NODE, 'V8 builtins'],
    ['_aesni_ctr32_ghash_6x', NODE, 'OpenSSL (TLS, AES-GCM, SHA-256)'],
    ['aesni_encrypt', NODE, 'OpenSSL (TLS, AES-GCM, SHA-256)'],
    ['generic_aes_gcm_cipher_update', NODE, 'OpenSSL (TLS, AES-GCM, SHA-256)'],
    ['tls_release_record', NODE, 'OpenSSL (TLS, AES-GCM, SHA-256)'],
    ['tls13_enc', NODE, 'OpenSSL (TLS, AES-GCM, SHA-256)'],
    ['ossl_param_find_pidx', NODE, 'OpenSSL (TLS, AES-GCM, SHA-256)'],
    ['EVP_CIPHER_CTX_get_iv_length', NODE, 'OpenSSL (TLS, AES-GCM, SHA-256)'],
    ['sha256_block_data_order_avx2', NODE, 'OpenSSL (TLS, AES-GCM, SHA-256)'],
    [
      'v8::internal::Scavenger::ScavengeObject<v8::internal::FullHeapObjectSlot>',
      NODE,
      'V8 garbage collector',
    ],
    ['v8::internal::ConcurrentMarking::RunMajor', NODE, 'V8 garbage collector'],
    ['v8::internal::Heap::OnMoveEvent', NODE, 'V8 garbage collector'],
    ['v8::internal::GlobalHandles::PostGarbageCollectionProcessing', NODE, 'V8 garbage collector'],
    ['v8::internal::GlobalHandles::Create', NODE, 'Node and V8 C++'],
    ['v8::internal::compiler::GraphReducer::ReduceTop', NODE, 'V8 compilers'],
    ['v8::internal::maglev::MaglevGraphBuilder::Build', NODE, 'V8 compilers'],
    ['v8::internal::Parser::ParseFunctionLiteral', NODE, 'V8 compilers'],
    ['v8::internal::PreParser::PreParseFunction', NODE, 'V8 compilers'],
    ['v8::internal::Deoptimizer::New', NODE, 'V8 compilers'],
    ['v8::internal::Runtime_DefineKeyedOwnPropertyInLiteral', NODE, 'V8 runtime (slow paths, lookups)'],
    ['v8::internal::JSObject::MigrateToMap', NODE, 'V8 runtime (slow paths, lookups)'],
    ['v8::internal::LookupIterator::WriteDataValue', NODE, 'V8 runtime (slow paths, lookups)'],
    ['v8::internal::LoadGlobalIC::Load', NODE, 'V8 runtime (slow paths, lookups)'],
    ['v8::internal::HeapObject::SizeFromMap', NODE, 'Node and V8 C++'],
    ['llhttp__internal__run', NODE, 'Node and V8 C++'],
    ['node::http_parser::Parser::Proxy<int', NODE, 'Node and V8 C++'],
    ['[unknown]', NODE, 'Node and V8 C++'],
    ['inflate', '/usr/lib/x86_64-linux-gnu/libz.so.1', 'other'],
  ])('%s in %s → %s', (symbol, dso, want, ip = USER) => {
    expect(perfCategory({ ip, symbol, dso })).toBe(want);
  });
});

describe('usByShare, perRequest and perThread', () => {
  const tally = emptyTally();
  const add = (symbol: string, dso: string, thread = 'MainThread'): void =>
    addSample(tally, { thread, pid: 1, tid: 1, ip: '55d0c0ffee12', symbol, dso });
  add('tcp_ack', '[kernel.kallsyms]');
  add('[unknown]', '[unknown]');
  add('[unknown]', '[unknown]');
  add('sqlite3VdbeExec', '/x/better_sqlite3.node', 'WorkerThread');

  it('splits the measured µs per request by each category’s share of the samples', () => {
    const us = perRequest(tally, 200);
    expect(us.get('kernel (syscalls, TCP, scheduler)')).toBe(50);
    expect(us.get('JavaScript (JIT code)')).toBe(100);
    expect(us.get('native addons (SQLite)')).toBe(50);
    expect(us.get('other')).toBe(0);
    expect([...us.keys()]).toEqual([...PERF_CATEGORIES]);
    expect([...us.values()].reduce((a, b) => a + b, 0)).toBe(200);
  });

  it('splits it by thread, the busiest first', () => {
    expect([...perThread(tally, 200)]).toEqual([
      ['MainThread', 150],
      ['WorkerThread', 50],
    ]);
  });

  it.each([
    [
      new Map([['a', 1]]),
      ['a', 'b'],
      4,
      100,
      [
        ['a', 25],
        ['b', 0],
      ],
    ],
    [new Map([['a', 3]]), ['a'], 3, 90, [['a', 90]]],
    [new Map<string, number>(), ['a'], 0, 90, []],
  ])('usByShare(%j, %j, %d, %d)', (counts, keys, total, us, want) => {
    expect([...usByShare(counts, keys, total, us)]).toEqual(want);
  });
});

describe('tallyProblem', () => {
  const withSamples = (...dsos: string[]) => {
    const tally = emptyTally();
    for (const dso of dsos)
      addSample(tally, { thread: 'T', pid: 1, tid: 1, ip: '55d0c0ffee12', symbol: 's', dso });
    return tally;
  };
  it.each([
    ['no sample at all', withSamples(), 'perf recorded no sample of the proxy'],
    [
      'no kernel sample (recorded without kernel time)',
      withSamples(NODE, LIBC),
      'perf recorded no kernel sample of the proxy',
    ],
    ['user and kernel samples', withSamples(NODE, '[kernel.kallsyms]'), undefined],
  ])('%s', (_name, tally, want) => {
    expect(tallyProblem('proxy', tally)).toBe(want);
  });
});
