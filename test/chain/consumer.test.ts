import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AbiCoder, Contract, Wallet, parseEther } from 'ethers'
import { decode as decodeCbor } from 'cbor-x'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import {
  DEV_CONSUMER_ADDRESS,
  DEV_LINK_TOKEN_ADDRESS,
  DEV_OPERATOR_ADDRESS,
  deployFeedConsumer,
} from '../../src/dev/deploy.ts'
import {
  encodeFulfillOracleRequest2,
  externalJobIdOfSpecId,
  specIdAscii,
  specIdPadded,
  type OracleRequestEvent,
} from '../../src/chain/operator.ts'
import {
  PAYMENT,
  TEST_SPEC_ID,
  ValueType,
  consumerAt,
  makeRequests,
  receiptOf,
  rpc,
  startTestChain,
  type TestChain,
} from './support.ts'

const coder = AbiCoder.defaultAbiCoder()

describe('FeedConsumer with the real LinkToken and Operator', () => {
  let chain: TestChain
  let node: Wallet
  let consumer: Contract

  beforeAll(async () => {
    chain = await startTestChain()
    node = new Wallet(ANVIL_PRIVATE_KEYS[1], chain.dev.provider)
    consumer = consumerAt(chain)
  })
  afterAll(async () => {
    await chain?.stop()
  })

  async function fulfil(request: OracleRequestEvent, type: string, value: unknown) {
    const data = encodeFulfillOracleRequest2(
      request,
      coder.encode(['bytes32', type], [request.requestId, value]),
    )
    const tx = await node.sendTransaction({
      to: chain.dev.addresses.operator,
      data,
      gasLimit: 500_000,
    })
    return receiptOf(chain.dev.provider, tx.hash)
  }

  it('deploys at the fixed dev addresses, funded and with the node authorised', async () => {
    expect(chain.dev.addresses).toMatchObject({
      linkToken: DEV_LINK_TOKEN_ADDRESS,
      operator: DEV_OPERATOR_ADDRESS,
      consumer: DEV_CONSUMER_ADDRESS,
    })
    expect(await chain.dev.linkToken.getFunction('balanceOf')(DEV_CONSUMER_ADDRESS)).toBe(
      parseEther('10000'),
    )
    expect(await chain.dev.operator.getFunction('isAuthorizedSender')(node.address)).toBe(true)
    expect(await consumer.getFunction('chainlinkContracts')()).toEqual([
      DEV_LINK_TOKEN_ADDRESS,
      DEV_OPERATOR_ADDRESS,
    ])
  })

  it('stores and announces an answer of every value type, by request id', async () => {
    const cases: Array<[number, string, unknown, string]> = [
      [ValueType.Uint256, 'uint256', 123_456_789n, 'uint256Value'],
      [ValueType.Int256, 'int256', -42n, 'int256Value'],
      [ValueType.Bool, 'bool', true, 'boolValue'],
      [ValueType.String, 'string', 'Arsenal 2 - 0 Wolves', 'stringValue'],
      [ValueType.Bytes32, 'bytes32', `0x${'ab'.repeat(32)}`, 'bytes32Value'],
      [ValueType.Bytes, 'bytes', '0xdeadbeef01', 'bytesValue'],
    ]
    for (const [valueType, abiType, value, getter] of cases) {
      const [request] = await makeRequests(chain, 1, { valueType })
      expect(request!.callbackFunctionId).toBe(
        await consumer.getFunction('callbackSelector')(valueType),
      )
      expect(await consumer.getFunction('isFulfilled')(request!.requestId)).toBe(false)
      const receipt = await fulfil(request!, abiType, value)
      expect(receipt.status).toBe('0x1')
      expect(await consumer.getFunction('isFulfilled')(request!.requestId)).toBe(true)
      expect(await consumer.getFunction(getter)(request!.requestId)).toEqual(value)
      const event = receipt.logs
        .filter((log) => log.address.toLowerCase() === chain.dev.addresses.consumer.toLowerCase())
        .map((log) => consumer.interface.parseLog(log))
        .find((parsed) => parsed?.name === 'RequestFulfilled')
      expect(event?.args.requestId).toBe(request!.requestId)
      expect(Number(event?.args.valueType)).toBe(valueType)
      expect(coder.decode([abiType], event?.args.value as string)[0]).toEqual(value)
    }
  })

  it('records each request and passes every parameter, with path and times, to the Operator', async () => {
    const signer = consumer.connect(chain.dev.deployer) as Contract
    const tx = await signer.getFunction('requestDataWithPath')(
      TEST_SPEC_ID,
      PAYMENT,
      ValueType.Uint256,
      ['endpoint', 'city'],
      ['weather', 'London'],
      'temp',
      '10',
    )
    const receipt = await receiptOf(chain.dev.provider, tx.hash)
    const requestId = (await signer.getFunction('requestIds')(
      (await signer.getFunction('requestCount')()) - 1n,
    )) as string
    const record = await signer.getFunction('requests')(requestId)
    expect(record.requester).toBe(chain.dev.deployer.address)
    expect(record.specId).toBe(TEST_SPEC_ID)
    expect(Number(record.valueType)).toBe(ValueType.Uint256)
    expect(Number(record.blockNumber)).toBe(Number(receipt.blockNumber))
    expect(record.payment).toBe(PAYMENT)
    const oracleRequest = receipt.logs
      .map((log) => chain.dev.operator.interface.parseLog(log))
      .find((parsed) => parsed?.name === 'OracleRequest')
    const data = oracleRequest?.args.data as string
    const params = decodeCbor(
      Buffer.concat([Buffer.from([0xbf]), Buffer.from(data.slice(2), 'hex'), Buffer.from([0xff])]),
    )
    expect(params).toEqual({ endpoint: 'weather', city: 'London', path: 'temp', times: '10' })
    await expect(
      signer.getFunction('requestData').staticCall(TEST_SPEC_ID, PAYMENT, 0, ['a'], []),
    ).rejects.toThrow(/keys and values differ/)
  })

  it('refuses a second fulfilment and a callback from anyone but the Operator', async () => {
    const [request] = await makeRequests(chain, 1)
    expect((await fulfil(request!, 'uint256', 1n)).status).toBe('0x1')
    const data = encodeFulfillOracleRequest2(
      request!,
      coder.encode(['bytes32', 'uint256'], [request!.requestId, 2n]),
    )
    await expect(
      node.call({ to: chain.dev.addresses.operator, data, gasLimit: 500_000 }),
    ).rejects.toThrow(/Must have a valid requestId/)
    await expect(
      (consumer.connect(node) as Contract)
        .getFunction('fulfillUint256')
        .staticCall(request!.requestId, 3n),
    ).rejects.toThrow(/Source must be the oracle of the request/)
    expect(await consumer.getFunction('uint256Value')(request!.requestId)).toBe(1n)
  })

  it('cancels an expired request (CancelOracleRequest) and gets the payment back', async () => {
    const [request] = await makeRequests(chain, 1)
    const signer = consumer.connect(chain.dev.deployer) as Contract
    await expect(
      signer.getFunction('cancelRequest').staticCall(request!.requestId, request!.cancelExpiration),
    ).rejects.toThrow(/Request is not expired/)
    await expect(
      (consumer.connect(node) as Contract)
        .getFunction('cancelRequest')
        .staticCall(request!.requestId, request!.cancelExpiration),
    ).rejects.toThrow(/only the requester/)
    await rpc(chain.dev.provider, 'evm_increaseTime', [301])
    const before = (await chain.dev.linkToken.getFunction('balanceOf')(
      chain.dev.addresses.consumer,
    )) as bigint
    const receipt = await receiptOf(
      chain.dev.provider,
      (await signer.getFunction('cancelRequest')(request!.requestId, request!.cancelExpiration))
        .hash,
    )
    expect(receipt.status).toBe('0x1')
    const names = receipt.logs.map(
      (log) =>
        chain.dev.operator.interface.parseLog(log)?.name ?? consumer.interface.parseLog(log)?.name,
    )
    expect(names).toContain('CancelOracleRequest')
    expect(await chain.dev.linkToken.getFunction('balanceOf')(chain.dev.addresses.consumer)).toBe(
      before + PAYMENT,
    )
    expect((await signer.getFunction('requests')(request!.requestId)).cancelled).toBe(true)
    const data = encodeFulfillOracleRequest2(
      request!,
      coder.encode(['bytes32', 'uint256'], [request!.requestId, 2n]),
    )
    await expect(
      node.call({ to: chain.dev.addresses.operator, data, gasLimit: 500_000 }),
    ).rejects.toThrow(/Must have a valid requestId/)
  })

  it('a second FeedConsumer deployment is a different requester to the Operator', async () => {
    const other = await deployFeedConsumer(chain.dev)
    const otherAddress = await other.getAddress()
    const [request] = await makeRequests(chain, 1, { consumer: otherAddress })
    expect(request!.requester).toBe(otherAddress)
    expect(request!.callbackAddr).toBe(otherAddress)
    expect(otherAddress).not.toBe(chain.dev.addresses.consumer)
  })

  it('maps spec ids back to the externalJobID', () => {
    const jobId = '0eec7e1d-d0d2-476c-a1a8-72dfb6633f47'
    expect(externalJobIdOfSpecId(specIdAscii(jobId))).toBe(jobId)
    expect(externalJobIdOfSpecId(specIdPadded(jobId))).toBe(jobId)
    expect(externalJobIdOfSpecId(`0x${'11'.repeat(32)}`)).toBeUndefined()
  })
})
