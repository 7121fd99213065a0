import { useEffect, useState } from 'preact/hooks';
import { api, enc, readEventStream } from './api.js';

/** The subagents the session's runs spawned, their state and verdict; each child's events on demand. */
export function SubagentsPanel({ view, onError }) {
  const children = [...view.subagents.entries()];
  const [shown, setShown] = useState(null);
  if (children.length === 0) return <p class="hint">No subagents in this session.</p>;
  return (
    <div data-testid="subagents-panel">
      <ul class="subagents">
        {children.map(([id, child]) => (
          <li key={id} class={`child status-${child.status}`} data-testid="subagent">
            <div>
              <strong>{child.profile}</strong> {child.task_id} · <span class="badge">{child.status}</span>
              {child.state && <span> · {child.state}</span>}
              {child.verdict && <span> · verdict {child.verdict}</span>}
              {child.changed_paths !== undefined && <span> · {child.changed_paths} changed paths</span>}
            </div>
            {child.summary && <p class="summary">{child.summary}</p>}
            <ChangeSet id={id} child={child} onError={onError} />
            <button type="button" onClick={() => setShown(shown === id ? null : id)} aria-expanded={shown === id}>
              {shown === id ? 'Hide events' : 'Show events'}
            </button>
            {shown === id && <ChildEvents runId={id} onError={onError} />}
          </li>
        ))}
      </ul>
    </div>
  );
}

function ChildEvents({ runId, onError }) {
  const [events, setEvents] = useState([]);
  useEffect(() => {
    const collected = [];
    const controller = new AbortController();
    readEventStream(`/v1/runs/${enc(runId)}/events`, {
      signal: controller.signal,
      reconnect: false,
      onEvent: (frame) => {
        collected.push({ id: frame.id, kind: frame.event, data: frame.data });
        setEvents([...collected]);
      },
      onStatus: (status, err) => status === 'error' && onError(err),
    });
    return () => controller.abort();
  }, [runId]);
  return (
    <ol class="child-events">
      {events.map((event) => (
        <li key={event.id}>
          <span class="kind">{event.kind}</span> <span class="line">{summarise(event.data)}</span>
        </li>
      ))}
    </ol>
  );
}

function summarise(data) {
  try {
    const payload = JSON.parse(data).payload ?? {};
    return (payload.text ?? payload.content ?? payload.state ?? JSON.stringify(payload)).toString().slice(0, 160);
  } catch {
    return data.slice(0, 160);
  }
}

/**
 * Apply or reject a finished build child's change set into its parent's
 * workspace, while the parent runs (the parent's own tools do the work; its
 * model sees the new state).
 */
function ChangeSet({ id, child, onError }) {
  const [decided, setDecided] = useState(null);
  const [busy, setBusy] = useState(false);
  if (child.profile !== 'build' || child.status !== 'finished' || !child.changed_paths || !child.parent) return null;
  if (decided) return <p class="subagent-actions" data-testid="change-set-decided">Change set {decided}.</p>;
  const decide = async (decision) => {
    setBusy(true);
    try {
      await api('POST', `/v1/runs/${enc(child.parent)}/children/${enc(id)}/changes`, { decision });
      setDecided(decision === 'apply' ? 'applied' : 'rejected');
    } catch (err) {
      onError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="subagent-actions">
      <button type="button" disabled={busy} onClick={() => decide('apply')}>Apply changes</button>
      <button type="button" disabled={busy} onClick={() => decide('reject')}>Reject changes</button>
    </div>
  );
}
