import { existsSync, readFileSync } from 'node:fs'
import { decryptKeystoreJsonSync, isKeystoreJson, Wallet } from 'ethers'
import { privateKey as privateKeySchema } from '../config/settings-declared.ts'
import { SettingsError, type Settings } from '../config/settings.ts'
import {
  createPasswordFile,
  decryptKeystore,
  listKeystores,
  passwordFromFile,
  passwordFromVariable,
  settingsPassword,
  writeKeystore,
  writeKeystoreJson,
  type PasswordSource,
} from '../config/keystore.ts'
import { commitWarning, type KeyPlace } from './git-exposure.ts'
import { settingsOrExit } from './lifecycle.ts'
import { renderTable } from './table.ts'

/** Options every `keys` command takes: where the keystores are and where their password comes from. */
export interface KeystoreOptions {
  dir?: string
  passwordFile?: string
  passwordEnv?: string
  json?: boolean
}

/** The keystore folder: --dir, else KEYSTORE_DIR, else `keys`. */
export function keystoreDir(settings: Settings, options: KeystoreOptions): string {
  return options.dir ?? settings.KEYSTORE_DIR ?? 'keys'
}

/** Where the password comes from: --password-file, --password-env, else the settings. */
export function passwordSource(
  settings: Settings,
  options: KeystoreOptions,
): PasswordSource | undefined {
  if (options.passwordFile) return passwordFromFile(options.passwordFile)
  if (options.passwordEnv) return passwordFromVariable(options.passwordEnv, process.env)
  return settingsPassword(settings)
}

export function needPassword(source: PasswordSource | undefined): PasswordSource {
  if (!source)
    throw new SettingsError([
      'no password: give --password-file <file> or --password-env <variable> (or set KEYSTORE_PASSWORD_FILE)',
    ])
  return source
}

/** Runs a keys command: a settings or key problem is one line on stderr and exit code 1. */
export async function keysCommand(
  run: (settings: Settings) => void | Promise<void>,
): Promise<void> {
  const settings = settingsOrExit()
  try {
    await run(settings)
  } catch (error) {
    console.error(
      error instanceof SettingsError ? error.problems.join('\n') : (error as Error).message,
    )
    process.exitCode = 1
  }
}

/** Says on stderr, before anything is written, that git would commit what the command writes. */
export function sayBeforeWriting(places: readonly KeyPlace[]): void {
  const warning = commitWarning(places)
  if (warning) console.error(warning)
}

/** Prints what a command made: JSON alone on stdout with --json, else a line for people. */
export function report(
  options: KeystoreOptions,
  json: Record<string, unknown>,
  line: string,
): void {
  console.log(options.json ? JSON.stringify(json, null, 2) : line)
}

export async function createKeyAction(options: KeystoreOptions): Promise<void> {
  await keysCommand((settings) => {
    const dir = keystoreDir(settings, options)
    const newPasswordFile =
      options.passwordFile && !existsSync(options.passwordFile) ? options.passwordFile : undefined
    sayBeforeWriting([
      { path: dir, folder: true },
      ...(newPasswordFile ? [{ path: newPasswordFile }] : []),
    ])
    let password: string
    if (options.passwordFile && !existsSync(options.passwordFile)) {
      password = createPasswordFile(options.passwordFile)
      // Advice goes to stderr: stdout stays JSON alone with --json.
      console.error(
        `wrote a new random password to ${options.passwordFile} (mode 0600): keep it, the keystore does not open without it`,
      )
    } else password = needPassword(passwordSource(settings, options)).read()
    const created = writeKeystore(dir, Wallet.createRandom().privateKey, password)
    report(
      options,
      { address: created.address, file: created.path },
      `created ${created.path}\naddress ${created.address} (fund it with gas, then: feedrunner operator authorize)`,
    )
  })
}

export async function importKeyAction(
  file: string | undefined,
  options: KeystoreOptions & { privateKeyEnv?: string },
): Promise<void> {
  await keysCommand((settings) => {
    const dir = keystoreDir(settings, options)
    if ((file === undefined) === (options.privateKeyEnv === undefined))
      throw new SettingsError([
        'give either a keystore file to import or --private-key-env <variable>, one of them',
      ])
    const password = needPassword(passwordSource(settings, options))
    sayBeforeWriting([{ path: dir, folder: true }])
    let imported: { path: string; address: string }
    if (file !== undefined) {
      const json = readKeystoreFile(file)
      const account = openWith(json, file, password)
      imported = writeKeystoreJson(dir, account.address, json)
    } else {
      const variable = options.privateKeyEnv as string
      const parsed = privateKeySchema.safeParse((process.env[variable] ?? '').trim())
      // The value is never repeated: it is (or was meant to be) a key.
      if (!parsed.success)
        throw new SettingsError([
          `${variable}: ${process.env[variable] ? 'is not a 0x-prefixed 32-byte private key' : 'not set'}`,
        ])
      imported = writeKeystore(dir, parsed.data, password.read())
    }
    report(
      options,
      { address: imported.address, file: imported.path },
      `imported ${imported.address} into ${imported.path}`,
    )
  })
}

function readKeystoreFile(file: string): string {
  let json: string
  try {
    json = readFileSync(file, 'utf8')
  } catch (error) {
    throw new SettingsError([`${file}: cannot be read (${(error as NodeJS.ErrnoException).code})`])
  }
  if (!isKeystoreJson(json))
    throw new SettingsError([`${file}: not a Web3 Secret Storage keystore (version 3 JSON)`])
  return json
}

function openWith(json: string, file: string, password: PasswordSource): { address: string } {
  try {
    return decryptKeystoreJsonSync(json, password.read())
  } catch (error) {
    if (error instanceof SettingsError) throw error
    throw new SettingsError([
      `${file}: does not open with the password from ${password.name} (a wrong password, or a damaged file)`,
    ])
  }
}

export async function listKeysAction(options: KeystoreOptions): Promise<void> {
  await keysCommand((settings) => {
    const dir = keystoreDir(settings, options)
    const keystores = listKeystores(dir)
    const source = passwordSource(settings, options)
    const rows = keystores.map((keystore) => ({
      file: keystore.file,
      // A keystore that does not name its address (cast may write one so) is opened to learn it.
      address: keystore.address ?? (source ? decryptKeystore(keystore.path, source).address : null),
    }))
    if (options.json) {
      console.log(JSON.stringify({ dir, keys: rows }, null, 2))
      return
    }
    if (rows.length === 0) {
      console.log(`no keystore in ${dir}: feedrunner keys create --dir ${dir}`)
      return
    }
    console.log(
      renderTable(
        ['#', 'address', 'file'],
        rows.map((row, index) => [
          String(index),
          row.address ?? '(not named: give the password to open it)',
          row.file,
        ]),
      ),
    )
    console.log(
      `\n${rows.length} keys in ${dir}; the runner signs with them when KEYSTORE_DIR=${dir}`,
    )
  })
}
