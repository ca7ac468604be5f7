// Finds the page's default seed: races seeds one after another, in headless
// Chromium on the page's own code (js/race.js on the built package), with
// the page's default settings (read from index.html's controls), and prints
// the first seed whose conditional race shows a contended resume and a
// landed re-drive (and no double resume, no body fenced out, every park
// resumed) and whose unconditional race fences a body out. It also names the
// first seed whose unconditional race fences nobody out (the test's case for
// the page moving to the next seed that does).
//
//   node tools/find-seed.mjs [--start N] [--count K]   (from www/; defaults 1 and 200)
//     [--resumers R] [--parks P] [--crash C] [--dead D]  (other settings than the page's)
//
// CHROMIUM names the browser (default /usr/bin/chromium). The same start
// gives the same answer: a seed replays the same race.

import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const www = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const arg = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at > 0 ? Number(process.argv[at + 1]) : fallback;
};
const start = arg('--start', 1);
const count = arg('--count', 200);
// Other settings than the page's, to compare: --resumers, --parks, --crash, --dead.
const overrides = Object.fromEntries(
  [['--resumers', 'resumers'], ['--parks', 'parks'], ['--crash', 'crashRate'], ['--dead', 'deadAcquirers']]
    .filter(([flag]) => process.argv.includes(flag))
    .map(([flag, key]) => [key, arg(flag)]),
);

const server = spawn(process.execPath, [join(www, 'serve.mjs')], { stdio: ['ignore', 'pipe', 'inherit'] });
const first = await new Promise((ok) => createInterface({ input: server.stdout }).once('line', ok));
const port = /^PORT (\d+)$/.exec(first)?.[1];
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] });
try {
  const page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${port}/index.html`);
  // Whatever the page runs at load, let it end first: one race at a time.
  await page.waitForSelector('#status[data-state=done], #status[data-state=failed]', { timeout: 120_000 });
  const rows = await page.evaluate(async ({ start, count, overrides }) => {
    const { runRace } = await import('/js/race.js');
    const pkg = { ...(await import('/pkg/browser.js')), ...(await import('/pkg/services-browser.js')) };
    const value = (id) => Number(document.getElementById(id).defaultValue);
    const defaults = { resumers: value('resumers'), parks: value('parks'), crashRate: value('crash'), deadAcquirers: value('dead'), ...overrides };
    const rows = [];
    for (let i = 0; i < count; i++) {
      const seed = (start + i) >>> 0;
      const conditional = await runRace(pkg, { ...defaults, seed, unconditional: false });
      const unconditional = await runRace(pkg, { ...defaults, seed, unconditional: true });
      rows.push({ seed, defaults, turns: conditional.scheduler.turns, conditional: conditional.counters.counters, fencedOut: unconditional.counters.counters.fenced_out });
    }
    return rows;
  }, { start, count, overrides });
  console.log(`settings: ${JSON.stringify(rows[0].defaults)}; seeds ${start} to ${start + count - 1}`);
  const shows = (r) =>
    r.conditional.contended > 0 && r.conditional.redriven > 0 && r.conditional.double_resumes === 0 &&
    r.conditional.fenced_out === 0 && r.conditional.resumed === r.defaults.parks;
  const both = rows.filter((r) => shows(r) && r.fencedOut > 0);
  const some = (key) => rows.filter((r) => r.conditional[key] > 0).length;
  console.log(`conditional: contended in ${some('contended')}, re-driven in ${some('redriven')}, fenced out in ${some('fenced_out')}, double resumes in ${some('double_resumes')}`);
  console.log(`conditional shows a contended resume and a landed re-drive: ${rows.filter(shows).length} of ${rows.length} seeds`);
  console.log(`... and unconditional fences a body out too: ${both.length}: ${both.slice(0, 10).map((r) => `${r.seed} (${r.turns} turns)`).join(', ')}`);
  const none = rows.filter((r) => r.fencedOut === 0);
  console.log(`unconditional fences nobody out: ${none.length} of ${rows.length} seeds: ${none.slice(0, 10).map((r) => r.seed).join(', ')}`);
  console.log(both.length > 0 ? `DEFAULT SEED ${both[0].seed}` : 'no seed in range shows both');
} finally {
  await browser.close();
  server.kill();
}
