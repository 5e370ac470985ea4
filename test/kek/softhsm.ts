import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const SOFTHSM_MODULE = '/usr/lib/softhsm/libsofthsm2.so';
export const SO_PIN = '87654321';

/** A SoftHSM2 of its own for one test: a token directory and config, found through SOFTHSM2_CONF. */
export interface SoftHsm {
  readonly conf: string;
  readonly tokenDir: string;
  /** Initialises a token in the next free slot. */
  initToken(label: string, pin: string): Promise<void>;
  /** The environment that makes `tokenproxy` use this HSM's token `label` with `pin`. */
  env(label: string, pin: string): Record<string, string>;
  /** Takes every token away (the HSM "fails"), and puts them back. */
  unplug(): Promise<void>;
  replug(): Promise<void>;
  cleanup(): Promise<void>;
}

export async function createSoftHsm(): Promise<SoftHsm> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-softhsm-'));
  const tokenDir = path.join(root, 'tokens');
  const away = path.join(root, 'away');
  await mkdir(tokenDir);
  const conf = path.join(root, 'softhsm2.conf');
  await writeFile(
    conf,
    `directories.tokendir = ${tokenDir}\nobjectstore.backend = file\nlog.level = ERROR\n`,
  );
  return {
    conf,
    tokenDir,
    async initToken(label, pin) {
      await run(
        'softhsm2-util',
        ['--init-token', '--free', '--label', label, '--pin', pin, '--so-pin', SO_PIN],
        {
          env: { ...process.env, SOFTHSM2_CONF: conf },
        },
      );
    },
    env(label, pin) {
      return {
        SOFTHSM2_CONF: conf,
        TOKENPROXY_KEK: 'pkcs11',
        TOKENPROXY_PKCS11_MODULE: SOFTHSM_MODULE,
        TOKENPROXY_PKCS11_TOKEN_LABEL: label,
        TOKENPROXY_PKCS11_PIN: pin,
      };
    },
    async unplug() {
      await rename(tokenDir, away);
    },
    async replug() {
      await rename(away, tokenDir);
    },
    async cleanup() {
      await rm(root, { recursive: true, force: true });
    },
  };
}

export async function tokenDirs(hsm: SoftHsm): Promise<string[]> {
  return readdir(hsm.tokenDir);
}

/**
 * The secret keys on a token, as labels and KEK ids (what tokenproxy derives from CKA_ID), read
 * through PKCS#11 in a child process of its own (the library reads SOFTHSM2_CONF once per process).
 */
export async function secretKeysOn(
  hsm: SoftHsm,
  tokenLabel: string,
  pin: string,
): Promise<Array<{ label: string; kekId: string }>> {
  const stdout = await onToken(
    hsm,
    tokenLabel,
    pin,
    `
    lib.C_FindObjectsInit(session, [{ type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_SECRET_KEY }]);
    const found = lib.C_FindObjects(session, 100);
    lib.C_FindObjectsFinal(session);
    const out = found.map((o) => {
      const [label, id] = lib.C_GetAttributeValue(session, o, [{ type: pkcs11js.CKA_LABEL }, { type: pkcs11js.CKA_ID }]);
      return { label: label.value.toString(), kekId: pkcs11Fingerprint(id.value).toString('hex') };
    });
    process.stdout.write(JSON.stringify(out));`,
    `import { pkcs11Fingerprint } from ${JSON.stringify(new URL('../../src/vault/pkcs11-protocol.ts', import.meta.url).href)};`,
  );
  return (JSON.parse(stdout) as Array<{ label: string; kekId: string }>).sort((a, b) =>
    a.label.localeCompare(b.label),
  );
}

/**
 * Runs `body` in a child process of its own (the library reads SOFTHSM2_CONF once per process) with
 * `lib` initialised and `session` logged in to the token `tokenLabel`; resolves with its stdout.
 * `imports` are import lines the body needs besides pkcs11js and node:crypto.
 */
