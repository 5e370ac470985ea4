import { describe, expect, it } from 'vitest';
import {
  addSample,
  emptyTally,
  parsePerfLine,
  perfCategory,
  perRequest,
  PERF_CATEGORIES,
  type PerfCategory,
} from '../../bench/perf-rules.js';

const NODE = '/root/.cache/tokenproxy-ci/node-24.21.0/package/bin/node';

describe('parsePerfLine', () => {
  it.each([
    [
      '      MainThread  7708/7708            1cad11f tls_get_more_records (/opt/node/bin/node)',
      {
        thread: 'MainThread',
        pid: 7708,
        tid: 7708,
        symbol: 'tls_get_more_records',
        dso: '/opt/node/bin/node',
      },
    ],
    [
      '    WorkerThread  7743/7844            12901e8 v8::internal::String::ComputeAndSetRawHash (/n/node)',
      {
        thread: 'WorkerThread',
        pid: 7743,
        tid: 7844,
        symbol: 'v8::internal::String::ComputeAndSetRawHash',
        dso: '/n/node',
      },
    ],
    [
      '  MainThread  7708/7708  859610 std::deque<v8::Local<v8::Object>*, std::allocator<v8::Local<v8::Object>*> >::_M_default_append (/n/node)',
      {
        thread: 'MainThread',
        pid: 7708,
        tid: 7708,
        symbol:
          'std::deque<v8::Local<v8::Object>*, std::allocator<v8::Local<v8::Object>*> >::_M_default_append',
        dso: '/n/node',
      },
    ],
    [
      '      V8Worker  7743/7751      7fbc2838743c [unknown] ([unknown])',
      { thread: 'V8Worker', pid: 7743, tid: 7751, symbol: '[unknown]', dso: '[unknown]' },
    ],
    [
      '         swapper     0/0      ffffffff8225fe6b pv_native_safe_halt ([kernel.kallsyms])',
      { thread: 'swapper', pid: 0, tid: 0, symbol: 'pv_native_safe_halt', dso: '[kernel.kallsyms]' },
    ],
    ['', undefined],
    ['perf: some warning without a sample', undefined],
  ])('%j', (line, want) => {
    expect(parsePerfLine(line)).toEqual(want);
  });
});

describe('perfCategory', () => {
  it.each<[string, string, PerfCategory]>([
    ['tcp_sendmsg_locked', '[kernel.kallsyms]', 'kernel (syscalls, TCP, scheduler)'],
    ['__vdso_clock_gettime', '[vdso]', 'kernel (syscalls, TCP, scheduler)'],
    ['[unknown]', '[unknown]', 'JavaScript (JIT code)'],
    ["JS:*'parseHeaders util.js:436", '/tmp/perf-7743.map', 'JavaScript (JIT code)'],
    ['_int_malloc', '/usr/lib/x86_64-linux-gnu/libc.so.6', 'C library (malloc, free, memcpy)'],
    [
      '__memmove_avx_unaligned_erms',
      '/usr/lib/x86_64-linux-gnu/libc.so.6',
      'C library (malloc, free, memcpy)',
    ],
    [
      'sqlite3VdbeExec',
      '/w/node_modules/better-sqlite3/build/Release/better_sqlite3.node',
      'native addons (SQLite)',
    ],
    ['Builtins_KeyedLoadIC_Megamorphic', NODE, 'V8 inline caches'],
    ['Builtins_LoadIC', NODE, 'V8 inline caches'],
    ['Builtins_LoadICTrampoline_Megamorphic', NODE, 'V8 inline caches'],
    ['Builtins_LoadGlobalIC', NODE, 'V8 inline caches'],
    ['Builtins_RecordWriteSaveFP', NODE, 'V8 builtins'],
    ['Builtins_CreateTypedArray', NODE, 'V8 builtins'],
    ['Builtins_ICsAreNotThis_Call', NODE, 'V8 builtins'],
    ['_aesni_ctr32_ghash_6x', NODE, 'OpenSSL (TLS, AES-GCM, SHA-256)'],
    ['aesni_encrypt', NODE, 'OpenSSL (TLS, AES-GCM, SHA-256)'],
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
    ['v8::internal::compiler::GraphReducer::ReduceTop', NODE, 'V8 compilers'],
    ['v8::internal::maglev::MaglevGraphBuilder::Build', NODE, 'V8 compilers'],
    ['v8::internal::Parser::ParseFunctionLiteral', NODE, 'V8 compilers'],
    ['v8::internal::Runtime_DefineKeyedOwnPropertyInLiteral', NODE, 'V8 runtime (slow paths, lookups)'],
    ['v8::internal::JSObject::MigrateToMap', NODE, 'V8 runtime (slow paths, lookups)'],
    ['v8::internal::LookupIterator::WriteDataValue', NODE, 'V8 runtime (slow paths, lookups)'],
    ['v8::internal::HeapObject::SizeFromMap', NODE, 'Node and V8 C++'],
    ['llhttp__internal__run', NODE, 'Node and V8 C++'],
    ['node::http_parser::Parser::Proxy<int', NODE, 'Node and V8 C++'],
    ['[unknown]', NODE, 'Node and V8 C++'],
    ['std::__detail::_Map_base', '/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30', 'other'],
  ])('%s in %s → %s', (symbol, dso, want) => {
    expect(perfCategory(symbol, dso)).toBe(want);
  });
});

describe('perRequest', () => {
  it('splits the measured µs per request by each category’s share of the samples', () => {
    const tally = emptyTally();
    const sample = (symbol: string, dso: string, thread = 'MainThread'): void =>
      addSample(tally, { thread, pid: 1, tid: 1, symbol, dso });
    sample('tcp_ack', '[kernel.kallsyms]');
    sample('[unknown]', '[unknown]');
    sample('[unknown]', '[unknown]');
    sample('sqlite3VdbeExec', '/x/better_sqlite3.node', 'WorkerThread');
    const us = perRequest(tally, 200);
    expect(us.get('kernel (syscalls, TCP, scheduler)')).toBe(50);
    expect(us.get('JavaScript (JIT code)')).toBe(100);
    expect(us.get('native addons (SQLite)')).toBe(50);
    expect(us.get('other')).toBe(0);
    expect([...us.keys()]).toEqual([...PERF_CATEGORIES]);
    expect([...us.values()].reduce((a, b) => a + b, 0)).toBe(200);
    expect(Object.fromEntries(tally.byThread)).toEqual({ MainThread: 3, WorkerThread: 1 });
  });

  it('is empty for a process that was never sampled', () => {
    expect(perRequest(emptyTally(), 200).size).toBe(0);
  });
});
