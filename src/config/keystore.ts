import { randomBytes } from 'node:crypto'
import { chmodSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import {
  decryptKeystoreJsonSync,
  encryptKeystoreJsonSync,
  getAddress,
  isKeystoreJson,
  Wallet,
  type EncryptOptions,
} from 'ethers'
import { SettingsError, type Settings } from './settings.ts'

/**
 * Sender keys at rest, encrypted: Web3 Secret Storage (version 3) keystores, the files geth,
 * `cast wallet` and `feedrunner keys` write. A key is decrypted once, in the composition root of a
 * process that signs; it never reaches a log line, an error message, a queue or Redis.
 */

/** A keystore file of a folder, with the address its JSON names (geth and ethers write it; cast may not). */
export interface KeystoreFile {
  file: string
  path: string
  address: string | undefined
}

/** The keystores of `dir`, in file name order; other files (a README, a dotfile) are not keystores. */
export function listKeystores(dir: string): KeystoreFile[] {
  let names: string[]
  try {
    names = readdirSync(dir).sort()
  } catch (error) {
    throw new SettingsError([
      `KEYSTORE_DIR ${dir}: cannot be read (${(error as NodeJS.ErrnoException).code}); create keys with feedrunner keys create`,
    ])
  }
  const keystores: KeystoreFile[] = []
  for (const file of names) {
    if (file.startsWith('.')) continue
    const path = join(dir, file)
    let text: string
    try {
      text = readFileSync(path, 'utf8')
    } catch {
      continue // a folder, or a file we may not read: not a keystore of ours
    }
    if (!isKeystoreJson(text)) continue
    keystores.push({ file, path, address: addressOf(text) })
  }
  return keystores
}

function addressOf(json: string): string | undefined {
  try {
    const address = (JSON.parse(json) as { address?: unknown }).address
    return typeof address === 'string' && /^(0x)?[0-9a-fA-F]{40}$/.test(address)
      ? getAddress(address.startsWith('0x') ? address : `0x${address}`)
      : undefined
  } catch {
    return undefined
  }
}

/** Where a keystore password comes from, for messages (never the password). */
export interface PasswordSource {
  /** `KEYSTORE_PASSWORD_FILE keys/password`, `--password-env NODE_PASSWORD`, ... */
  name: string
  read(): string
}

/** A password file's first line (what geth's and cast's --password files hold). */
export function passwordFromFile(file: string, name = `password file ${file}`): PasswordSource {
  return {
    name,
    read() {
      let text: string
      try {
        text = readFileSync(file, 'utf8')
      } catch (error) {
        throw new SettingsError([
          `${name}: cannot be read (${(error as NodeJS.ErrnoException).code})`,
        ])
      }
      const password = text.split(/\r?\n/)[0] ?? ''
      if (password === '') throw new SettingsError([`${name}: its first line is empty`])
      return password
    },
  }
}

/** A password held by an environment variable. */
export function passwordFromVariable(variable: string, env: NodeJS.ProcessEnv): PasswordSource {
  return {
    name: `the variable ${variable}`,
    read() {
      const password = env[variable]
      if (password === undefined || password === '')
        throw new SettingsError([`${variable}: not set (it should hold the keystore password)`])
      return password
    },
  }
}

/** The keystores' password as the settings give it: KEYSTORE_PASSWORD_FILE, else KEYSTORE_PASSWORD. */
export function settingsPassword(settings: Settings): PasswordSource | undefined {
  if (settings.KEYSTORE_PASSWORD_FILE)
    return passwordFromFile(
      settings.KEYSTORE_PASSWORD_FILE,
      `KEYSTORE_PASSWORD_FILE ${settings.KEYSTORE_PASSWORD_FILE}`,
    )
  const password = settings.KEYSTORE_PASSWORD
  if (password) return { name: 'KEYSTORE_PASSWORD', read: () => password }
  return undefined
}

/** Decrypts one keystore; the message of a wrong password names the file and the source, never a key. */
export function decryptKeystore(path: string, password: PasswordSource): Wallet {
  const json = readFileSync(path, 'utf8')
  try {
    const account = decryptKeystoreJsonSync(json, password.read())
    return new Wallet(account.privateKey)
  } catch (error) {
    if (error instanceof SettingsError) throw error
    throw new SettingsError([
      `keystore ${path}: does not open with the password from ${password.name} (a wrong password, or a damaged file)`,
    ])
  }
}

/**
 * The settings with the sender keys of KEYSTORE_DIR decrypted into NODE_PRIVATE_KEYS (and the first
 * into NODE_PRIVATE_KEY, which signs ##signKey tokens), so every part reads its keys as before. Raw
 * keys and a keystore folder together are refused: which would sign is not obvious.
 */
export function withKeystoreKeys(settings: Settings): Settings {
  const dir = settings.KEYSTORE_DIR
  if (!dir) return settings
  if (settings.NODE_PRIVATE_KEY || settings.NODE_PRIVATE_KEYS?.length)
    throw new SettingsError([
      `KEYSTORE_DIR and ${settings.NODE_PRIVATE_KEYS?.length ? 'NODE_PRIVATE_KEYS' : 'NODE_PRIVATE_KEY'} are both set: keep the keys in ${dir} (feedrunner keys import) and unset the raw one`,
    ])
  const password = settingsPassword(settings)
  if (!password)
    throw new SettingsError([
      `KEYSTORE_DIR ${dir}: set KEYSTORE_PASSWORD_FILE (or KEYSTORE_PASSWORD) to the password of its keystores`,
    ])
  const keystores = listKeystores(dir)
  if (keystores.length === 0)
    throw new SettingsError([
      `KEYSTORE_DIR ${dir}: holds no keystore; create one with feedrunner keys create, or import one with feedrunner keys import`,
    ])
  const keys = keystores.map((keystore) => decryptKeystore(keystore.path, password).privateKey)
  return { ...settings, NODE_PRIVATE_KEYS: keys, NODE_PRIVATE_KEY: keys[0] }
}

/**
 * What says that raw keys sign in this process (a warning outside the dev stack): the variables that
 * hold them, or undefined when none does (keystores, or no key at all).
 */
export function rawKeyVariables(settings: Settings): string[] {
  if (settings.KEYSTORE_DIR) return []
  const variables: string[] = []
  if (settings.NODE_PRIVATE_KEY) variables.push('NODE_PRIVATE_KEY')
  if (settings.NODE_PRIVATE_KEYS?.length) variables.push('NODE_PRIVATE_KEYS')
  return variables
}

/** The keystore file name geth writes: `UTC--<time>--<address without 0x, lowercase>`. */
export function keystoreFileName(address: string, at = new Date()): string {
  const time = at.toISOString().replace(/:/g, '-')
  return `UTC--${time}--${address.slice(2).toLowerCase()}`
}

/**
 * Encrypts `privateKey` into a new keystore in `dir` (created 0700; the file 0600) and answers its
 * path. `scrypt` lowers the cost for tests; the default is ethers' (N = 2^17).
 */
export function writeKeystore(
  dir: string,
  privateKey: string,
  password: string,
  scrypt?: EncryptOptions['scrypt'],
): { path: string; address: string } {
  const wallet = new Wallet(privateKey)
  const json = encryptKeystoreJsonSync(
    { address: wallet.address, privateKey: wallet.privateKey },
    password,
    scrypt ? { scrypt } : {},
  )
  return writeKeystoreJson(dir, wallet.address, json)
}

/** Stores a keystore's JSON as it is (an imported one) under the name geth gives it. */
export function writeKeystoreJson(
  dir: string,
  address: string,
  json: string,
): { path: string; address: string } {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const existing = listKeystores(dir).find((keystore) => keystore.address === getAddress(address))
  if (existing)
    throw new SettingsError([
      `${dir} holds a keystore of ${getAddress(address)} already: ${existing.file}`,
    ])
  const path = join(dir, keystoreFileName(address))
  writeFileSync(path, json, { mode: 0o600, flag: 'wx' })
  return { path, address: getAddress(address) }
}

/** A new random password in `file` (0600), for an operator who has none yet; answers it. */
export function createPasswordFile(file: string): string {
  const password = randomBytes(24).toString('base64url')
  writeFileSync(file, `${password}\n`, { mode: 0o600, flag: 'wx' })
  chmodSync(file, 0o600)
  return password
}
