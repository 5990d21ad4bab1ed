export declare const SEMI_SPACE_MB: number
export declare const SEMI_SPACE_FLAG: string
/** The argv to replace this process with, or undefined when it runs with the size already. */
export declare function argvWithYoungGeneration(proc?: NodeJS.Process): string[] | undefined
