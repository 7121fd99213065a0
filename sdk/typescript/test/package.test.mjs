// The package as packed: what the tarball holds, and its types were made
// from the document this server serves (scripts/sdk-typescript-setup.sh
// checked that the types are what sdk/openapi.json generates; the package
// carries that document as dist/openapi.json).
import assert from 'node:assert/strict'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { client, ENTRY, PACKAGE_DIR, PACKAGE_JSON, sdk } from './support.mjs'

test('the tarball holds the ESM build, its declarations, the document and the README', () => {
  assert.equal(PACKAGE_JSON.name, '@paddock/sdk')
  assert.equal(PACKAGE_JSON.type, 'module')
  assert.ok(ENTRY.endsWith(join('dist', 'index.js')), ENTRY)
  for (const file of ['dist/index.js', 'dist/index.d.ts', 'dist/generated/schema.d.ts', 'dist/openapi.json', 'README.md']) {
    assert.ok(existsSync(join(PACKAGE_DIR, file)), `${file} in the package`)
  }
  // only what `files` names: no sources, tests or scripts
  assert.deepEqual(readdirSync(PACKAGE_DIR).sort(), ['README.md', 'dist', 'package.json'])
  assert.deepEqual(PACKAGE_JSON.dependencies ?? {}, {}, 'no runtime dependencies: global fetch only')
  for (const name of [
    'Paddock',
    'PaddockError',
    'NotFoundError',
    'ConflictError',
    'RateLimitedError',
    'UnauthorizedError',
    'InvalidRequestError',
    'scripted',
  ]) {
    assert.equal(typeof sdk[name], 'function', `${name} exported`)
  }
})

test('the packed document is the one this server serves', async () => {
  const served = await client().openapi()
  const packed = JSON.parse(readFileSync(join(PACKAGE_DIR, 'dist', 'openapi.json'), 'utf8'))
  assert.deepEqual(
    served,
    packed,
    'the server serves another document: run `npm run generate -- --url URL` in sdk/typescript and commit sdk/openapi.json and the types',
  )
})
