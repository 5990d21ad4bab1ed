export * from './settings.ts'
export * from './logger.ts'
