import type { Ignorer } from '@stryker-mutator/api/ignore'
import type { Plugin, PluginKind } from '@stryker-mutator/api/plugin'

/** The ignorer of every node that holds no listed static mutant (FEEDRUNNER_STATIC_MUTANTS). */
export declare const listedOnly: Ignorer
/** `list-only`, a checker that runs no mutant, and `listed-only`, the ignorer above. */
export declare const strykerPlugins: Plugin<PluginKind.Checker | PluginKind.Ignore>[]
