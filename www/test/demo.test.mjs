// The browser demo in real headless Chromium (the system's, driven by
// playwright-core): serve.mjs serves www/ and the built package, the page
// runs a seeded race in each mode, and the verdict is read from the DOM.
//
// Asserted, over three seeds: conditional -> double_resumes 0, fenced_out 0,
// resumed == parks on each; unconditional -> fenced_out > 0 on each (the
// negative control bites; the page moves on to the next seed that fences a
// body out, and says so); then, with three dead acquirers, contended
// resumes re-driven by the timer service, on a phone-sized screen; the same
// seed replays the same logs (same fingerprint). The first look, with no
// link and no storage: the page runs its default race at once, and it shows
// a contended resume and a landed re-drive; the counters are labelled in
// words and no snake_case identifier is shown; the legend is open. In
// unconditional mode: a seed that fences nobody out is moved past, with a
// note naming both seeds; with one resumer the page says plainly that no
// seed fenced anybody out. No console error or page error; no request
// leaves 127.0.0.1 (every other one is aborted and counted). A screenshot is saved to target/demo/demo.png (DEMO_SCREENSHOT
// overrides), a phone-sized one beside it.
//
// CHROMIUM names the browser (default /usr/bin/chromium). Without one the
// test fails, so that a run cannot pass having checked nothing; xtask
// decides beforehand whether a missing Chromium may skip it (outside CI).

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { dirname, join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const www = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SCREENSHOT = process.env.DEMO_SCREENSHOT ?? join(www, '../target/demo/demo.png');
const SEED = 20261203;
const SEEDS = [SEED, SEED + 1, SEED + 2];
const SETTINGS = { resumers: 6, parks: 12, crash: 0.1, dead: 1 };

let server;
let browser;
let base;
const offsite = [];

before(async () => {
  server = spawn(process.execPath, [join(www, 'serve.mjs')], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: server.stdout });
  const first = await new Promise((ok, fail) => {
    lines.once('line', ok);
    server.once('exit', (code) => fail(new Error(`serve.mjs exited ${code} before saying its port`)));
  });
  const port = /^PORT (\d+)$/.exec(first)?.[1];
  assert.ok(port, `serve.mjs said ${JSON.stringify(first)}`);
  base = `http://127.0.0.1:${port}`;
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
});

after(async () => {
  await browser?.close();
  server?.kill();
});

/** A fresh page that records console errors and page errors, and aborts
 * (and records) every request that is not for 127.0.0.1. */
async function openPage(viewport = { width: 1366, height: 900 }) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const errors = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`));
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (url.hostname === '127.0.0.1' && url.protocol === 'http:') return route.continue();
    offsite.push(route.request().url());
    return route.abort();
  });
  return { context, page, errors };
}

/** Waits for the race under way to end, and that it did not fail; returns
 * the counters as the page shows them, and the fingerprint. */
async function ended(page) {
  await page.waitForSelector('#status[data-state=done], #status[data-state=failed]', { timeout: 60_000 });
  const state = await page.locator('#status').getAttribute('data-state');
  assert.equal(state, 'done', `the race failed: ${await page.locator('#status').textContent()}`);
  const counters = {};
  for (const name of ['resumed', 'double_resumes', 'fenced_out', 'contended', 'redriven', 'still_parked']) {
    counters[name] = Number(await page.locator(`[data-counter=${name}]`).getAttribute('data-value'));
  }
  const fingerprint = await page.locator('#fingerprint').textContent();
  return { counters, fingerprint };
}

/** Sets the controls (`settings`: any of SETTINGS' keys; the others are left
 * as they are), runs the race and waits for it to end; returns what `ended` does. */
async function race(page, mode, seed = SEED, settings = SETTINGS) {
  // The race under way (the page runs one as it loads) ends first.
  await ended(page);
  // Range inputs cannot be typed into: set them as a drag would, with an input event.
  const set = (id, value) =>
    page.locator(`#${id}`).evaluate((input, v) => {
      input.value = v;
      input.dispatchEvent(new Event('input', { bubbles: true }));
    }, String(value));
  for (const id of ['resumers', 'parks', 'crash', 'dead']) {
    if (id in settings) await set(id, settings[id]);
  }
  await page.locator(`input[name=mode][value=${mode}]`).check();
  await page.locator('#seed').fill(String(seed));
  await page.locator('#speed').selectOption('0');
  await page.locator('#run').click();
  return ended(page);
}

