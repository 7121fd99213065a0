import { useEffect, useState } from 'preact/hooks';
import { api, enc } from './api.js';

/** Workspaces and their sessions: new, open, rename, archive, fork; and the running sandboxes. */
export function Sidebar({ selection, onSelect, onError, refresh, onChanged }) {
  const [workspaces, setWorkspaces] = useState([]);
  const [sessions, setSessions] = useState({});
  const [sandboxes, setSandboxes] = useState([]);
  const [open, setOpen] = useState(() => new Set(selection?.workspace ? [selection.workspace] : []));

  const loadSessions = (workspace) =>
    api('GET', `/v1/sessions?workspace=${enc(workspace)}&limit=1000`).then(
      (page) => setSessions((all) => ({ ...all, [workspace]: page.sessions })),
      onError,
    );

  useEffect(() => {
    api('GET', '/v1/workspaces?limit=1000').then((page) => setWorkspaces(page.workspaces), onError);
  }, [refresh]);

  useEffect(() => {
    api('GET', '/v1/sandboxes?state=running&limit=1000').then((page) => setSandboxes(page.sandboxes), onError);
  }, [refresh]);

  useEffect(() => {
    for (const workspace of open) loadSessions(workspace);
  }, [open, refresh]);

  const toggle = (id) => {
    const next = new Set(open);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setOpen(next);
  };

  const newWorkspace = async () => {
    const name = window.prompt('Name of the new workspace');
    if (!name) return;
    try {
      const workspace = await api('POST', '/v1/workspaces', { name });
      setWorkspaces((list) => [...list, workspace]);
      setOpen(new Set([...open, workspace.id]));
    } catch (err) {
      onError(err);
    }
  };

  const newSession = async (workspace) => {
    const title = window.prompt('Title of the new session') ?? '';
    try {
      const session = await api('POST', '/v1/sessions', { workspace, title });
      await loadSessions(workspace);
      onSelect({ workspace, session: session.id });
    } catch (err) {
      onError(err);
    }
  };

  const rename = async (session) => {
    const title = window.prompt('New title', session.title ?? '');
    if (title === null) return;
    try {
      await api('PATCH', `/v1/sessions/${enc(session.id)}`, { title });
      await loadSessions(session.workspace);
      onChanged();
    } catch (err) {
      onError(err);
    }
  };

  const archive = async (session) => {
    if (!window.confirm(`Archive "${session.title || session.id}"? It stays readable and takes no new run.`)) return;
    try {
      await api('DELETE', `/v1/sessions/${enc(session.id)}`);
      await loadSessions(session.workspace);
      onChanged();
    } catch (err) {
      onError(err);
    }
  };

  const fork = async (session) => {
    try {
      const forked = await api('POST', `/v1/sessions/${enc(session.id)}/fork`, { title: `${session.title || 'session'} (fork)` });
      setOpen(new Set([...open, forked.workspace]));
      setWorkspaces(await api('GET', '/v1/workspaces?limit=1000').then((page) => page.workspaces));
      onSelect({ workspace: forked.workspace, session: forked.id });
    } catch (err) {
      onError(err);
    }
  };

  return (
    <nav class="sidebar" aria-label="Workspaces and sessions">
      <div class="sidebar-head">
        <h2>Workspaces</h2>
        <button type="button" onClick={newWorkspace}>New workspace</button>
      </div>
      <ul class="tree">
        {workspaces.map((workspace) => (
          <li key={workspace.id}>
            <button type="button" class="tree-toggle" aria-expanded={open.has(workspace.id)} onClick={() => toggle(workspace.id)}>
              {open.has(workspace.id) ? '▾' : '▸'} {workspace.name || workspace.id}
            </button>
            {open.has(workspace.id) && (
              <ul>
                {(sessions[workspace.id] ?? []).map((session) => (
                  <li key={session.id} class={session.id === selection?.session ? 'selected' : ''}>
                    <button
                      type="button"
                      class="session-link"
                      aria-current={session.id === selection?.session ? 'true' : undefined}
                      onClick={() => onSelect({ workspace: workspace.id, session: session.id })}
                    >
                      {session.title || session.id}
                      {session.status === 'archived' && <span class="badge">archived</span>}
                    </button>
                    <span class="row-actions">
                      <button type="button" onClick={() => rename(session)} aria-label={`Rename ${session.title || session.id}`}>Rename</button>
                      <button type="button" onClick={() => fork(session)} aria-label={`Fork ${session.title || session.id}`}>Fork</button>
                      {session.status !== 'archived' && (
                        <button type="button" onClick={() => archive(session)} aria-label={`Archive ${session.title || session.id}`}>Archive</button>
                      )}
                    </span>
                  </li>
                ))}
                <li>
                  <button type="button" class="new-session" onClick={() => newSession(workspace.id)}>+ New session</button>
                </li>
              </ul>
            )}
          </li>
        ))}
      </ul>
      <div class="sidebar-head">
        <h2>Sandboxes</h2>
      </div>
      <ul class="tree" data-testid="sandbox-list">
        {sandboxes.length === 0 && <li class="hint">None running.</li>}
        {sandboxes.map((sandbox) => (
          <li key={sandbox.id} class={sandbox.id === selection?.sandbox ? 'selected' : ''}>
            <button
              type="button"
              class="session-link sandbox-link"
              data-testid="sandbox-link"
              aria-current={sandbox.id === selection?.sandbox ? 'true' : undefined}
              onClick={() => onSelect({ sandbox: sandbox.id })}
            >
              {sandbox.id}
              <span class="badge">{sandbox.backend}</span>
            </button>
          </li>
        ))}
      </ul>
    </nav>
  );
}
