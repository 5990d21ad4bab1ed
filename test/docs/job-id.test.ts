import { encodeBytes32String, hexlify, toUtf8Bytes } from 'ethers'
import { describe, expect, it } from 'vitest'
import { specIdAscii } from '../../src/chain/operator.ts'

// docs/job-specs.md, "From externalJobID to a consumer's jobId": the ethers lines shown there.
describe('externalJobID -> bytes32 jobId, as docs/job-specs.md shows it', () => {
  const externalJobId = 'ca98366c-c731-4957-b8c0-12c72f05aeea'

  it('hyphens removed, the 32 ASCII characters as bytes: the spec id the runner listens for', () => {
    const jobId = hexlify(toUtf8Bytes(externalJobId.replaceAll('-', '')))
    expect(jobId).toBe('0x6361393833363663633733313439353762386330313263373266303561656561')
    expect(jobId).toBe(specIdAscii(externalJobId))
  })

  it('encodeBytes32String of the 32-character id fails (it keeps a byte for a terminating zero)', () => {
    expect(() => encodeBytes32String(externalJobId.replaceAll('-', ''))).toThrow(
      'bytes32 string must be less than 32 bytes',
    )
  })
})
