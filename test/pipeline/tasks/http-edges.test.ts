import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { formatProblem, loadJobSpec, TaskError, TASK_TYPES } from '../../../src/pipeline/index.ts'
import { startTestServer, type RecordedRequest, type TestServer } from '../support/http-server.ts'
import { runTask } from '../support/task.ts'

// The http task at its edges: what it sends (method, body, content type), what it answers for a
// status outside 2xx, and what it refuses before any request, at load and at run.

let server: TestServer
let base = ''
beforeAll(async () => {
  server = await startTestServer(({ url: path }, response) => {
    const status = Number(/^\/status\/(\d+)/.exec(path)?.[1] ?? 200)
    response.writeHead(status, { 'content-type': 'text/plain' })
    response.end(path.endsWith('/long') ? 'e'.repeat(300) : `answer ${path}`)
  })
  base = server.url
})
afterAll(() => server.close())

/** The one request the server saw for `path`. */
function request(path: string): RecordedRequest {
  const found = server.requests.filter((entry) => entry.url === path)
  expect(found, path).toHaveLength(1)
  return found[0]!
}

async function failure(attributes: Record<string, string>): Promise<TaskError> {
  const error = await runTask('http', attributes).then(
    () => undefined,
    (caught: unknown) => caught,
  )
  expect(error).toBeInstanceOf(TaskError)
  return error as TaskError
}

describe('http: what it sends', () => {
  it('GET when no method is given', async () => {
    expect(await runTask('http', { url: `${base}/no-method` })).toBe('answer /no-method')
    expect(request('/no-method').method).toBe('GET')
  })

  it('a method written with spaces or in lower case, as the load check read it', async () => {
    expect(await runTask('http', { method: ' post ', url: `${base}/spaced` })).toBe(
      'answer /spaced',
    )
    expect(request('/spaced').method).toBe('POST')
  })

  it('a POST sends requestData as JSON, saying so in its content type', async () => {
    await runTask('http', { method: 'post', url: `${base}/post`, requestData: '{"a": 1}' })
    const { method, headers, body } = request('/post')
    expect(method).toBe('POST')
    expect(JSON.parse(body)).toEqual({ a: 1 })
    expect(headers['content-type']).toBe('application/json')
  })

  it('a GET and a HEAD send no body and no content type, requestData or not', async () => {
    expect(
      await runTask('http', { method: 'GET', url: `${base}/get-data`, requestData: '{"a": 1}' }),
    ).toBe('answer /get-data')
    expect(
      await runTask('http', { method: 'HEAD', url: `${base}/head-data`, requestData: '{"a": 1}' }),
    ).toBe('')
    for (const path of ['/get-data', '/head-data']) {
      const { body, headers } = request(path)
      expect(body, path).toBe('')
      expect(headers['content-type'], path).toBeUndefined()
      expect(headers['content-length'] ?? '0', path).toBe('0')
    }
  })

  it('a POST without requestData sends no content type', async () => {
    await runTask('http', { method: 'POST', url: `${base}/post-empty` })
    expect(request('/post-empty').headers['content-type']).toBeUndefined()
  })
})

describe('http: a status outside 2xx', () => {
  it('300 is a failure, naming the status and the body; 299 is an answer', async () => {
    expect((await failure({ method: 'GET', url: `${base}/status/300` })).message).toBe(
      `GET ${base}/status/300 answered 300: answer /status/300`,
    )
    expect(await runTask('http', { method: 'GET', url: `${base}/status/299` })).toBe(
      'answer /status/299',
    )
  })

  it('the body in the message is cut to 200 characters', async () => {
    const error = await failure({ method: 'GET', url: `${base}/status/500/long` })
    expect(error.message).toBe(`GET ${base}/status/500/long answered 500: ${'e'.repeat(200)}`)
  })
})

describe('http: refused at run, before any request', () => {
  it('a method it does not support, by name', async () => {
    const before = server.requests.length
    expect((await failure({ method: 'FETCH', url: `${base}/fetch` })).message).toBe(
      'method FETCH is not supported',
    )
    expect(server.requests).toHaveLength(before)
  })

  it('no url, or one that is not a URL, shown quoted and cut to 80 characters', async () => {
    expect((await failure({ method: 'GET' })).message).toBe('url is not a valid URL: ""')
    const long = `not a url ${'x'.repeat(100)}`
    expect((await failure({ method: 'GET', url: long })).message).toBe(
      `url is not a valid URL: ${JSON.stringify(long.slice(0, 80))}`,
    )
  })

  it('a scheme other than http or https; https itself is tried', async () => {
    expect((await failure({ method: 'GET', url: 'file:///etc/passwd' })).message).toBe(
      'url must be http or https, got file:',
    )
    // Nothing listens on port 1: the https request is made, and fails as a connection.
    const https = await failure({ method: 'GET', url: 'https://127.0.0.1:1/' })
    expect(https.message).not.toContain('must be http or https')
    expect(https.message).toContain('https://127.0.0.1:1/ failed')
  })
})

describe('http: refused when the spec is loaded', () => {
  const spec = (task: string) => `type = "cron"
schemaVersion = 1
name = "edges"
schedule = "@every 1m"
observationSource = """
${task}
"""
`
  const problems = (task: string) =>
    loadJobSpec(spec(task), 'jobs/edges.toml').problems.map(formatProblem)

  it('a method it does not support, listing those it does', () => {
    expect(problems('a [type="http" method="fetch" url="http://x.test/"]')).toEqual([
      'jobs/edges.toml:6 (observationSource line 1): task a: method: FETCH is not supported (GET, POST, PUT, PATCH, DELETE, HEAD)',
    ])
    expect(problems('a [type="http" method="delete" url="https://x.test/"]')).toEqual([])
  })

  it('a method from a variable is left to the run', () => {
    const found = problems('a [type="http" method="$(x.m)" url="http://x.test/"]')
    expect(found.filter((problem) => problem.includes('not supported'))).toEqual([])
  })

  it('a url that is not a whole http or https URL, shown quoted and cut to 60 characters', () => {
    const url = (text: string) => problems(`a [type="http" method="GET" url="${text}"]`)
    const refused = (text: string) => [
      `jobs/edges.toml:6 (observationSource line 1): task a: url: must be an http or https URL, got ${JSON.stringify(text.slice(0, 60))}`,
    ]
    expect(url('xhttp://a.test/')).toEqual(refused('xhttp://a.test/'))
    expect(url('http://a.test/ b')).toEqual(refused('http://a.test/ b'))
    const long = `ftp://${'a'.repeat(100)}`
    expect(url(long)).toEqual(refused(long))
    expect(url(' http://a.test/ ')).toEqual([])
  })

  it('its check, given attributes one by one, refuses only what is written and wrong', () => {
    const check = TASK_TYPES.get('http')!.check!
    expect(check({})).toEqual([])
    expect(check({ method: '', url: '' })).toEqual([])
    expect(check({ method: '$(a.m)', url: '$(a.url)' })).toEqual([])
    expect(check({ url: 'http://x.test/' })).toEqual([])
  })
})
