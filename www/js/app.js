// The page: reads the controls, runs the race (race.js) on the package's
// browser build, and draws each execution's timeline and the counters as the
// race goes. The settings (seed included) are kept in the URL's query, so a
// link replays the same run. The page runs a race as it loads: the link's,
// or with the defaults in index.html, whose seed (found by
// tools/find-seed.mjs) shows a contended resume and a landed re-drive.

import { BODY_STEPS, Race, findSeed, runRace } from './race.js';
import { freshSeed } from './prng.js';
import { startMessages } from './messages.js';

const $ = (id) => document.getElementById(id);
const form = $('controls');
const status = $('status');
const SLIDERS = [
  ['resumers', 'resumers-out', (v) => v],
  ['parks', 'parks-out', (v) => v],
  ['crash', 'crash-out', (v) => Number(v).toFixed(2)],
  ['dead', 'dead-out', (v) => v],
];

/** How many seeds, from the one asked for, the unconditional mode tries for
 * one whose race fences a body out. */
const FENCE_SEARCH = 50;

function setStatus(text, state) {
  status.textContent = text;
  status.dataset.state = state;
}

function settingsFromForm() {
  const seed = Number.parseInt($('seed').value, 10);
  return {
    seed: Number.isSafeInteger(seed) && seed >= 0 ? seed >>> 0 : freshSeed(),
    resumers: Number($('resumers').value),
    parks: Number($('parks').value),
    crashRate: Number($('crash').value),
    deadAcquirers: Number($('dead').value),
    unconditional: form.elements.mode.value === 'unconditional',
  };
}

function formFromQuery() {
  const q = new URLSearchParams(location.search);
  for (const [key, id] of [['resumers', 'resumers'], ['parks', 'parks'], ['crash', 'crash'], ['dead', 'dead'], ['seed', 'seed']]) {
    if (q.has(key)) $(id).value = q.get(key);
  }
  if (q.get('mode') === 'unconditional') form.elements.mode.value = 'unconditional';
  if (!$('seed').value) $('seed').value = String(freshSeed());
  for (const [input, out, show] of SLIDERS) $(out).textContent = show($(input).value);
}

/** `n` and the noun it counts, singular for one. */
function count(n, one, many) {
  return `${n} ${n === 1 ? one : many}`;
}

function queryOf(s) {
  const q = new URLSearchParams({
    seed: s.seed, resumers: s.resumers, parks: s.parks, crash: s.crashRate, dead: s.deadAcquirers,
    mode: s.unconditional ? 'unconditional' : 'conditional',
  });
  return `?${q}`;
}

// --- drawing ---------------------------------------------------------------

/** Why a resume was refused, in words. */
const REASONS = { 'not-suspended': 'the park is not open' };

const SHORT = { EXECUTION_STARTED: 'STARTED', EXECUTION_SUSPENDED: 'PARKED', EXECUTION_RESUMED: 'RESUMED', STEP_COMPLETED: 'STEP', EXECUTION_COMPLETED: 'COMPLETED' };

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function writer(envelope, actor) {
  if (envelope.kind === 'EXECUTION_RESUMED') {
    const answer = envelope.payload.answer ?? {};
    return answer.redrive ? 're-driver' : `R${answer.resumer}`;
  }
  return actor;
}

/** One journal entry as a chip. */
function chip(entry, bySeq) {
  const t = (fence) => (fence === null || fence === undefined ? 'no token' : `t${fence}`);
  switch (entry.type) {
    case 'write': {
      const e = bySeq.get(entry.seq);
      if (!e) return el('span', 'chip write', `#${entry.seq} ?`);
      const c = el('span', `chip write k-${SHORT[e.kind] ?? 'other'}`);
      c.append(el('b', '', `#${e.sequence} ${SHORT[e.kind] ?? e.kind}${e.kind === 'STEP_COMPLETED' ? ` ${e.payload.step + 1}/${BODY_STEPS}` : ''}`));
      c.append(` · t${e.metadata.fence ?? 0}`);
      if (entry.actor !== 'set-up') c.append(` · ${writer(e, entry.actor)}`);
      c.title = `sequence ${e.sequence}, ${e.kind}, written under token ${e.metadata.fence ?? 0} (${entry.actor})`;
      return c;
    }
    case 'acquired': return el('span', 'chip note acquired', `${entry.actor} took t${entry.fence}`);
    case 'stale': return el('span', 'chip note stale', `${entry.actor} told stale at ${entry.where} (now t${entry.current})`);
    case 'won': return el('span', 'chip note won', `${entry.actor} won under ${t(entry.fence)}${entry.attempts > 1 ? ` (try ${entry.attempts})` : ''}`);
    case 'refused': return el('span', 'chip note refused', `${entry.actor} refused: ${REASONS[entry.reason] ?? String(entry.reason).replace(/[-_]/g, ' ')}`);
    case 'answered': return el('span', 'chip note refused', `${entry.actor}'s append refused: park answered`);
    case 'fencedOut': return el('span', 'chip note fenced', `${entry.actor}'s body FENCED OUT: ${SHORT[entry.kind] ?? entry.kind} under t${entry.fence} refused, current t${entry.current}`);
    case 'dead': return el('span', 'chip note dead', `dead acquirer (before ${entry.actor}) took t${entry.fence}, never wrote`);
    case 'deadRefused': return el('span', 'chip note dead', `dead acquirer (before ${entry.actor}) refused, now t${entry.current}`);
    case 'crash': return el('span', 'chip note crash', `${entry.actor} crashed ${entry.where}${entry.fence ? ` holding t${entry.fence}` : ''}`);
    case 'contended': return el('span', 'chip note contended', `${entry.actor} contended after ${entry.attempts} tries`);
    case 'redriveRow': return el('span', 'chip note redrive', `re-drive row due +${entry.wakeAt - entry.at} ms`);
    case 'noop': return el('span', 'chip note redrive', 're-driver: nothing to re-drive');
    case 'exhausted': return el('span', 'chip note crash', 're-drive chain gave up');
    default: return el('span', 'chip note', entry.type);
  }
}

