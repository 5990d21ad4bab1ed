import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { getAddress, isAddress } from 'ethers'
import { decryptKeystore, listKeystores, type KeystoreFile } from '../config/keystore.ts'
import { SettingsError, type Settings } from '../config/settings.ts'
import {
  keysCommand,
  keystoreDir,
  needPassword,
  passwordSource,
  report,
  sayBeforeWriting,
} from './keys-actions.ts'
import type { KeystoreOptions } from './keys-actions.ts'

/**
 * `keys export` and `keys delete`: a key's keystore out of the folder as a backup (checked to open
 * with its password first, so the backup is one that works), and a key taken out of the folder once
 * it is no longer an authorised sender.
 */

/** The keystore of `address` in the folder; one that does not name its address is opened to learn it. */
function keystoreOf(settings: Settings, options: KeystoreOptions, address: string): KeystoreFile {
  if (!isAddress(address))
    throw new SettingsError([`${address}: expected an address (0x and 40 hex digits)`])
  const dir = keystoreDir(settings, options)
  const wanted = getAddress(address)
  const source = passwordSource(settings, options)
  const found = listKeystores(dir).find(
    (keystore) =>
      (keystore.address ??
        (source ? decryptKeystore(keystore.path, source).address : undefined)) === wanted,
  )
  if (!found)
    throw new SettingsError([
      `${dir} holds no keystore of ${wanted} (feedrunner keys list --dir ${dir} shows those it holds)`,
    ])
  return { ...found, address: wanted }
}

export async function exportKeyAction(
  address: string,
  options: KeystoreOptions & { out?: string },
): Promise<void> {
  await keysCommand((settings) => {
    const keystore = keystoreOf(settings, options, address)
    const password = needPassword(passwordSource(settings, options))
    // A backup that does not open is no backup: the password must open it now.
    decryptKeystore(keystore.path, password)
    const json = readFileSync(keystore.path, 'utf8')
    if (options.out === undefined) {
      // The keystore alone on stdout (it is JSON): `> file` or a secrets manager takes it.
      process.stdout.write(json.endsWith('\n') ? json : `${json}\n`)
      return
    }
    sayBeforeWriting([{ path: options.out }])
    writeFileSync(options.out, json, { mode: 0o600, flag: 'wx' })
    report(
      options,
      { address: keystore.address, file: options.out },
      `exported ${keystore.address} to ${options.out} (mode 0600; it opens with the password from ${password.name}: keep both, apart)`,
    )
  })
}

export async function deleteKeyAction(
  address: string,
  options: KeystoreOptions & { yes?: boolean },
): Promise<void> {
  await keysCommand(async (settings) => {
    const keystore = keystoreOf(settings, options, address)
    if (!options.yes) {
      console.error(
        `delete ${keystore.path}, the keystore of ${keystore.address}? A runner started after this no longer signs with it. ` +
          `First remove it from the Operator's authorised senders (feedrunner operator authorize --replace --sender <each key that stays>), ` +
          `and keep a backup if it may be needed again (feedrunner keys export ${keystore.address} --out <file>).`,
      )
      process.stderr.write('type yes to delete it: ')
      const answer = await firstLine()
      if (answer === undefined)
        throw new SettingsError([
          'not deleted: no answer (stdin is closed); give --yes to delete without asking',
        ])
      if (!/^y(es)?$/i.test(answer.trim())) throw new SettingsError(['not deleted'])
    }
    rmSync(keystore.path)
    report(
      options,
      { address: keystore.address, file: keystore.path, deleted: true },
      `deleted ${keystore.path} (${keystore.address})`,
    )
  })
}

/** The first line on stdin, or undefined when it ends first. */
function firstLine(): Promise<string | undefined> {
  return new Promise((resolveLine) => {
    const lines = createInterface({ input: process.stdin })
    let answered = false
    lines.once('line', (line) => {
      answered = true
      lines.close()
      resolveLine(line)
    })
    lines.once('close', () => {
      if (!answered) resolveLine(undefined)
    })
  })
}
