// The console end to end in a real browser: Debian's chromium, headless,
// driven by playwright-core against a real `paddock serve` whose runs use
// the scripted model. Started by orchestrator/tests/cli/console.rs with
// PADDOCK_URL, PADDOCK_TOKEN and ARTIFACTS (a directory for screenshots).
// Exits non-zero with the failing step's message.
//
// Every request the console sends and every answer it gets (bodies, and
// the events of the streams that end) is checked against the OpenAPI
// document the server serves (openapi.mjs); with RECORD_ANSWERS=FILE they
// are written there as well, one per route and status: the recorded
// answers of fixtures/answers.json that contract.test.mjs and
// session.test.mjs read.
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkExchange, framesOf, operationFor } from './openapi.mjs';

const url = process.env.PADDOCK_URL;
const token = process.env.PADDOCK_TOKEN;
const artifacts = process.env.ARTIFACTS ?? 'console-artifacts';
const chromiumPath = process.env.CHROMIUM ?? '/usr/bin/chromium';
assert.ok(url && token, 'PADDOCK_URL and PADDOCK_TOKEN must be set');
mkdirSync(artifacts, { recursive: true });

const TIMEOUT = 30_000;

async function apiCall(method, path, body, raw = false) {
  const headers = { Authorization: `Bearer ${token}` };
  if (body !== undefined && !raw) headers['Content-Type'] = 'application/json';
  const res = await fetch(url + path, { method, headers, body: body === undefined ? undefined : raw ? body : JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? (raw ? text : JSON.parse(text)) : null;
}

/** The session's stored events, counted from the server's own stream. */
async function storedEvents(sessionId) {
  const path = `/v1/sessions/${sessionId}/events?until=caught_up`;
  const res = await fetch(`${url}${path}`, { headers: { Authorization: `Bearer ${token}` } });
  const text = await res.text();
  // the stream the console reads, whole: recorded and checked like its own
  const frames = framesOf(text);
  observed({ method: 'GET', path, status: res.status, events: frames });
  // and the first run's own stream (the subagents panel reads children's),
  // which ends after its run.finished
  const run = frames.map((frame) => JSON.parse(frame.data).run).find(Boolean);
  if (run) {
    const runPath = `/v1/runs/${run}/events`;
    const runRes = await fetch(`${url}${runPath}`, { headers: { Authorization: `Bearer ${token}` } });
    observed({ method: 'GET', path: runPath, status: runRes.status, events: framesOf(await runRes.text()) });
  }
  return [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
}

// The OpenAPI document as this server serves it, and what the console sent
// and got, checked against it.
const servedDoc = await (await fetch(`${url}/v1/openapi.json`)).json();
const exchanges = [];
const contractErrors = [];
const observing = [];

function observed(exchange) {
  contractErrors.push(...checkExchange(servedDoc, exchange));
  exchanges.push(exchange);
}

/** One finished browser request under /v1 as an exchange. */
async function observe(request) {
  const where = new URL(request.url());
  if (!where.pathname.startsWith('/v1/') || where.pathname === '/v1/openapi.json') return;
  const response = await request.response();
  if (!response) return;
  const exchange = { method: request.method(), path: where.pathname + where.search, status: response.status() };
  const sent = request.headers()['content-type'] ?? '';
  if (sent.startsWith('application/json') && request.postData()) exchange.request = JSON.parse(request.postData());
  const answer = response.headers()['content-type'] ?? '';
  try {
    if (answer.startsWith('application/json')) exchange.response = await response.json();
    else if (answer.startsWith('text/event-stream')) exchange.events = framesOf(await response.text());
  } catch {
    return; // the body went with the page (a reload, a closed tab)
  }
  observed(exchange);
}

/** The exchanges to keep as fixtures: one per route and status (a stream's longest). */
function fixtures() {
  const kept = new Map();
  for (const exchange of exchanges) {
    const found = operationFor(servedDoc, exchange.method, exchange.path.split('?')[0]);
    const key = `${exchange.method} ${found?.template ?? exchange.path} ${exchange.status}`;
    const before = kept.get(key);
    if (!before || (exchange.events?.length ?? 0) > (before.events?.length ?? 0)) kept.set(key, { route: key, ...exchange });
  }
  return [...kept.values()].sort((a, b) => a.route.localeCompare(b.route));
}

const script = {
  turns: [
    {
      text: 'I will write the greeting, then check it.',
      tool_calls: [
        { name: 'update_plan', arguments: { steps: [
          { id: 'write', title: 'Write hello.txt', status: 'in_progress' },
          { id: 'check', title: 'Check it', status: 'pending' },
        ] } },
        { name: 'write_file', arguments: { path: 'hello.txt', content: 'hello from the agent\n' } },
      ],
    },
    {
      text: 'Checking the file (slowly, so a reader can reload meanwhile).',
      tool_calls: [{ name: 'run_command', arguments: { command: 'sleep 4; cat hello.txt' } }],
    },
    {
      text: 'The file says hello.',
      tool_calls: [
        { name: 'update_plan', arguments: { steps: [
          { id: 'write', title: 'Write hello.txt', status: 'done' },
          { id: 'check', title: 'Check it', status: 'done' },
        ] } },
        { name: 'complete_task', arguments: { verdict: 'met', summary: 'hello.txt holds the greeting', evidence: ['cat hello.txt printed it'] } },
      ],
    },
  ],
};

const browser = await chromium.launch({
  executablePath: chromiumPath,
  headless: true,
  args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update'],
});
const failures = [];
const step = async (name, body) => {
  const started = Date.now();
  try {
    await body();
    console.log(`ok   ${name} (${Date.now() - started} ms)`);
  } catch (err) {
    console.log(`FAIL ${name}: ${err.message}`);
    failures.push(name);
    throw err;
  }
};

try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  context.on('requestfinished', (request) => observing.push(observe(request)));
  const page = await context.newPage();
  const consoleErrors = [];
  page.on('pageerror', (err) => consoleErrors.push(err.message));
  page.on('dialog', (dialog) => dialog.accept(dialogAnswers.shift() ?? ''));
  const dialogAnswers = [];
  const shot = (name) => page.screenshot({ path: join(artifacts, `${name}.png`) });

  await step('a wrong token is refused, the right one signs in', async () => {
    await page.goto(url);
    await page.fill('#token', 'not-the-right-token-at-all');
    await page.click('button[type=submit]');
    await page.getByRole('alert').filter({ hasText: 'not valid' }).waitFor({ timeout: TIMEOUT });
    await shot('01-sign-in-refused');
    await page.fill('#token', token);
    await page.click('button[type=submit]');
    await page.getByRole('button', { name: 'New workspace' }).waitFor({ timeout: TIMEOUT });
  });

  let sessionId;
  await step('make a workspace and a session', async () => {
    dialogAnswers.push('console-e2e');
    await page.getByRole('button', { name: 'New workspace' }).click();
    await page.getByRole('button', { name: '+ New session' }).waitFor({ timeout: TIMEOUT });
    dialogAnswers.push('greeting');
    await page.getByRole('button', { name: '+ New session' }).click();
    await page.locator('.session-title', { hasText: 'greeting' }).waitFor({ timeout: TIMEOUT });
    sessionId = JSON.parse(await page.evaluate(() => sessionStorage.getItem('paddock.selection'))).session;
    assert.match(sessionId, /^ses_[0-9a-f]{32}$/);
  });

  await step('start a run and watch plan and tool calls arrive live', async () => {
    await page.fill('#goal', 'Write hello.txt with a greeting');
    await page.click('.run-options summary');
    await page.fill('[data-testid=script]', JSON.stringify(script));
    await page.getByRole('button', { name: 'Start run' }).click();
    await page.locator('[data-testid=tool-call]', { hasText: 'write_file' }).waitFor({ timeout: TIMEOUT });
    await page.getByRole('tab', { name: 'Plan' }).click();
    await page.locator('[data-testid=plan-panel] .task', { hasText: 'Write hello.txt' }).waitFor({ timeout: TIMEOUT });
    await page.locator('[data-testid=tool-call]', { hasText: 'run_command' }).waitFor({ timeout: TIMEOUT });
    await shot('02-run-live-plan');
  });

  await step('reload mid-run: the stream resumes with nothing lost and nothing twice', async () => {
    await page.reload();
    await page.locator('[data-testid=run-finished]').waitFor({ timeout: TIMEOUT });
    const stored = await storedEvents(sessionId);
    assert.ok(stored.length >= 10, `only ${stored.length} events stored`);
    assert.deepEqual(stored, stored.map((_, i) => i + 1), 'the server stream has gaps');
    await page.getByRole('tab', { name: 'Activity' }).click();
    const label = await page.locator('[data-testid=activity-panel] select option').first().textContent();
    assert.equal(label, `all (${stored.length})`);
    assert.equal(await page.locator('[data-testid=tool-call]').count(), 5, 'one stage item per tool call');
    await shot('03-activity-log');
  });

  await step('the review and the goal panel show the verdict', async () => {
    await page.locator('[data-testid=review]', { hasText: 'met' }).waitFor({ timeout: TIMEOUT });
    await page.getByRole('tab', { name: 'Goal' }).click();
    assert.equal(await page.locator('[data-testid=run-state]').textContent(), 'completed');
    await shot('04-goal-review');
    await page.getByRole('tab', { name: 'Usage' }).click();
    await page.locator('[data-testid=usage-panel]').waitFor();
    await shot('05-usage');
  });

  await step('open a file, edit it and save through the file API', async () => {
    await page.getByRole('tab', { name: 'Files' }).click();
    await page.getByRole('button', { name: 'hello.txt' }).click();
    await page.locator('.cm-content', { hasText: 'hello from the agent' }).waitFor({ timeout: TIMEOUT });
    await page.locator('.cm-content').click();
    await page.keyboard.press('Control+End');
    await page.keyboard.type('edited in the console');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.locator('[data-testid=editor-status]', { hasText: 'saved' }).waitFor({ timeout: TIMEOUT });
    await shot('06-editor');
  });

  let sandboxId;
  await step('a change made elsewhere meanwhile is reported as a conflict, not overwritten', async () => {
    const workspace = JSON.parse(await page.evaluate(() => sessionStorage.getItem('paddock.selection'))).workspace;
    sandboxId = await page.evaluate((ws) => sessionStorage.getItem(`paddock.sandbox.${ws}`), workspace);
    const saved = await apiCall('GET', `/v1/sandboxes/${sandboxId}/files/hello.txt`, undefined, true);
    assert.equal(saved, 'hello from the agent\nedited in the console');
    await new Promise((resolve) => setTimeout(resolve, 20));
    await apiCall('PUT', `/v1/sandboxes/${sandboxId}/files/hello.txt`, 'changed by someone else, longer\n', true);
    await page.locator('.cm-content').click();
    await page.keyboard.type('!');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.locator('[data-testid=conflict]').waitFor({ timeout: TIMEOUT });
    const kept = await apiCall('GET', `/v1/sandboxes/${sandboxId}/files/hello.txt`, undefined, true);
    assert.equal(kept, 'changed by someone else, longer\n');
    await shot('07-conflict');
  });

  await step('a file whose name is not UTF-8 is listed escaped, opens and saves by its bytes', async () => {
    // caf\xe9.txt: Latin-1's e-acute, one byte 0xE9, not UTF-8
    await apiCall('PUT', `/v1/sandboxes/${sandboxId}/files/caf%E9.txt`, 'latin-1 name\n', true);
    await page.getByRole('tab', { name: 'Files' }).click();
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.getByRole('button', { name: 'caf\\xe9.txt' }).click();
    await page.locator('.cm-content', { hasText: 'latin-1 name' }).waitFor({ timeout: TIMEOUT });
    await page.locator('.cm-content').click();
    await page.keyboard.press('Control+End');
    await page.keyboard.type('saved by bytes');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.locator('[data-testid=editor-status]', { hasText: 'saved' }).waitFor({ timeout: TIMEOUT });
    const saved = await apiCall('GET', `/v1/sandboxes/${sandboxId}/files/caf%E9.txt`, undefined, true);
    assert.equal(saved, 'latin-1 name\nsaved by bytes');
    // left in the workspace: the subagents below pack, diff and apply around it
  });

  await step('type a command in the terminal (a shell on a pty) and read its output; it survives leaving the panel', async () => {
    await page.getByRole('tab', { name: 'Terminal' }).click();
    await page.locator('[data-testid=terminal-status]', { hasText: 'live' }).waitFor({ timeout: TIMEOUT });
    await page.locator('[data-testid=terminal]').click();
    // done-42 last: the screen is read once it shows, so all before it is there
    await page.keyboard.type('cat hello.txt; stty size; echo done-$((6*7))');
    await page.keyboard.press('Enter');
    const screen = page.locator('[data-testid=terminal] .xterm-rows');
    await screen.filter({ hasText: 'done-42' }).waitFor({ timeout: TIMEOUT });
    const output = await screen.textContent();
    assert.match(output, /changed by someone else/);
    assert.match(output, /\d+ \d+/, 'stty size printed the terminal size');
    await shot('08-terminal');
    // Another panel and back: the same shell, its screen replayed.
    await page.getByRole('tab', { name: 'Files' }).click();
    await page.getByRole('tab', { name: 'Terminal' }).click();
    await screen.filter({ hasText: 'done-42' }).waitFor({ timeout: TIMEOUT });
    await page.locator('[data-testid=terminal]').click();
    await page.keyboard.type('echo again-$((7*7))');
    await page.keyboard.press('Enter');
    await screen.filter({ hasText: 'again-49' }).waitFor({ timeout: TIMEOUT });
  });

  await step('snapshots: the run end snapshot is listed', async () => {
    await page.getByRole('tab', { name: 'Snapshots' }).click();
    await page.locator('[data-testid=snapshot]').first().waitFor({ timeout: TIMEOUT });
    await shot('09-snapshots');
  });

  await step('three subagents run, each on its own script, and the build child\'s change set is applied', async () => {
    const example = new URL('../../../../examples/subagents/', import.meta.url);
    const read = (name) => readFileSync(new URL(name, example), 'utf8');
    await apiCall('PUT', `/v1/sandboxes/${sandboxId}/files/test.sh`, read('workspace/test.sh'), true);
    const children = Object.fromEntries(['explore', 'review', 'build'].map((key) => [key, { scripted: JSON.parse(read(`${key}.json`)) }]));
    await page.fill('#goal', 'Make sh test.sh pass, with subagents');
    await page.click('.run-options summary');
    await page.fill('[data-testid=script]', read('parent.json'));
    await page.fill('[data-testid=subagent-models]', JSON.stringify(children));
    await page.getByRole('button', { name: 'Start run' }).click();
    await page.locator('[data-testid=run-finished]').nth(1).waitFor({ timeout: 60_000 });
    await page.getByRole('tab', { name: 'Subagents' }).click();
    await page.locator('[data-testid=subagent]').nth(2).waitFor({ timeout: TIMEOUT });
    const rows = await page.locator('[data-testid=subagent]').allTextContents();
    assert.equal(rows.length, 3, rows.join('\n'));
    for (const profile of ['explore', 'review', 'build']) {
      assert.ok(rows.some((row) => row.includes(profile) && row.includes('finished')), `${profile}: ${rows.join('\n')}`);
    }
    const applied = page.locator('[data-testid=tool-call]', { hasText: 'apply_subagent_changes' });
    assert.match(await applied.textContent(), /succeeded/);
    // The console gave its sandbox up for the run (one writer per
    // workspace); a read-only one shows what the run left.
    const workspace = JSON.parse(await page.evaluate(() => sessionStorage.getItem('paddock.selection'))).workspace;
    const reader = await apiCall('POST', '/v1/sandboxes', { workspace, read_only: true });
    const hello = await apiCall('GET', `/v1/sandboxes/${reader.id}/files/bin/hello.sh`, undefined, true);
    assert.ok(hello.length > 0, 'bin/hello.sh is empty');
    await apiCall('DELETE', `/v1/sandboxes/${reader.id}`);
    await shot('10-subagents');
    await page.getByRole('tab', { name: 'Usage' }).click();
    await page.locator('[data-testid=total-usage]').waitFor({ timeout: TIMEOUT });
  });

  await step('reject a build child\'s change set from the subagents panel', async () => {
    const done = { name: 'complete_task', arguments: { verdict: 'met', summary: 'done', evidence: ['nothing to show'] } };
    const parent = { turns: [
      { text: 'One build child.', tool_calls: [{ name: 'spawn_subagent', arguments: { task_id: 'extra', profile: 'build', prompt: 'Write bin/extra.sh.', write_scope: ['bin'] } }] },
      { text: 'Waiting for it.', tool_calls: [{ name: 'wait_subagents', arguments: { timeout: 300 } }] },
      { text: 'A person decides meanwhile.', tool_calls: [{ name: 'run_command', arguments: { command: 'sleep 60' } }] },
      { tool_calls: [done] },
    ] };
    const child = { turns: [
      { tool_calls: [{ name: 'write_file', arguments: { path: 'bin/extra.sh', content: 'echo extra\n' } }] },
      { tool_calls: [done] },
    ] };
    await page.fill('#goal', 'One child whose changes a person rejects');
    if ((await page.locator('.run-options').getAttribute('open')) === null) await page.click('.run-options summary');
    await page.fill('[data-testid=script]', JSON.stringify(parent));
    await page.fill('[data-testid=subagent-models]', JSON.stringify({ extra: { scripted: child } }));
    await page.getByRole('button', { name: 'Start run' }).click();
    await page.getByRole('tab', { name: 'Subagents' }).click();
    const row = page.locator('[data-testid=subagent]', { hasText: 'extra' }).filter({ hasText: 'finished' });
    await row.waitFor({ timeout: 60_000 });
    await row.getByRole('button', { name: 'Reject changes' }).click();
    await row.locator('[data-testid=change-set-decided]', { hasText: 'rejected' }).waitFor({ timeout: TIMEOUT });
    await shot('10b-rejected');
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await page.locator('[data-testid=run-finished]').nth(2).waitFor({ timeout: 60_000 });
    const workspace = JSON.parse(await page.evaluate(() => sessionStorage.getItem('paddock.selection'))).workspace;
    const reader = await apiCall('POST', '/v1/sandboxes', { workspace, read_only: true });
    const res = await fetch(`${url}/v1/sandboxes/${reader.id}/files/bin/extra.sh`, { headers: { Authorization: `Bearer ${token}` } });
    assert.equal(res.status, 404, 'the rejected bin/extra.sh reached the workspace');
    await apiCall('DELETE', `/v1/sandboxes/${reader.id}`);
  });

  await step('fork the session', async () => {
    await page.getByRole('button', { name: /^Fork greeting/ }).click();
    await page.locator('.session-title', { hasText: 'greeting (fork)' }).waitFor({ timeout: TIMEOUT });
    const forked = JSON.parse(await page.evaluate(() => sessionStorage.getItem('paddock.selection'))).session;
    assert.notEqual(forked, sessionId);
    const session = await apiCall('GET', `/v1/sessions/${forked}`);
    assert.equal(session.forked_from, sessionId);
    await shot('11-forked');
  });

  // A model that streams its answer a word at a time, and a command that
  // prints, sleeps and prints again, in a sandbox allowed only
  // example.invalid that asks for another name (a denied DNS decision).
  const answer = 'Streaming this answer one word at a time so that a reader sees it grow.';
  const streamed = {
    turns: [
      {
        text: answer,
        delta_ms: 120,
        tool_calls: [{ name: 'run_command', arguments: { command: 'getent hosts blocked.example.org || echo not-resolved; echo first-out; sleep 4; echo second-out' } }],
      },
      { tool_calls: [{ name: 'complete_task', arguments: { verdict: 'met', summary: 'streamed', evidence: ['second-out printed'] } }] },
    ],
  };

  await step('model text streams in word by word, then the stored message replaces it (no duplicate)', async () => {
    dialogAnswers.push('live');
    // in the workspace of the session open now (the fork's)
    const current = page.locator('.tree > li', { has: page.locator('li.selected') });
    await current.getByRole('button', { name: '+ New session' }).click();
    await page.locator('.session-title', { hasText: 'live' }).waitFor({ timeout: TIMEOUT });
    await page.fill('#goal', 'Stream an answer and a command');
    if ((await page.locator('.run-options').getAttribute('open')) === null) await page.click('.run-options summary');
    await page.fill('[data-testid=script]', JSON.stringify(streamed));
    await page.fill('[data-testid=subagent-models]', '');
    await page.fill('[data-testid=network]', 'allow:example.invalid');
    // a driver this server does not enable is refused, naming it; the form keeps what was typed
    await page.selectOption('[data-testid=driver]', 'claude-code');
    await page.getByRole('button', { name: 'Start run' }).click();
    const refused = page.locator('.notice[role=alert]', { hasText: 'claude-code driver is not enabled' });
    await refused.waitFor({ timeout: TIMEOUT });
    assert.equal(await page.inputValue('#goal'), 'Stream an answer and a command');
    await refused.getByRole('button', { name: 'Dismiss' }).click();
    await page.selectOption('[data-testid=driver]', 'builtin');
    await page.getByRole('button', { name: 'Start run' }).click();
    const growing = page.locator('[data-testid=assistant][data-streaming=true] .text');
    await growing.waitFor({ timeout: TIMEOUT });
    const first = await growing.textContent();
    // a later look while it still streams shows more of the same text
    const later = await page.waitForFunction(
      (before) => {
        const el = document.querySelector('[data-testid=assistant][data-streaming=true] .text');
        return el && el.textContent.length > before.length ? el.textContent : null;
      },
      first,
      { timeout: TIMEOUT, polling: 20 },
    );
    const more = await later.jsonValue();
    assert.ok(answer.startsWith(first) && answer.startsWith(more), `${JSON.stringify(first)} / ${JSON.stringify(more)}`);
    assert.ok(more.length < answer.length, 'the whole answer came at once');
    await shot('14-streaming-text');
    await page.locator('[data-testid=assistant][data-streaming=false]', { hasText: answer }).waitFor({ timeout: TIMEOUT });
    assert.equal(await page.locator('[data-testid=assistant]').count(), 1, 'the streamed text and the stored message both show');
  });

  await step('a running command\'s output appears before it ends, then its result replaces it', async () => {
    const call = page.locator('[data-testid=tool-call]', { hasText: 'run_command' });
    const output = call.locator('[data-testid=tool-output]');
    await output.filter({ hasText: 'first-out' }).waitFor({ timeout: TIMEOUT });
    assert.doesNotMatch(await output.textContent(), /second-out/);
    assert.match(await call.locator('.tool-status').textContent(), /running/);
    await shot('15-streaming-output');
    await call.locator('.tool-status', { hasText: 'succeeded' }).waitFor({ timeout: TIMEOUT });
    assert.equal(await output.count(), 0, 'the live output stays beside the result');
    await call.locator('summary').click();
    assert.match(await call.locator('pre.result').textContent(), /first-out\s+second-out/);
    await page.locator('[data-testid=run-finished]').waitFor({ timeout: TIMEOUT });
    assert.equal(await page.locator('[data-testid=tool-call]').count(), 2, 'one stage item per tool call');
  });

  await step('the run log shows the denied egress decision, and the goal panel the network policy', async () => {
    await page.getByRole('tab', { name: 'Goal' }).click();
    assert.equal(await page.locator('[data-testid=run-network]').textContent(), 'allow example.invalid');
    await page.getByRole('tab', { name: 'Activity' }).click();
    await page.selectOption('[data-testid=network-filter]', 'denied');
    const denied = page.locator('[data-testid=egress-row]', { hasText: 'blocked.example.org' });
    await denied.first().waitFor({ timeout: TIMEOUT });
    const row = await denied.first().textContent();
    assert.match(row, /denied blocked\.example\.org:53 via dns/);
    assert.match(row, /not allowed by the sandbox's network policy/);
    // the filter keeps only egress decisions
    const kinds = await page.locator('[data-testid=activity-panel] .event-row .kind').allTextContents();
    assert.ok(kinds.length > 0 && kinds.every((k) => k === 'egress.decision'), kinds.join(' '));
    await shot('16-egress-denied');
    await page.selectOption('[data-testid=network-filter]', '');
  });

  await step('the terminal: ^D ends the shell, and End shell ends another', async () => {
    await page.getByRole('tab', { name: 'Terminal' }).click();
    const status = page.locator('[data-testid=terminal-status]');
    const screen = page.locator('[data-testid=terminal] .xterm-rows');
    await status.filter({ hasText: 'live' }).waitFor({ timeout: TIMEOUT });
    await page.locator('[data-testid=terminal]').click();
    await page.keyboard.type('echo before-eof-$((3*4))');
    await page.keyboard.press('Enter');
    await screen.filter({ hasText: 'before-eof-12' }).waitFor({ timeout: TIMEOUT });
    await page.keyboard.press('Control+KeyD');
    await screen.filter({ hasText: '[exited 0]' }).waitFor({ timeout: TIMEOUT });
    await status.filter({ hasText: 'exited' }).waitFor({ timeout: TIMEOUT });
    const workspace = JSON.parse(await page.evaluate(() => sessionStorage.getItem('paddock.selection'))).workspace;
    const sandbox = await page.evaluate((ws) => sessionStorage.getItem(`paddock.sandbox.${ws}`), workspace);
    const running = async () => (await apiCall('GET', `/v1/sandboxes/${sandbox}/processes`)).processes.filter((p) => p.pty && p.running);
    assert.deepEqual(await running(), [], 'the shell still runs after ^D');
    await page.getByRole('button', { name: 'New shell' }).click();
    await status.filter({ hasText: 'live' }).waitFor({ timeout: TIMEOUT });
    assert.equal((await running()).length, 1);
    await page.getByRole('button', { name: 'End shell' }).click();
    await status.filter({ hasText: 'exited' }).waitFor({ timeout: TIMEOUT });
    await screen.filter({ hasText: '[exited' }).waitFor({ timeout: TIMEOUT });
    assert.deepEqual(await running(), [], 'the shell still runs after End shell');
    await shot('17-terminal-ended');
  });

  await step('a sandbox page changes its allowlist, which the server applies and lists, also after the sandbox stops', async () => {
    const selection = await page.evaluate(() => sessionStorage.getItem('paddock.selection'));
    const made = await apiCall('POST', '/v1/sandboxes', { network: { allowlist: ['a.example.invalid'] } });
    await page.reload();
    await page.locator('[data-testid=sandbox-link]', { hasText: made.id }).click();
    const network = page.locator('[data-testid=sandbox-network]');
    await network.filter({ hasText: 'allow a.example.invalid' }).waitFor({ timeout: TIMEOUT });
    assert.equal(await page.locator('[data-testid=allowlist-input]').inputValue(), 'a.example.invalid');
    assert.equal(await page.locator('[data-testid=network-change]').count(), 0);

    // a list the server refuses says why, and changes nothing
    await page.fill('[data-testid=allowlist-input]', '  ');
    await page.click('[data-testid=allowlist-apply]');
    await page.locator('[data-testid=allowlist-refused]').waitFor({ timeout: TIMEOUT });
    assert.deepEqual((await apiCall('GET', `/v1/sandboxes/${made.id}/network`)).network, { allowlist: ['a.example.invalid'] });

    await page.fill('[data-testid=allowlist-input]', 'a.example.invalid\nb.example.invalid:8443');
    await page.click('[data-testid=allowlist-apply]');
    await page.locator('[data-testid=allowlist-applied]', { hasText: 'Applied change #1' }).waitFor({ timeout: TIMEOUT });
    await network.filter({ hasText: 'allow a.example.invalid, b.example.invalid:8443' }).waitFor({ timeout: TIMEOUT });
    // applied by the server: its running sandbox has the new list
    const now = await apiCall('GET', `/v1/sandboxes/${made.id}/network`);
    assert.deepEqual(now.network, { allowlist: ['a.example.invalid', 'b.example.invalid:8443'] });
    const row = page.locator('[data-testid=network-change]');
    await row.first().waitFor({ timeout: TIMEOUT });
    assert.equal(await row.count(), 1);
    const cells = await row.first().locator('td').allTextContents();
    const stored = (await apiCall('GET', `/v1/sandboxes/${made.id}/network/changes`)).changes;
    assert.equal(stored.length, 1);
    assert.deepEqual(cells, ['1', stored[0].at, stored[0].by, 'allow a.example.invalid', 'allow a.example.invalid, b.example.invalid:8443', '–']);
    await shot('19-sandbox-allowlist');

    // the history stays once the sandbox is gone; the control says it no longer changes
    await apiCall('DELETE', `/v1/sandboxes/${made.id}`);
    await page.reload();
    await page.locator('[data-testid=sandbox-state]', { hasText: 'stopped' }).waitFor({ timeout: TIMEOUT });
    await page.locator('[data-testid=network-change]').first().waitFor({ timeout: TIMEOUT });
    assert.equal(await page.locator('[data-testid=network-change]').count(), 1);
    assert.ok(await page.locator('[data-testid=allowlist-apply]').isDisabled());

    // back to the session for the steps that follow
    await page.evaluate((sel) => sessionStorage.setItem('paddock.selection', sel), selection);
    await page.reload();
    await page.locator('[data-testid=stage]').waitFor({ timeout: TIMEOUT });
  });

  await step('keyboard: the panel tabs move with the arrow keys', async () => {
    await page.getByRole('tab', { name: 'Goal' }).click();
    await page.keyboard.press('ArrowRight');
    assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Plan');
    assert.equal(await page.getByRole('tab', { name: 'Plan' }).getAttribute('aria-selected'), 'true');
  });

  await step('dark theme and a narrow window stay usable', async () => {
    await page.getByRole('button', { name: /^Theme/ }).click();
    await page.getByRole('button', { name: /^Theme/ }).click();
    assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'dark');
    await shot('12-dark');
    await page.setViewportSize({ width: 480, height: 900 });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `the page is ${overflow}px wider than a 480px window`);
    await shot('13-narrow');
  });

  await step('the console sandbox goes with its tab: a second tab takes it over, closing a tab lets it lapse, sign-out ends it', async () => {
    await page.setViewportSize({ width: 1280, height: 800 });
    const selection = await page.evaluate(() => sessionStorage.getItem('paddock.selection'));
    const workspace = JSON.parse(selection).workspace;
    const sandbox = await page.evaluate((ws) => sessionStorage.getItem(`paddock.sandbox.${ws}`), workspace);
    const view = await apiCall('GET', `/v1/sandboxes/${sandbox}`);
    assert.equal(view.console, true, JSON.stringify(view));
    assert.equal(view.state, 'running');
    // kept alive by the open tab: its deadline is minutes away, not the idle timeout's
    assert.ok(Date.parse(view.keepalive_until) - Date.now() > 60_000, view.keepalive_until);

    // another tab of the same user on the same session: Files works, on the same sandbox
    const other = await context.newPage();
    other.on('pageerror', (err) => consoleErrors.push(err.message));
    await other.addInitScript(([t, sel]) => {
      sessionStorage.setItem('paddock.token', t);
      sessionStorage.setItem('paddock.selection', sel);
    }, [token, selection]);
    await other.goto(url);
    await other.getByRole('tab', { name: 'Files' }).click();
    await other.waitForFunction((ws) => sessionStorage.getItem(`paddock.sandbox.${ws}`), workspace, { timeout: TIMEOUT });
    const taken = await other.evaluate((ws) => sessionStorage.getItem(`paddock.sandbox.${ws}`), workspace);
    assert.equal(taken, sandbox, 'the second tab took the first tab\'s sandbox over');

    // that tab closes: it asked for only a few seconds more
    await other.close({ runBeforeUnload: true });
    let lapse = Infinity;
    for (let i = 0; i < 50 && lapse > 15_000; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      lapse = Date.parse((await apiCall('GET', `/v1/sandboxes/${sandbox}`)).keepalive_until) - Date.now();
    }
    assert.ok(lapse <= 15_000, `a closed tab left ${lapse} ms of keep-alive`);

    // signing out ends it: the workspace is free for a run at once
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.locator('#token').waitFor({ timeout: TIMEOUT });
    assert.equal((await apiCall('GET', `/v1/sandboxes/${sandbox}`)).state, 'stopped');
    const writer = await apiCall('POST', '/v1/sandboxes', { workspace });
    await apiCall('DELETE', `/v1/sandboxes/${writer.id}`);
    await shot('18-signed-out');
  });

  assert.deepEqual(consoleErrors, [], 'the page threw');

  await step('every request the console sent and answer it got fits the served OpenAPI document', async () => {
    await Promise.allSettled(observing);
    assert.ok(exchanges.length >= 20, `only ${exchanges.length} exchanges observed`);
    assert.deepEqual(contractErrors, [], 'the console and the OpenAPI document disagree');
    if (process.env.RECORD_ANSWERS) {
      const recorded = { about: 'Answers of a real paddock serve to the web console, recorded by tests/e2e.mjs (RECORD_ANSWERS); checked against the current OpenAPI document by contract.test.mjs.', exchanges: fixtures() };
      writeFileSync(process.env.RECORD_ANSWERS, `${JSON.stringify(recorded, null, 2)}\n`);
      console.log(`recorded ${recorded.exchanges.length} answers to ${process.env.RECORD_ANSWERS}`);
    }
  });
} catch (err) {
  console.log(err.stack);
  if (failures.length === 0) failures.push(`outside a step: ${err.message}`);
} finally {
  await browser.close();
}
if (failures.length > 0) {
  console.log(`console e2e: ${failures.length} step(s) failed: ${failures.join(', ')}`);
  process.exit(1);
}
console.log('console e2e: every step passed');
