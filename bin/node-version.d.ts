export declare const OLDEST_SUPPORTED_MAJOR: number
/** Why this Node.js cannot run feedrunner, with the remedy; undefined when it can. */
export declare function unsupportedNode(version?: string, execPath?: string): string | undefined