test('the page runs seeded races in each mode in Chromium; the counters tell the modes apart', async () => {
  const { context, page, errors } = await openPage();
  await page.goto(`${base}/`);

  // The unconditional control fences a winner's body out only when a rival
  // acquires while that body runs, which depends on the interleaving: the
  // page runs the first seed, from the one asked for, whose race does it.
  // Over SEEDS, it must happen each time.
  const fenced = [];
  for (const seed of SEEDS) {
    const { counters } = await race(page, 'unconditional', seed);
    assert.equal(counters.double_resumes, 0, `unconditional, seed ${seed}: the park-conditional append still lands one resume`);
    fenced.push(counters.fenced_out);
    // What the counter says is drawn: as many bodies marked fenced out.
    assert.equal(await page.locator('#executions .chip.note.fenced').count(), counters.fenced_out, `unconditional, seed ${seed}: fenced-out bodies shown`);
    // The verdict counts in words: "1 body", "2 bodies", never "body(ies)".
    if (counters.fenced_out > 0) {
      const verdict = await page.locator('#verdict').textContent();
      const noun = counters.fenced_out === 1 ? 'body' : 'bodies';
      assert.ok(verdict.startsWith(`The fence bit: ${counters.fenced_out} ${noun} fenced out`), `unconditional, seed ${seed}: ${verdict}`);
    }
  }
  assert.ok(fenced.every((n) => n > 0), `unconditional: a seed from ${SEEDS} fenced no body out: ${fenced}`);

  let last;
  for (const seed of SEEDS) {
    last = await race(page, 'conditional', seed);
    const c = last.counters;
    assert.equal(c.double_resumes, 0, `conditional, seed ${seed}: double resumes: ${JSON.stringify(c)}`);
    assert.equal(c.fenced_out, 0, `conditional, seed ${seed}: bodies fenced out: ${JSON.stringify(c)}`);
    assert.equal(c.resumed, SETTINGS.parks, `conditional, seed ${seed}: every park resumed: ${JSON.stringify(c)}`);
    assert.equal(await page.locator('.execution').count(), SETTINGS.parks);
    assert.equal(await page.locator('#executions .chip.note.fenced').count(), 0, `conditional, seed ${seed}: a fenced-out body is shown`);
  }

  const again = await race(page, 'conditional', SEEDS.at(-1));
  assert.equal(again.fingerprint, last.fingerprint, 'the same seed replays the same logs');
  assert.deepEqual(again.counters, last.counters);

  mkdirSync(dirname(SCREENSHOT), { recursive: true });
  await page.screenshot({ path: SCREENSHOT, fullPage: true });
  assert.deepEqual(errors, [], 'no console or page errors');
  await context.close();
});

test('re-drive: with three dead acquirers the racing resumes are contended and the timer service re-drives', async () => {
  const { context, page, errors } = await openPage({ width: 390, height: 844 });
  await page.goto(`${base}/?seed=${SEED}&resumers=3&parks=4&crash=0&dead=3&mode=conditional`);
  // A seed in the link runs the race at once.
  await page.waitForSelector('#status[data-state=done], #status[data-state=failed]', { timeout: 60_000 });
  assert.equal(await page.locator('#status').getAttribute('data-state'), 'done');
  const value = async (name) => Number(await page.locator(`[data-counter=${name}]`).getAttribute('data-value'));
  const contended = await value('contended');
  assert.ok(contended >= 4 && contended <= 12, `every resume that raced an open park was contended: ${contended}`);
  assert.equal(await value('redriven'), 4, 'each park re-driven');
  assert.equal(await value('resumed'), 4);
  assert.equal(await value('double_resumes'), 0);
  assert.equal(await value('fenced_out'), 0);
  // A phone: nothing wider than the screen.
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page is ${overflow}px wider than a phone's screen`);
  await page.screenshot({ path: SCREENSHOT.replace(/\.png$/, '-phone.png'), fullPage: false });
  assert.deepEqual(errors, [], 'no console or page errors');
  await context.close();
});

