#!/usr/bin/env node
/* dashboard.js - open the gpupool dashboard in headless Chromium as one
 * token, report what it shows, save a screenshot.
 *
 *   node dashboard.js --url http://127.0.0.1:PORT/ --token gpt_... --png out.png
 *                     [--tz Asia/Kathmandu] [--open-block blk-7] [--colour-by tenant]
 *                     [--width 1400] [--max-height 6000]
 *                     [--sign-out-png after.png [--next-token gpt_... --next-png next.png]]
 *                     [--hash '#/jobs/7' [--cancel 1 [--cancel-first /v1/jobs/7]]]
 *                     [--jobs-filter '{"state": "blocked"}' --csv-dir DIR]
 *                     [--node NAME [--drain 1 [--drain-reason TEXT]]]
 *                     [--range 7d]
 *
 * It types the token into the page (as a person does), waits until every
 * panel has loaded once, optionally opens a block of the fleet, and prints
 * one JSON object: {"report": what each panel shows (rows' jobs and
 * tenants, the fleet's tiles, nodes, GPU cells and MIG slices, the usage
 * charts, the bookings calendar per GPU type, the bill), "errors": [every JavaScript exception, console error,
 * failed or 4xx/5xx request, each with its URL]}.  test_dashboard.py judges
 * both against the API.
 *
 * With --sign-out-png it also reports which panels the login page showed
 * before the sign-in ("login_page"), then clicks Refresh and, before any
 * answer comes back, Sign out (the race a hurried viewer makes), waits
 * until no request is in flight and adds "signed_out": everything the page
 * still holds (visible text, every element's textContent, the whole HTML
 * with its attributes, which panels and parts are visible,
 * sessionStorage), with a screenshot.  With --next-token it signs in again
 * in the same tab as that token and adds "next": that token's report, with
 * its screenshot.
 *
 * --hash opens that deep link (#/jobs/ID, #/nodes/NAME, #/tenants/PATH) and reloads the
 * page, as a bookmark does; the report's "job_detail" or "node_detail" is
 * what that view shows (with --cancel 1: after clicking Cancel twice and
 * waiting for the API's answer; --cancel-first: the job cancelled by another
 * request first, so the API refuses the click).  --jobs-filter sets the jobs panel's
 * filters ({"state", "tenant", "user", "text"}; a finished state, e.g.
 * "finished" or "cancelled", waits for the jobs it loads); --csv-dir then clicks
 * Export CSV and adds "csv": the file the browser downloaded.  --node opens
 * a node's view by clicking its name in the fleet (with --drain 1, then
 * its Drain button: with --drain-reason, first with no reason typed -- the
 * page must ask for one, "drain_asked" -- then with TEXT typed).  --range picks the usage charts' time range and waits
 * until they are drawn again.
 *
 * Exit 0 when it could report, 1 when the browser or the page could not be
 * driven (the message on stderr).
 */
'use strict';
const fs = require('fs');
const { launch, sleep } = require('./cdp');

function args(argv) {
  const out = {};
  for (let i = 2; i < argv.length; i += 2) out[argv[i].replace(/^--/, '')] = argv[i + 1];
  if (!out.url || !out.token || !out.png) throw new Error('usage: dashboard.js --url URL --token T --png FILE');
  return out;
}