async function onToken(
  hsm: SoftHsm,
  tokenLabel: string,
  pin: string,
  body: string,
  imports = '',
): Promise<string> {
  const script = `
    import pkcs11js from 'pkcs11js';
    import crypto from 'node:crypto';
    ${imports}
    const lib = new pkcs11js.PKCS11();
    lib.load(${JSON.stringify(SOFTHSM_MODULE)});
    lib.C_Initialize();
    const slot = lib.C_GetSlotList(true).find((s) => lib.C_GetTokenInfo(s).label.trim() === ${JSON.stringify(tokenLabel)});
    const session = lib.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION | pkcs11js.CKF_RW_SESSION);
    lib.C_Login(session, pkcs11js.CKU_USER, ${JSON.stringify(pin)});
    ${body}
    lib.C_Finalize();
  `;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, SOFTHSM2_CONF: hsm.conf },
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
  });
  return stdout;
}

/**
 * Changes the token from a process of its own for `ms`, as `kek rotate` does to a running server's
 * token: creates a key object labelled `spareLabel` and destroys it, and sets the label of the key
 * labelled `touchLabel` again (rewriting that object, as a promotion does), over and over.
 * Resolves with the rounds.
 */
export async function churnToken(
  hsm: SoftHsm,
  tokenLabel: string,
  pin: string,
  churn: { spareLabel: string; touchLabel: string; ms: number; minRounds: number; maxMs: number },
): Promise<number> {
  const stdout = await onToken(
    hsm,
    tokenLabel,
    pin,
    `
    const touchLabel = ${JSON.stringify(churn.touchLabel)};
    lib.C_FindObjectsInit(session, [{ type: pkcs11js.CKA_LABEL, value: touchLabel }]);
    const [touched] = lib.C_FindObjects(session, 1);
    lib.C_FindObjectsFinal(session);
    if (touched === undefined) throw new Error('no key labelled ' + touchLabel);
    const touch = () => lib.C_SetAttributeValue(session, touched, [{ type: pkcs11js.CKA_LABEL, value: touchLabel }]);
    // At least ms and minRounds (a loaded machine churns slower), never past maxMs.
    const start = Date.now();
    let rounds = 0;
    while (Date.now() - start < ${churn.maxMs} && (Date.now() - start < ${churn.ms} || rounds < ${churn.minRounds})) {
      const spare = lib.C_GenerateKey(session, { mechanism: pkcs11js.CKM_AES_KEY_GEN }, [
        { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_SECRET_KEY },
        { type: pkcs11js.CKA_KEY_TYPE, value: pkcs11js.CKK_AES },
        { type: pkcs11js.CKA_VALUE_LEN, value: 32 },
        { type: pkcs11js.CKA_TOKEN, value: true },
        { type: pkcs11js.CKA_PRIVATE, value: true },
        { type: pkcs11js.CKA_LABEL, value: ${JSON.stringify(churn.spareLabel)} },
        { type: pkcs11js.CKA_ID, value: crypto.randomBytes(16) },
      ]);
      for (let i = 0; i < 3; i++) touch();
      lib.C_DestroyObject(session, spare);
      for (let i = 0; i < 3; i++) touch();
      rounds++;
    }
    process.stdout.write(String(rounds));`,
  );
  return Number(stdout);
}

/**
 * Creates an AES-256 key labelled `label` as an HSM's own tools would: usable for tokenproxy's
 * operations, non-extractable, with a random CKA_ID that carries no tokenproxy mark.
 */
export async function createOperatorKey(
  hsm: SoftHsm,
  tokenLabel: string,
  pin: string,
  label: string,
): Promise<void> {
  await onToken(
    hsm,
    tokenLabel,
    pin,
    `
    lib.C_GenerateKey(session, { mechanism: pkcs11js.CKM_AES_KEY_GEN }, [
      { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_SECRET_KEY },
      { type: pkcs11js.CKA_KEY_TYPE, value: pkcs11js.CKK_AES },
      { type: pkcs11js.CKA_VALUE_LEN, value: 32 },
      { type: pkcs11js.CKA_TOKEN, value: true },
      { type: pkcs11js.CKA_PRIVATE, value: true },
      { type: pkcs11js.CKA_SENSITIVE, value: true },
      { type: pkcs11js.CKA_EXTRACTABLE, value: false },
      { type: pkcs11js.CKA_ENCRYPT, value: true },
      { type: pkcs11js.CKA_DECRYPT, value: true },
      { type: pkcs11js.CKA_SIGN, value: true },
      { type: pkcs11js.CKA_MODIFIABLE, value: true },
      { type: pkcs11js.CKA_LABEL, value: ${JSON.stringify(label)} },
      { type: pkcs11js.CKA_ID, value: crypto.randomBytes(16) },
    ]);
`,
  );
}
