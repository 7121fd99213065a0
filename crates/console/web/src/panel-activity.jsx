import { useMemo, useState } from 'preact/hooks';
import { VirtualList } from './virtual-list.jsx';

/** What the network filter keeps: every event, or egress decisions allowed or denied. */
const NETWORK = {
  '': () => true,
  egress: (e) => e.kind === 'egress.decision',
  allowed: (e) => e.kind === 'egress.decision' && e.payload?.allowed === true,
  denied: (e) => e.kind === 'egress.decision' && e.payload?.allowed === false,
};

/**
 * Every stored event of the session, one line each, filterable by kind, by
 * text and by egress decision (allowed, denied); virtualised.
 */
export function ActivityPanel({ view }) {
  const [kind, setKind] = useState('');
  const [text, setText] = useState('');
  const [network, setNetwork] = useState('');
  const events = view.events;
  const kinds = useMemo(() => [...new Set(events.map((e) => e.kind))].sort(), [events.length]);
  const needle = text.toLowerCase();
  const shown = useMemo(() => {
    const keep = NETWORK[network] ?? NETWORK[''];
    return events.filter((e) => (!kind || e.kind === kind) && keep(e) && (!needle || line(e).toLowerCase().includes(needle)));
  }, [events.length, kind, needle, network]);
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
          Network
          <select value={network} onChange={(e) => setNetwork(e.currentTarget.value)} data-testid="network-filter">
            <option value="">all events</option>
            <option value="egress">egress decisions</option>
            <option value="allowed">allowed</option>
            <option value="denied">denied</option>
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
          <div class={`event-row${egressClass(event)}`} title={JSON.stringify(event.payload)} data-testid={event.kind === 'egress.decision' ? 'egress-row' : undefined}>
            <span class="seq">{event.seq}</span> <span class="kind">{event.kind}</span> <span class="line">{line(event)}</span>
          </div>
        )}
      />
    </div>
  );
}

function egressClass(event) {
  if (event.kind !== 'egress.decision') return '';
  return event.payload?.allowed ? ' allowed' : ' denied';
}

/** `1.2 KiB`-style byte counts. */
function size(bytes) {
  if (!bytes) return '0 B';
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** An egress decision: allowed or denied, where, how, why, how much. */
function egressLine(p) {
  const verdict = p.allowed ? 'allowed' : 'denied';
  const times = p.count > 1 ? ` ×${p.count}` : '';
  const why = p.reason ? `: ${p.reason}` : '';
  const omitted = p.omitted ? ` (+${p.omitted} not listed)` : '';
  return `${verdict} ${p.host}:${p.port} via ${p.via}${times}, ${size(p.bytes_out)} out, ${size(p.bytes_in)} in${why}${omitted}`;
}

function line(event) {
  const p = event.payload ?? {};
  switch (event.kind) {
    case 'egress.decision':
      return egressLine(p);
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
