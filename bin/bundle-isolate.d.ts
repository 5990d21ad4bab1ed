export const ISOLATE_ENTRY: string
export function bundleIsolate(dist: string): Promise<void>
