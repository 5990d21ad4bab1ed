export { metricsRegistry, metricsText, METRICS_CONTENT_TYPE } from './registry.ts'
export * from './definitions.ts'
export * from './reasons.ts'
export * from './instrument.ts'