/* Runs in the page: what a person would see, as data. */
function pageReport() {
  const all = (sel) => [...document.querySelectorAll(sel)];
  const rows = (sel) => all(sel).map((tr) => ({ job: Number(tr.dataset.job), tenant: tr.dataset.tenant }));
  const count = (list, key) => list.reduce((a, x) => { a[x[key]] = (a[x[key]] || 0) + 1; return a; }, {});
  const gpus = all('.gpu').map((g) => ({ state: g.dataset.state, sharing: g.dataset.sharing, tenant: g.dataset.tenant }));
  const firstTime = document.querySelector('#preemptions-body time, #queue-body time');
  return {
    who: document.getElementById('who').textContent,
    role: document.getElementById('who').dataset.role,
    loaded: Number(document.body.dataset.loaded || 0),
    failed_panels: all('.panel .failed').map((p) => ({ panel: p.closest('.panel').id, text: p.textContent })),
    queue: rows('#queue-body tbody tr'),
    preemptions: rows('#preemptions-body tbody tr'),
    usage_title: document.getElementById('usage-title').textContent,
    usage_charts: all('.chart g.series').map((g) => ({ tenant: g.dataset.tenant, type: g.dataset.type,
                                                      now: Number(g.dataset.now),
                                                      buckets: Number(g.closest('.chart').dataset.buckets),
                                                      span: Number(g.closest('.chart').dataset.span),
                                                      from: Number(g.closest('.chart').dataset.from),
                                                      guarantee: !!g.querySelector('.guarantee'),
                                                      limit: !!g.querySelector('.limit') })),
    usage_tree: all('.tenant-usage').map((t) => ({ tenant: t.dataset.tenant, charts: t.querySelectorAll(':scope > .chart').length,
      parent: t.parentElement.closest('.tenant-usage') ? t.parentElement.closest('.tenant-usage').dataset.tenant : null })),
    usage_chart_count: all('.chart').length,
    usage_focus: all('.tenant-usage.focus').map((t) => ({ tenant: t.dataset.tenant,
      unfolded: (() => { for (let d = t.closest('details'); d; d = d.parentElement.closest('details')) if (!d.open) return false;
                         return true; })() })),
    jobs_tenant_filter: document.getElementById('jobs-tenant').value,
    injected: !!document.getElementById('injected'),
    fleet: {
      summary: document.getElementById('fleet-summary').textContent,
      tiles: all('.block-tile').map((t) => t.dataset.block),
      blocks_shown: all('.block-nodes').map((b) => b.dataset.block),
      nodes: all('.node').map((n) => n.dataset.node),
      gpus: gpus.length,
      gpu_states: count(gpus, 'state'),
      gpu_sharing: count(gpus, 'sharing'),
      gpu_tenants: count(gpus.filter((g) => g.tenant), 'tenant'),
      mig_slices: all('.gpu .slice[data-profile]').map((s) => ({ profile: s.dataset.profile, tenant: s.dataset.tenant })),
      legend: all('#fleet-legend .key').map((k) => k.dataset.key),
    },
    calendar: all('.calendar').map((c) => ({
      type: c.dataset.type, capacity: Number(c.dataset.capacity),
      bookings: all('.calendar[data-type="' + c.dataset.type + '"] g.booking').map((g) => ({ name: g.dataset.name, tenant: g.dataset.tenant })),
      free: [...c.querySelectorAll('.free')].map((f) => Number(f.dataset.free)) })),
    bill: {
      tenants: all('#bill-body tr.total').map((t) => t.dataset.tenant),
      lines: all('#bill-body tr.line').length,
      fleet: !!document.querySelector('#bill-body h3'),
    },
    first_time: firstTime ? { epoch: Number(firstTime.dataset.epoch), text: firstTime.textContent } : null,
    status: document.getElementById('status').textContent,
    // reasons as shown, and the engine's "t=SECONDS" as the page writes it (issue 32: no epoch seconds)
    reasons: all('#queue-body td.reason, #preemptions-body td.reason').map((td) => td.textContent),
    reason_time: typeof fmtReason === 'function' ? fmtReason('expected to start at t=1796655120', 1796654400) : null,
    jobs: all('#jobs-body tbody tr').map((tr) => ({ job: Number(tr.dataset.job), tenant: tr.dataset.tenant,
                                                   state: tr.dataset.state, blocked: tr.dataset.blocked })),
    jobs_summary: document.getElementById('jobs-summary').textContent,
    jobs_summary_state: document.getElementById('jobs-summary').dataset.state || '',
    job_detail: detail('job'),
    node_detail: detail('node'),
  };
  function detail(kind) {
    const box = document.getElementById(kind + '-detail');
    const q = (sel) => box.querySelector(sel);
    return { visible: !box.hidden, title: document.getElementById(kind + '-detail-id').textContent,
             text: box.innerText, log: q('#job-log') ? q('#job-log').textContent : null,
             logs: [...box.querySelectorAll('pre.log')].map((p) => ({ replica: Number(p.dataset.replica), text: p.textContent })),
             failed: q('.failed') ? q('.failed').textContent : null,
             cancel_button: !!q('#job-cancel'), drain_button: q('#node-drain') ? q('#node-drain').textContent : null,
             action_status: q('.action-status') ? q('.action-status').textContent : null,
             placement: [...box.querySelectorAll('tr[data-node]')].map((tr) => tr.dataset.node),
             jobs: [...box.querySelectorAll('tr[data-job]')].map((tr) => Number(tr.dataset.job)),
             sm_active: [...box.querySelectorAll('td.sm')].map((td) => td.textContent) };
  }
}

