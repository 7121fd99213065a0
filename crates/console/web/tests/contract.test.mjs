// The recorded answers (fixtures/answers.json: a real `paddock serve`'s
// answers to the console, written by e2e.mjs with RECORD_ANSWERS) against
// the server's OpenAPI document as the code now generates it (OPENAPI_FILE,
// written by orchestrator/tests/cli/console.rs): when a type changes on the
// server, this fails until the answers are recorded again and the console
// is checked against them. And every route the console's source calls is
// one the document has, with that method. Run with `node --test`.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { checkExchange, operationFor } from './openapi.mjs';

const here = new URL('.', import.meta.url).pathname;
const openapiFile = process.env.OPENAPI_FILE;
assert.ok(openapiFile, 'OPENAPI_FILE must name the OpenAPI document to check against');
const doc = JSON.parse(readFileSync(openapiFile, 'utf8'));
const recorded = JSON.parse(readFileSync(join(here, 'fixtures/answers.json'), 'utf8'));

test('the recorded answers fit the current OpenAPI document', () => {
  assert.ok(recorded.exchanges.length >= 20, `only ${recorded.exchanges.length} recorded answers`);
  const errors = recorded.exchanges.flatMap((exchange) => checkExchange(doc, exchange));
  assert.deepEqual(errors, []);
});

test('the check catches an answer that drifted from the document', () => {
  const created = recorded.exchanges.find((e) => e.route === 'POST /v1/sandboxes 201');
  assert.ok(created, 'a recorded sandbox creation');
  const drift = (change) => {
    const response = structuredClone(created.response);
    change(response);
    return checkExchange(doc, { ...created, response });
  };
  assert.deepEqual(drift(() => {}), []);
  assert.match(drift((r) => { r.renamed_state = r.state; delete r.state; }).join('\n'), /missing required state/);
  assert.match(drift((r) => { r.read_only = 'no'; }).join('\n'), /read_only: expected boolean/);
  assert.match(drift((r) => { r.limits.extra = 1; }).join('\n'), /extra is not in the document/);
  const stream = recorded.exchanges.find((e) => e.route.startsWith('GET /v1/sessions/{id}/events ') && e.events?.length);
  const frame = { ...stream.events[0], data: JSON.stringify({ ...JSON.parse(stream.events[0].data), seq: 'one' }) };
  assert.match(checkExchange(doc, { ...stream, events: [frame] }).join('\n'), /seq: expected integer/);
  const body = recorded.exchanges.find((e) => e.route === 'POST /v1/sessions 201');
  assert.match(checkExchange(doc, { ...body, request: { ...body.request, workspace: 7 } }).join('\n'), /workspace/);
});

test('the recordings hold the streams the console reads, with their events', () => {
  const streams = recorded.exchanges.filter((e) => e.events?.length > 0).map((e) => e.route);
  assert.ok(streams.some((r) => r.startsWith('GET /v1/sessions/{id}/events ')), `streams: ${streams}`);
  assert.ok(streams.some((r) => r.startsWith('GET /v1/runs/{id}/events ')), `streams: ${streams}`);
});

/** Every `api('METHOD', path)`, `readEventStream(path)` and `fetch(path)` in src/. */
function callsInSource() {
  const src = join(here, '../src');
  const calls = [];
  for (const file of readdirSync(src)) {
    const text = readFileSync(join(src, file), 'utf8');
    for (const m of text.matchAll(/api\('(GET|POST|PUT|PATCH|DELETE)', [`'](\/v1\/[^`'?]*)/g)) calls.push({ file, method: m[1], path: m[2] });
    for (const m of text.matchAll(/readEventStream\([`'](\/v1\/[^`'?]*)/g)) calls.push({ file, method: 'GET', path: m[1] });
    for (const m of text.matchAll(/fetch\(`(\/v1\/[^`?]*)[^,]*,\s*\{\s*method:\s*'([A-Z]+)'/g)) calls.push({ file, method: m[2], path: m[1] });
  }
  return calls;
}

test('every route the console calls is in the OpenAPI document', () => {
  const calls = callsInSource();
  assert.ok(calls.length >= 25, `only ${calls.length} calls found in src/`);
  const missing = calls
    .map((call) => ({ ...call, concrete: call.path.replace(/\$\{[^}]*\}/g, 'x') }))
    .filter((call) => !operationFor(doc, call.method, call.concrete))
    .map((call) => `${call.file}: ${call.method} ${call.path}`);
  assert.deepEqual(missing, []);
});
