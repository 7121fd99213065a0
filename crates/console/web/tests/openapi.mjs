// The console's traffic checked against the server's OpenAPI document (the
// one `GET /v1/openapi.json` serves, generated from the server's Rust
// types): each request body against its operation's request schema, each
// answer against the schema of its status, each server-sent event's data
// against the schema of its event. Undeclared fields in an answer are an
// error too, so a field the console reads is one the document declares.
// Used live by e2e.mjs (the browser's requests) and, on the recorded
// answers in fixtures/, by contract.test.mjs.

/** The `data` schema of each event of each event-stream route. */
export const STREAM_EVENTS = {
  'GET /v1/sessions/{id}/events': { '*': 'EventEnvelope', error: 'ErrorBody' },
  'GET /v1/runs/{id}/events': { '*': 'EventEnvelope', error: 'ErrorBody' },
  'POST /v1/sandboxes/{id}/exec': { started: 'ExecStarted', stdout: 'OutputChunk', stderr: 'OutputChunk', exit: 'ExitView', error: 'ErrorBody' },
  'GET /v1/sandboxes/{id}/processes/{handle}/stream': { output: 'TerminalOutput', exit: 'ExitView', error: 'ErrorBody' },
};

/**
 * The documented operation for `method` on `pathname` (no query string):
 * `{ template, operation }`, or null. A literal segment wins over a
 * parameter; a last `{path}` parameter takes the rest of the path.
 */
export function operationFor(doc, method, pathname) {
  const segments = pathname.split('/');
  let best = null;
  for (const [template, item] of Object.entries(doc.paths)) {
    const operation = item[method.toLowerCase()];
    if (!operation) continue;
    const parts = template.split('/');
    let literals = 0;
    let matched = true;
    for (let i = 0; i < parts.length; i += 1) {
      const part = parts[i];
      const last = i === parts.length - 1;
      if (part.startsWith('{')) {
        if (segments[i] === undefined || segments[i] === '') { matched = false; break; }
        if (last && part === '{path}') { i = segments.length; break; }
        continue;
      }
      if (part !== segments[i]) { matched = false; break; }
      literals += 1;
    }
    const rest = parts[parts.length - 1] === '{path}' ? segments.length >= parts.length : segments.length === parts.length;
    if (matched && rest && (best === null || literals > best.literals)) {
      best = { template, operation, literals };
    }
  }
  return best && { template: best.template, operation: best.operation };
}

function resolve(doc, schema) {
  let s = schema;
  for (let hops = 0; s && s.$ref && hops < 32; hops += 1) {
    const name = s.$ref.replace('#/components/schemas/', '');
    s = doc.components?.schemas?.[name];
    if (!s) return { unresolved: schema.$ref };
  }
  return s;
}