/* Runs in the page after sign-out: everything it still holds, as data. */
function leftovers() {
  const shown = (e) => !!e && getComputedStyle(e).display !== 'none' && e.getClientRects().length > 0;
  return {
    visible_text: document.body.innerText,
    text_content: document.documentElement.textContent,
    html: document.documentElement.outerHTML,
    panels_visible: [...document.querySelectorAll('.panel')].filter(shown).map((p) => p.id),
    dash_visible: shown(document.getElementById('dash')),
    login_visible: shown(document.getElementById('login')),
    signout_visible: shown(document.getElementById('signout')),
    session_storage: Object.keys(sessionStorage),
    loaded: document.body.dataset.loaded || null,
  };
}

/* Resolves once no request of the page has been in flight for quietMs. */
async function networkIdle(inflight, quietMs = 500, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  let since = Date.now();
  while (Date.now() < deadline) {
    if (inflight.size) since = Date.now();
    else if (Date.now() - since >= quietMs) return;
    await sleep(50);
  }
  throw new Error('requests still in flight: ' + [...inflight.values()].join(' '));
}

async function signInAs(b, token) {
  await b.waitFor("document.getElementById('login') && !document.getElementById('login').hidden", 'the token form');
  await b.evaluate(`(() => { document.getElementById('token').value = ${JSON.stringify(token)};
                             document.getElementById('login-form').requestSubmit(); return true; })()`);
  await b.waitFor("Number(document.body.dataset.loaded || 0) >= 1", 'every panel loaded', 120000);
}

/* Refresh then Sign out at once; what the page holds once every answer is back. */
async function signOutReport(b, inflight, png, maxHeight) {
  await b.evaluate(`(() => { document.getElementById('refresh').click();
                             document.getElementById('signout').click(); return true; })()`);
  await networkIdle(inflight);
  const out = await b.evaluate(`(${leftovers.toString()})()`);
  await screenshot(b, png, maxHeight);
  return out;
}

/* The deep link a.hash, then a reload (a bookmark): the view it names; --cancel clicks Cancel twice. */
async function openLink(b, a) {
  await b.evaluate(`(() => { location.hash = ${JSON.stringify(a.hash)}; return true; })()`);
  const loaded = new Promise((r) => b.on('Page.loadEventFired', r));
  await b.send('Page.reload', {});
  await loaded;
  const box = a.hash.startsWith('#/jobs/') ? 'job-detail' : 'node-detail';
  const shown = a.hash.startsWith('#/tenants/') ? "!!document.querySelector('.tenant-usage.focus')"
    : `!document.getElementById('${box}').hidden && document.getElementById('${box}-body').childElementCount > 0`;
  await b.waitFor(`Number(document.body.dataset.loaded || 0) >= 1 && ${shown}`, 'the deep link\'s view', 120000);
  if (a.cancel) {
    if (a['cancel-first']) await b.evaluate(`fetch(${JSON.stringify(a['cancel-first'])}, { method: 'DELETE',
      headers: { Authorization: 'Bearer ' + sessionStorage.getItem('gpupool.token') } }).then((r) => r.status)`);
    await b.evaluate(`(() => { const c = document.getElementById('job-cancel'); c.click(); c.click(); return true; })()`);
    await b.waitFor("(document.getElementById('job-action-status') || {}).textContent", 'the cancel\'s answer');
  }
}

