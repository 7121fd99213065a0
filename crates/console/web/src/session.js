// A session's view, derived from its event stream alone: the items of the
// main stage, the runs with their state, plan, review and usage, and the
// subagents. Events are applied in sequence order exactly once (the reader
// drops ids it has seen), so a reload or a reconnect rebuilds the same view.

const ACTIVE = new Set(['preparing', 'planning', 'acting', 'observing', 'verifying', 'cancelling']);

export function isActive(state) {
  return ACTIVE.has(state);
}

export function emptyView() {
  return {
    events: [], // every event, for the activity log
    items: [], // the main stage
    runs: new Map(), // run id -> { id, goal, criteria, mode, budgets, model, state, usage, review, finished }
    lastRun: null,
    plan: null,
    subagents: new Map(), // child run id -> latest subagent.status payload
    calls: new Map(), // `${run}/${call_id}` -> stage item
    lastSeq: 0,
  };
}

/** Applies one stored event (`{seq, run, created_at, kind, payload}`) to the view, in place. */
export function apply(view, event) {
  if (event.seq <= view.lastSeq) return;
  view.lastSeq = event.seq;
  view.events.push(event);
  const p = event.payload ?? {};
  const run = event.run ? runOf(view, event.run) : null;
  switch (event.kind) {
    case 'run.started':
      Object.assign(run, {
        goal: p.goal,
        criteria: p.success_criteria ?? [],
        mode: p.mode,
        budgets: p.budgets,
        model: p.model,
        state: 'preparing',
      });
      view.lastRun = run.id;
      view.items.push({ key: `goal-${event.seq}`, type: 'user', seq: event.seq, run: run.id, text: p.goal, criteria: p.success_criteria ?? [], mode: p.mode });
      break;
    case 'run.state':
      run.state = p.state;
      if (p.usage) run.usage = p.usage;
      break;
    case 'model.message':
      if (p.usage && run) run.lastTurnUsage = p.usage;
      if (p.text && p.text.trim() !== '') {
        view.items.push({ key: `msg-${event.seq}`, type: 'assistant', seq: event.seq, run: event.run, text: p.text, turn: p.turn });
      }
      break;
    case 'tool.call': {
      const item = { key: `call-${event.seq}`, type: 'tool', seq: event.seq, run: event.run, tool: p.tool, callId: p.call_id, arguments: p.arguments, result: null };
      view.calls.set(`${event.run}/${p.call_id}`, item);
      view.items.push(item);
      break;
    }
    case 'tool.result': {
      const item = view.calls.get(`${event.run}/${p.call_id}`);
      if (item) {
        item.result = p;
        view.calls.delete(`${event.run}/${p.call_id}`);
      } else {
        view.items.push({ key: `res-${event.seq}`, type: 'tool', seq: event.seq, run: event.run, tool: p.tool, callId: p.call_id, arguments: null, result: p });
      }
      break;
    }
    case 'plan.updated':
      view.plan = { version: p.version, explanation: p.explanation, tasks: p.tasks ?? [], run: event.run };
      break;
    case 'progress':
      view.items.push({ key: `prog-${event.seq}`, type: 'note', seq: event.seq, run: event.run, text: p.message });
      break;
    case 'run.review':
      run.review = p;
      view.items.push({ key: `rev-${event.seq}`, type: 'review', seq: event.seq, run: event.run, review: p });
      break;
    case 'run.finished':
      Object.assign(run, { state: p.state, usage: p.usage ?? run.usage, finished: p });
      view.items.push({ key: `fin-${event.seq}`, type: 'finished', seq: event.seq, run: event.run, finished: p });
      break;
    case 'subagent.status': {
      const previous = view.subagents.get(p.run_id) ?? {};
      view.subagents.set(p.run_id, { ...previous, ...stripNulls(p), parent: event.run });
      break;
    }
    case 'parent.message':
      view.items.push({ key: `pm-${event.seq}`, type: 'note', seq: event.seq, run: event.run, text: `Parent: ${p.message}` });
      break;
    case 'user.message':
    case 'run.steered':
      view.items.push({ key: `steer-${event.seq}`, type: 'user', seq: event.seq, run: event.run, text: p.text ?? p.message ?? '', steer: true });
      break;
    default:
      break;
  }
}

function runOf(view, id) {
  let run = view.runs.get(id);
  if (!run) {
    run = { id, goal: '', criteria: [], state: null, usage: null, review: null, finished: null };
    view.runs.set(id, run);
  }
  return run;
}

function stripNulls(object) {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== null && value !== undefined));
}

/** The stored event an SSE frame of the session stream carries. */
export function eventOfFrame(frame) {
  const data = JSON.parse(frame.data);
  return { seq: data.seq, run: data.run, created_at: data.created_at, kind: frame.event, payload: data.payload };
}
