import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, enc, readEventStream } from './api.js';

// bash where the sandbox has it, else sh.
const SHELL = 'command -v bash >/dev/null 2>&1 && exec bash -i; exec sh -i';

/** How long a shell has to exit after the hangup, and then after SIGKILL. */
const HANGUP_WAIT_MS = 5000;
const KILL_WAIT_MS = 3000;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function bytes(base64) {
  const raw = atob(base64);
  const out = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i += 1) out[i] = raw.charCodeAt(i);
  return out;
}

/**
 * A shell on a pseudo-terminal in the console's sandbox on this workspace
 * (xterm.js). The shell outlives the panel: coming back (another tab, a
 * reload) reattaches to it and replays what it printed meanwhile. It ends
 * as a shell in a terminal does: ^D (xterm sends the byte, the terminal's
 * end of file) or closing the terminal (End shell: the hangup a closed
 * terminal sends, then SIGKILL if it is still there after a while); either
 * way the stream's `exit` event is what marks it ended.
 */
export function TerminalPanel({ sandbox, onError }) {
  const host = useRef(null);
  const end = useRef(null);
  const [status, setStatus] = useState('starting');
  const [generation, setGeneration] = useState(0);

  useEffect(() => {
    const controller = new AbortController();
    let dispose = () => {};
    end.current = null;
    const attach = async (id, term) => {
      const base = `/v1/sandboxes/${enc(id)}/processes`;
      const key = `paddock.terminal.${id}`;
      let handle = Number(sessionStorage.getItem(key)) || null;
      if (handle) {
        const { processes } = await api('GET', base);
        const known = processes.find((p) => p.handle === handle);
        if (!known?.running || !known.pty) handle = null;
      }
      if (handle) {
        await api('POST', `${base}/${handle}/resize`, { rows: term.rows, cols: term.cols });
      } else {
        const started = await api('POST', base, { shell: SHELL, pty: { rows: term.rows, cols: term.cols } });
        handle = started.handle;
        sessionStorage.setItem(key, String(handle));
      }
      // Keys are sent in order, what piles up during a request in one go.
      let queued = '';
      let sending = false;
      const send = async () => {
        if (sending || !queued) return;
        sending = true;
        const data = queued;
        queued = '';
        try {
          await api('POST', `${base}/${handle}/stdin`, { data });
        } catch (err) {
          if (!controller.signal.aborted) onError(err);
        } finally {
          sending = false;
          send();
        }
      };
      const typed = term.onData((data) => {
        queued += data;
        send();
      });
      const resized = term.onResize(({ rows, cols }) => {
        api('POST', `${base}/${handle}/resize`, { rows, cols }).catch(() => {});
      });
      controller.signal.addEventListener('abort', () => {
        typed.dispose();
        resized.dispose();
      });
      let exited;
      const gone = new Promise((resolve) => {
        exited = resolve;
      });
      let over = false;
      const finish = (text) => {
        if (over) return;
        over = true;
        sessionStorage.removeItem(key);
        term.write(text);
        setStatus('exited');
        exited();
        controller.abort();
      };
      // Closing the terminal: hang up, wait for the exit, kill if it stays.
      end.current = async () => {
        setStatus('ending');
        const wait = (ms) => Promise.race([gone.then(() => true), sleep(ms).then(() => false)]);
        try {
          await api('POST', `${base}/${handle}/signal`, { signal: 'HUP' });
          if (await wait(HANGUP_WAIT_MS)) return;
          await api('POST', `${base}/${handle}/signal`, { signal: 'KILL' });
          if (await wait(KILL_WAIT_MS)) return;
          finish('\r\n[the shell did not report its exit]\r\n');
        } catch (err) {
          // already gone: its exit (or the sandbox's end) is on the stream
          if (!controller.signal.aborted) {
            finish('\r\n[terminal closed]\r\n');
            if (!(err instanceof ApiError)) onError(err);
          }
        }
      };
      setStatus('live');
      term.focus();
      await readEventStream(`${base}/${handle}/stream`, {
        signal: controller.signal,
        onEvent: (frame) => {
          const data = JSON.parse(frame.data || '{}');
          if (frame.event === 'output') {
            term.write(bytes(data.data_base64));
          } else if (frame.event === 'exit') {
            finish(`\r\n[exited ${data.exit_code ?? `on signal ${data.signal}`}]\r\n`);
          } else if (frame.event === 'error') {
            finish(`\r\n[terminal ended: ${data.error?.message ?? 'the sandbox is gone'}]\r\n`);
          }
        },
        onStatus: (state, err) => {
          if (state === 'error') {
            setStatus('exited');
            if (!(err instanceof ApiError && err.code === 'sandbox_not_running')) onError(err);
          }
        },
      });
    };
    (async () => {
      const { createTerminal } = await import('./terminal.js');
      if (controller.signal.aborted || !host.current) return;
      const { term, fit } = createTerminal(host.current);
      const observer = new ResizeObserver(() => fit.fit());
      observer.observe(host.current);
      dispose = () => {
        observer.disconnect();
        term.dispose();
      };
      await sandbox.withSandbox((id) => attach(id, term));
    })().catch((err) => {
      if (!controller.signal.aborted) {
        setStatus('exited');
        onError(err);
      }
    });
    return () => {
      controller.abort();
      dispose();
    };
  }, [sandbox.workspace, generation]);

  return (
    <div class="terminal">
      <div class="terminal-bar">
        <span class="badge" data-testid="terminal-status">{status}</span>
        {status === 'live' && (
          <button type="button" onClick={() => end.current?.()} title="End the shell (as closing a terminal does)">
            End shell
          </button>
        )}
        {status === 'exited' && (
          <button type="button" onClick={() => setGeneration((g) => g + 1)}>
            New shell
          </button>
        )}
      </div>
      <div class="xterm-host" ref={host} data-testid="terminal" aria-label="Terminal" />
    </div>
  );
}
