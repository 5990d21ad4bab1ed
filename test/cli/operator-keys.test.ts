import { createCipheriv, randomBytes, randomUUID, scryptSync } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  Contract,
  decryptKeystoreJsonSync,
  getAddress,
  getBytes,
  JsonRpcProvider,
  keccak256,
  parseEther,
  Wallet,
} from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from '../../src/dev/anvil.ts'
import { runFeedrunner } from '../e2e/support/cli.ts'

// Issue 39, points 1, 2 and 7: `feedrunner keys` and `feedrunner operator` against an anvil of their
// own (another chain id than the dev chain's), as a new operator runs them; every outcome is read
// from the chain.

const OPERATOR_ABI = [
  'function owner() view returns (address)',
  'function getAuthorizedSenders() view returns (address[])',
  'function withdrawable() view returns (uint256)',
]
const LINK_ABI = [
  'function balanceOf(address) view returns (uint256)',
  'function grantMintRole(address)',
  'function mint(address, uint256)',
]

/**
 * A keystore as geth writes it, made here with Node's own scrypt and AES (not ethers, which reads it):
 * lowercase `crypto`, the address without 0x, and a low scrypt cost to keep the test fast.
 */
function gethKeystore(privateKey: string, password: string, withAddress: boolean): string {
  const salt = randomBytes(32)
  const iv = randomBytes(16)
  const n = 1 << 12
  const derived = scryptSync(Buffer.from(password), salt, 32, { N: n, r: 8, p: 1 })
  const cipher = createCipheriv('aes-128-ctr', derived.subarray(0, 16), iv)
  const ciphertext = Buffer.concat([cipher.update(getBytes(privateKey)), cipher.final()])
  const mac = keccak256(Buffer.concat([derived.subarray(16, 32), ciphertext])).slice(2)
  return JSON.stringify({
    ...(withAddress ? { address: new Wallet(privateKey).address.slice(2).toLowerCase() } : {}),
    crypto: {
      cipher: 'aes-128-ctr',
      ciphertext: ciphertext.toString('hex'),
      cipherparams: { iv: iv.toString('hex') },
      kdf: 'scrypt',
      kdfparams: { dklen: 32, n, p: 1, r: 8, salt: salt.toString('hex') },
      mac,
    },
    id: randomUUID(),
    version: 3,
  })
}

