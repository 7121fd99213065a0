import { useMemo, useState } from 'preact/hooks';
import { VirtualList } from './virtual-list.jsx';

/** Every event of the session, one line each, filterable by kind and text; virtualised. */
export function ActivityPanel({ view }) {
  const [kind, setKind] = useState('');
  const [text, setText] = useState('');
  const events = view.events;
  const kinds = useMemo(() => [...new Set(events.map((e) => e.kind))].sort(), [events.length]);
  const needle = text.toLowerCase();
  const shown = useMemo(
    () =>
      events.filter((e) => (!kind || e.kind === kind) && (!needle || line(e).toLowerCase().includes(needle))),
    [events.length, kind, needle],
  );
  return (
    <div class="activity" data-testid="activity-panel">
      <div class="filters">
        <label>
          Kind
          <select value={kind} onChange={(e) => setKind(e.currentTarget.value)}>
            <option value="">all ({events.length})</option>
            {kinds.map((k) => (
              <option key={k} value={k}>{k}</option>
            ))}
          </select>
        </label>
        <label>
          Filter
          <input type="search" value={text} onInput={(e) => setText(e.currentTarget.value)} />
        </label>
      </div>
      <VirtualList
        items={shown}
        rowHeight={22}
        class="event-log"
        label="Event log"
        render={(event) => (
          <div class="event-row" title={JSON.stringify(event.payload)}>
            <span class="seq">{event.seq}</span> <span class="kind">{event.kind}</span> <span class="line">{line(event)}</span>
          </div>
        )}
      />
    </div>
  );
}

function line(event) {
  const p = event.payload ?? {};
  switch (event.kind) {
    case 'run.state':
      return p.state;
    case 'tool.call':
      return `${p.tool} ${JSON.stringify(p.arguments)}`;
    case 'tool.result':
      return `${p.tool} ${p.status} ${(p.content ?? '').slice(0, 200)}`;
    case 'model.message':
      return p.text ?? '';
    case 'run.finished':
      return `${p.state} ${p.end_reason}`;
    case 'subagent.status':
      return `${p.profile} ${p.task_id} ${p.status}`;
    default:
      return JSON.stringify(p).slice(0, 200);
  }
}
