import { useRef, useState } from 'preact/hooks';
import { auth, enc, parseStream } from './api.js';

const SCROLLBACK = 200_000; // characters kept on screen

/**
 * Commands in the console's sandbox on this workspace, output streamed as
 * it comes (exec over server-sent events). Each line is one `sh -c`
 * command in /workspace.
 */
export function TerminalPanel({ sandbox, onError }) {
  const [output, setOutput] = useState('');
  const [command, setCommand] = useState('');
  const [running, setRunning] = useState(null);
  const history = useRef([]);
  const cursor = useRef(0);
  const screen = useRef(null);

  const append = (text) => {
    setOutput((all) => {
      const next = all + text;
      return next.length > SCROLLBACK ? next.slice(next.length - SCROLLBACK) : next;
    });
    requestAnimationFrame(() => {
      if (screen.current) screen.current.scrollTop = screen.current.scrollHeight;
    });
  };

  const run = async (event) => {
    event.preventDefault();
    const line = command.trim();
    if (!line || running) return;
    history.current.push(line);
    cursor.current = history.current.length;
    setCommand('');
    append(`$ ${line}\n`);
    const controller = new AbortController();
    setRunning(controller);
    try {
      await sandbox.withSandbox(async (id) => {
        const res = await fetch(`/v1/sandboxes/${enc(id)}/exec`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${auth.token}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
          body: JSON.stringify({ shell: line }),
          signal: controller.signal,
        });
        if (!res.ok) {
          const body = await res.json().catch(() => null);
          const err = new Error(body?.error?.message ?? res.statusText);
          err.code = body?.error?.code;
          throw err;
        }
        await parseStream(res.body, controller.signal, (frame) => {
          const data = JSON.parse(frame.data || '{}');
          if (frame.event === 'stdout' || frame.event === 'stderr') append(data.data);
          else if (frame.event === 'exit') append(data.exit_code === 0 ? '' : `[exit ${data.exit_code ?? `signal ${data.signal}`}]\n`);
          else if (frame.event === 'error') append(`[error: ${data.error?.message}]\n`);
        });
      });
    } catch (err) {
      if (!controller.signal.aborted) {
        append(`[${err.message}]\n`);
        onError(err);
      }
    } finally {
      setRunning(null);
    }
  };

  const onKeyDown = (event) => {
    if (event.key === 'ArrowUp' && cursor.current > 0) {
      cursor.current -= 1;
      setCommand(history.current[cursor.current]);
      event.preventDefault();
    } else if (event.key === 'ArrowDown' && cursor.current < history.current.length) {
      cursor.current += 1;
      setCommand(history.current[cursor.current] ?? '');
      event.preventDefault();
    } else if (event.key === 'c' && event.ctrlKey && running) {
      running.abort(); // the server kills the command when its client goes
      append('^C\n');
      event.preventDefault();
    }
  };

  return (
    <div class="terminal">
      <pre class="screen" ref={screen} data-testid="terminal-output" aria-live="polite">{output}</pre>
      <form onSubmit={run} class="terminal-input">
        <label for="terminal-command" class="visually-hidden">Command</label>
        <span aria-hidden="true">$</span>
        <input id="terminal-command" value={command} onInput={(e) => setCommand(e.currentTarget.value)} onKeyDown={onKeyDown} autocomplete="off" spellcheck={false} />
        {running && <button type="button" onClick={() => running.abort()}>Stop</button>}
      </form>
    </div>
  );
}
