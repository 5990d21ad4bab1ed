/**
 * A key a hostile service gives back, and what is left of it in a text: the forms it travels in and
 * comes back in, and the longest run a text shares with any of them (issue 38's echoing feed service).
 */

/** Every form of a secret the tests look for, lower-cased. */
export function formsOf(secret: string): string[] {
  const bytes = Buffer.from(secret)
  return [
    secret,
    encodeURIComponent(secret),
    bytes.toString('hex'),
    bytes.toString('base64'),
    bytes.subarray(1).toString('base64'),
    bytes.subarray(2).toString('base64'),
  ].map((form) => form.toLowerCase())
}

/** The longest run `text` shares with any form of `secret`, case-folded. */
export function longestShared(text: string, secret: string): number {
  const haystack = text.toLowerCase()
  let longest = 0
  for (const form of formsOf(secret)) {
    for (let start = 0; start < form.length; start++) {
      let length = longest + 1
      while (start + length <= form.length && haystack.includes(form.slice(start, start + length)))
        length++
      longest = Math.max(longest, length - 1)
    }
  }
  return longest
}

/** The ways a hostile feed service gives a key back. */
export function echoes(key: string): Record<string, string> {
  const half = key.slice(0, Math.ceil(key.length / 2))
  const otherHalf = key.slice(Math.floor(key.length / 2))
  return {
    raw: key,
    upper: key.toUpperCase(),
    lower: key.toLowerCase(),
    percent: encodeURIComponent(key),
    percentLower: encodeURIComponent(key).toLowerCase(),
    form: new URLSearchParams({ k: key }).toString().slice(2),
    base64: Buffer.from(key).toString('base64'),
    base64Url: Buffer.from(key).toString('base64url'),
    base64Inside: Buffer.from(`key=${key};`).toString('base64'),
    hex: Buffer.from(key).toString('hex'),
    half,
    otherHalf,
    halfUpper: otherHalf.toUpperCase(),
    halfBase64: Buffer.from(half).toString('base64'),
    halfPercent: encodeURIComponent(otherHalf),
  }
}
