/** The latest run's goal, criteria, state and review; its plan; its usage against its budgets. */

function latestRun(view) {
  return view.lastRun ? view.runs.get(view.lastRun) : null;
}

/** The network policy of `run.started`: none, full, or the allowed destinations. */
export function networkLabel(network) {
  if (network === null || network === undefined || network === 'none') return 'none (loopback only)';
  if (network === 'full') return 'full (any destination, through the egress proxy)';
  if (Array.isArray(network.allowlist)) return `allow ${network.allowlist.join(', ')}`;
  return JSON.stringify(network);
}

export function GoalPanel({ view }) {
  const run = latestRun(view);
  if (!run) return <p class="hint">No run yet in this session.</p>;
  const review = run.review;
  return (
    <div data-testid="goal-panel">
      <h3>Goal</h3>
      <p class="text">{run.goal}</p>
      <p>
        State: <strong data-testid="run-state">{run.state}</strong> · mode {run.mode} · model {run.model}
        {run.driver && run.driver !== 'builtin' && <> · driver <span data-testid="run-driver">{run.driver}</span></>}
        {run.backend && <> · backend {run.backend}</>}
      </p>
      <p>
        Network: <span data-testid="run-network">{networkLabel(run.network)}</span>
      </p>
      {run.criteria.length > 0 && (
        <>
          <h4>Success criteria</h4>
          <ul>
            {run.criteria.map((criterion) => {
              const judged = review?.criteria?.find((c) => c.criterion === criterion);
              return (
                <li key={criterion}>
                  {judged ? <strong>[{judged.verdict}]</strong> : <span class="badge">pending</span>} {criterion}
                  {judged?.evidence && <span class="evidence">: {judged.evidence}</span>}
                </li>
              );
            })}
          </ul>
        </>
      )}
      {review && (
        <>
          <h4>Review: {review.verdict}</h4>
          {review.summary && <p>{review.summary}</p>}
          {review.evidence?.length > 0 && (
            <ul>
              {review.evidence.map((line) => (
                <li key={line}>{line}</li>
              ))}
            </ul>
          )}
          {review.remaining?.length > 0 && (
            <>
              <h4>Remaining</h4>
              <ul>
                {review.remaining.map((line) => (
                  <li key={line}>{line}</li>
                ))}
              </ul>
            </>
          )}
        </>
      )}
    </div>
  );
}

const TASK_MARK = { done: '✔', in_progress: '▶', pending: '○', blocked: '⨯', cancelled: '–' };

export function PlanPanel({ view }) {
  const plan = view.plan;
  if (!plan) return <p class="hint">No plan yet.</p>;
  return (
    <div data-testid="plan-panel">
      <h3>Plan v{plan.version}</h3>
      {plan.explanation && <p>{plan.explanation}</p>}
      <ol class="plan">
        {plan.tasks.map((task) => (
          <li key={task.key} class={`task task-${task.status}`}>
            <span aria-hidden="true">{TASK_MARK[task.status] ?? '?'}</span> {task.title} <span class="badge">{task.status}</span>
          </li>
        ))}
      </ol>
    </div>
  );
}

const USAGE = [
  ['turns', 'max_turns', 'model turns'],
  ['tool_calls', 'max_tool_calls', 'tool calls'],
  ['wall_clock_ms', 'max_wall_clock_ms', 'ms wall clock'],
];

export function UsagePanel({ view }) {
  const run = latestRun(view);
  if (!run) return <p class="hint">No run yet.</p>;
  const usage = run.usage ?? {};
  const budgets = run.budgets ?? {};
  const tokens = (usage.input_tokens ?? 0) + (usage.output_tokens ?? 0);
  const rows = [...USAGE.map(([key, limit, label]) => [usage[key] ?? 0, budgets[limit], label]), [tokens, budgets.max_tokens, 'tokens']];
  const total = run.finished?.total_usage;
  return (
    <>
    <table class="usage" data-testid="usage-panel">
      <tbody>
        {rows.map(([used, limit, label]) => (
          <tr key={label}>
            <th scope="row">{label}</th>
            <td>{used}</td>
            <td>{limit ? `of ${limit}` : ''}</td>
            <td>{limit ? <meter min={0} max={limit} value={used} aria-label={`${label} used`} /> : null}</td>
          </tr>
        ))}
      </tbody>
    </table>
    {total && (
      <p data-testid="total-usage">
        With its subagents: {total.turns} model turns, {total.tool_calls} tool calls, {(total.input_tokens ?? 0) + (total.output_tokens ?? 0)} tokens.
      </p>
    )}
    </>
  );
}
