// The console's only way to the server: the public /v1 API with the tenant
// token from this browser session (sessionStorage, never localStorage).

const TOKEN_KEY = 'paddock.token';

export const auth = {
  get token() {
    return sessionStorage.getItem(TOKEN_KEY);
  },
  set(token) {
    sessionStorage.setItem(TOKEN_KEY, token);
  },
  clear() {
    sessionStorage.removeItem(TOKEN_KEY);
  },
};

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function headers(extra = {}) {
  return { Authorization: `Bearer ${auth.token}`, ...extra };
}

async function failure(res) {
  let code = `http_${res.status}`;
  let message = res.statusText || `HTTP ${res.status}`;
  try {
    const body = await res.json();
    code = body.error.code;
    message = body.error.message;
  } catch {
    // not the API's error body: keep the status line
  }
  return new ApiError(res.status, code, message);
}

/** A JSON call: `body` is sent as JSON unless `raw` (bytes for file writes). */
export async function api(method, path, body, { raw = false, as = 'json' } = {}) {
  const init = { method, headers: headers() };
  if (body !== undefined) {
    if (raw) {
      init.body = body;
    } else {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
  }
  const res = await fetch(path, init);
  if (!res.ok) throw await failure(res);
  if (res.status === 204) return null;
  if (as === 'blob') return res.blob();
  if (as === 'text') return res.text();
  return res.json();
}

export const enc = encodeURIComponent;

/**
 * A listed entry's name as the file API takes it in a URL: its bytes
 * percent-encoded. A name not in UTF-8 is listed with `name_bytes` (base64)
 * beside its escaped display form, which names no file.
 */
export function nameSegment(entry) {
  if (!entry.name_bytes) return enc(entry.name);
  return Array.from(atob(entry.name_bytes), (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`).join('');
}

/**
 * Reads a server-sent event stream with fetch (so the bearer token goes in
 * a header, not the URL), calls onEvent({id, event, data}) per event and
 * resumes after the last id it saw when the connection drops. Runs until
 * `signal` aborts, or the server ends the stream and `reconnect` is false.
 */
export async function readEventStream(url, { lastId = 0, onEvent, onStatus, signal, reconnect = true }) {
  let delay = 250;
  while (!signal.aborted) {
    try {
      const extra = { Accept: 'text/event-stream' };
      if (lastId > 0) extra['Last-Event-ID'] = String(lastId);
      const res = await fetch(url, { headers: headers(extra), signal });
      if (!res.ok) throw await failure(res);
      onStatus?.('live');
      delay = 250;
      await parseStream(res.body, signal, (frame) => {
        if (frame.id !== undefined) {
          const id = Number(frame.id);
          if (Number.isFinite(id) && id <= lastId) return; // already shown
          if (Number.isFinite(id)) lastId = id;
        }
        onEvent(frame);
      });
      if (!reconnect) return lastId;
    } catch (err) {
      if (signal.aborted) break;
      if (err instanceof ApiError && err.status < 500) {
        onStatus?.('error', err);
        return lastId;
      }
      onStatus?.('reconnecting', err);
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 5000);
  }
  return lastId;
}

export async function parseStream(body, signal, dispatch) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let frame = {};
  let data = [];
  try {
    while (!signal.aborted) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let newline;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        let line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        if (line.endsWith('\r')) line = line.slice(0, -1);
        if (line === '') {
          if (data.length > 0 || frame.event) {
            frame.data = data.join('\n');
            dispatch(frame);
          }
          frame = {};
          data = [];
        } else if (!line.startsWith(':')) {
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          let value = colon < 0 ? '' : line.slice(colon + 1);
          if (value.startsWith(' ')) value = value.slice(1);
          if (field === 'data') data.push(value);
          else if (field === 'event') frame.event = value;
          else if (field === 'id') frame.id = value;
        }
      }
    }
  } finally {
    reader.releaseLock();
  }
}