/* Opens a node by clicking its name in the fleet; --drain clicks its Drain button and waits for the answer. */
async function openNode(b, a) {
  const link = JSON.stringify(`.node[data-node="${a.node}"] a.name`);
  await b.waitFor(`!!document.querySelector(${link})`, 'the node\'s name');
  await b.evaluate(`(() => { document.querySelector(${link}).click(); return true; })()`);
  await b.waitFor("!document.getElementById('node-detail').hidden && document.getElementById('node-detail-body').childElementCount > 0",
                  'the node\'s view');
  let asked;
  if (a.drain && a['drain-reason'] !== undefined) {
    await b.evaluate(`(() => { document.getElementById('node-drain').click(); return true; })()`);
    await b.waitFor("(document.getElementById('node-action-status') || {}).textContent", 'the ask for a reason');
    asked = await b.evaluate("document.getElementById('node-action-status').textContent");
    await b.evaluate(`(() => { const r = document.getElementById('node-drain-reason');
                               r.value = ${JSON.stringify(a['drain-reason'])}; return true; })()`);
  }
  if (a.drain) {
    const before = await b.evaluate("document.getElementById('node-drain').textContent");
    await b.evaluate(`(() => { document.getElementById('node-drain').click(); return true; })()`);
    // the answer is shown at once; the view is drawn again once the node shows the change: wait for both
    await b.waitFor(`(document.getElementById('node-action-status') || {}).textContent &&
                     (document.getElementById('node-drain') || {}).textContent !== ${JSON.stringify(before)}`,
                    'the drain\'s answer and the view drawn again');
  }
  return asked;
}

/* Picks the usage charts' range; resolves once every chart is drawn for it. */
async function pickRange(b, range) {
  await b.evaluate(`(() => { const s = document.getElementById('usage-range'); s.value = ${JSON.stringify(range)};
                             s.dispatchEvent(new Event('change')); return true; })()`);
  const want = { '1h': 300, '24h': 3600, '7d': 21600, '30d': 86400 }[range];
  await b.waitFor(`(() => { const c = [...document.querySelectorAll('.chart')];
                            return c.length > 0 && c.every((x) => Number(x.dataset.span) === ${want}); })()`, 'the charts of ' + range);
}

/* Sets the jobs panel's filters; with --csv-dir, the CSV the Export button downloads. */
async function filterJobs(b, a) {
  const f = JSON.parse(a['jobs-filter']);
  await b.evaluate(`(() => { const f = ${JSON.stringify(f)};
    for (const [k, v] of Object.entries(f)) {
      const e = document.getElementById('jobs-' + k); e.value = v;
      e.dispatchEvent(new Event(e.tagName === 'SELECT' ? 'change' : 'input'));
    } return true; })()`);
  if (f.state !== undefined) /* a finished state loads other jobs: wait until the panel is drawn for it */
    await b.waitFor(`document.getElementById('jobs-summary').dataset.state === ${JSON.stringify(f.state)}`,
                    'the jobs panel drawn for state ' + f.state);
  if (!a['csv-dir']) return undefined;
  await b.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: a['csv-dir'] }, true);
  await b.evaluate(`(() => { document.getElementById('jobs-csv').click(); return true; })()`);
  const file = require('path').join(a['csv-dir'], 'gpupool-jobs.csv');
  const deadline = Date.now() + 20000;
  while (!fs.existsSync(file)) {
    if (Date.now() > deadline) throw new Error('no CSV was downloaded');
    await sleep(100);
  }
  await sleep(200);
  return fs.readFileSync(file, 'utf8');
}

async function screenshot(b, file, maxHeight) {
  const m = await b.send('Page.getLayoutMetrics');
  const size = m.cssContentSize || m.contentSize;
  const height = Math.min(Math.ceil(size.height), maxHeight);
  const shot = await b.send('Page.captureScreenshot', {
    format: 'png', captureBeyondViewport: true, clip: { x: 0, y: 0, width: Math.ceil(size.width), height, scale: 1 },
  });
  fs.writeFileSync(file, Buffer.from(shot.data, 'base64'));
}