test('messages: a click sends a message to the parked execution, and its log shows MESSAGE_CONSUMED then EXECUTION_RESUMED', async () => {
  const { context, page, errors } = await openPage();
  await page.goto(`${base}/`);
  await page.waitForSelector('#send-message:not([disabled])', { timeout: 30_000 });
  const kinds = () => page.locator('#message-log li').evaluateAll((items) => items.map((item) => item.dataset.kind));
  assert.deepEqual(await kinds(), ['EXECUTION_STARTED', 'EXECUTION_SUSPENDED'], 'parked on the channel before any message');
  await page.locator('#send-message').click();
  await page.waitForFunction(() => document.querySelectorAll('#message-log li').length > 2, null, { timeout: 30_000 });
  await page.waitForSelector('#send-message:not([disabled])');
  const log = await kinds();
  assert.deepEqual(log.slice(2, 4), ['MESSAGE_CONSUMED', 'EXECUTION_RESUMED'], `the delivery, adjacent: ${log}`);
  assert.match(await page.locator('#message-status').textContent(), /m1: delivered/);
  const answer = await page.locator('#message-log li[data-kind=EXECUTION_RESUMED]').first().textContent();
  assert.match(answer, /"channel":"approval","messageId":"m1"/, 'the body receives the message');
  // The body parked again; a second message is delivered the same way, once.
  await page.locator('#send-message').click();
  await page.waitForFunction(() => document.querySelectorAll('#message-log li[data-kind=MESSAGE_CONSUMED]').length === 2, null, { timeout: 30_000 });
  await page.waitForSelector('#send-message:not([disabled])');
  const twice = await kinds();
  assert.deepEqual(twice.slice(5, 7), ['MESSAGE_CONSUMED', 'EXECUTION_RESUMED'], `the second delivery: ${twice}`);
  assert.equal(twice.filter((k) => k === 'EXECUTION_RESUMED').length, 2);
  assert.deepEqual(errors, [], 'no console or page errors');
  await context.close();
});

/** The counters' identifiers (the page's data-counter names): none may be
 * shown as such, nor any other snake_case word. */
const IDENTIFIERS = ['double_resumes', 'fenced_out', 'redriven', 'still_parked'];

/** Every counter label is words, and no snake_case identifier is shown
 * anywhere on the page (labels, timeline notes, verdict, footer). */
async function assertWords(page, when) {
  const labels = await page.locator('#counters dt').allInnerTexts();
  assert.equal(labels.length, 6, `${when}: six counters`);
  for (const label of labels) {
    assert.ok(!label.includes('_'), `${when}: the counter label ${JSON.stringify(label)} has an underscore`);
    assert.match(label, /^[a-z]+(?:[ -][a-z]+)*$/, `${when}: the counter label ${JSON.stringify(label)} is not plain words`);
  }
  const text = await page.locator('body').innerText();
  const snake = text.match(/\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b/g);
  assert.equal(snake, null, `${when}: snake_case shown: ${snake}`);
  for (const name of IDENTIFIERS) assert.ok(!text.includes(name), `${when}: the identifier ${name} is shown`);
}

test('first look: with no link and no storage the page runs its default race at once, with a contended resume and a landed re-drive, counters in words and the legend open', async () => {
  const { context, page, errors } = await openPage();
  await page.goto(`${base}/`);
  // No input: the page runs as it loads.
  const first = await ended(page);
  const c = first.counters;
  const parks = Number(await page.locator('#parks').inputValue());
  assert.ok(c.contended > 0, `the default race shows a contended resume: ${JSON.stringify(c)}`);
  assert.ok(c.redriven > 0, `the default race shows a re-drive landing: ${JSON.stringify(c)}`);
  assert.equal(c.double_resumes, 0, `conditional by default: ${JSON.stringify(c)}`);
  assert.equal(c.fenced_out, 0, `conditional by default: ${JSON.stringify(c)}`);
  assert.equal(c.resumed, parks, `every park resumed: ${JSON.stringify(c)}`);
  assert.equal(await page.locator('input[name=mode]:checked').inputValue(), 'conditional');
  // The counters are the run's own: the timeline draws them.
  const racingContended = await page.locator('#executions .chip.note.contended').filter({ hasNotText: 're-driver' }).count();
  assert.equal(racingContended, c.contended, 'contended resumes drawn');
  const redrivenCards = await page.locator('#executions .execution').filter({ has: page.locator('.chip.note.won', { hasText: 're-driver won' }) }).count();
  assert.equal(redrivenCards, c.redriven, 'executions whose re-drive landed drawn');
  // The seed is in the link, and the link replays the same run.
  const seed = await page.locator('#seed').inputValue();
  assert.match(seed, /^[0-9]+$/);
  assert.equal(new URL(page.url()).searchParams.get('seed'), seed);
  await assertWords(page, 'first load');
  // The legend is open on the first visit.
  assert.equal(await page.locator('details.legend').evaluate((details) => details.open), true, 'the legend is open');
  assert.ok(await page.locator('details.legend li').first().isVisible(), 'the legend is shown');

  const replay = await openPage();
  await replay.page.goto(page.url());
  const again = await ended(replay.page);
  assert.equal(again.fingerprint, first.fingerprint, 'the link replays the first run');
  assert.deepEqual(again.counters, first.counters);
  assert.deepEqual(replay.errors, [], 'no console or page errors');
  await replay.context.close();
  assert.deepEqual(errors, [], 'no console or page errors');
  await context.close();
});

