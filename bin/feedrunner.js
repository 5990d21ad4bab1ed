#!/usr/bin/env node
// Runs the TypeScript sources directly so the CLI works right after `npm install`, with no build step.
import { register } from 'tsx/esm/api'

register()
await import('../src/cli/main.ts')
