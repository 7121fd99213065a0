import { useCallback, useRef } from 'preact/hooks';
import { api, ApiError, enc } from './api.js';

/**
 * The console's own sandbox on a workspace, for the file editor and the
 * terminal: made on first use, remembered for this browser tab, and made
 * again when the server says it is gone (idle expiry, a restart).
 */
export function useWorkspaceSandbox(workspace, onError) {
  const pending = useRef(null);
  const key = `paddock.sandbox.${workspace}`;

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
      pending.current = api('POST', '/v1/sandboxes', { workspace })
        .then((sandbox) => {
          sessionStorage.setItem(key, sandbox.id);
          return sandbox.id;
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