/** `settings` raced in the page on its own code at each seed from `from` up
 * to, not including, `to`: the fenced_out counts. */
function fencedOutFrom(page, settings, from, to) {
  return page.evaluate(
    async ({ settings, from, to }) => {
      const { runRace } = await import('/js/race.js');
      const pkg = { ...(await import('/pkg/browser.js')), ...(await import('/pkg/services-browser.js')) };
      const counts = [];
      for (let seed = from; seed < to; seed++) counts.push((await runRace(pkg, { ...settings, seed })).counters.counters.fenced_out);
      return counts;
    },
    { settings, from, to },
  );
}

test('unconditional: the run shows a body fenced out, moving to the next seed that does and saying so, or says plainly that none did', async () => {
  const { context, page, errors } = await openPage();
  await page.goto(`${base}/`);
  await ended(page);
  const defaults = {
    resumers: Number(await page.locator('#resumers').inputValue()),
    parks: Number(await page.locator('#parks').inputValue()),
    crashRate: Number(await page.locator('#crash').inputValue()),
    deadAcquirers: Number(await page.locator('#dead').inputValue()),
    unconditional: true,
  };
  const fencedShown = async (seed, c) => {
    assert.ok(c.fenced_out > 0, `unconditional, seed ${seed}: a body fenced out: ${JSON.stringify(c)}`);
    assert.equal(await page.locator('#executions .chip.note.fenced').count(), c.fenced_out, `unconditional, seed ${seed}: fenced-out bodies drawn`);
    assert.match(await page.locator('#verdict').textContent(), /^The fence bit: /);
  };

  // The default seed, switched to unconditional: a fence-out, on that seed.
  const seed = await page.locator('#seed').inputValue();
  await page.locator('input[name=mode][value=unconditional]').check();
  await page.locator('#run').click();
  await fencedShown(seed, (await ended(page)).counters);
  assert.equal(await page.locator('#seed').inputValue(), seed, 'the default seed fences a body out itself');
  assert.equal(await page.locator('#seed-note').textContent(), '', 'no seed was skipped');
  await assertWords(page, 'unconditional');

  // A seed that fences nobody out (tools/find-seed.mjs names them; checked
  // here): the page moves to the next one that does and says so.
  const QUIET = 10;
  assert.deepEqual(await fencedOutFrom(page, defaults, QUIET, QUIET + 1), [0], `seed ${QUIET} fences nobody out unconditionally`);
  const moved = await race(page, 'unconditional', QUIET, {});
  const used = Number(await page.locator('#seed').inputValue());
  assert.ok(used > QUIET, `the page moved on from seed ${QUIET}: ${used}`);
  assert.equal(await page.locator('#seed-note').textContent(), `Seed ${QUIET} showed no fence-out; using ${used}, which does.`);
  assert.equal(new URL(page.url()).searchParams.get('seed'), String(used), 'the link names the seed run');
  assert.ok((await fencedOutFrom(page, defaults, QUIET, used)).every((n) => n === 0), `the seeds skipped, ${QUIET} to ${used - 1}, fence nobody out`);
  await fencedShown(used, moved.counters);

  // One resumer has no rival: no seed fences out, and the page says so.
  const alone = await race(page, 'unconditional', QUIET, { resumers: 1 });
  assert.equal(alone.counters.fenced_out, 0);
  assert.equal(await page.locator('#seed').inputValue(), String(QUIET), 'the seed asked for is run');
  assert.match(await page.locator('#seed-note').textContent(), new RegExp(`^Seed ${QUIET} fenced nobody out, and neither did the next \\d+ seeds`));
  assert.match(await page.locator('#verdict').textContent(), new RegExp(`Seed ${QUIET} fenced nobody out`));

  // Conditional still fences nobody out, on the seed asked for, with no note.
  const back = await race(page, 'conditional', QUIET, { resumers: defaults.resumers });
  assert.equal(back.counters.fenced_out, 0);
  assert.equal(await page.locator('#seed').inputValue(), String(QUIET));
  assert.equal(await page.locator('#seed-note').textContent(), '');
  assert.deepEqual(errors, [], 'no console or page errors');
  await context.close();
});

test('no request left 127.0.0.1', () => {
  assert.deepEqual(offsite, []);
});
