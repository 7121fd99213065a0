// The console's floors, measured beside a baseline in the same run:
//  - first meaningful paint of a session with 5,000+ events (page load to
//    the last event on the stage and all events counted in the log), beside
//    reading the same stream with fetch in Node (no browser, no rendering);
//  - an event's latency from stored (its created_at) to shown in the page;
//  - shipped JS + CSS, gzipped.
// Run by scripts/console-bench.sh with PADDOCK_URL and PADDOCK_TOKEN.
import { chromium } from 'playwright-core';
import { readdirSync, readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';

const url = process.env.PADDOCK_URL;
const token = process.env.PADDOCK_TOKEN;
const TURNS = Number(process.env.TURNS ?? 400);
const auth = { Authorization: `Bearer ${token}` };

async function call(method, path, body) {
  const res = await fetch(url + path, { method, headers: { ...auth, 'Content-Type': 'application/json' }, body: body && JSON.stringify(body) });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

async function waitRun(id) {
  for (;;) {
    const run = await call('GET', `/v1/runs/${id}`);
    if (['completed', 'failed', 'cancelled', 'interrupted'].includes(run.state)) return run;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function busyScript(turns) {
  const script = [];
  for (let t = 0; t < turns; t += 1) {
    // a fixed usage: the estimate of a request this long would pass the
    // run's token budget long before the 400th turn
    script.push({
      text: `turn ${t}`,
      usage: { input_tokens: 100, output_tokens: 10 },
      tool_calls: [0, 1, 2, 3].map((i) => ({ name: 'report_progress', arguments: { message: `step ${t}.${i}` } })),
    });
  }
  script.push({ tool_calls: [{ name: 'complete_task', arguments: { verdict: 'met', summary: 'busy', evidence: ['many steps'] } }] });
  return script;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

const workspace = await call('POST', '/v1/workspaces', { name: 'bench' });
const session = await call('POST', '/v1/sessions', { workspace: workspace.id, title: 'busy' });
const run = await call('POST', `/v1/sessions/${session.id}/runs`, {
  goal: 'make many events',
  budgets: { max_turns: TURNS + 5, max_tool_calls: TURNS * 4 + 10 },
  model: { scripted: { turns: busyScript(TURNS) } },
});
const ended = await waitRun(run.id);
if (ended.state !== 'completed') throw new Error(`the busy run ended ${ended.state}: ${ended.error}`);

// Baseline: the same events read by fetch alone.
const baselineRuns = [];
let eventCount = 0;
for (let i = 0; i < 3; i += 1) {
  const started = performance.now();
  const res = await fetch(`${url}/v1/sessions/${session.id}/events?until=caught_up`, { headers: auth });
  const text = await res.text();
  eventCount = (text.match(/^id: /gm) ?? []).length;
  baselineRuns.push(performance.now() - started);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update'],
});
const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
await page.goto(url);
await page.evaluate(
  ([t, sel]) => {
    sessionStorage.setItem('paddock.token', t);
    sessionStorage.setItem('paddock.selection', sel);
  },
  [token, JSON.stringify({ workspace: workspace.id, session: session.id })],
);
const paints = [];
for (let i = 0; i < 3; i += 1) {
  const started = performance.now();
  await page.reload();
  await page.locator('[data-testid=run-finished]').waitFor({ state: 'attached', timeout: 60_000 });
  paints.push(performance.now() - started);
}
await page.getByRole('tab', { name: 'Activity' }).click();
const counted = await page.locator('[data-testid=activity-panel] select option').first().textContent();

// Latency: a run whose events arrive while the page watches; each event's
// arrival in the page against its created_at. What only transient events
// add (a turn's text while it streams, a command's live output) is not a
// stored event shown, so those changes are not counted.
await page.evaluate(() => {
  window.__seen = [];
  const transient = (node) => {
    const el = node.nodeType === 1 ? node : node.parentElement;
    return Boolean(el?.closest('[data-streaming=true], [data-testid=tool-output]'));
  };
  const counts = (record) => record.removedNodes.length > 0 || ![...record.addedNodes].every(transient);
  new MutationObserver((records) => {
    if (records.some(counts)) window.__seen.push(Date.now());
  }).observe(document.querySelector('[data-testid=stage]'), { childList: true, subtree: true });
});
const slow = [];
for (let t = 0; t < 10; t += 1) slow.push({ text: `slow ${t}`, tool_calls: [{ name: 'run_command', arguments: { command: `sleep 0.2; echo ${t}` } }] });
slow.push({ tool_calls: [{ name: 'complete_task', arguments: { verdict: 'met', summary: 'slow', evidence: ['done'] } }] });
const before = (await page.evaluate(() => window.__seen.length));
const live = await call('POST', `/v1/sessions/${session.id}/runs`, { goal: 'slow events', model: { scripted: { turns: slow } } });
await waitRun(live.id);
await page.locator('[data-testid=run-finished]').nth(1).waitFor({ state: 'attached', timeout: 60_000 });
const seen = (await page.evaluate(() => window.__seen)).slice(before);
const stored = await (await fetch(`${url}/v1/runs/${live.id}/events`, { headers: auth })).text();
const storedTimes = [...stored.matchAll(/^data: (.*)$/gm)].map((m) => Date.parse(JSON.parse(m[1]).created_at));
// each stored event against the first page change at or after it
const latencies = storedTimes.map((at) => {
  const shown = seen.find((when) => when >= at);
  return shown === undefined ? Infinity : shown - at;
}).filter((latency) => latency !== Infinity);
await browser.close();

const dist = new URL('../../dist/assets/', import.meta.url).pathname;
let gzipped = 0;
for (const file of readdirSync(dist)) {
  if (file.endsWith('.js') || file.endsWith('.css')) gzipped += gzipSync(readFileSync(join(dist, file)), { level: 9 }).length;
}

console.log(`console bench: session with ${eventCount} events (${counted} in the page)`);
console.log(`  first meaningful paint   p50 ${median(paints).toFixed(0)} ms   (floor < 1500 ms; baseline fetch of the stream alone p50 ${median(baselineRuns).toFixed(0)} ms)`);
console.log(`  stored -> shown latency  p50 ${median(latencies).toFixed(0)} ms, max ${Math.max(...latencies).toFixed(0)} ms over ${latencies.length} events   (floor < 100 ms)`);
console.log(`  shipped JS + CSS         ${(gzipped / 1024).toFixed(1)} KiB gzip   (floor < 400 KiB)`);
