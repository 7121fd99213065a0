#!/usr/bin/env node
// Builds dist/: tsc compiles src/ (ESM and .d.ts); the generated types are a
// .d.ts of their own, which tsc does not copy, so they are copied here, with
// the OpenAPI document they were generated from (sdk/openapi.json), which the
// package carries as dist/openapi.json.
import { execFileSync } from 'node:child_process'
import { copyFile, mkdir, rm } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
await rm(join(root, 'dist'), { recursive: true, force: true })
try {
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.json')], { stdio: 'inherit', cwd: root })
} catch {
  console.error('scripts/build.mjs: tsc failed')
  process.exit(1)
}
await mkdir(join(root, 'dist', 'generated'), { recursive: true })
await copyFile(join(root, 'src', 'generated', 'schema.d.ts'), join(root, 'dist', 'generated', 'schema.d.ts'))
await copyFile(join(root, '..', 'openapi.json'), join(root, 'dist', 'openapi.json'))
