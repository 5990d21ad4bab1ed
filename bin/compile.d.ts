export function findTsc(): string | undefined
export function compileSources(
  root: string,
  outDir: string,
  tsc: string,
): Promise<{ ok: true } | { ok: false; why: string }>
