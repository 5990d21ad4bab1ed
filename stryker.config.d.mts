import type { PartialStrykerOptions } from '@stryker-mutator/api/core'

export declare const mutationFolders: Record<string, string[]>
declare const config: PartialStrykerOptions
export default config