function typeOf(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function typeMatches(expected, value) {
  const actual = typeOf(value);
  return expected === actual || (expected === 'number' && actual === 'integer');
}

/**
 * The ways `value` breaks `schema` (empty: it fits). `strict`: an object's
 * properties must all be declared (answers); requests are checked as the
 * schema says (its own `additionalProperties`).
 */
export function validate(doc, schema, value, where = '$', strict = false) {
  const s = resolve(doc, schema);
  if (s === undefined || s === true || (s && Object.keys(s).length === 0)) return [];
  if (s.unresolved) return [`${where}: the document has no schema ${s.unresolved}`];
  const errors = [];
  if (s.allOf) for (const part of s.allOf) errors.push(...validate(doc, part, value, where, false));
  for (const key of ['oneOf', 'anyOf']) {
    if (!s[key]) continue;
    const fits = s[key].map((option) => validate(doc, option, value, where, strict));
    if (!fits.some((e) => e.length === 0)) {
      errors.push(`${where}: fits none of ${key} (${fits.map((e) => e[0]).join(' | ')})`);
    }
  }
  if (s.type !== undefined) {
    const types = Array.isArray(s.type) ? s.type : [s.type];
    const nullable = s.nullable === true && value === null;
    if (!nullable && !types.some((t) => typeMatches(t, value))) {
      return [...errors, `${where}: expected ${types.join(' or ')}, got ${typeOf(value)}`];
    }
  }
  if (s.enum && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) {
    errors.push(`${where}: ${JSON.stringify(value)} is not one of ${JSON.stringify(s.enum)}`);
  }
  if (s.const !== undefined && JSON.stringify(s.const) !== JSON.stringify(value)) {
    errors.push(`${where}: expected ${JSON.stringify(s.const)}`);
  }
  if (typeof value === 'number') {
    if (s.minimum !== undefined && value < s.minimum) errors.push(`${where}: ${value} < minimum ${s.minimum}`);
    if (s.maximum !== undefined && value > s.maximum) errors.push(`${where}: ${value} > maximum ${s.maximum}`);
  }
  if (typeof value === 'string') {
    if (s.minLength !== undefined && value.length < s.minLength) errors.push(`${where}: shorter than ${s.minLength}`);
    if (s.maxLength !== undefined && value.length > s.maxLength) errors.push(`${where}: longer than ${s.maxLength}`);
    if (s.pattern !== undefined && !new RegExp(s.pattern, 'u').test(value)) errors.push(`${where}: does not match ${s.pattern}`);
  }
  if (Array.isArray(value) && s.items) {
    value.forEach((item, i) => errors.push(...validate(doc, s.items, item, `${where}[${i}]`, strict)));
  }
  if (typeOf(value) === 'object' && (s.properties || s.required || s.additionalProperties !== undefined)) {
    const properties = s.properties ?? {};
    for (const name of s.required ?? []) {
      if (!(name in value)) errors.push(`${where}: missing required ${name}`);
    }
    for (const [name, field] of Object.entries(value)) {
      if (name in properties) {
        errors.push(...validate(doc, properties[name], field, `${where}.${name}`, strict));
      } else if (s.additionalProperties && typeof s.additionalProperties === 'object') {
        errors.push(...validate(doc, s.additionalProperties, field, `${where}.${name}`, strict));
      } else if (s.additionalProperties === false || (strict && s.additionalProperties !== true && !s.oneOf && !s.anyOf && !s.allOf)) {
        errors.push(`${where}: ${name} is not in the document`);
      }
    }
  }
  return errors;
}

/** The JSON schema of `content` (an OpenAPI content map) for `type`. */
function contentSchema(content, type) {
  return content?.[type]?.schema;
}

/**
 * The ways one exchange breaks the document: `{method, path, status,
 * request?, response?, events?}` (path with or without a query; `events`
 * as `{event, id, data}` with `data` the JSON text).
 */
export function checkExchange(doc, exchange) {
  const pathname = exchange.path.split('?')[0];
  const what = `${exchange.method} ${pathname}`;
  const found = operationFor(doc, exchange.method, pathname);
  if (!found) return [`${what}: no such operation in the document`];
  const { template, operation } = found;
  const errors = [];
  if (exchange.request !== undefined) {
    const schema = contentSchema(operation.requestBody?.content, 'application/json');
    if (!schema) errors.push(`${what}: the document takes no JSON body here`);
    else errors.push(...validate(doc, schema, exchange.request, `${what} request`, false));
  }
  const answer = operation.responses?.[String(exchange.status)] ?? operation.responses?.default;
  if (!answer) {
    errors.push(`${what}: status ${exchange.status} is not in the document`);
    return errors;
  }
  if (exchange.response !== undefined) {
    const schema = contentSchema(answer.content, 'application/json');
    if (!schema) errors.push(`${what}: the document has no JSON answer for ${exchange.status}`);
    else errors.push(...validate(doc, schema, exchange.response, `${what} ${exchange.status}`, true));
  }
  if (exchange.events !== undefined) {
    const kinds = STREAM_EVENTS[`${exchange.method} ${template}`];
    if (!kinds) errors.push(`${what}: not an event stream the console knows`);
    else if (!contentSchema(answer.content, 'text/event-stream')) errors.push(`${what}: the document has no event stream for ${exchange.status}`);
    for (const frame of exchange.events ?? []) {
      const name = kinds?.[frame.event] ?? kinds?.['*'];
      if (!name) {
        errors.push(`${what}: event ${frame.event} is not one this stream sends`);
        continue;
      }
      let data;
      try {
        data = JSON.parse(frame.data);
      } catch {
        errors.push(`${what}: event ${frame.event}: data is not JSON`);
        continue;
      }
      errors.push(...validate(doc, { $ref: `#/components/schemas/${name}` }, data, `${what} event ${frame.event}`, true));
    }
  }
  return errors;
}

/** The frames of a whole event-stream body, as api.js's parser makes them. */
export function framesOf(text) {
  const frames = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    const frame = {};
    const data = [];
    for (const line of block.split(/\r?\n/)) {
      if (line === '' || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') data.push(value);
      else if (field === 'event') frame.event = value;
      else if (field === 'id') frame.id = value;
    }
    if (data.length > 0 || frame.event) frames.push({ ...frame, data: data.join('\n') });
  }
  return frames;
}
