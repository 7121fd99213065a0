// A session's view, derived from its event stream alone: the items of the
// main stage, the runs with their state, plan, review and usage, and the
// subagents. Events are applied in sequence order exactly once (the reader
// drops ids it has seen), so a reload or a reconnect rebuilds the same view.
//
// Transient events (`model.delta`, `tool.output`: live only, never stored,
// sent without an id and with seq 0) fill in what is under way: the text of
// a turn the model is still writing, a call whose arguments are still
// coming, a command's output while it runs. The stored event that says the
// same in full (`model.message`, `tool.call`, `tool.result`) replaces what
// they built, in place, so nothing shows twice; what they built for a run
// that ended without it is dropped, so a reload shows the same view.

/** Kinds sent live only, never stored (no id, seq 0). */
export const TRANSIENT = new Set(['model.delta', 'tool.output']);

/** Characters of a running call's live output the page keeps (the tail). */
export const LIVE_OUTPUT_CAP = 64 * 1024;

// queued: waiting for a slot, cancellable like a running run
const ACTIVE = new Set(['queued', 'preparing', 'planning', 'acting', 'observing', 'verifying', 'cancelling']);

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
    streaming: new Map(), // `${run}/${turn}` -> the assistant item its deltas build
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
        driver: p.driver?.kind ?? 'builtin',
        backend: p.backend ?? null,
        network: p.network ?? null,
        state: 'preparing',
      });
      view.lastRun = run.id;
      view.items.push({ key: `goal-${event.seq}`, type: 'user', seq: event.seq, run: run.id, text: p.goal, criteria: p.success_criteria ?? [], mode: p.mode });
      break;
    case 'run.state':
      run.state = p.state;
      if (p.usage) run.usage = p.usage;
      break;
    case 'model.message': {
      if (p.usage && run) run.lastTurnUsage = p.usage;
      if (run) run.lastTurn = Math.max(run.lastTurn ?? 0, p.turn ?? 0);
      const key = `${event.run}/${p.turn}`;
      const streamed = view.streaming.get(key);
      view.streaming.delete(key);
      const hasText = p.text && p.text.trim() !== '';
      if (streamed) {
        // the stored answer replaces what its deltas built, in place
        if (hasText) Object.assign(streamed, { seq: event.seq, text: p.text, streaming: false });
        else removeItem(view, streamed);
      } else if (hasText) {
        const item = { key: `msg-${event.seq}`, type: 'assistant', seq: event.seq, run: event.run, text: p.text, turn: p.turn };
        // before the calls of this turn whose arguments streamed already
        const at = view.items.findIndex((i) => i.type === 'tool' && i.pending && i.run === event.run && i.turn === p.turn);
        if (at < 0) view.items.push(item);
        else view.items.splice(at, 0, item);
      }
      // calls announced while streaming that the answer does not hold
      const held = new Set((p.tool_calls ?? []).map((call) => call.id));
      dropPending(view, (item) => item.run === event.run && item.turn === p.turn && !held.has(item.callId));
      break;
    }
    case 'tool.call': {
      const known = view.calls.get(`${event.run}/${p.call_id}`);
      if (known?.pending) {
        Object.assign(known, { seq: event.seq, arguments: p.arguments, argumentsText: null, pending: false });
        break;
      }
      const item = { key: `call-${event.seq}`, type: 'tool', seq: event.seq, run: event.run, tool: p.tool, callId: p.call_id, arguments: p.arguments, result: null, output: '' };
      view.calls.set(`${event.run}/${p.call_id}`, item);
      view.items.push(item);
      break;
    }
    case 'tool.result': {
      const item = view.calls.get(`${event.run}/${p.call_id}`);
      if (item) {
        // the stored result replaces the output that streamed
        Object.assign(item, { result: p, output: '', outputCut: false, pending: false });
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
      dropLive(view, event.run);
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

/**
 * Applies one transient event (`model.delta`, `tool.output`) to the view, in
 * place. Never stored, so it has no sequence number: it only fills in what
 * the stored events will say in full.
 */
export function applyLive(view, event) {
  const p = event.payload ?? {};
  if (!event.run) return;
  const run = view.runs.get(event.run);
  // a turn whose stored answer is in already (a late delta) shows nothing more
  const answered = (turn) => (run?.lastTurn ?? 0) >= turn;
  if (event.kind === 'model.delta') {
    if (answered(p.turn)) return;
    if (p.part === 'text') {
      const key = `${event.run}/${p.turn}`;
      let item = view.streaming.get(key);
      if (!item) {
        item = { key: `live-${key}`, type: 'assistant', seq: 0, run: event.run, text: '', turn: p.turn, streaming: true };
        view.streaming.set(key, item);
        view.items.push(item);
      }
      item.text += p.text ?? '';
    } else if (p.part === 'tool_call') {
      const key = `${event.run}/${p.call_id}`;
      if (view.calls.has(key)) return;
      const item = { key: `live-call-${key}`, type: 'tool', seq: 0, run: event.run, turn: p.turn, tool: p.tool, callId: p.call_id, arguments: null, argumentsText: '', result: null, output: '', pending: true };
      view.calls.set(key, item);
      view.items.push(item);
    } else if (p.part === 'tool_arguments') {
      const item = view.calls.get(`${event.run}/${p.call_id}`);
      if (item?.pending) item.argumentsText += p.json ?? '';
    }
  } else if (event.kind === 'tool.output') {
    const item = view.calls.get(`${event.run}/${p.call_id}`);
    if (!item || item.result) return;
    let output = item.output + (p.text ?? '');
    if (output.length > LIVE_OUTPUT_CAP) {
      output = output.slice(output.length - LIVE_OUTPUT_CAP);
      item.outputCut = true;
    }
    item.output = output;
    if (p.truncated) item.outputCut = true;
  }
}

function removeItem(view, item) {
  const at = view.items.indexOf(item);
  if (at >= 0) view.items.splice(at, 1);
}

function dropPending(view, which) {
  for (const [key, item] of view.calls) {
    if (item.pending && which(item)) {
      view.calls.delete(key);
      removeItem(view, item);
    }
  }
}

/** What deltas built for a run that ended without the stored events saying it. */
function dropLive(view, runId) {
  for (const [key, item] of view.streaming) {
    if (item.run === runId) {
      view.streaming.delete(key);
      removeItem(view, item);
    }
  }
  dropPending(view, (item) => item.run === runId);
  for (const item of view.calls.values()) {
    if (item.run === runId) item.output = '';
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

/** The event an SSE frame of the session stream carries (seq 0: transient). */
export function eventOfFrame(frame) {
  const data = JSON.parse(frame.data);
  return { seq: data.seq, run: data.run, created_at: data.created_at, kind: frame.event, payload: data.payload };
}

/** Whether a frame is a transient event: no id, a transient kind. */
export function isTransient(frame) {
  return frame.id === undefined && TRANSIENT.has(frame.event);
}
