import { useCallback, useEffect, useState } from 'preact/hooks';
import { api, enc } from './api.js';
import { Sidebar } from './sidebar.jsx';
import { Stage } from './stage.jsx';
import { Panels } from './panels.jsx';
import { SandboxPage } from './sandbox-page.jsx';
import { useSession } from './use-session.js';
import { keepAlive } from './use-sandbox.js';

export function Workbench({ onSignOut, theme, onTheme }) {
  const [selection, setSelection] = useState(() => JSON.parse(sessionStorage.getItem('paddock.selection') ?? 'null'));
  const [session, setSession] = useState(null);
  const [notice, setNotice] = useState(null);
  const [refresh, setRefresh] = useState(0);
  const sessionId = selection?.session ?? null;
  const sandboxId = selection?.sandbox ?? null;
  const { view, status } = useSession(sessionId);

  // a reload takes this tab's console sandbox back before it lapses
  useEffect(() => keepAlive(), []);

  const select = useCallback((next) => {
    sessionStorage.setItem('paddock.selection', JSON.stringify(next));
    setSelection(next);
  }, []);

  useEffect(() => {
    if (!sessionId) {
      setSession(null);
      return;
    }
    api('GET', `/v1/sessions/${enc(sessionId)}`).then(setSession, (err) => setNotice(err.message));
  }, [sessionId, refresh]);

  const report = useCallback((err) => setNotice(err?.message ?? String(err)), []);
  const changed = useCallback(() => setRefresh((n) => n + 1), []);

  return (
    <div class="workbench">
      <header class="topbar">
        <span class="brand">Paddock</span>
        <span class="session-title" aria-live="polite">
          {sandboxId ? `Sandbox ${sandboxId}` : session ? session.title || session.id : 'No session open'}
          {session?.status === 'archived' && <span class="badge">archived</span>}
        </span>
        <span class={`stream stream-${status}`} title="event stream" data-testid="stream-status">{sessionId ? status : ''}</span>
        <button type="button" onClick={onTheme} aria-label={`Theme: ${theme}`}>Theme: {theme}</button>
        <button type="button" onClick={onSignOut}>Sign out</button>
      </header>
      {notice && (
        <div class="notice" role="alert">
          {notice}
          <button type="button" onClick={() => setNotice(null)} aria-label="Dismiss">×</button>
        </div>
      )}
      <Sidebar selection={selection} onSelect={select} onError={report} refresh={refresh} onChanged={changed} />
      {sandboxId ? (
        <SandboxPage key={sandboxId} id={sandboxId} onError={report} />
      ) : (
        <Stage session={session} view={view} onError={report} onChanged={changed} />
      )}
      <Panels session={sandboxId ? null : session} view={view} onError={report} onSelect={select} onChanged={changed} />
    </div>
  );
}
