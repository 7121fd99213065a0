#!/usr/bin/env node
// Regenerates src/generated/schema.d.ts (the API's types, by openapi-typescript,
// pinned in package-lock.json) from sdk/openapi.json, the server's OpenAPI
// document as `GET /v1/openapi.json` serves it, which both SDKs (sdk/python
// too) are generated from: the types come from a file under review rather
// than from whatever server is at hand.
//
//   node scripts/generate.mjs                 regenerate the types from sdk/openapi.json
//   node scripts/generate.mjs --url URL       first write sdk/openapi.json from URL/v1/openapi.json
//                                             (or URL itself, a .json), as sdk/python/generate.sh does
//   node scripts/generate.mjs --check [--url URL]
//                                             change nothing; exit 1 naming each stale file
//
// `--check` is what scripts/sdk-typescript-setup.sh runs: the committed types
// must be what the committed document generates, and (with --url, a live
// `paddock serve`) the committed document must be what the server serves.
import { readFile, writeFile, mkdir } from 'node:fs/promises'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import openapiTS, { astToString } from 'openapi-typescript'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const documentPath = join(root, '..', 'openapi.json')
const schemaPath = join(root, 'src', 'generated', 'schema.d.ts')

const HEADER = `// Generated from sdk/openapi.json (Paddock's GET /v1/openapi.json) by openapi-typescript:
// do not edit. Regenerate with \`npm run generate\` (\`-- --url URL\` to fetch the
// document from a running server first); \`npm run generate:check\` fails when stale.
`

function parseArgs(argv) {
  const args = { check: false, url: undefined }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (arg === '--check') args.check = true
    else if (arg === '--url') args.url = argv[++i]
    else if (arg.startsWith('--url=')) args.url = arg.slice('--url='.length)
    else throw new Error(`unknown argument ${arg} (want --check, --url URL)`)
  }
  if (args.url === '') throw new Error('--url needs a value')
  return args
}

/**
 * The document as openapi-typescript is given it. Paddock's names each
 * operation after its handler function, so `list`, `get`, `create` and
 * others recur across routes; OpenAPI wants them unique, and the generator's
 * validator refuses the document. Every operation is named here after its
 * method and path instead (`get_sessions_id_events` for
 * `GET /v1/sessions/{id}/events`), unique by construction, so the generated
 * `operations` type has one entry per route. openapi.json itself is kept as
 * served.
 */
function forGeneration(document) {
  const copy = structuredClone(document)
  const seen = new Map()
  for (const [path, item] of Object.entries(copy.paths ?? {})) {
    for (const [method, operation] of Object.entries(item)) {
      if (typeof operation !== 'object' || operation === null || !('responses' in operation)) continue
      const slug = path
        .replace(/^\/v1\//, '')
        .replace(/[{}]/g, '')
        .replace(/[^A-Za-z0-9]+/g, '_')
        .replace(/^_|_$/g, '')
      const id = `${method}_${slug}`
      if (seen.has(id)) throw new Error(`operations ${seen.get(id)} and ${method} ${path} both map to ${id}`)
      seen.set(id, `${method} ${path}`)
      operation.operationId = id
    }
  }
  return copy
}

/** The document as sdk/ keeps it: two-space JSON, one final newline (sdk/python/generate.sh writes the same). */
function documentText(document) {
  return JSON.stringify(document, null, 2) + '\n'
}

async function fetchDocument(url) {
  const base = url.replace(/\/+$/, '')
  const target = base.endsWith('.json') ? base : `${base}/v1/openapi.json`
  const response = await fetch(target)
  if (!response.ok) {
    throw new Error(`GET ${target}: ${response.status} ${await response.text()}`)
  }
  return response.json()
}

async function readOr(path, fallback) {
  try {
    return await readFile(path, 'utf8')
  } catch (error) {
    if (error.code === 'ENOENT') return fallback
    throw error
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2))
  const committedDocument = await readOr(documentPath, undefined)
  let document
  if (args.url !== undefined) {
    document = await fetchDocument(args.url)
  } else if (committedDocument !== undefined) {
    document = JSON.parse(committedDocument)
  } else {
    throw new Error(`${relative(process.cwd(), documentPath)} is missing: pass --url URL of a running paddock serve`)
  }
  const wantDocument = documentText(document)
  const ast = await openapiTS(forGeneration(document), { silent: true })
  const wantSchema = HEADER + astToString(ast)

  const outputs = [[schemaPath, wantSchema, await readOr(schemaPath, undefined)]]
  // the document is an output only when fetched; otherwise it is the input as committed
  if (args.url !== undefined) outputs.unshift([documentPath, wantDocument, committedDocument])
  const stale = outputs.filter(([, want, have]) => want !== have)
  if (args.check) {
    if (stale.length > 0) {
      for (const [path] of stale) {
        console.error(`stale: ${relative(process.cwd(), path)}`)
      }
      console.error(
        args.url !== undefined
          ? `the committed files differ from what ${args.url} serves: run \`npm run generate -- --url ${args.url}\` and commit them`
          : 'the committed types differ from what openapi.json generates: run `npm run generate` and commit src/generated/schema.d.ts',
      )
      process.exit(1)
    }
    console.error('generated files are up to date')
    return
  }
  for (const [path, want] of stale) {
    await mkdir(dirname(path), { recursive: true })
    await writeFile(path, want)
    console.error(`wrote ${relative(process.cwd(), path)}`)
  }
  if (stale.length === 0) console.error('generated files are up to date')
}

main().catch((error) => {
  console.error(`scripts/generate.mjs: ${error.message}`)
  process.exit(2)
})
