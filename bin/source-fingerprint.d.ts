/** Hash of every file under srcDir (path, size, modification time). */
export declare function sourceFingerprint(srcDir: string): string

/** The fingerprint of the sources a build was made from (its BUILD.json), or undefined without one. */
export declare function builtFingerprint(distDir: string): string | undefined
