// The session view (src/session.js) under live events, without a browser:
// transient events (model.delta, tool.output) build what is under way, the
// stored events replace it in place, and a view built from the stored events
// alone (a reload) is the same once they are in. A real server's recorded
// stream (fixtures/answers.json, see e2e.mjs) is replayed too, and the
// events made up here must have the fields the server's events of their
// kind have. Run by orchestrator/tests/cli/console.rs with `node --test`.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { LIVE_OUTPUT_CAP, apply, applyLive, emptyView, eventOfFrame, isActive, isTransient } from '../src/session.js';

const recorded = JSON.parse(readFileSync(new URL('./fixtures/answers.json', import.meta.url), 'utf8'));
const RUN = 'run_1';
let seq = 0;
const madeUp = [];
const made = (event) => {
  madeUp.push(event);
  return event;
};
const stored = (kind, payload) => made({ seq: (seq += 1), run: RUN, created_at: '', kind, payload });
const live = (kind, payload) => made({ seq: 0, run: RUN, created_at: '', kind, payload });

/** What a person sees of the stage: type, text or tool and status. */
function stage(view) {
  return view.items.map((item) => {
    if (item.type === 'assistant') return ['assistant', item.text, item.streaming === true];
    if (item.type === 'tool') return ['tool', item.tool, item.result?.status ?? (item.pending ? 'preparing' : 'running'), item.output ?? ''];
    return [item.type];
  });
}

function replay(events) {
  const view = emptyView();
  for (const event of events) apply(view, event);
  return view;
}

test('only a transient kind without an id is transient', () => {
  assert.equal(isTransient({ event: 'model.delta' }), true);
  assert.equal(isTransient({ event: 'tool.output' }), true);
  assert.equal(isTransient({ event: 'model.delta', id: '4' }), false);
  assert.equal(isTransient({ event: 'tool.call' }), false);
});

test('deltas grow the answer and its calls; the stored events replace them in place', () => {
  seq = 0;
  const view = emptyView();
  const log = [stored('run.started', { goal: 'g', success_criteria: [], mode: 'build', network: { allowlist: ['example.invalid'] } })];
  apply(view, log[0]);
  applyLive(view, live('model.delta', { part: 'text', turn: 1, text: 'Hello ' }));
  applyLive(view, live('model.delta', { part: 'text', turn: 1, text: 'there' }));
  applyLive(view, live('model.delta', { part: 'tool_call', turn: 1, call_id: 'c1', tool: 'run_command' }));
  applyLive(view, live('model.delta', { part: 'tool_arguments', turn: 1, call_id: 'c1', json: '{"command":' }));
  assert.deepEqual(stage(view), [
    ['user'],
    ['assistant', 'Hello there', true],
    ['tool', 'run_command', 'preparing', ''],
  ]);
  assert.equal(view.items[2].argumentsText, '{"command":');
  assert.equal(view.lastSeq, 1, 'transient events move no sequence number');

  const message = stored('model.message', { turn: 1, text: 'Hello there.', tool_calls: [{ id: 'c1', name: 'run_command', arguments: { command: 'ls' } }] });
  const call = stored('tool.call', { call_id: 'c1', tool: 'run_command', arguments: { command: 'ls' } });
  log.push(message, call);
  apply(view, message);
  // a late delta of the answered turn adds nothing
  applyLive(view, live('model.delta', { part: 'text', turn: 1, text: ' again' }));
  apply(view, call);
  applyLive(view, live('tool.output', { call_id: 'c1', tool: 'run_command', stream: 'stdout', text: 'a\n', truncated: false }));
  applyLive(view, live('tool.output', { call_id: 'c1', tool: 'run_command', stream: 'stdout', text: 'b\n', truncated: false }));
  assert.deepEqual(stage(view), [
    ['user'],
    ['assistant', 'Hello there.', false],
    ['tool', 'run_command', 'running', 'a\nb\n'],
  ]);

  const result = stored('tool.result', { call_id: 'c1', tool: 'run_command', status: 'succeeded', content: 'a\nb\n', truncated: false });
  log.push(result);
  apply(view, result);
  // output after the result (a straggler) is not shown
  applyLive(view, live('tool.output', { call_id: 'c1', tool: 'run_command', stream: 'stdout', text: 'late', truncated: false }));
  assert.deepEqual(stage(view), [
    ['user'],
    ['assistant', 'Hello there.', false],
    ['tool', 'run_command', 'succeeded', ''],
  ]);
  // a reload builds the same stage from the stored events alone
  assert.deepEqual(stage(replay(log)), stage(view));
  // a resumed stream sends nothing twice, and what it repeats changes nothing
  for (const event of log) apply(view, event);
  assert.deepEqual(stage(view), stage(replay(log)));
  assert.equal(view.events.length, log.length);
  assert.equal(view.runs.get(RUN).network.allowlist[0], 'example.invalid');
});