describe('feedrunner keys and feedrunner operator on a chain of their own', () => {
  let anvil: Anvil
  let provider: JsonRpcProvider
  const dir = mkdtempSync(join(tmpdir(), 'feedrunner-operator-keys-'))
  const keysDir = join(dir, 'keys')
  const passwordFile = join(dir, 'password')
  let env: Record<string, string>
  const owner = new Wallet(ANVIL_PRIVATE_KEYS[0])
  let operator: string
  let consumerDeployment: { operator: string; link: string; owner: string; consumer: string }
  const created: string[] = []

  beforeAll(async () => {
    anvil = await startAnvil({ chainId: 4242 })
    provider = new JsonRpcProvider(anvil.rpcUrl, 4242, { staticNetwork: true, cacheTimeout: -1 })
    env = {
      RPC_URL: anvil.rpcUrl,
      // No dev stack of this checkout takes part.
      DEV_STATE_FILE: join(dir, 'dev.json'),
      OWNER_KEY: ANVIL_PRIVATE_KEYS[0],
      NOT_OWNER_KEY: ANVIL_PRIVATE_KEYS[2],
    }
  }, 60_000)

  afterAll(async () => {
    provider?.destroy()
    await anvil?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('keys create: a keystore that opens with the password it wrote, JSON alone on stdout', async () => {
    const result = await runFeedrunner(
      ['keys', 'create', '--dir', keysDir, '--password-file', passwordFile, '--json'],
      env,
    )
    expect(result.code, result.stderr).toBe(0)
    const { address, file } = JSON.parse(result.stdout) as { address: string; file: string }
    expect(result.stderr).toContain(`wrote a new random password to ${passwordFile}`)
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(statSync(passwordFile).mode & 0o777).toBe(0o600)
    const password = readFileSync(passwordFile, 'utf8').trim()
    const account = decryptKeystoreJsonSync(readFileSync(file, 'utf8'), password)
    expect(account.address).toBe(address)
    // The key itself is nowhere in what the command printed.
    expect(result.stdout + result.stderr).not.toContain(account.privateKey.slice(2))
    created.push(address)
  }, 60_000)

  it('keys import: a keystore as geth writes it, and a raw key from a variable; keys list shows both', async () => {
    const password = readFileSync(passwordFile, 'utf8').trim()
    const gethFile = join(dir, 'from-geth.json')
    writeFileSync(gethFile, gethKeystore(ANVIL_PRIVATE_KEYS[4], password, false))
    const imported = await runFeedrunner(
      ['keys', 'import', gethFile, '--dir', keysDir, '--password-file', passwordFile, '--json'],
      env,
    )
    expect(imported.code, imported.stderr).toBe(0)
    expect(JSON.parse(imported.stdout).address).toBe(new Wallet(ANVIL_PRIVATE_KEYS[4]).address)

    const raw = await runFeedrunner(
      ['keys', 'import', '--private-key-env', 'RAW_KEY', '--dir', keysDir, '--json'],
      { ...env, RAW_KEY: ANVIL_PRIVATE_KEYS[5], KEYSTORE_PASSWORD: password },
    )
    expect(raw.code, raw.stderr).toBe(0)
    expect(JSON.parse(raw.stdout).address).toBe(new Wallet(ANVIL_PRIVATE_KEYS[5]).address)

    const listed = await runFeedrunner(
      ['keys', 'list', '--dir', keysDir, '--password-file', passwordFile, '--json'],
      env,
    )
    expect(listed.code, listed.stderr).toBe(0)
    const addresses = (JSON.parse(listed.stdout) as { keys: Array<{ address: string }> }).keys.map(
      (key) => key.address,
    )
    expect(addresses.sort()).toEqual(
      [
        created[0]!,
        new Wallet(ANVIL_PRIVATE_KEYS[4]).address,
        new Wallet(ANVIL_PRIVATE_KEYS[5]).address,
      ].sort(),
    )
    const readable = await runFeedrunner(
      ['keys', 'list', '--dir', keysDir, '--password-file', passwordFile],
      env,
    )
    expect(readable.stdout).toMatch(/^#\s+address\s+file/m)
    expect(readable.stdout).toContain(`3 keys in ${keysDir}`)
  }, 60_000)

  it('a wrong password or a bad raw key is one line naming where, never the key', async () => {
    const wrong = await runFeedrunner(
      ['keys', 'list', '--dir', keysDir, '--password-env', 'WRONG'],
      { ...env, WRONG: 'not-the-password' },
    )
    expect(wrong.code).toBe(1)
    expect(wrong.stderr.trim()).toMatch(
      /^keystore \S+: does not open with the password from the variable WRONG \(a wrong password, or a damaged file\)$/,
    )
    const bad = await runFeedrunner(
      [
        'keys',
        'import',
        '--private-key-env',
        'RAW_KEY',
        '--dir',
        keysDir,
        '--password-file',
        passwordFile,
      ],
      { ...env, RAW_KEY: '0x1234-secret-looking' },
    )
    expect(bad.code).toBe(1)
    expect(bad.stderr.trim()).toBe('RAW_KEY: is not a 0x-prefixed 32-byte private key')
  }, 60_000)

  it('operator deploy: LinkToken and Operator on a dev chain, owned by the key, printed as {operator, link, owner}', async () => {
    const result = await runFeedrunner(
      ['operator', 'deploy', '--owner-key-env', 'OWNER_KEY', '--json'],
      env,
    )
    expect(result.code, result.stderr).toBe(0)
    const deployed = JSON.parse(result.stdout) as Record<string, string>
    expect(Object.keys(deployed).sort()).toEqual(['link', 'operator', 'owner'])
    expect(deployed.owner).toBe(owner.address)
    for (const address of [deployed.operator!, deployed.link!])
      expect(await provider.getCode(address)).not.toBe('0x')
    const contract = new Contract(deployed.operator!, OPERATOR_ABI, provider)
    expect(await contract.getFunction('owner')()).toBe(owner.address)
    operator = deployed.operator!

    const withConsumer = await runFeedrunner(
      [
        'operator',
        'deploy',
        '--owner-key-env',
        'OWNER_KEY',
        '--link',
        deployed.link!,
        '--consumer',
        '--json',
      ],
      env,
    )
    expect(withConsumer.code, withConsumer.stderr).toBe(0)
    consumerDeployment = JSON.parse(withConsumer.stdout)
    expect(consumerDeployment.link).toBe(deployed.link)
    // The owner holds no LINK of a token it did not deploy here: the consumer is left unfunded, said so.
    expect(withConsumer.stderr).toContain(
      `send LINK to the consumer ${consumerDeployment.consumer}`,
    )
  }, 120_000)

  it('operator authorize: the keystores of KEYSTORE_DIR become authorised senders, funded for gas', async () => {
    const result = await runFeedrunner(
      [
        'operator',
        'authorize',
        '--operator',
        operator,
        '--owner-key-env',
        'OWNER_KEY',
        '--fund-eth',
        '0.5',
      ],
      { ...env, KEYSTORE_DIR: keysDir, KEYSTORE_PASSWORD_FILE: passwordFile },
    )
    expect(result.code, result.stderr).toBe(0)
    const senders = (await new Contract(operator, OPERATOR_ABI, provider).getFunction(
      'getAuthorizedSenders',
    )()) as string[]
    expect([...senders].sort()).toEqual(
      [
        created[0]!,
        new Wallet(ANVIL_PRIVATE_KEYS[4]).address,
        new Wallet(ANVIL_PRIVATE_KEYS[5]).address,
      ].sort(),
    )
    // The new key had nothing: now it has what distributeFunds sent it.
    expect(await provider.getBalance(created[0]!)).toBe(parseEther('0.5'))

    const stranger = await runFeedrunner(
      [
        'operator',
        'authorize',
        '--operator',
        operator,
        '--owner-key-env',
        'NOT_OWNER_KEY',
        '--sender',
        owner.address,
      ],
      env,
    )
    expect(stranger.code).toBe(1)
    expect(stranger.stderr.trim().split('\n')).toHaveLength(1)
    expect(stranger.stderr).toContain(`is not the owner of the Operator ${operator}`)
  }, 120_000)

  it('operator show: the chain state as JSON with everything the readable table shows', async () => {
    const shown = await runFeedrunner(['operator', 'show', '--operator', operator, '--json'], env)
    expect(shown.code, shown.stderr).toBe(0)
    const state = JSON.parse(shown.stdout) as Record<string, unknown>
    expect(Object.keys(state).sort()).toEqual([
      'authorizedSenders',
      'chainId',
      'linkBalance',
      'linkToken',
      'operator',
      'owner',
      'rpc',
      'withdrawable',
    ])
    const contract = new Contract(operator, OPERATOR_ABI, provider)
    expect(state).toMatchObject({
      operator: getAddress(operator),
      chainId: 4242,
      rpc: new URL(anvil.rpcUrl).host,
      linkToken: getAddress(
        (await new Contract(
          operator,
          ['function getChainlinkToken() view returns (address)'],
          provider,
        ).getFunction('getChainlinkToken')()) as string,
      ),
    })
    expect(state.owner).toBe(owner.address)
    expect(state.authorizedSenders).toEqual([
      ...((await contract.getFunction('getAuthorizedSenders')()) as string[]),
    ])
    expect(state.withdrawable).toBe(String(await contract.getFunction('withdrawable')()))
    const readable = await runFeedrunner(['operator', 'show', '--operator', operator], env)
    // Every value of the table is in the JSON.
    for (const value of [state.operator, state.chainId, state.rpc, state.linkToken, state.owner])
      expect(readable.stdout).toContain(String(value))
    expect(readable.stdout).toMatch(/^authorised senders\s+0x/m)
    expect(readable.stdout).toMatch(/^withdrawable\s+0\.0 LINK \(0 juels\)$/m)
  }, 60_000)

  it('operator withdraw: the LINK earned goes to the recipient, never more than is withdrawable', async () => {
    // LINK in the Operator as payments leave it (minted here: the first deploy made the token).
    const link = new Contract(consumerDeployment.link, LINK_ABI, owner.connect(provider))
    await (await link.getFunction('grantMintRole')(owner.address)).wait()
    await (await link.getFunction('mint')(operator, parseEther('2'))).wait()
    const recipient = new Wallet(ANVIL_PRIVATE_KEYS[3]).address

    const withdraw = (...args: string[]) =>
      runFeedrunner(
        ['operator', 'withdraw', '--operator', operator, '--owner-key-env', 'OWNER_KEY', ...args],
        env,
      )

    const tooMuch = await withdraw('--amount', '5')
    expect(tooMuch.code).toBe(1)
    expect(tooMuch.stderr).toContain('withdrawable')

    const part = await withdraw('--to', recipient, '--amount', '0.5', '--json')
    expect(part.code, part.stderr).toBe(0)
    expect(JSON.parse(part.stdout)).toMatchObject({ recipient, amount: String(parseEther('0.5')) })
    expect(await link.getFunction('balanceOf')(recipient)).toBe(parseEther('0.5'))

    const rest = await withdraw('--json')
    expect(rest.code, rest.stderr).toBe(0)
    // Nothing is escrowed for an open request here: all of it was withdrawable.
    expect(await link.getFunction('balanceOf')(owner.address)).toBe(parseEther('1.5'))
    const nothing = await withdraw('--json')
    expect(JSON.parse(nothing.stdout)).toMatchObject({ amount: '0', tx: null })
  }, 120_000)
})
