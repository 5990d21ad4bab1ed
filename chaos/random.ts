/**
 * Seeded randomness for the fault search: everything a schedule holds is drawn from its seed, so
 * `npm run chaos -- --seed N` draws the same schedule again. Each concern draws from its own stream
 * (`fork`), so adding a draw to one (say, the requests) does not move another's (the faults).
 */
export class Random {
  private a: number
  private b: number
  private c: number
  private d: number

  constructor(private readonly seed: number) {
    // sfc32, its four words of state spread from the seed by splitmix32.
    let s = seed >>> 0
    const next = () => {
      s = (s + 0x9e3779b9) >>> 0
      let z = s
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0
      return (z ^ (z >>> 16)) >>> 0
    }
    this.a = next()
    this.b = next()
    this.c = next()
    this.d = next()
    for (let warm = 0; warm < 12; warm++) this.uint32()
  }

  /** A uniform 32-bit unsigned integer. */
  uint32(): number {
    const t = (((this.a + this.b) >>> 0) + this.d) >>> 0
    this.d = (this.d + 1) >>> 0
    this.a = this.b ^ (this.b >>> 9)
    this.b = (this.c + (this.c << 3)) >>> 0
    this.c = ((this.c << 21) | (this.c >>> 11)) >>> 0
    this.c = (this.c + t) >>> 0
    return t
  }

  /** A uniform number in [0, 1). */
  next(): number {
    return this.uint32() / 4294967296
  }

  /** A uniform integer in [min, max], both included. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1))
  }

  chance(probability: number): boolean {
    return this.next() < probability
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list')
    return items[this.int(0, items.length - 1)] as T
  }

  /** Picks by weight: `[['a', 3], ['b', 1]]` gives 'a' three times as often. */
  weighted<T>(choices: ReadonlyArray<readonly [T, number]>): T {
    const total = choices.reduce((sum, [, weight]) => sum + weight, 0)
    let at = this.next() * total
    for (const [choice, weight] of choices) {
      at -= weight
      if (at < 0) return choice
    }
    return choices[choices.length - 1]![0]
  }

  /** An independent stream for one concern: depends on the seed and the label, not on draws made. */
  fork(label: string): Random {
    let hash = (this.seed ^ 0x811c9dc5) >>> 0
    for (const char of label) hash = Math.imul(hash ^ char.charCodeAt(0), 0x01000193) >>> 0
    return new Random(hash)
  }
}
