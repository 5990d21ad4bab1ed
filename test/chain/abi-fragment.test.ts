import { EventFragment, FunctionFragment, id, Interface } from 'ethers'
import { describe, expect, it } from 'vitest'
import { withFixedHash } from '../../src/chain/abi-fragment.ts'

describe('withFixedHash', () => {
  it("fixes an event's topic hash as an own value, equal to keccak256 of its signature, and decodes as before", () => {
    const event = withFixedHash(
      EventFragment.from('event OracleResponse(bytes32 indexed requestId)'),
    )
    expect(Object.getOwnPropertyDescriptor(event, 'topicHash')?.value).toBe(
      id('OracleResponse(bytes32)'),
    )
    const requestId = `0x${'ab'.repeat(32)}`
    expect(
      new Interface([event]).decodeEventLog(event, '0x', [event.topicHash, requestId]).requestId,
    ).toBe(requestId)
  })

  it("fixes a function's selector as an own value, equal to the first 4 bytes of keccak256 of its signature, and encodes as before", () => {
    const signature = 'function transfer(address to, uint256 amount)'
    const fixed = withFixedHash(FunctionFragment.from(signature))
    expect(Object.getOwnPropertyDescriptor(fixed, 'selector')?.value).toBe(
      id('transfer(address,uint256)').slice(0, 10),
    )
    const args = ['0x000000000000000000000000000000000000dEaD', 5n]
    expect(new Interface([fixed]).encodeFunctionData(fixed, args)).toBe(
      new Interface([signature]).encodeFunctionData('transfer', args),
    )
  })
})
