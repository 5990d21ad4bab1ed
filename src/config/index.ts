export * from './settings.ts'
export * from './logger.ts'
export * from './errors.ts'
export * from './stored-errors.ts'