async function main() {
  const a = args(process.argv);
  const b = await launch({ width: Number(a.width || 1400), height: 900 });
  const errors = [];
  try {
    b.on('Runtime.exceptionThrown', (p) => errors.push({ kind: 'exception', text: p.exceptionDetails.exception
      ? p.exceptionDetails.exception.description : p.exceptionDetails.text, url: p.exceptionDetails.url || '' }));
    b.on('Runtime.consoleAPICalled', (p) => {
      if (p.type === 'error' || p.type === 'assert') {
        errors.push({ kind: 'console', text: p.args.map((x) => x.value || x.description).join(' '), url: '' });
      }
    });
    b.on('Log.entryAdded', (p) => {
      if (p.entry.level === 'error') errors.push({ kind: 'log', text: p.entry.text, url: p.entry.url || '' });
    });
    const requests = new Map();
    const inflight = new Map();
    b.on('Network.requestWillBeSent', (p) => { requests.set(p.requestId, p.request.url); inflight.set(p.requestId, p.request.url); });
    b.on('Network.loadingFinished', (p) => inflight.delete(p.requestId));
    b.on('Network.responseReceived', (p) => {
      if (p.response.status >= 400) {
        errors.push({ kind: 'http', text: `${p.response.status} ${p.response.statusText}`, url: p.response.url });
      }
    });
    b.on('Network.loadingFailed', (p) => {
      inflight.delete(p.requestId);
      errors.push({ kind: 'network', text: p.errorText, url: requests.get(p.requestId) || '' });
    });
    await Promise.all(['Runtime.enable', 'Log.enable', 'Network.enable', 'Page.enable'].map((m) => b.send(m)));
    if (a.tz) await b.send('Emulation.setTimezoneOverride', { timezoneId: a.tz });
    const loaded = new Promise((r) => b.on('Page.loadEventFired', r));
    await b.send('Page.navigate', { url: a.url });
    await loaded;
    await b.waitFor("document.getElementById('login') && !document.getElementById('login').hidden", 'the token form');
    const before = await b.evaluate(`(${leftovers.toString()})()`); /* the empty login page */
    await signInAs(b, a.token);
    if (a['colour-by']) {
      await b.evaluate(`(() => { const s = document.getElementById('colour-by'); s.value = ${JSON.stringify(a['colour-by'])};
                                 s.dispatchEvent(new Event('change')); return true; })()`);
    }
    if (a['open-block']) {
      const sel = JSON.stringify(`.block-tile[data-block="${a['open-block']}"]`);
      await b.waitFor(`!!document.querySelector(${sel})`, 'the block tile');
      await b.evaluate(`(() => { document.querySelector(${sel}).click(); return true; })()`);
      await b.waitFor(`!!document.querySelector('.block-nodes[data-block="${a['open-block']}"]')`, 'the block opened');
    }
    if (a.range) await pickRange(b, a.range);
    if (a.hash) await openLink(b, a);
    const asked = a.node ? await openNode(b, a) : undefined;
    const csv = a['jobs-filter'] ? await filterJobs(b, a) : undefined;
    const maxHeight = Number(a['max-height'] || 6000);
    const out = { report: await b.evaluate(`(${pageReport.toString()})()`), errors };
    if (asked !== undefined) out.drain_asked = asked;
    await screenshot(b, a.png, maxHeight);
    if (a['sign-out-png']) {
      out.login_page = { panels_visible: before.panels_visible, dash_visible: before.dash_visible };
      out.signed_out = await signOutReport(b, inflight, a['sign-out-png'], maxHeight);
    }
    if (a['next-token']) {
      await signInAs(b, a['next-token']);
      await networkIdle(inflight);
      out.next = await b.evaluate(`(${pageReport.toString()})()`);
      out.next.html = await b.evaluate('document.documentElement.outerHTML');
      await screenshot(b, a['next-png'], maxHeight);
    }
    if (csv !== undefined) out.csv = csv;
    process.stdout.write(JSON.stringify(out) + '\n');
  } finally {
    await b.close();
  }
}

main().catch((e) => {
  process.stderr.write(`dashboard.js: ${e.stack || e}\n`);
  process.exit(1);
});
