/** What a route handler produces; the server wraps it in the envelope. */
export interface Answer {
  /** Human-readable text saying what was fetched. */
  description: string
  data: Record<string, unknown>
  /** Epoch ms; only the sports odds and boxscores carry it. */
  lastUpdated?: number
}