function badge(x) {
  if (x.resumes.length > 1) return ['bad', `DOUBLE RESUME (${x.resumes.length})`];
  if (x.fencedOut.length > 0) return ['bad', 'body fenced out'];
  if (x.running) return ['busy', 'body running'];
  if (x.completed) return ['ok', x.redriven ? 'completed (re-driven)' : 'completed'];
  if (x.resumes.length === 0) return ['idle', 'still parked'];
  return ['busy', 'resumed'];
}

function draw(view, settings) {
  const { counters, executions } = view;
  for (const [name, value] of Object.entries(counters)) {
    const box = document.querySelector(`[data-counter="${name}"]`);
    if (!box) continue;
    box.querySelector('dd').textContent = name === 'resumed' ? `${value} / ${settings.parks}` : String(value);
    box.dataset.value = String(value);
    box.classList.toggle('alarm', (name === 'double_resumes' || name === 'fenced_out') && value > 0);
  }
  const list = $('executions');
  const cards = executions.map((x) => {
    const card = el('article', 'execution');
    card.dataset.id = x.id;
    const [tone, text] = badge(x);
    const head = el('h2', '', x.id);
    head.append(el('span', `badge ${tone}`, text));
    card.append(head);
    const bySeq = new Map(x.log.map((e) => [e.sequence, e]));
    const line = el('div', 'timeline');
    for (const entry of x.journal) line.append(chip(entry, bySeq));
    card.append(line);
    return card;
  });
  list.replaceChildren(...cards);
}

// --- running ---------------------------------------------------------------

let pkg;
let running = false;

async function run(event) {
  event?.preventDefault();
  if (running || !pkg) return;
  running = true;
  $('run').disabled = true;
  let settings = settingsFromForm();
  $('seed-note').textContent = '';
  $('verdict').textContent = '';
  $('fingerprint').textContent = '–';
  const pause = Number($('speed').value);
  let lastDraw = 0;
  try {
    // The negative control is there to show a body fenced out, which only
    // some interleavings do: from the seed asked for on, the first seed
    // whose race does it is run instead, and the page says so.
    if (settings.unconditional) {
      const asked = settings.seed;
      setStatus(`looking for a seed from ${asked} whose unconditional race fences a body out…`, 'running');
      const found = await findSeed(pkg, settings, (c) => c.fenced_out > 0, FENCE_SEARCH);
      if (found === null) {
        $('seed-note').textContent =
          `Seed ${asked} fenced nobody out, and neither did the next ${FENCE_SEARCH - 1} seeds with these settings` +
          (settings.resumers === 1 ? ': a single resumer has no rival to take a newer token.' : '.');
      } else if (found.seed !== asked) {
        settings = { ...settings, seed: found.seed };
        $('seed-note').textContent = `Seed ${asked} showed no fence-out; using ${found.seed}, which does.`;
      }
    }
    $('seed').value = String(settings.seed);
    history.replaceState(null, '', queryOf(settings));
    document.body.classList.toggle('unconditional', settings.unconditional);
    setStatus(`racing: seed ${settings.seed}, ${settings.unconditional ? 'unconditional' : 'conditional'} acquire…`, 'running');
    const race = await runRace(pkg, settings, async (live) => {
      const now = performance.now();
      if (pause > 0 || now - lastDraw > 100) {
        lastDraw = now;
        draw(await live.verify(), settings);
      }
      if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause));
    });
    draw(race.counters, settings);
    const c = race.counters.counters;
    $('fingerprint').textContent = Race.fingerprint(race.counters.executions);
    if (race.failures.length > 0) throw new Error(race.failures.join('; '));
    $('verdict').textContent =
      c.double_resumes === 0 && c.fenced_out === 0
        ? `Every landed resume ran its body to the end under its own token: ${c.resumed} of ${settings.parks} resumed, none twice.` +
          (settings.unconditional ? ` Seed ${settings.seed} fenced nobody out: no rival took a newer token while a body ran.` : '')
        : `The fence bit: ${count(c.fenced_out, 'body', 'bodies')} fenced out${c.double_resumes ? `, ${count(c.double_resumes, 'double resume', 'double resumes')}` : ''}.`;
    $('verdict').className = c.double_resumes === 0 && c.fenced_out === 0 ? 'good' : 'bad';
    setStatus(`done: seed ${settings.seed}, ${race.scheduler.turns} turns`, 'done');
  } catch (error) {
    console.error(error);
    setStatus(`failed: ${error?.message ?? error}`, 'failed');
  } finally {
    running = false;
    $('run').disabled = false;
  }
}

formFromQuery();
for (const [input, out, show] of SLIDERS) $(input).addEventListener('input', () => { $(out).textContent = show($(input).value); });
$('new-seed').addEventListener('click', () => { $('seed').value = String(freshSeed()); });
form.addEventListener('submit', run);
try {
  // The demo races timers and messages too: both entries of the package.
  pkg = { ...(await import('/pkg/browser.js')), ...(await import('/pkg/services-browser.js')) };
  await startMessages(pkg, $);
  // The first look: the link's race, or the default one.
  run();
} catch (error) {
  console.error(error);
  setStatus(`could not load the package: ${error?.message ?? error}`, 'failed');
}
