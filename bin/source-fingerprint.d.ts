/** Hash of every file under srcDir (path, size, modification time). */
export declare function sourceFingerprint(srcDir: string): string