test('a stored answer that did not stream goes before its turn\'s streamed calls', () => {
  seq = 0;
  const view = emptyView();
  apply(view, stored('run.started', { goal: 'g', success_criteria: [], mode: 'build' }));
  applyLive(view, live('model.delta', { part: 'tool_call', turn: 1, call_id: 'c1', tool: 'read_file' }));
  applyLive(view, live('model.delta', { part: 'tool_call', turn: 1, call_id: 'c2', tool: 'list_files' }));
  apply(view, stored('model.message', { turn: 1, text: 'Reading.', tool_calls: [{ id: 'c1', name: 'read_file', arguments: {} }] }));
  // c2 was announced but the answer does not hold it: gone
  assert.deepEqual(stage(view), [
    ['user'],
    ['assistant', 'Reading.', false],
    ['tool', 'read_file', 'preparing', ''],
  ]);
});

test('a run that ends mid-stream drops what only its deltas said', () => {
  seq = 0;
  const view = emptyView();
  const log = [stored('run.started', { goal: 'g', success_criteria: [], mode: 'build' })];
  apply(view, log[0]);
  applyLive(view, live('model.delta', { part: 'text', turn: 1, text: 'Half an ans' }));
  applyLive(view, live('model.delta', { part: 'tool_call', turn: 1, call_id: 'c1', tool: 'run_command' }));
  const finished = stored('run.finished', { state: 'cancelled', end_reason: 'cancelled' });
  log.push(finished);
  apply(view, finished);
  assert.deepEqual(stage(view), [['user'], ['finished']]);
  assert.deepEqual(stage(view), stage(replay(log)));
  assert.equal(view.streaming.size, 0);
  assert.equal(view.calls.size, 0);
});

test('a call\'s live output keeps its tail within the cap', () => {
  seq = 0;
  const view = emptyView();
  apply(view, stored('run.started', { goal: 'g', success_criteria: [], mode: 'build' }));
  apply(view, stored('tool.call', { call_id: 'c1', tool: 'run_command', arguments: {} }));
  const chunk = 'x'.repeat(8 * 1024);
  for (let i = 0; i < 10; i += 1) applyLive(view, live('tool.output', { call_id: 'c1', tool: 'run_command', stream: 'stdout', text: chunk, truncated: false }));
  applyLive(view, live('tool.output', { call_id: 'c1', tool: 'run_command', stream: 'stdout', text: 'END', truncated: false }));
  const item = view.items[1];
  assert.equal(item.output.length, LIVE_OUTPUT_CAP);
  assert.ok(item.output.endsWith('END'));
  assert.equal(item.outputCut, true);
});

/** The recorded session stream: the longest the fixtures hold. */
function recordedStream() {
  const exchange = recorded.exchanges.find((e) => e.route.startsWith('GET /v1/sessions/{id}/events ') && e.events?.length > 0);
  assert.ok(exchange, 'fixtures/answers.json holds no session event stream');
  return exchange.events.filter((frame) => frame.event !== 'error');
}

test('a recorded session stream builds its runs to the end, and a resume changes nothing', () => {
  const frames = recordedStream();
  const view = emptyView();
  for (const frame of frames) {
    if (isTransient(frame)) applyLive(view, eventOfFrame(frame));
    else apply(view, eventOfFrame(frame));
  }
  const kept = frames.filter((frame) => !isTransient(frame));
  assert.equal(view.events.length, kept.length, 'every stored event applied once');
  assert.equal(view.lastSeq, Number(kept.at(-1).id));
  assert.deepEqual(view.events.map((e) => e.seq), kept.map((_, i) => i + 1), 'in order, none missing');
  // the e2e's scripted run: its calls in order, each answered, then its end
  const tools = stage(view).filter(([type]) => type === 'tool').map(([, tool, status]) => [tool, status]);
  assert.deepEqual(tools.map(([tool]) => tool), ['update_plan', 'write_file', 'run_command', 'update_plan', 'complete_task']);
  assert.ok(tools.every(([, status]) => status === 'succeeded'), JSON.stringify(tools));
  assert.ok(stage(view).some(([type]) => type === 'finished'), 'the run finished');
  const run = view.runs.get(view.lastRun);
  assert.equal(run.goal, 'Write hello.txt with a greeting');
  // a resumed stream repeats events: nothing changes
  const before = stage(view);
  for (const frame of kept) apply(view, eventOfFrame(frame));
  assert.deepEqual(stage(view), before);
  assert.deepEqual(stage(replay(kept.map(eventOfFrame))), before, 'a reload builds the same stage');
});

test('the events made up above have only fields the server\'s recorded events of their kind have', () => {
  const fields = new Map();
  for (const frame of recordedStream()) {
    const { kind, payload } = eventOfFrame(frame);
    if (payload === null || typeof payload !== 'object') continue;
    const known = fields.get(kind) ?? new Set();
    for (const key of Object.keys(payload)) known.add(key);
    fields.set(kind, known);
  }
  const unknown = [];
  let checked = 0;
  for (const event of madeUp) {
    const known = fields.get(event.kind);
    if (!known) continue; // a kind the recorded run did not send
    checked += 1;
    for (const key of Object.keys(event.payload)) {
      if (!known.has(key)) unknown.push(`${event.kind}.${key}`);
    }
  }
  assert.ok(checked >= 10, `only ${checked} made-up events of recorded kinds`);
  assert.deepEqual([...new Set(unknown)], []);
});

test('a queued run is active: the view offers to cancel it', () => {
  assert.equal(isActive('queued'), true);
  for (const ended of ['completed', 'failed', 'cancelled', 'interrupted']) {
    assert.equal(isActive(ended), false, ended);
  }
});
