import type { Command } from 'commander'
import type { KeystoreOptions } from './keys-actions.ts'

// ethers loads only when one of these commands runs.
const actions = (): Promise<typeof import('./keys-actions.ts')> => import('./keys-actions.ts')

function keystoreOptions(command: Command): Command {
  return command
    .option('--dir <dir>', 'the keystore folder (default: KEYSTORE_DIR, else keys)')
    .option(
      '--password-file <file>',
      'file whose first line is the password (default: KEYSTORE_PASSWORD_FILE, else KEYSTORE_PASSWORD)',
    )
    .option('--password-env <variable>', 'environment variable that holds the password')
}

/** `feedrunner keys create|import|list|export|delete`: sender keys in Web3 Secret Storage keystores. */
export function register(program: Command): void {
  const keys = program
    .command('keys')
    .description(
      'Sender keys kept encrypted: Web3 Secret Storage keystores (as geth and cast wallet write them) in KEYSTORE_DIR',
    )
  keystoreOptions(
    keys
      .command('create')
      .description(
        'A new random key, encrypted into a keystore; prints its address (a --password-file that does not exist yet is created with a random password)',
      ),
  )
    .option('--json', 'print JSON')
    .action(async (options: KeystoreOptions) => (await actions()).createKeyAction(options))
  keystoreOptions(
    keys
      .command('import')
      .description(
        'A keystore file (geth, cast wallet) checked with its password and copied into the folder, or a raw key from a variable encrypted into one',
      )
      .argument('[keystore]', 'a keystore file to import'),
  )
    .option(
      '--private-key-env <variable>',
      'import the raw key this variable holds (never on the command line, where ps shows it)',
    )
    .option('--json', 'print JSON')
    .action(
      async (file: string | undefined, options: KeystoreOptions & { privateKeyEnv?: string }) =>
        (await actions()).importKeyAction(file, options),
    )
  keystoreOptions(
    keys
      .command('list')
      .description(
        "The folder's keystores and their addresses (a keystore that does not name its address is opened with the password)",
      ),
  )
    .option('--json', 'print JSON')
    .action(async (options: KeystoreOptions) => (await actions()).listKeysAction(options))
  keystoreOptions(
    keys
      .command('export')
      .description(
        "A key's keystore, checked to open with the password, as a backup: the keystore JSON alone on stdout, or written to --out (0600)",
      )
      .argument('<address>', 'the address of the key'),
  )
    .option('--out <file>', 'write it to this file (never over one that exists)')
    .option('--json', 'with --out: print JSON')
    .action(async (address: string, options: KeystoreOptions & { out?: string }) =>
      (await import('./keys-backup.ts')).exportKeyAction(address, options),
    )
  keystoreOptions(
    keys
      .command('delete')
      .description(
        "Deletes a key's keystore from the folder after asking (type yes); take it out of the Operator's authorised senders first",
      )
      .argument('<address>', 'the address of the key'),
  )
    .option('--yes', 'delete without asking')
    .option('--json', 'print JSON')
    .action(async (address: string, options: KeystoreOptions & { yes?: boolean }) =>
      (await import('./keys-backup.ts')).deleteKeyAction(address, options),
    )
}
