import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { api, enc } from './api.js';
import { isActive } from './session.js';

/** Items shown at first; scrolling to the top shows this many more. */
const WINDOW = 200;

export function Stage({ session, view, onError, onChanged }) {
  const scroller = useRef(null);
  const stick = useRef(true);
  const [shown, setShown] = useState(WINDOW);
  const items = view.items;
  const first = Math.max(0, items.length - shown);
  const visible = items.slice(first);

  useEffect(() => setShown(WINDOW), [session?.id]);

  useLayoutEffect(() => {
    const el = scroller.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  });

  const onScroll = () => {
    const el = scroller.current;
    stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
    if (el.scrollTop < 80 && first > 0) {
      const before = el.scrollHeight;
      setShown((n) => n + WINDOW);
      requestAnimationFrame(() => {
        el.scrollTop += el.scrollHeight - before;
      });
    }
  };

  if (!session) {
    return (
      <main class="stage empty" id="stage">
        <p>Open a session on the left, or make a workspace and a session to start.</p>
      </main>
    );
  }
  const run = view.lastRun ? view.runs.get(view.lastRun) : null;
  return (
    <main class="stage" id="stage" aria-label="Session">
      <div class="stream-list" ref={scroller} onScroll={onScroll} role="log" aria-live="polite" data-testid="stage">
        {first > 0 && <p class="more">{first} earlier items: scroll up to show them</p>}
        {visible.map((item) => (
          <StageItem key={item.key} item={item} />
        ))}
        {run && isActive(run.state) && (
          <p class="working" data-testid="working">
            <Spinner /> Working: {run.state}…
          </p>
        )}
      </div>
      <Prompt session={session} run={run} onError={onError} onChanged={onChanged} />
    </main>
  );
}

function StageItem({ item }) {
  switch (item.type) {
    case 'user':
      return (
        <article class="msg user" data-kind={item.steer ? 'steer' : 'goal'}>
          <header>{item.steer ? 'You (steering)' : `You · ${item.mode ?? 'build'}`}</header>
          <p class="text">{item.text}</p>
          {item.criteria?.length > 0 && (
            <ul class="criteria">
              {item.criteria.map((criterion) => (
                <li key={criterion}>{criterion}</li>
              ))}
            </ul>
          )}
        </article>
      );
    case 'assistant':
      return (
        <article class={`msg assistant${item.streaming ? ' streaming' : ''}`} data-testid="assistant" data-streaming={item.streaming ? 'true' : 'false'} aria-busy={item.streaming ? 'true' : 'false'}>
          <header>
            Agent · turn {item.turn}
            {item.streaming && (
              <>
                {' '}
                <Spinner /> writing…
              </>
            )}
          </header>
          <p class="text">{item.text}</p>
        </article>
      );
    case 'tool':
      return <ToolItem item={item} />;
    case 'review':
      return (
        <article class={`msg review verdict-${item.review.verdict}`} data-testid="review">
          <header>Review: {item.review.verdict}</header>
          {item.review.summary && <p>{item.review.summary}</p>}
          <ul>
            {(item.review.criteria ?? []).map((c) => (
              <li key={c.criterion}>
                <strong>[{c.verdict}]</strong> {c.criterion}
                {c.evidence && <span class="evidence">: {c.evidence}</span>}
              </li>
            ))}
          </ul>
        </article>
      );
    case 'finished':
      return (
        <p class={`finished state-${item.finished.state}`} data-testid="run-finished">
          Run {item.finished.state} ({item.finished.end_reason}){item.finished.error ? `: ${item.finished.error}` : ''}
        </p>
      );
    default:
      return <p class="note">{item.text}</p>;
  }
}

/** A busy mark beside what is under way (hidden from screen readers). */
function Spinner() {
  return <span class="spinner" aria-hidden="true" />;
}

/**
 * One tool call, collapsed: its arguments (streaming while the model writes
 * them), its output while it runs (open then), and its result, which
 * replaces the output that streamed.
 */
function ToolItem({ item }) {
  const result = item.result;
  const status = result ? result.status : item.pending ? 'preparing' : 'running';
  const summary = item.arguments ? JSON.stringify(item.arguments) : item.argumentsText ?? '';
  const output = !result && item.output ? item.output : '';
  return (
    <details class={`tool status-${status}`} data-testid="tool-call" data-call={item.callId} open={output !== ''}>
      <summary>
        <span class="tool-name">{item.tool}</span> <span class="tool-args">{summary.length > 120 ? `${summary.slice(0, 120)}…` : summary}</span>
        <span class="tool-status">
          {!result && <Spinner />} {status}
        </span>
      </summary>
      {item.arguments && <pre class="args">{JSON.stringify(item.arguments, null, 2)}</pre>}
      {output && (
        <pre class="output" data-testid="tool-output" aria-live="off">
          {item.outputCut ? '[earlier output cut]\n' : ''}
          {output}
        </pre>
      )}
      {result && <pre class="result">{result.content}{result.truncated ? '\n[cut]' : ''}</pre>}
    </details>
  );
}

/**
 * A build run holds its workspace alone (one writer): the console's own
 * sandbox on it (files, terminal) gives it up first; it is made again on
 * next use.
 */
