import { useEffect, useState } from 'preact/hooks';
import { api, enc } from './api.js';

/** Snapshots of the session's workspace and its runs' end snapshots: restore, fork, download. */
export function SnapshotsPanel({ session, view, onError, onSelect, onChanged }) {
  const [snapshots, setSnapshots] = useState([]);
  const [restored, setRestored] = useState(null);
  const runOf = new Map([...view.runs.values()].filter((r) => r.finished?.end_snapshot).map((r) => [r.finished.end_snapshot, r.id]));

  const load = () =>
    api('GET', '/v1/snapshots?limit=1000').then(
      (page) => setSnapshots(page.snapshots.filter((s) => s.workspace === session.workspace || s.session === session.id || runOf.has(s.id))),
      onError,
    );

  useEffect(() => {
    load();
  }, [session.id, view.runs.size]);

  const restore = async (snapshot) => {
    try {
      const result = await api('POST', `/v1/snapshots/${enc(snapshot.id)}/restore`, { count: 1 });
      setRestored(result.sandboxes[0]);
    } catch (err) {
      onError(err);
    }
  };

  const fork = async (snapshot) => {
    try {
      const forked = await api('POST', `/v1/sessions/${enc(session.id)}/fork`, { at_run: runOf.get(snapshot.id), title: `${session.title || 'session'} (fork)` });
      onChanged();
      onSelect({ workspace: forked.workspace, session: forked.id });
    } catch (err) {
      onError(err);
    }
  };

  const download = async (snapshot) => {
    try {
      const blob = await api('GET', `/v1/snapshots/${enc(snapshot.id)}/archive`, undefined, { as: 'blob' });
      const link = document.createElement('a');
      link.href = URL.createObjectURL(blob);
      link.download = `${snapshot.id}.tar.zst`;
      link.click();
      setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
    } catch (err) {
      onError(err);
    }
  };

  return (
    <div data-testid="snapshots-panel">
      <button type="button" onClick={load}>Refresh</button>
      {restored && (
        <p role="status">
          Restored into sandbox <code>{restored.id}</code>.
        </p>
      )}
      {snapshots.length === 0 && <p class="hint">No snapshots yet.</p>}
      <ul class="snapshots">
        {snapshots.map((snapshot) => (
          <li key={snapshot.id} data-testid="snapshot">
            <code>{snapshot.id}</code> · {snapshot.file_count} entries · {formatBytes(snapshot.bytes_raw)} · {new Date(snapshot.created_at).toLocaleString()}
            {runOf.has(snapshot.id) && <span class="badge">end of {runOf.get(snapshot.id).slice(0, 12)}…</span>}
            <span class="row-actions">
              <button type="button" onClick={() => restore(snapshot)}>Restore</button>
              {runOf.has(snapshot.id) && <button type="button" onClick={() => fork(snapshot)}>Fork session here</button>}
              <button type="button" onClick={() => download(snapshot)}>Download</button>
            </span>
          </li>
        ))}
      </ul>
    </div>
  );
}

function formatBytes(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
