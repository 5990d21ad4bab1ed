// The isolate's thread (dist/pipeline/isolation/isolate-thread.js) made one file with the parts of
// ethers it uses, by `bin/build.js` after tsc. Loaded module by module, ethers' indexes bring in
// what no pure task calls (its fetch with node's http, https and zlib, the secp256k1 curve): about
// 8 MB of every isolate's memory, and a runner keeps two or three. Other packages stay imports, as
// node loads them (some find files next to themselves: hash-wasm's Keccak), and so do node's own
// modules.
export const ISOLATE_ENTRY = 'pipeline/isolation/isolate-thread.js'

/** Bundles `${dist}/${ISOLATE_ENTRY}` in place, with the parts of ethers it imports. */
export async function bundleIsolate(dist) {
  // A dev dependency, as typescript is: the build runs only where both are installed.
  const { build } = await import('esbuild')
  const entry = `${dist}/${ISOLATE_ENTRY}`
  await build({
    entryPoints: [entry],
    outfile: entry,
    allowOverwrite: true,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    logLevel: 'warning',
    plugins: [
      {
        name: 'ethers-only',
        setup(bundler) {
          // A bare specifier: a package or a node module. Only ethers is bundled.
          bundler.onResolve({ filter: /^[^./]/ }, ({ path }) =>
            path === 'ethers' || path.startsWith('ethers/') ? undefined : { path, external: true },
          )
        },
      },
    ],
  })
}
