// docker-compose.yml is what `docker compose` accepts: the compose CLI validates it (schema, anchors,
// profiles) with an .env made from .env.example, as docs/docker.md tells a new operator to. Needs only
// the compose CLI, no daemon; without one, a test says so instead of the check passing silently.
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { composeCommand, repoRoot, run } from './docker.ts'

const compose = composeCommand()

if (!compose) {
  describe('docker-compose.yml', () => {
    it('is not validated: no compose CLI here (docker compose or docker-compose)', () => {
      console.warn(
        'compose check NOT RUN: neither `docker compose` nor `docker-compose` answers (Debian: apt-get install docker-compose); .ci/run installs it.',
      )
      expect(compose).toBeUndefined()
    })
  })
} else {
  describe(`docker-compose.yml (${compose.join(' ')})`, () => {
    const dir = mkdtempSync(join(tmpdir(), 'feedrunner-compose-'))
    copyFileSync(join(repoRoot, 'docker-compose.yml'), join(dir, 'docker-compose.yml'))
    copyFileSync(join(repoRoot, '.env.example'), join(dir, '.env'))
    afterAll(() => rmSync(dir, { recursive: true, force: true }))
    const config = (args: string[]) =>
      run(compose[0]!, [...compose.slice(1), ...args, 'config'], { cwd: dir })

    it('validates with every profile, and lists each part as a service', async () => {
      const services = await run(
        compose[0]!,
        [...compose.slice(1), '--profile', 'split', '--profile', 'dev', 'config', '--services'],
        { cwd: dir },
      )
      expect(services.code, services.stderr).toBe(0)
      expect(services.stdout.trim().split('\n').sort()).toEqual(
        [
          'adapter',
          'feedrunner',
          'feedrunner-dev',
          'redis',
          'redis-dev',
          'runner',
          'worker',
        ].sort(),
      )
    })

    it('runs every feedrunner service with a read-only root and /tmp as tmpfs, on Redis with an AOF volume', async () => {
      const resolved = await config(['--profile', 'split'])
      expect(resolved.code, resolved.stderr).toBe(0)
      const text = resolved.stdout
      // The parts share the anchor: read-only root, /tmp as tmpfs, Redis by its service name.
      expect(text.match(/read_only: true/g)?.length).toBeGreaterThanOrEqual(4)
      expect(text).toContain('REDIS_URL: redis://redis:6379')
      expect(text).toMatch(/--appendonly[\s\S]*yes/)
      expect(text).toMatch(/redis-data:\/data|source: redis-data/)
      expect(text).toContain('BASE_IMAGE: node:22-bookworm-slim')
    })

    it('builds the dev service from the dev target (the production image has no anvil)', async () => {
      const resolved = await config(['--profile', 'dev'])
      expect(resolved.code, resolved.stderr).toBe(0)
      const dev = resolved.stdout.slice(resolved.stdout.indexOf('feedrunner-dev:'))
      expect(dev).toMatch(/target: dev/)
      expect(dev).toMatch(/image: feedrunner-dev:latest/)
    })
  })
}
