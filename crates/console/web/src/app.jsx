import { useState } from 'preact/hooks';
import { api, auth, ApiError } from './api.js';
import { Workbench } from './workbench.jsx';
import { endConsoleSandboxes } from './use-sandbox.js';

export function App() {
  const [signedIn, setSignedIn] = useState(Boolean(auth.token));
  const [theme, setTheme] = useState(() => localStorage.getItem('paddock.theme') ?? 'auto');
  document.documentElement.dataset.theme = theme;
  const cycleTheme = () => {
    const next = { auto: 'light', light: 'dark', dark: 'auto' }[theme];
    localStorage.setItem('paddock.theme', next);
    setTheme(next);
  };
  const signOut = async () => {
    // the workspaces this tab's console sandboxes hold are free at once
    await endConsoleSandboxes();
    auth.clear();
    setSignedIn(false);
  };
  return signedIn ? (
    <Workbench onSignOut={signOut} theme={theme} onTheme={cycleTheme} />
  ) : (
    <SignIn onSignedIn={() => setSignedIn(true)} />
  );
}

function SignIn({ onSignedIn }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    auth.set(token.trim());
    try {
      await api('GET', '/v1/workspaces?limit=1');
      onSignedIn();
    } catch (err) {
      auth.clear();
      setError(err instanceof ApiError && err.status === 401 ? 'That token is not valid on this server.' : `Could not sign in: ${err.message}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin">
      <form onSubmit={submit} aria-labelledby="signin-title">
        <h1 id="signin-title">Paddock</h1>
        <p>Sign in with a tenant token. It is kept in this browser tab only.</p>
        <label for="token">Token</label>
        <input id="token" type="password" autocomplete="off" value={token} onInput={(e) => setToken(e.currentTarget.value)} required minLength={16} autofocus />
        <button type="submit" disabled={busy}>{busy ? 'Signing in…' : 'Sign in'}</button>
        {error && <p role="alert" class="error">{error}</p>}
      </form>
    </main>
  );
}
