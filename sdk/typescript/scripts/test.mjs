#!/usr/bin/env node
// Runs the suite (test/*.test.mjs) with Node's test runner, one file at a
// time (they share a tenant's sandbox quota), reporting TAP. Arguments are
// passed to `node --test`. Needs PADDOCK_URL, PADDOCK_TOKEN and
// PADDOCK_SDK_TYPESCRIPT (see test/support.mjs).
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const dir = join(dirname(fileURLToPath(import.meta.url)), '..', 'test')
const files = readdirSync(dir)
  .filter((name) => name.endsWith('.test.mjs'))
  .sort()
  .map((name) => join(dir, name))
const [major, minor] = process.versions.node.split('.').map(Number)
const atLeast = (m, n) => major > m || (major === m && minor >= n)
const reporter = atLeast(18, 15) ? ['--test-reporter=tap'] : []
const extra = process.argv.slice(2)
const run = (args) => spawnSync(process.execPath, ['--test', ...reporter, ...extra, ...args], { stdio: 'inherit' }).status ?? 1

let status
if (atLeast(20, 10)) {
  status = run(['--test-concurrency=1', ...files])
} else {
  // no --test-concurrency before Node.js 20.10: one run per file
  status = files.map((file) => run([file])).find((s) => s !== 0) ?? 0
}
process.exit(status)