async function releaseConsoleSandbox(workspace) {
  const key = `paddock.sandbox.${workspace}`;
  const id = sessionStorage.getItem(key);
  if (!id) return;
  sessionStorage.removeItem(key);
  try {
    await api('DELETE', `/v1/sandboxes/${enc(id)}`);
  } catch {
    // already gone (expired, a restart): nothing holds the workspace
  }
}

/**
 * The network a run asks for, as the API takes it: `none`, `full`, or
 * `allow:a,b` (`{"allowlist": [...]}`); null for the server's default.
 */
function networkPolicy(text) {
  const value = text.trim();
  if (value === '') return null;
  if (value === 'none' || value === 'full') return value;
  const hosts = value.replace(/^allow:/, '').split(/[\s,]+/).filter(Boolean);
  return { allowlist: hosts };
}

function Prompt({ session, run, onError, onChanged }) {
  const active = run && isActive(run.state);
  const [goal, setGoal] = useState('');
  const [criteria, setCriteria] = useState('');
  const [mode, setMode] = useState('build');
  const [driver, setDriver] = useState('builtin');
  const [model, setModel] = useState(() => localStorage.getItem('paddock.model') ?? 'openai:gpt-4o');
  const [script, setScript] = useState('');
  const [childModels, setChildModels] = useState('');
  const [network, setNetwork] = useState('');
  const [busy, setBusy] = useState(false);
  const archived = session.status === 'archived';

  const start = async (event) => {
    event.preventDefault();
    if (!goal.trim()) return;
    setBusy(true);
    try {
      if (active) {
        await api('POST', `/v1/runs/${enc(run.id)}/messages`, { text: goal });
      } else {
        localStorage.setItem('paddock.model', model);
        await releaseConsoleSandbox(session.workspace);
        const body = {
          goal,
          mode,
          driver,
          success_criteria: criteria.split('\n').map((line) => line.trim()).filter(Boolean),
          model: script.trim() ? { scripted: JSON.parse(script) } : { spec: model },
        };
        if (childModels.trim()) body.subagent_models = JSON.parse(childModels);
        const policy = networkPolicy(network);
        if (policy !== null) body.network = policy;
        await api('POST', `/v1/sessions/${enc(session.id)}/runs`, body);
        onChanged();
      }
      setGoal('');
    } catch (err) {
      onError(err.code === 'route_not_found' ? new Error('This server cannot steer a running run.') : err);
    } finally {
      setBusy(false);
    }
  };

  const cancel = async () => {
    try {
      await api('POST', `/v1/runs/${enc(run.id)}/cancel`);
    } catch (err) {
      onError(err);
    }
  };

  const onKey = (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) start(event);
  };

  return (
    <form class="prompt" onSubmit={start} aria-label="Prompt">
      <label for="goal" class="visually-hidden">{active ? 'Steer the run' : 'Goal'}</label>
      <textarea
        id="goal"
        rows={3}
        value={goal}
        disabled={archived}
        placeholder={archived ? 'This session is archived: fork it to go on.' : active ? 'Tell the agent something before its next turn…' : 'What should the agent do? (Ctrl+Enter)'}
        onInput={(e) => setGoal(e.currentTarget.value)}
        onKeyDown={onKey}
      />
      {!active && (
        <details class="run-options">
          <summary>Run options</summary>
          <label>
            Success criteria (one per line)
            <textarea rows={2} value={criteria} onInput={(e) => setCriteria(e.currentTarget.value)} />
          </label>
          <label>
            Mode
            <select value={mode} onChange={(e) => setMode(e.currentTarget.value)}>
              <option value="build">build</option>
              <option value="plan">plan (read-only)</option>
            </select>
          </label>
          <label>
            Driver (the server refuses one it does not enable)
            <select value={driver} onChange={(e) => setDriver(e.currentTarget.value)} data-testid="driver">
              <option value="builtin">builtin (Paddock's own loop)</option>
              <option value="claude-code">Claude Code</option>
              <option value="codex">Codex</option>
              <option value="opencode">opencode</option>
            </select>
          </label>
          <label>
            Model
            <input value={model} onInput={(e) => setModel(e.currentTarget.value)} />
          </label>
          <label>
            Network (empty: the server's default; none, full, or allow:HOST,HOST:PORT)
            <input value={network} onInput={(e) => setNetwork(e.currentTarget.value)} placeholder="server default" data-testid="network" />
          </label>
          <label>
            Scripted turns (JSON, for demos and tests; replaces the model)
            <textarea rows={2} value={script} onInput={(e) => setScript(e.currentTarget.value)} data-testid="script" />
          </label>
          <label>
            Subagent models (JSON: a task id or profile to a model, e.g. {'{"build": {"spec": "openai:gpt-4o"}}'})
            <textarea rows={2} value={childModels} onInput={(e) => setChildModels(e.currentTarget.value)} data-testid="subagent-models" />
          </label>
        </details>
      )}
      <div class="prompt-actions">
        <button type="submit" disabled={busy || archived}>{active ? 'Steer' : 'Start run'}</button>
        {active && (
          <button type="button" class="danger" onClick={cancel}>Cancel run</button>
        )}
      </div>
    </form>
  );
}
