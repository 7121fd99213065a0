import { useState } from 'preact/hooks';
import { GoalPanel, PlanPanel, UsagePanel } from './panel-run.jsx';
import { ActivityPanel } from './panel-activity.jsx';
import { FilesPanel } from './panel-files.jsx';
import { TerminalPanel } from './panel-terminal.jsx';
import { SubagentsPanel } from './panel-subagents.jsx';
import { SnapshotsPanel } from './panel-snapshots.jsx';
import { useWorkspaceSandbox } from './use-sandbox.js';

const TABS = [
  ['goal', 'Goal'],
  ['plan', 'Plan'],
  ['activity', 'Activity'],
  ['files', 'Files'],
  ['terminal', 'Terminal'],
  ['subagents', 'Subagents'],
  ['snapshots', 'Snapshots'],
  ['usage', 'Usage'],
];

export function Panels({ session, view, onError, onSelect, onChanged }) {
  const [tab, setTab] = useState('goal');
  const sandbox = useWorkspaceSandbox(session?.workspace, onError);
  if (!session) return <aside class="panels" aria-label="Panels" />;
  const onKeyDown = (event) => {
    const index = TABS.findIndex(([id]) => id === tab);
    const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
    if (step === undefined) return;
    event.preventDefault();
    const next = TABS[(index + step + TABS.length) % TABS.length][0];
    setTab(next);
    document.getElementById(`tab-${next}`)?.focus();
  };
  return (
    <aside class="panels" aria-label="Panels">
      <div class="tabs" role="tablist" aria-label="Panels" onKeyDown={onKeyDown}>
        {TABS.map(([id, label]) => (
          <button
            key={id}
            id={`tab-${id}`}
            type="button"
            role="tab"
            aria-selected={tab === id}
            aria-controls={`panel-${id}`}
            tabIndex={tab === id ? 0 : -1}
            onClick={() => setTab(id)}
          >
            {label}
          </button>
        ))}
      </div>
      <section class="panel" id={`panel-${tab}`} role="tabpanel" aria-labelledby={`tab-${tab}`}>
        {tab === 'goal' && <GoalPanel view={view} />}
        {tab === 'plan' && <PlanPanel view={view} />}
        {tab === 'activity' && <ActivityPanel view={view} />}
        {tab === 'files' && <FilesPanel sandbox={sandbox} onError={onError} />}
        {tab === 'terminal' && <TerminalPanel sandbox={sandbox} onError={onError} />}
        {tab === 'subagents' && <SubagentsPanel view={view} onError={onError} />}
        {tab === 'snapshots' && <SnapshotsPanel session={session} view={view} onError={onError} onSelect={onSelect} onChanged={onChanged} />}
        {tab === 'usage' && <UsagePanel view={view} />}
      </section>
    </aside>
  );
}
