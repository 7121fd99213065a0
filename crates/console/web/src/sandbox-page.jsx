import { useEffect, useState } from 'preact/hooks';
import { api, enc } from './api.js';

/** How a sandbox's network reads: `none`, `full`, or its allowlist. */
export function networkLabel(network) {
  if (network && typeof network === 'object' && Array.isArray(network.allowlist)) {
    return `allow ${network.allowlist.join(', ')}`;
  }
  return String(network ?? '');
}

/** The entries of an allowlist typed one per line or separated by commas or spaces. */
export function parseAllowlist(text) {
  return text
    .split(/[\s,]+/)
    .map((entry) => entry.trim())
    .filter(Boolean);
}

/**
 * One sandbox: what it is, and for a sandbox with an allowlist the control
 * that changes it while it runs (PUT /v1/sandboxes/{id}/network) and the
 * stored history of its changes (GET .../network/changes), which stays
 * after the sandbox stops.
 */
export function SandboxPage({ id, onError }) {
  const [sandbox, setSandbox] = useState(null);
  const [changes, setChanges] = useState([]);
  const [refresh, setRefresh] = useState(0);

  useEffect(() => {
    let live = true;
    api('GET', `/v1/sandboxes/${enc(id)}`).then((sb) => live && setSandbox(sb), onError);
    loadChanges(id).then((all) => live && setChanges(all), onError);
    return () => {
      live = false;
    };
  }, [id, refresh]);

  if (!sandbox) {
    return (
      <main class="stage empty" id="stage">
        <p>Loading sandbox {id}…</p>
      </main>
    );
  }
  return (
    <main class="stage sandbox-page" id="stage" aria-label={`Sandbox ${id}`}>
      <h2>Sandbox <code>{sandbox.id}</code></h2>
      <dl class="facts">
        <dt>State</dt>
        <dd data-testid="sandbox-state">{sandbox.state}</dd>
        <dt>Backend</dt>
        <dd>{sandbox.backend}</dd>
        <dt>Network</dt>
        <dd data-testid="sandbox-network">{networkLabel(sandbox.network)}</dd>
      </dl>
      <NetworkControl sandbox={sandbox} onError={onError} onChanged={() => setRefresh((n) => n + 1)} />
      <NetworkHistory changes={changes} />
    </main>
  );
}

/** Every page of the sandbox's stored network changes, oldest first. */
async function loadChanges(id) {
  const all = [];
  let after = null;
  for (;;) {
    const query = after === null ? 'limit=1000' : `limit=1000&after=${after}`;
    const page = await api('GET', `/v1/sandboxes/${enc(id)}/network/changes?${query}`);
    all.push(...page.changes);
    if (page.next_after === null || page.next_after === undefined) return all;
    after = page.next_after;
  }
}

function NetworkControl({ sandbox, onError, onChanged }) {
  const allowlist = sandbox.network?.allowlist;
  const [text, setText] = useState((allowlist ?? []).join('\n'));
  const [busy, setBusy] = useState(false);
  const [refusal, setRefusal] = useState(null);
  const [applied, setApplied] = useState(null);

  useEffect(() => setText((allowlist ?? []).join('\n')), [sandbox.id, (allowlist ?? []).join('\n')]);

  if (!allowlist) {
    return (
      <section class="network-control" aria-label="Allowlist">
        <h3>Allowlist</h3>
        <p class="hint">
          Only a sandbox made with an allowlist can change its network while it runs; this one has
          network <code>{networkLabel(sandbox.network)}</code>.
        </p>
      </section>
    );
  }
  const running = sandbox.state === 'running';
  const apply = async (event) => {
    event.preventDefault();
    setBusy(true);
    setRefusal(null);
    setApplied(null);
    try {
      const change = await api('PUT', `/v1/sandboxes/${enc(sandbox.id)}/network`, {
        network: { allowlist: parseAllowlist(text) },
      });
      setApplied(change);
      onChanged();
    } catch (err) {
      // the server says why (bounds, a change a running sandbox cannot take)
      if (err?.status >= 400 && err.status < 500) setRefusal(err.message);
      else onError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="network-control" aria-label="Allowlist">
      <h3>Allowlist</h3>
      <form onSubmit={apply}>
        <label for="allowlist">
          Hosts the sandbox may reach, one per line: <code>host</code>, <code>*.suffix</code> or an
          IP, with <code>:port</code> for any TCP port.
        </label>
        <textarea
          id="allowlist"
          data-testid="allowlist-input"
          rows={Math.max(3, allowlist.length + 1)}
          value={text}
          onInput={(e) => setText(e.currentTarget.value)}
          disabled={!running || busy}
        />
        <button type="submit" data-testid="allowlist-apply" disabled={!running || busy}>
          {busy ? 'Applying…' : 'Apply'}
        </button>
        {!running && <p class="hint">The sandbox is {sandbox.state}: its allowlist no longer changes.</p>}
        {refusal && (
          <p role="alert" class="error" data-testid="allowlist-refused">
            {refusal}
          </p>
        )}
        {applied && (
          <p class="ok" role="status" data-testid="allowlist-applied">
            Applied change #{applied.seq}: {networkLabel(applied.new)}
            {applied.cut.length > 0 && ` (cut ${applied.cut.join(', ')})`}
          </p>
        )}
      </form>
    </section>
  );
}

function NetworkHistory({ changes }) {
  return (
    <section class="network-history" aria-label="Network changes">
      <h3>Changes</h3>
      {changes.length === 0 ? (
        <p class="hint">No change yet.</p>
      ) : (
        <table data-testid="network-changes">
          <thead>
            <tr>
              <th>#</th>
              <th>When</th>
              <th>By</th>
              <th>From</th>
              <th>To</th>
              <th>Cut</th>
            </tr>
          </thead>
          <tbody>
            {changes.map((change) => (
              <tr key={change.seq} data-testid="network-change">
                <td>{change.seq}</td>
                <td>{change.at}</td>
                <td>{change.by}</td>
                <td>{networkLabel(change.old)}</td>
                <td>{networkLabel(change.new)}</td>
                <td>{change.cut.length === 0 ? '–' : change.cut.join(', ')}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
