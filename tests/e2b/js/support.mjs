// Fixtures of the E2B JavaScript SDK suite (sdk.test.mjs), the counterpart
// of tests/e2b/python/conftest.py.
//
// The suite drives the real `e2b` npm package, through its public API only,
// against a server that speaks E2B's REST API and envd: `paddock serve` when
// tests/tests/scenarios/e2b_sdk.rs runs it, any E2B deployment otherwise. It
// reads the SDK's own variables and two of its own:
//
// - E2B_API_URL, E2B_SANDBOX_URL: the server (REST API and envd), both
//   required so that nothing reaches E2B's cloud by default;
// - E2B_API_KEY: a key of one tenant (team);
// - E2B_TEST_OTHER_API_KEY: a key of a second tenant, for the isolation cases;
// - E2B_TEST_DIR: the sandbox's home directory, where relative paths resolve
//   and commands start (default /home/user, E2B's; /workspace on Paddock).
//
// The SDK is found the CommonJS way, so NODE_PATH may name the node_modules
// that scripts/e2b-js-setup.sh filled (an ES `import` ignores NODE_PATH). It
// is the module `import 'e2b'` loads too: the package has no `exports` map,
// so Node takes its `main`, the CommonJS build, either way.
//
// Every sandbox a test makes is killed when the test ends, passed or failed.

import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
export const e2b = require('e2b')

const REQUIRED = ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_API_KEY', 'E2B_TEST_OTHER_API_KEY']
const missing = REQUIRED.filter((name) => !process.env[name])
if (missing.length > 0) {
  throw new Error(`the E2B SDK suite needs ${missing.join(', ')} (see support.mjs)`)
}
if ((process.env.E2B_DEBUG ?? '').toLowerCase() === 'true') {
  throw new Error('E2B_DEBUG=true skips the API: unset it')
}

export const OTHER_API_KEY = process.env.E2B_TEST_OTHER_API_KEY
export const HOME = process.env.E2B_TEST_DIR || '/home/user'

// Sandbox lifetime the tests ask for: long enough for any one test, short
// enough that a sandbox a crashed run leaks goes by itself.
export const LIFETIME_MS = 120_000
// The bound of one test: a hang fails it instead of the whole run.
export const TEST_TIMEOUT_MS = 120_000

export const MIB = 1024 * 1024

/** A value no other test (or run) puts in its sandboxes' metadata. */
export function tag() {
  return crypto.randomUUID().replaceAll('-', '')
}

/**
 * A function that creates sandboxes (timeoutMs LIFETIME_MS unless given)
 * for the test `t`, each killed when the test ends.
 */
export function sandboxes(t) {
  const made = []
  t.after(async () => {
    await Promise.all(made.map((sandbox) => sandbox.kill().catch(() => {})))
  })
  return async (opts = {}) => {
    const sandbox = await e2b.Sandbox.create({ timeoutMs: LIFETIME_MS, ...opts })
    made.push(sandbox)
    return sandbox
  }
}

/** Seconds until the sandbox's endAt, as getInfo reports it. */
export async function secondsLeft(sandboxId, opts) {
  const info = await e2b.Sandbox.getInfo(sandboxId, opts)
  return (info.endAt.getTime() - Date.now()) / 1000
}

/** Every sandbox of every page of Sandbox.list(opts), and the pages. */
export async function listed(opts) {
  const paginator = e2b.Sandbox.list(opts)
  const pages = []
  while (paginator.hasNext) {
    pages.push(await paginator.nextItems())
    if (pages.length > 1000) throw new Error('Sandbox.list paged on past 1000 pages')
  }
  return { sandboxes: pages.flat(), pages }
}

export async function ids(opts) {
  return (await listed(opts)).sandboxes.map((s) => s.sandboxId)
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** Polls `condition` until it answers truthy; fails after `seconds`. */
export async function waitUntil(condition, seconds, what) {
  const deadline = Date.now() + seconds * 1000
  for (;;) {
    const value = await condition()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`not within ${seconds} s: ${what}`)
    await sleep(200)
  }
}

/**
 * The error `promise` rejects with, checked to be an instance of `type`
 * (assert.rejects with a class accepts subclasses the same way).
 */
export async function rejection(promise, type) {
  try {
    await promise
  } catch (err) {
    if (!(err instanceof type)) {
      const error = new Error(
        `expected a ${type.name}, got ${err?.constructor?.name}: ${err?.message}`,
      )
      error.cause = err
      throw error
    }
    return err
  }
  throw new Error(`expected a ${type.name}, but it succeeded`)
}
