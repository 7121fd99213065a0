import { useCallback, useRef } from 'preact/hooks';
import { api, ApiError, auth, enc } from './api.js';

/**
 * The console's own sandbox on a workspace, for the file editor and the
 * terminal: a console sandbox (`"console": true`), made on first use,
 * remembered for this browser tab, and made again when the server says it
 * is gone. It is tied to the tab, never left holding the workspace: the
 * tab keeps it alive while open (every KEEPALIVE_MS; the server ends it
 * 120 s after the last one), a tab that goes away (closed, reloaded) asks
 * for only GOING_SECS more, so a reload takes it back and a closed tab
 * frees the workspace, and signing out ends it. Another tab of the same
 * user on the workspace takes the one that holds it over instead of being
 * refused; a run takes the workspace from it while nothing uses it.
 */
export function useWorkspaceSandbox(workspace, onError) {
  const pending = useRef(null);
  const key = `${PREFIX}${workspace}`;

  const ensure = useCallback(async () => {
    if (!workspace) throw new Error('no workspace');
    const known = sessionStorage.getItem(key);
    if (known) {
      try {
        const sandbox = await api('GET', `/v1/sandboxes/${enc(known)}`);
        if (sandbox.state === 'running') return sandbox.id;
      } catch (err) {
        if (!(err instanceof ApiError) || err.status !== 404) throw err;
      }
    }
    if (!pending.current) {
      pending.current = create(workspace)
        .then((id) => {
          sessionStorage.setItem(key, id);
          keepAlive();
          return id;
        })
        .finally(() => {
          pending.current = null;
        });
    }
    return pending.current;
  }, [workspace]);

  /** Runs `call(sandboxId)`, once more on a fresh sandbox if this one stopped. */
  const withSandbox = useCallback(
    async (call) => {
      const id = await ensure();
      try {
        return await call(id);
      } catch (err) {
        if (err instanceof ApiError && (err.code === 'sandbox_not_running' || err.code === 'sandbox_not_found')) {
          sessionStorage.removeItem(key);
          return call(await ensure());
        }
        throw err;
      }
    },
    [ensure],
  );

  return { workspace, withSandbox, onError };
}

const PREFIX = 'paddock.sandbox.';
/** How often an open tab keeps its sandboxes alive (the server allows 120 s). */
const KEEPALIVE_MS = 20_000;
/** What a tab that goes away asks for: time for a reload to take it back. */
const GOING_SECS = 10;

/**
 * A console sandbox on `workspace`; when another tab of this user holds the
 * workspace with one, that one (it is shared until both tabs are gone).
 */
async function create(workspace) {
  try {
    return (await api('POST', '/v1/sandboxes', { workspace, console: true })).id;
  } catch (err) {
    if (!(err instanceof ApiError) || err.code !== 'workspace_busy') throw err;
    const held = await heldByConsole(workspace);
    if (!held) throw err;
    return held;
  }
}

/** The running console sandbox on `workspace`, if this tenant has one. */
async function heldByConsole(workspace) {
  let after = '';
  for (let page = 0; page < 10; page += 1) {
    const list = await api('GET', `/v1/sandboxes?state=running&limit=200${after}`);
    const found = list.sandboxes.find((s) => s.console && s.workspace === workspace);
    if (found) return found.id;
    if (!list.next_after) return null;
    after = `&after=${enc(list.next_after)}`;
  }
  return null;
}

/** The console sandboxes this tab holds: storage key and id. */
function held() {
  const out = [];
  for (let i = 0; i < sessionStorage.length; i += 1) {
    const key = sessionStorage.key(i);
    if (key?.startsWith(PREFIX)) out.push([key, sessionStorage.getItem(key)]);
  }
  return out;
}

async function ping() {
  for (const [key, id] of held()) {
    try {
      await api('POST', `/v1/sandboxes/${enc(id)}/keepalive`);
    } catch (err) {
      if (!(err instanceof ApiError) || err.status >= 500) continue;
      // gone, or an ordinary sandbox an older page made: made again (as a
      // console sandbox) on next use; the older one must not hold the workspace
      sessionStorage.removeItem(key);
      if (err.code === 'invalid_request') api('DELETE', `/v1/sandboxes/${enc(id)}`).catch(() => {});
    }
  }
}

/** The tab goes away (closed, reloaded, navigated): a few seconds more only. */
function goingAway() {
  if (!auth.token) return;
  for (const [, id] of held()) {
    fetch(`/v1/sandboxes/${enc(id)}/keepalive?secs=${GOING_SECS}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${auth.token}` },
      keepalive: true,
    }).catch(() => {});
  }
}

let timer = null;

/**
 * Keeps this tab's console sandboxes alive while it is open; called when
 * the workbench shows (a reload takes its sandbox back at once) and when a
 * sandbox is made.
 */
export function keepAlive() {
  if (timer !== null) return;
  timer = setInterval(ping, KEEPALIVE_MS);
  addEventListener('pagehide', goingAway);
  addEventListener('pageshow', (event) => {
    if (event.persisted) ping();
  });
  ping();
}

/** Signing out: this tab's console sandboxes end, freeing their workspaces. */
export async function endConsoleSandboxes() {
  for (const [key, id] of held()) {
    sessionStorage.removeItem(key);
    try {
      await api('DELETE', `/v1/sandboxes/${enc(id)}`);
    } catch {
      // already gone: nothing holds the workspace
    }
  }
}
