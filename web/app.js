/* app.js - the gpupool dashboard: six panels and two detail views drawn from gpupoold's JSON API.
 *
 * The viewer types a token once; it is kept in sessionStorage (this tab
 * only, gone when it closes) and sent as "Authorization: Bearer" to this
 * gpupoold and nowhere else.  Every panel reads what the token's role may
 * read (docs/api.md "Roles"), so a member sees its own tenant's jobs, usage
 * and bill, and the fleet's GPUs as free or allocated; an admin sees which
 * job and tenant holds each GPU.
 *
 *   panel         reads
 *   fleet         GET /v1/nodes, GET /v1/jobs?state=live (pages of 1000)
 *   usage         GET /v1/tenants; GET /v1/usage?from=&to= for each bucket of
 *                 the chosen range (1h: 5 min, 24h: 1 h, 7d: 6 h, 30d: 1 day;
 *                 GPU-seconds / seconds = average GPUs)
 *   queue         GET /v1/jobs?state=pending
 *   preemptions   GET /v1/preemptions
 *   bill          GET /v1/bill?period=YYYY-MM (this UTC month)
 *
 *   jobs          GET /v1/jobs?state=live (pages of 1000), filtered here; the
 *                 finished ones when the state filter asks (state=succeeded,
 *                 failed, cancelled, each; no state for all)
 *   #/jobs/ID     GET /v1/jobs/ID, GET /v1/jobs/ID/logs?replica=R (the last
 *                 64 KiB of each replica's latest run: every replica up to
 *                 LOG_REPLICAS_AT_ONCE, else the one picked); Cancel: DELETE
 *                 /v1/jobs/ID
 *   #/nodes/NAME  GET /v1/nodes/NAME, GET /v1/nodes/NAME/checks; Drain (with
 *                 the reason it asks for) and Undrain: POST /v1/nodes/NAME/drain
 *
 * The address's fragment names the open view (#/jobs/ID, #/nodes/NAME,
 * #/tenants/PATH: its usage chart unfolded and the jobs filtered to its
 * subtree), so a reload or a bookmark opens it again.  Action buttons are drawn only for
 * roles the API lets act (cancel: admin, operator, tenant-admin, member;
 * drain: admin, operator); what the API answers a click, a refusal too, is
 * shown beside the button.
 *
 * The fleet is drawn per block: a tile per block with a bar of its GPUs by
 * colour, and a click zooms into the block, one cell per GPU (MIG GPUs
 * split into their 8 memory slices, each instance drawn where it sits).
 * A small fleet (at most 64 nodes) shows every block's nodes at once; 6,250
 * nodes in ~200 blocks stay ~200 tiles until one is opened.
 *
 * Times are the viewer's local time (fmtTime); money is shown as the exact
 * decimal strings the API sends, never turned into floating point.
 *
 * Signing in: with an identity provider when gpupoold names one (GET
 * /v1/auth: issuer, client id, scopes), by the authorization code flow with
 * PKCE (RFC 7636): the provider's discovery document, a random state, nonce
 * and verifier (crypto.getRandomValues), the S256 challenge
 * (crypto.subtle), the browser sent to the authorization endpoint and back
 * to this page (its own address is the redirect URI) with ?code&state; a
 * code whose state is not the one this tab sent is refused, the code is
 * exchanged with the verifier at the token endpoint, and the ID token
 * (its nonce checked) becomes the session's bearer token.  The pasted
 * token stays, for service accounts.  Sign-out revokes the provider's
 * refresh token where it has a revocation endpoint.
 *
 * Sign-out forgets everything at once (a shared screen must not show the
 * last viewer's fleet, tenants or bill): the token leaves sessionStorage,
 * the session's refresh timer stops, the dashboard's whole subtree is put
 * back as the page first had it (an empty copy taken at start, so a panel
 * added later is emptied too), and every answer still in flight for the
 * old session is dropped unread (api() checks the session after each
 * await; a loader draws only after its last await).
 */
'use strict';

const TOKEN_KEY = 'gpupool.token';
const OIDC_KEY = 'gpupool.oidc';                 /* the provider's sign-in: client id, revocation endpoint, tokens */
const OIDC_PENDING_KEY = 'gpupool.oidc.pending'; /* between the redirect out and back: state, nonce, verifier */
const REFRESH_MS = 30000;
const SMALL_FLEET_NODES = 64;
const JOB_PAGES_MAX = 20;

/* What the signed-in viewer's page holds; session is null when signed out. */
const view = { block: null, colourBy: 'state', data: null, jobs: null, jobsState: null, logReplica: null, route: null,
               session: null, blankDash: null };

/* ---- small helpers ---- */

function $(id) { return document.getElementById(id); }

/* el('td', {class: 'num', dataset: {job: 4}}, 'text', child, ...) */
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'dataset') Object.assign(e.dataset, v);
    else if (k === 'style') Object.assign(e.style, v);
    else if (k === 'onclick') e.addEventListener('click', v);
    else if (v !== null && v !== undefined && v !== false) e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

const SVG_NS = 'http://www.w3.org/2000/svg';
function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const c of children) e.append(c);
  return e;
}

function pad2(n) { return String(n).padStart(2, '0'); }

/* Epoch seconds as the viewer's local time: "2026-11-24 14:05:09". */
function fmtTime(epoch) {
  if (epoch === null || epoch === undefined) return '';
  const d = new Date(epoch * 1000);
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ` +
         `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
}

function timeCell(epoch) {
  return el('td', {}, el('time', { datetime: new Date(epoch * 1000).toISOString(), dataset: { epoch } },
                         fmtTime(epoch)));
}

function fmtSpan(seconds) {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

/* A reason with the engine's "at t=SECONDS" as a local time and how far
 * off: "expected to start at 2026-12-07 14:05:09 (in 12m 0s)". */
function fmtReason(text, now) {
  return (text || '').replace(/(^| )t=(\d+)/g, (all, lead, t) => {
    const d = Number(t) - now;
    return `${lead}${fmtTime(Number(t))} (${d >= 0 ? `in ${fmtSpan(d)}` : `${fmtSpan(-d)} ago`})`;
  });
}

function fmtGpus(x) {
  return Number.isInteger(x) ? String(x) : x.toFixed(x < 10 ? 2 : 1);
}

/* A stable colour per tenant path. */
function tenantColour(path) {
  let h = 0;
  for (const c of path) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return `hsl(${h % 360}, 60%, ${42 + (h >> 9) % 16}%)`;
}

function cssVar(name) { return getComputedStyle(document.documentElement).getPropertyValue(name).trim(); }

/* ---- the API ---- */

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

/* Thrown instead of an answer that belongs to a session signed out since. */
class SignedOut extends Error {}

function checkSession(session) {
  if (!session || !session.alive) throw new SignedOut('signed out');
}

/* The body of GET path with the current session's token; never cached by the browser. */
async function api(path) {
  const session = view.session;
  checkSession(session);
  const resp = await fetch(path, { headers: { Authorization: 'Bearer ' + session.token }, cache: 'no-store' });
  let body = null;
  try { body = await resp.json(); } catch (e) { body = null; }
  checkSession(session);
  if (!resp.ok) {
    const msg = body && body.error ? body.error.message : resp.statusText;
    throw new ApiError(resp.status, `${path}: ${resp.status} ${msg}`);
  }
  return body;
}

/* Every page of GET /v1/jobs?QUERY (at most JOB_PAGES_MAX pages of 1000). */
async function jobsAll(query) {
  const jobs = [];
  let before = null;
  for (let i = 0; i < JOB_PAGES_MAX; i++) {
    const page = await api(`/v1/jobs?${query}&limit=1000` + (before ? `&before=${before}` : ''));
    jobs.push(...page.jobs);
    if (page.next === null || page.next === undefined) break;
    before = page.next;
  }
  return jobs;
}

/* ---- sign in and out ---- */

/* Ends the session and puts the page back as it was before any sign-in. */
function forget() {
  if (view.session) {
    view.session.alive = false;
    clearInterval(view.session.timer);
  }
  view.session = null;
  view.data = null;
  view.jobs = null;
  view.jobsState = null;
  view.logReplica = null;
  view.block = null;
  view.colourBy = 'state';
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(OIDC_KEY);
  $('dash').replaceWith(view.blankDash.cloneNode(true));
  bindDash();
  $('who').textContent = '';
  delete $('who').dataset.role;
  delete document.body.dataset.loaded;
  $('status').textContent = '';
}

function showLogin(message) {
  $('refresh').hidden = true;
  $('signout').hidden = true;
  $('login').hidden = false;
  $('login-error').textContent = message || '';
  $('token').focus();
}

function signOut() {
  revokeOidc();
  forget();
  history.replaceState(null, '', location.pathname + location.search); /* no job or node of the last viewer in the address */
  showLogin('');
}

async function signIn(token, oidc) {
  forget();
  sessionStorage.setItem(TOKEN_KEY, token);
  if (oidc) sessionStorage.setItem(OIDC_KEY, JSON.stringify(oidc));
  const session = { token, alive: true, loading: false, loads: 0, timer: null };
  view.session = session;
  let me;
  try {
    me = await api('/v1/whoami');
  } catch (e) {
    if (e instanceof SignedOut) return;
    forget();
    showLogin(e.status === 401 ? 'That token is unknown, revoked or expired.' : e.message);
    return;
  }
  const grant = me.role ? me : (me.grants || me.roles || [])[0] || { role: 'no role' };
  const scope = grant.scope ? ` of ${grant.scope}` : '';
  $('who').textContent = `${me.name || me.user} (${grant.role}${scope})`;
  $('who').dataset.role = grant.role;
  $('login').hidden = true;
  $('dash').hidden = false;
  $('refresh').hidden = false;
  $('signout').hidden = false;
  session.timer = setInterval(refresh, REFRESH_MS);
  await refresh();
  scrollToRoute();
}

/* ---- signing in with the identity provider (code flow with PKCE) ---- */

function b64url(bytes) {
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function randomText(n) {
  return b64url(crypto.getRandomValues(new Uint8Array(n)));
}

/* A JWT's claims, unverified (gpupoold verifies): the nonce check reads them. */
function jwtClaims(jwt) {
  try {
    const part = jwt.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    return JSON.parse(atob(part + '='.repeat((4 - part.length % 4) % 4)));
  } catch (e) {
    return null;
  }
}

async function discovery(issuer) {
  const resp = await fetch(issuer.replace(/\/$/, '') + '/.well-known/openid-configuration', { cache: 'no-store' });
  if (!resp.ok) throw new Error(`its discovery document answered ${resp.status}`);
  const doc = await resp.json();
  if (doc.issuer !== issuer) throw new Error(`its discovery document names issuer ${doc.issuer}`);
  return doc;
}

/* Sends the browser to the provider; it comes back to this page with ?code&state. */
async function startOidc(p) {
  try {
    const doc = await discovery(p.issuer);
    const verifier = randomText(32), state = randomText(16), nonce = randomText(16);
    const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
    const redirect = location.origin + location.pathname;
    sessionStorage.setItem(OIDC_PENDING_KEY, JSON.stringify({
      state, nonce, verifier, redirect, hash: location.hash, client_id: p.client_id,
      token_endpoint: doc.token_endpoint, revocation_endpoint: doc.revocation_endpoint || '' }));
    const query = new URLSearchParams({
      response_type: 'code', client_id: p.client_id, redirect_uri: redirect,
      scope: (p.scopes && p.scopes.length ? p.scopes : ['openid']).join(' '), state, nonce,
      code_challenge: b64url(new Uint8Array(digest)), code_challenge_method: 'S256' });
    const at = doc.authorization_endpoint;
    location.assign(at + (at.includes('?') ? '&' : '?') + query);
  } catch (e) {
    showLogin(`Cannot sign in with ${p.issuer}: ${e.message}`);
  }
}

/* The provider's redirect back (?code&state or ?error): true when this page load was one. */
async function finishOidc() {
  const q = new URLSearchParams(location.search);
  if (!q.has('state') && !q.has('error')) return false;
  const pending = JSON.parse(sessionStorage.getItem(OIDC_PENDING_KEY) || 'null');
  sessionStorage.removeItem(OIDC_PENDING_KEY);
  history.replaceState(null, '', location.pathname + (pending ? pending.hash : ''));
  if (!pending || q.get('state') !== pending.state) {
    showLogin('That sign-in was not started in this tab (its state does not match): sign in again.');
    return true;
  }
  if (!q.get('code')) {
    showLogin('The identity provider did not sign you in: ' + (q.get('error_description') || q.get('error')));
    return true;
  }
  let tokens = null;
  try {
    const body = new URLSearchParams({ grant_type: 'authorization_code', code: q.get('code'),
      redirect_uri: pending.redirect, client_id: pending.client_id, code_verifier: pending.verifier });
    const resp = await fetch(pending.token_endpoint, { method: 'POST', body, cache: 'no-store' });
    tokens = await resp.json();
    if (!resp.ok) throw new Error(tokens.error_description || tokens.error || resp.status);
  } catch (e) {
    showLogin('The identity provider refused the sign-in: ' + e.message);
    return true;
  }
  const claims = jwtClaims(tokens.id_token || '');
  if (!claims || claims.nonce !== pending.nonce) {
    showLogin('The ID token does not carry this sign-in\'s nonce: refused.');
    return true;
  }
  signIn(tokens.id_token, { client_id: pending.client_id, revocation_endpoint: pending.revocation_endpoint,
    access_token: tokens.access_token || '', refresh_token: tokens.refresh_token || '' });
  return true;
}

/* Sign-out: the provider's refresh token revoked (RFC 7009) where it can be; nobody waits for the answer. */
function revokeOidc() {
  const oidc = JSON.parse(sessionStorage.getItem(OIDC_KEY) || 'null');
  if (!oidc || !oidc.revocation_endpoint || !oidc.refresh_token) return;
  const body = new URLSearchParams({ token: oidc.refresh_token, token_type_hint: 'refresh_token',
    client_id: oidc.client_id });
  const headers = oidc.access_token ? { Authorization: 'Bearer ' + oidc.access_token } : {};
  fetch(oidc.revocation_endpoint, { method: 'POST', body, headers }).catch(() => {});
}

/* A button per identity provider gpupoold names (GET /v1/auth, no token). */
async function offerProviders() {
  let list = [];
  try {
    const resp = await fetch('/v1/auth', { cache: 'no-store' });
    if (resp.ok) list = (await resp.json()).oidc || [];
  } catch (e) {
    list = [];
  }
  const box = $('login-oidc');
  box.textContent = '';
  for (const p of list) {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = 'Sign in with ' + new URL(p.issuer).host;
    b.addEventListener('click', () => startOidc(p));
    box.appendChild(b);
  }
  box.hidden = list.length === 0;
}

/* ---- loading ---- */

/* Runs one panel's loader; a failure is shown in that panel only. */
async function panel(bodyId, loader) {
  try {
    await loader();
  } catch (e) {
    if (e.status === 401 || e instanceof SignedOut) throw e;
    $(bodyId).replaceChildren(el('p', { class: 'failed' }, e.message));
  }
}

async function refresh() {
  const session = view.session;
  if (!session || session.loading) return;
  session.loading = true;
  try {
    await Promise.all([
      panel('fleet-view', loadFleet),
      panel('usage-charts', loadUsage),
      panel('queue-body', loadQueue),
      panel('preemptions-body', loadPreemptions),
      panel('bill-body', loadBill),
      panel('calendar-body', loadCalendar),
      panel('jobs-body', loadJobs),
    ]);
    await route();
    checkSession(session);
    session.loads += 1;
    document.body.dataset.loaded = String(session.loads);
    $('status').textContent = `Updated ${fmtTime(Date.now() / 1000 | 0)} (your local time, ` +
      `${Intl.DateTimeFormat().resolvedOptions().timeZone}); refreshes every ${REFRESH_MS / 1000} s.`;
  } catch (e) {
    if (e instanceof SignedOut) return;
    if (e.status === 401) signOut();
    else throw e;
  } finally {
    session.loading = false;
  }
}

/* ---- fleet ---- */

const STATE_KEYS = [
  ['free', 'free', '--free'], ['allocated', 'allocated', '--busy'], ['partial', 'shared, partly used', '--partial'],
  ['unhealthy', 'unhealthy', '--bad'], ['draining', 'draining', '--drain'], ['down', 'node down', '--down'],
];
const SHARING_KEYS = [
  ['exclusive', 'exclusive', '--excl'], ['mig', 'MIG', '--mig'], ['mps', 'MPS', '--mps'],
  ['timeslice', 'time-sliced', '--ts'],
];

/* The memory slices (of 8) an instance takes, by its compute slices. */
const MIG_SIZE = { 1: 1, 2: 2, 3: 4, 4: 4, 7: 8 };

function migInstances(layout) {
  if (!layout) return [];
  return layout.split(',').filter(Boolean).map((item) => {
    const [profile, start] = item.split('@');
    const compute = parseInt(profile, 10);
    return { profile, start: parseInt(start, 10), size: MIG_SIZE[compute] || 1 };
  });
}

/* What holds each GPU: uuid -> [{job, tenant, slice}] from the live jobs' placements. */
function holdersByGpu(jobs) {
  const holders = new Map();
  for (const j of jobs) {
    for (const rep of j.placement || []) {
      for (const uuid of rep.gpus || []) {
        if (!holders.has(uuid)) holders.set(uuid, []);
        holders.get(uuid).push({ job: j.id, tenant: j.tenant, slice: rep.slice || null });
      }
    }
  }
  return holders;
}

function gpuState(node, g) {
  if (!node.up) return 'down';
  if (!g.healthy) return 'unhealthy';
  const shared = g.sharing !== 'exclusive';
  const used = shared ? (g.used_milli_gpus || 0) > 0 : (g.job !== undefined ? g.job !== null : g.allocated);
  if (shared && used) return g.used_milli_gpus >= 1000 ? 'allocated' : 'partial';
  if (used) return 'allocated';
  return node.draining ? 'draining' : 'free';
}

/* Each GPU as the fleet view draws it. */
function gpuModel(node, g, holders) {
  const held = holders.get(g.uuid) || [];
  let tenant = held.length ? held[0].tenant : null;
  if (!tenant && g.job) tenant = 'job ' + g.job; /* a job this token may not list */
  const state = gpuState(node, g);
  if (!tenant && (state === 'allocated' || state === 'partial')) tenant = 'other tenants';
  return { g, state, tenant, held, sharing: g.sharing, mig: migInstances(g.mig_layout) };
}

function colourOf(model) {
  if (view.colourBy === 'sharing') return cssVar(SHARING_KEYS.find((k) => k[0] === model.sharing)[2]);
  if (view.colourBy === 'tenant') {
    if (model.tenant === 'other tenants') return cssVar('--down');
    if (model.tenant) return tenantColour(model.tenant);
    return cssVar(model.state === 'unhealthy' ? '--bad' : '--free');
  }
  return cssVar(STATE_KEYS.find((k) => k[0] === model.state)[2]);
}

/* The key a GPU counts under in a block's bar and the legend. */
function keyOf(model) {
  if (view.colourBy === 'sharing') return model.sharing;
  if (view.colourBy === 'tenant') return model.tenant || (model.state === 'unhealthy' ? 'unhealthy' : 'free');
  return model.state;
}

function fleetModel(nodes, jobs) {
  const holders = holdersByGpu(jobs);
  const blocks = new Map();
  for (const n of nodes) {
    const name = n.block || '(no block)';
    if (!blocks.has(name)) blocks.set(name, []);
    blocks.get(name).push({ node: n, gpus: n.gpus.map((g) => gpuModel(n, g, holders)) });
  }
  const byName = (a, b) => a.localeCompare(b, 'en', { numeric: true });
  for (const list of blocks.values()) list.sort((a, b) => byName(a.node.name, b.node.name));
  return [...blocks.entries()].sort((a, b) => byName(a[0], b[0]));
}

async function loadFleet() {
  const [nodes, jobs] = await Promise.all([api('/v1/nodes'), jobsAll('state=live')]);
  view.data = fleetModel(nodes.nodes, jobs);
  drawFleet();
}

function drawLegend() {
  const keys = new Map();
  if (view.colourBy === 'state') STATE_KEYS.forEach(([k, label, v]) => keys.set(label, cssVar(v)));
  else if (view.colourBy === 'sharing') SHARING_KEYS.forEach(([k, label, v]) => keys.set(label, cssVar(v)));
  else {
    const seen = new Set();
    for (const [, nodes] of view.data) for (const n of nodes) for (const m of n.gpus) if (m.tenant) seen.add(m.tenant);
    keys.set('free', cssVar('--free'));
    [...seen].sort().forEach((t) => keys.set(t, t === 'other tenants' ? cssVar('--down') : tenantColour(t)));
  }
  $('fleet-legend').replaceChildren(...[...keys].map(([label, colour]) =>
    el('span', { class: 'key', dataset: { key: label } },
       el('span', { class: 'swatch', style: { background: colour } }), label)));
}

function drawSummary() {
  const byType = new Map();
  let nodes = 0;
  for (const [, list] of view.data) {
    for (const n of list) {
      nodes += 1;
      const s = byType.get(n.node.gpu_type) || { gpus: 0, used: 0, unhealthy: 0, down: 0 };
      for (const m of n.gpus) {
        s.gpus += 1;
        if (m.state === 'allocated' || m.state === 'partial') s.used += 1;
        if (m.state === 'unhealthy') s.unhealthy += 1;
        if (m.state === 'down') s.down += 1;
      }
      byType.set(n.node.gpu_type, s);
    }
  }
  const parts = [...byType].map(([t, s]) => `${t}: ${s.used} of ${s.gpus} in use` +
                                            (s.unhealthy ? `, ${s.unhealthy} unhealthy` : '') +
                                            (s.down ? `, ${s.down} on nodes down` : ''));
  $('fleet-summary').textContent = `${nodes} nodes in ${view.data.length} blocks. ${parts.join(' · ')}`;
}

function blockTile(name, list) {
  const counts = new Map();
  let total = 0;
  const colours = new Map();
  for (const n of list) {
    for (const m of n.gpus) {
      const k = keyOf(m);
      counts.set(k, (counts.get(k) || 0) + 1);
      colours.set(k, colourOf(m));
      total += 1;
    }
  }
  const busy = list.reduce((a, n) => a + n.gpus.filter((m) => m.state === 'allocated' || m.state === 'partial').length, 0);
  const bar = el('div', { class: 'bar' }, [...counts].map(([k, c]) =>
    el('span', { title: `${k}: ${c}`, style: { width: `${(100 * c) / total}%`, background: colours.get(k) } })));
  const types = [...new Set(list.map((n) => n.node.gpu_type))].join(', ');
  return el('div', { class: 'block-tile', dataset: { block: name }, title: 'open ' + name, onclick: () => openBlock(name) },
            el('div', { class: 'name' }, name),
            el('div', { class: 'meta' }, `${list.length} nodes · ${types} · ${busy}/${total} in use`), bar);
}

/* One MIG instance as a GPU model of its own: the live job that holds it
 * (by its placement's mig_start), or free; a token that does not see every
 * job cannot tell another tenant's instance from an empty one, and the
 * GPU's used share says which: what it does not hold itself is others'. */
function migSlice(m, inst) {
  const holder = m.held.find((h) => h.slice && h.slice.mig_start === inst.start);
  if (holder) return { ...m, state: 'allocated', tenant: holder.tenant, job: holder.job };
  const ownMilli = m.held.reduce((a, h) => a + (h.slice ? h.slice.milli_gpus : 0), 0);
  const others = m.g.job === undefined && (m.g.used_milli_gpus || 0) > ownMilli;
  return { ...m, state: others ? 'allocated' : 'free', tenant: others ? 'other tenants' : null, job: null };
}

function gpuCell(m) {
  const g = m.g;
  const title = [`GPU ${g.index} (${g.uuid})`, m.state, g.sharing];
  if (m.tenant) title.push(m.tenant);
  for (const h of m.held) title.push(`job ${h.job}` + (h.slice && h.slice.mig_profile ? ` ${h.slice.mig_profile}` : ''));
  const cell = el('div', {
    class: 'gpu' + (m.state === 'unhealthy' ? ' unhealthy' : ''), title: title.join(' · '),
    dataset: { gpu: g.uuid, state: m.state, sharing: g.sharing, tenant: m.tenant || '' },
  });
  if (g.sharing === 'mig' && m.mig.length) {
    cell.style.background = cssVar('--free');
    let at = 0;
    for (const inst of [...m.mig].sort((a, b) => a.start - b.start)) {
      if (inst.start > at) cell.append(el('span', { class: 'slice gap', style: { flex: String(inst.start - at) } }));
      const s = migSlice(m, inst);
      cell.append(el('span', {
        class: 'slice', title: `${inst.profile}@${inst.start}` + (s.job ? ` · job ${s.job}` : '') +
                               (s.tenant ? ` · ${s.tenant}` : ''),
        dataset: { profile: inst.profile, start: inst.start, tenant: s.tenant || '' },
        style: { flex: String(inst.size), background: colourOf(s) },
      }));
      at = inst.start + inst.size;
    }
    if (at < 8) cell.append(el('span', { class: 'slice gap', style: { flex: String(8 - at) } }));
  } else {
    cell.style.background = colourOf(m);
  }
  return cell;
}

function nodeCard(n) {
  const node = n.node;
  const flags = [node.up ? null : 'down', node.draining ? 'draining' : null].filter(Boolean);
  return el('div', { class: 'node' + (node.up ? '' : ' down') + (node.draining ? ' draining' : ''),
                     dataset: { node: node.name }, title: drainText(node.drain) },
            el('div', { class: 'title' }, el('a', { class: 'name', href: `#/nodes/${encodeURIComponent(node.name)}` }, node.name),
               el('span', { class: 'meta' }, `${node.gpu_type} · ${node.gpus_free}/${node.gpu_count} free` +
                                             (flags.length ? ' · ' + flags.join(', ') : ''))),
            el('div', { class: 'gpus' }, n.gpus.map(gpuCell)));
}

function blockNodes(name, list) {
  return el('div', { class: 'block-nodes', dataset: { block: name } }, el('h3', {}, name),
            el('div', { class: 'nodes' }, list.map(nodeCard)));
}

function drawFleet() {
  if (!view.data) return;
  drawLegend();
  drawSummary();
  const total = view.data.reduce((a, [, list]) => a + list.length, 0);
  const crumb = $('fleet-crumb');
  const open = view.block && view.data.find(([name]) => name === view.block);
  if (open) {
    crumb.replaceChildren(el('a', { onclick: () => openBlock(null) }, 'All blocks'), ` › ${open[0]}`);
    $('fleet-view').replaceChildren(blockNodes(open[0], open[1]));
  } else if (total <= SMALL_FLEET_NODES) {
    crumb.replaceChildren();
    $('fleet-view').replaceChildren(...view.data.map(([name, list]) => blockNodes(name, list)));
  } else {
    crumb.replaceChildren(`${view.data.length} blocks: open one to see its nodes and GPUs`);
    $('fleet-view').replaceChildren(el('div', { class: 'blocks' }, view.data.map(([name, list]) => blockTile(name, list))));
  }
}

function openBlock(name) {
  view.block = name;
  drawFleet();
}

/* ---- usage against guarantee and limit ---- */

/* GPU amounts of a tenant's view ({"gpu": {"H100": 16}}), null-safe. */
function gpuMap(x) { return (x && x.gpu) || {}; }

/* The usage charts' time ranges: how many buckets of how many seconds (the last one ends now). */
const RANGES = {
  '1h': { buckets: 12, seconds: 300, label: 'last hour' },
  '24h': { buckets: 24, seconds: 3600, label: 'last 24 hours' },
  '7d': { buckets: 28, seconds: 21600, label: 'last 7 days' },
  '30d': { buckets: 30, seconds: 86400, label: 'last 30 days' },
};

/* The chosen range's buckets, aligned to whole buckets (UTC), the last one cut at now. */
function usageBuckets(range, now) {
  const r = RANGES[range];
  const first = Math.floor(now / r.seconds) * r.seconds - (r.buckets - 1) * r.seconds;
  const out = [];
  for (let i = 0; i < r.buckets; i++) out.push({ from: first + i * r.seconds, to: Math.min(first + (i + 1) * r.seconds, now) });
  return out;
}

async function loadUsage() {
  const range = $('usage-range').value;
  const hours = usageBuckets(range, Date.now() / 1000 | 0);
  $('usage-title').textContent = RANGES[range].label;
  const [tenants, ...usages] = await Promise.all([
    api('/v1/tenants'),
    ...hours.map((h) => api(`/v1/usage?from=${h.from}&to=${h.to}`)),
  ]);
  drawUsage(tenants.tenants, hours, usages);
}

/* Average GPUs of each (tenant subtree, type) in each hour. */
function usageSeries(tenants, hours, usages) {
  const series = new Map();
  for (const t of tenants) {
    const types = new Set([...Object.keys(gpuMap(t.guarantee)), ...Object.keys(gpuMap(t.limit))]);
    for (const u of usages) for (const row of u.usage) if (row.tenant === t.path || row.tenant.startsWith(t.path + '/')) types.add(row.gpu_type);
    for (const type of types) {
      const values = hours.map((h, i) => {
        let seconds = 0;
        for (const row of usages[i].usage) {
          if (row.gpu_type === type && (row.tenant === t.path || row.tenant.startsWith(t.path + '/'))) seconds += row.gpu_seconds;
        }
        return h.to > h.from ? seconds / (h.to - h.from) : 0;
      });
      const guarantee = gpuMap(t.guarantee)[type] || 0;
      const limit = gpuMap(t.limit)[type];
      const now = gpuMap(t.usage)[type] || 0;
      if (guarantee || limit !== undefined || now || values.some((v) => v > 0)) {
        series.set(`${t.path} ${type}`, { tenant: t.path, type, values, guarantee, limit, now });
      }
    }
  }
  return [...series.values()];
}

/* One GPU type of a tenant's chart: its area, its guarantee (dashed) and limit (solid), in the type's colour. */
function usageSeriesSvg(s, hours, x, y, L, W) {
  const points = [...s.values, s.now]; /* each bucket's average, then what runs now */
  const area = `M${x(0)},${y(0)} ` + points.map((v, i) => `L${x(i)},${y(v)}`).join(' ') +
               ` L${x(hours.length)},${y(0)} Z`;
  const colour = tenantColour(s.type);
  const g = svg('g', { class: 'series', 'data-tenant': s.tenant, 'data-type': s.type, 'data-now': s.now },
    svg('path', { d: area, fill: colour, 'fill-opacity': '0.25', stroke: colour, 'stroke-width': '1.5' }));
  if (s.guarantee) {
    g.append(svg('line', { x1: L, x2: W - 4, y1: y(s.guarantee), y2: y(s.guarantee), stroke: colour,
                           'stroke-dasharray': '4 3', 'stroke-width': '1.5', class: 'guarantee' }));
  }
  if (s.limit !== undefined) {
    g.append(svg('line', { x1: L, x2: W - 4, y1: y(s.limit), y2: y(s.limit), stroke: colour,
                           'stroke-width': '1.2', class: 'limit' }));
  }
  return g;
}

/* A tenant's chart: every GPU type of its subtree on one axis. */
function usageChart(tenant, list, hours) {
  const W = 300, H = 90, L = 26, B = 14, T = 4;
  const top = Math.max(1, ...list.flatMap((s) => [s.guarantee, s.limit || 0, s.now, ...s.values])) * 1.1;
  const x = (i) => L + (i * (W - L - 4)) / hours.length;
  const y = (v) => T + (H - T - B) * (1 - v / top);
  const g = svg('svg', { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', role: 'img' },
    svg('line', { x1: L, x2: W - 4, y1: y(0), y2: y(0), stroke: '#ccd' }),
    ...list.map((s) => usageSeriesSvg(s, hours, x, y, L, W)),
    svg('text', { x: 2, y: y(top / 1.1) + 8 }, fmtGpus(Math.round(top / 1.1 * 10) / 10)),
    svg('text', { x: 2, y: y(0) }, '0'));
  const step = Math.ceil(hours.length / 4);
  const span = hours.length > 1 ? hours[1].from - hours[0].from : 3600;
  for (let i = 0; i < hours.length; i += step) {
    const d = new Date(hours[i].from * 1000);
    const label = span < 21600 ? `${pad2(d.getHours())}:${pad2(d.getMinutes())}` : `${pad2(d.getMonth() + 1)}-${pad2(d.getDate())}`;
    g.append(svg('text', { x: x(i), y: H - 2, class: 'tick' }, label));
  }
  g.append(svg('text', { x: x(hours.length) - 16, y: H - 2 }, 'now'));
  const keys = list.map((s) => el('span', { class: 'type' },
    el('span', { class: 'swatch', style: { background: tenantColour(s.type) } }),
    [`${s.type} now ${fmtGpus(s.now)}`, s.guarantee ? `guarantee ${fmtGpus(s.guarantee)}` : null,
     s.limit !== undefined ? `limit ${fmtGpus(s.limit)}` : null].filter(Boolean).join(' · ')));
  return el('div', { class: 'chart', dataset: { tenant, buckets: hours.length, span, from: hours[0].from } },
            el('div', { class: 'title' }, el('span', { class: 'name' }, tenant)), el('div', { class: 'now' }, keys), g);
}

/* A tenant's chart and, folded under it, its children's (each with theirs): the tree rolled up. */
function usageTree(path, byTenant, children, hours) {
  const kids = (children.get(path) || []).filter((c) => hasUsage(c, byTenant, children));
  const node = el('div', { class: 'tenant-usage', dataset: { tenant: path } },
                  usageChart(path, byTenant.get(path) || [], hours));
  if (kids.length) {
    node.append(el('details', { class: 'children' },
      el('summary', {}, `${kids.length} ${kids.length === 1 ? 'child' : 'children'} of ${path}`),
      el('div', { class: 'charts' }, kids.map((c) => usageTree(c, byTenant, children, hours)))));
  }
  return node;
}

function hasUsage(path, byTenant, children) {
  return byTenant.has(path) || (children.get(path) || []).some((c) => hasUsage(c, byTenant, children));
}

function drawUsage(tenants, hours, usages) {
  const series = usageSeries(tenants, hours, usages);
  $('usage-legend').replaceChildren(
    el('span', { class: 'key' }, el('span', { class: 'swatch', style: { background: '#8fb3ec' } }),
       `GPUs in use by the tenant and its subtree, per GPU type: the average of each ${fmtSpan(hours[1] ? hours[1].from - hours[0].from : 3600)}, then now`),
    el('span', { class: 'key' }, el('span', { class: 'swatch dashed' }), 'guarantee'),
    el('span', { class: 'key' }, el('span', { class: 'swatch limit' }), 'limit (both in the type\'s colour)'));
  if (!series.length) {
    $('usage-charts').replaceChildren(el('p', { class: 'empty' }, 'No usage, guarantee or limit to show.'));
    return;
  }
  const byTenant = new Map();
  for (const s of series) byTenant.set(s.tenant, [...(byTenant.get(s.tenant) || []), s]);
  const paths = new Set(tenants.map((t) => t.path));
  const parentOf = (p) => p.slice(0, Math.max(0, p.lastIndexOf('/')));
  const children = new Map();
  for (const p of [...paths].sort()) {
    const parent = parentOf(p);
    if (paths.has(parent)) children.set(parent, [...(children.get(parent) || []), p]);
  }
  const roots = [...paths].sort().filter((p) => !paths.has(parentOf(p)) && hasUsage(p, byTenant, children));
  $('usage-charts').replaceChildren(...roots.map((p) => usageTree(p, byTenant, children, hours)));
  focusTenant();
}

/* ---- the pending queue and recent preemptions ---- */

function table(head, rows, emptyText) {
  if (!rows.length) return el('p', { class: 'empty' }, emptyText);
  return el('table', {}, el('thead', {}, el('tr', {}, head.map(([label, cls]) => el('th', { class: cls }, label)))),
            el('tbody', {}, rows));
}

function jobGpus(j) {
  const type = (j.gpu_types || []).join('|') || 'any';
  const share = j.share || {};
  const what = share.mig ? `MIG ${share.mig}` : share.mps ? `MPS ${share.mps}%` : share.timeslice ? 'time-sliced' : '';
  const count = what ? `1 ${type} ${what}` : `${j.gpus} ${type}`;
  return (j.replicas > 1 ? `${j.replicas} × ` : '') + count;
}

async function loadQueue() {
  const page = await api('/v1/jobs?state=pending&limit=200');
  const now = Date.now() / 1000;
  const rows = page.jobs.slice().sort((a, b) => a.submit_time - b.submit_time).map((j) =>
    el('tr', { dataset: { job: j.id, tenant: j.tenant } },
       el('td', { class: 'num' }, j.id), el('td', {}, j.tenant), el('td', {}, j.name || ''),
       el('td', {}, jobGpus(j)), timeCell(j.submit_time), el('td', { class: 'num' }, fmtSpan(now - j.submit_time)),
       el('td', { class: 'reason' }, fmtReason(j.reason, now))));
  $('queue-body').replaceChildren(table(
    [['job', 'num'], ['tenant'], ['name'], ['GPUs'], ['submitted'], ['waiting', 'num'], ['reason']], rows,
    'Nothing is waiting.'));
}

async function loadPreemptions() {
  const page = await api('/v1/preemptions?limit=20');
  const rows = page.preemptions.map((p) =>
    el('tr', { dataset: { job: p.job, tenant: p.tenant } }, timeCell(p.time), el('td', { class: 'num' }, p.job),
       el('td', {}, p.tenant), el('td', { class: 'reason' }, fmtReason(p.reason, Date.now() / 1000))));
  $('preemptions-body').replaceChildren(table([['when'], ['job', 'num'], ['tenant'], ['reason']], rows,
                                              'No preemptions.'));
}

/* ---- jobs: the table, its filters, CSV, and one job's detail ---- */

/* Wait codes that no scheduling pass lifts while the fleet, the limits and the trust stay as they are. */
const BLOCKED_CODES = new Set(['no_gpu_type', 'topology', 'node_shape', 'sharing_mode', 'trust']);
const FINAL_STATES = new Set(['succeeded', 'failed', 'cancelled']);
const CANCEL_ROLES = new Set(['admin', 'operator', 'tenant-admin', 'member']);
const LOG_TAIL_BYTES = 65536;
const LOG_REPLICAS_AT_ONCE = 8;
/* The state filter's finished choices: what each asks the API for. */
const FINISHED_QUERIES = { finished: ['state=succeeded', 'state=failed', 'state=cancelled'], succeeded: ['state=succeeded'],
                           failed: ['state=failed'], cancelled: ['state=cancelled'], all: [''] };

/* Why a pending job cannot run as things stand (null when it merely waits its turn). */
function blockedBy(j) {
  const w = j.wait;
  if (j.state !== 'pending' || !w) return null;
  if (BLOCKED_CODES.has(w.code)) return w.code;
  if ((w.code === 'limit' || w.code === 'user_limit') && w.demand > w.limit) return w.code;
  return null;
}

function jobFilter() {
  return { state: $('jobs-state').value, tenant: $('jobs-tenant').value.trim(), user: $('jobs-user').value.trim(),
           text: $('jobs-text').value.trim().toLowerCase() };
}

function jobShown(j, f) {
  if (f.state === 'blocked' ? !blockedBy(j) : f.state && !FINISHED_QUERIES[f.state] && j.state !== f.state) return false;
  if (f.tenant && j.tenant !== f.tenant && !j.tenant.startsWith(f.tenant + '/')) return false;
  if (f.user && j.user !== f.user) return false;
  const hay = [j.id, j.name, j.tenant, j.user, j.reason].join(' ').toLowerCase();
  return !f.text || hay.includes(f.text);
}

/* The live jobs, or the finished ones the state filter asks for (newest first). */
async function loadJobs() {
  const state = $('jobs-state').value;
  const lists = await Promise.all((FINISHED_QUERIES[state] || ['state=live']).map((q) => jobsAll(q)));
  view.jobs = lists.flat().sort((a, b) => b.id - a.id);
  view.jobsState = state;
  drawJobs();
}

/* A new state filter: the finished choices need other jobs from the API, the live ones only a redraw. */
function jobsStateChanged() {
  const state = $('jobs-state').value;
  if (!FINISHED_QUERIES[state] && !FINISHED_QUERIES[view.jobsState]) {
    view.jobsState = state;
    drawJobs();
    return;
  }
  panel('jobs-body', loadJobs).catch((e) => { if (e.status === 401) signOut(); });
}

function jobRow(j, now) {
  const blocked = blockedBy(j);
  const since = j.state === 'pending' ? j.submit_time : (j.bind_time || j.submit_time);
  const until = FINAL_STATES.has(j.state) ? (j.end_time || since) : now;
  return el('tr', { class: blocked ? 'blocked' : null, dataset: { job: j.id, tenant: j.tenant, state: j.state,
                                                                  blocked: blocked || '' },
                    onclick: () => { location.hash = `#/jobs/${j.id}`; } },
            el('td', { class: 'num' }, el('a', { href: `#/jobs/${j.id}` }, j.id)),
            el('td', {}, el('a', { href: `#/tenants/${j.tenant}`, onclick: (ev) => ev.stopPropagation() }, j.tenant)),
            el('td', {}, j.user || ''), el('td', {}, j.name || ''), el('td', {}, j.state),
            el('td', {}, jobGpus(j)), timeCell(j.submit_time), el('td', { class: 'num' }, fmtSpan(until - since)),
            el('td', { class: 'reason' }, blocked ? el('strong', {}, 'blocked: ') : null, fmtReason(j.reason, now)));
}

function drawJobs() {
  if (!view.jobs) return;
  const f = jobFilter();
  const shown = view.jobs.filter((j) => jobShown(j, f));
  const now = Date.now() / 1000;
  $('jobs-tenants').replaceChildren(...[...new Set(view.jobs.map((j) => j.tenant))].sort()
    .map((t) => el('option', { value: t })));
  const blocked = view.jobs.filter(blockedBy).length;
  const finished = FINISHED_QUERIES[view.jobsState];
  const which = view.jobsState === 'all' ? 'jobs' : finished ? 'finished jobs' : 'live jobs';
  $('jobs-summary').textContent = `${shown.length} of ${view.jobs.length} ${which} shown` +
    (blocked ? `; ${blocked} blocked: they cannot run until the fleet, a limit or the job changes` : '');
  $('jobs-summary').dataset.state = view.jobsState || '';
  $('jobs-body').replaceChildren(table(
    [['job', 'num'], ['tenant'], ['user'], ['name'], ['state'], ['GPUs'], ['submitted'], ['for', 'num'], ['reason']],
    shown.map((j) => jobRow(j, now)), view.jobs.length ? 'No job matches the filters.'
      : finished ? 'No finished job is kept.' : 'No job is running or pending.'));
}

/* A CSV field: quoted when it holds a comma, a quote or a line break. */
function csvField(s) {
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/* The jobs table as it is shown (its header and visible rows, their text) as CSV. */
function jobsCsv() {
  const lines = [...$('jobs-body').querySelectorAll('tr')].map((tr) =>
    [...tr.children].map((c) => csvField(c.textContent.trim())).join(','));
  return lines.join('\r\n') + '\r\n';
}

function downloadCsv() {
  const url = URL.createObjectURL(new Blob([jobsCsv()], { type: 'text/csv' }));
  const a = el('a', { href: url, download: 'gpupool-jobs.csv' });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/* A log answer's bytes as text (logs need not be UTF-8: bad bytes become U+FFFD). */
function logText(data) {
  return new TextDecoder().decode(Uint8Array.from(atob(data || ''), (c) => c.charCodeAt(0)));
}

/* The last LOG_TAIL_BYTES of replica's latest run: {text, size, runs}. */
async function loadLog(id, replica) {
  let log = await api(`/v1/jobs/${id}/logs?replica=${replica}`);
  if (log.size > LOG_TAIL_BYTES && log.next < log.size) {
    log = await api(`/v1/jobs/${id}/logs?replica=${replica}&offset=${log.size - LOG_TAIL_BYTES}`);
  }
  return log;
}

function detailList(pairs) {
  return el('dl', { class: 'facts' }, pairs.filter(([, v]) => v !== null && v !== undefined && v !== '')
    .flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
}

function jobSpec(j) {
  return detailList([
    ['tenant', j.tenant], ['user', j.user], ['name', j.name], ['state', j.state], ['class', j.class],
    ['kind', j.kind], ['GPUs', jobGpus(j)], ['topology', j.topology], ['priority', j.priority],
    ['time limit', j.time_limit_s ? fmtSpan(j.time_limit_s) : null], ['image', j.image],
    ['command', j.command ? j.command.join(' ') : null], ['submitted', fmtTime(j.submit_time)],
  ]);
}

function jobWhy(j) {
  const blocked = blockedBy(j);
  const w = j.wait ? Object.entries(j.wait).filter(([, v]) => v !== null)
    .map(([k, v]) => `${k}: ${k === 'time' ? fmtTime(v) : v}`).join(' · ') : '';
  return el('div', { class: 'why' + (blocked ? ' blocked' : '') },
            blocked ? el('strong', {}, 'Blocked: it cannot run until the fleet, a limit or the job changes. ') : null,
            fmtReason(j.reason, Date.now() / 1000), w ? el('div', { class: 'wait' }, w) : null);
}

function jobPlacement(j) {
  const rows = (j.placement || []).map((p, i) => el('tr', { dataset: { node: p.node } },
    el('td', { class: 'num' }, i), el('td', {}, el('a', { href: `#/nodes/${encodeURIComponent(p.node)}` }, p.node)),
    el('td', {}, (p.gpus || []).join(', ') + (p.slice ? ` (${p.slice.kind} ${p.slice.mig_profile || p.slice.milli_gpus})` : ''))));
  return table([['replica', 'num'], ['node'], ['GPUs']], rows, 'Not placed.');
}

function jobHistory(j) {
  const rows = (j.history || []).map((h) => el('tr', {}, timeCell(h.time), el('td', {}, h.kind),
    el('td', {}, h.to ? `${h.from || ''} → ${h.to}` : ''), el('td', { class: 'reason' }, fmtReason(h.reason, Date.now() / 1000))));
  return table([['when'], ['kind'], ['state'], ['what']], rows, 'No history.');
}

/* Cancel for roles that may, on a job not yet final; the API's last answer beside it (kept when it ends). */
function cancelButton(j) {
  if (!CANCEL_ROLES.has($('who').dataset.role)) return null;
  const status = el('span', { id: 'job-action-status', class: 'action-status' });
  if (FINAL_STATES.has(j.state)) return el('div', { class: 'actions' }, status);
  const button = el('button', { id: 'job-cancel', type: 'button', class: 'danger' }, 'Cancel job');
  button.addEventListener('click', async () => {
    if (!button.dataset.armed) { /* two clicks: a stray one cancels nothing */
      button.dataset.armed = '1';
      button.textContent = `Confirm: cancel job ${j.id}`;
      return;
    }
    button.disabled = true;
    status.textContent = await act('DELETE', `/v1/jobs/${j.id}`, 'cancel requested');
    await panel('job-detail-body', loadJobDetail);
  });
  return el('div', { class: 'actions' }, button, status);
}

/* The replicas whose logs the view shows: every one of a small gang, else the one picked (0 first). */
function logReplicas(j) {
  const n = j.replicas || 1;
  if (n <= LOG_REPLICAS_AT_ONCE) return [...Array(n).keys()];
  const picked = view.logReplica && view.logReplica.job === j.id ? view.logReplica.replica : 0;
  return [Math.min(picked, n - 1)];
}

/* One replica's log: a line saying which run and how much, then its text. */
function replicaLog(r, log) {
  const head = log.run ? `replica ${r}, run bound ${fmtTime(log.run)}, ${log.size} bytes` +
    (log.offset > 0 ? ` (the last ${log.size - log.offset})` : '') + (log.eof ? ', ended' : '') : `replica ${r} has not run`;
  return el('div', { class: 'replica-log' }, el('div', { class: 'summary' }, head),
            el('pre', { class: 'log', dataset: { replica: r } }, logText(log.data)));
}

/* A gang too large to show at once: which replica's log to show. */
function logPicker(j, shown) {
  if ((j.replicas || 1) <= LOG_REPLICAS_AT_ONCE) return '';
  const select = el('select', { id: 'job-log-replica' },
    ...[...Array(j.replicas).keys()].map((r) => el('option', { value: r, selected: r === shown || null }, `replica ${r}`)));
  select.addEventListener('change', () => {
    view.logReplica = { job: j.id, replica: Number(select.value) };
    panel('job-detail-body', loadJobDetail).catch((e) => { if (e.status === 401) signOut(); });
  });
  return el('label', { class: 'controls' }, `${j.replicas} replicas; show `, select);
}

async function loadJobDetail() {
  const id = view.route && view.route.kind === 'jobs' ? view.route.key : null;
  if (!id) return;
  const j = await api(`/v1/jobs/${encodeURIComponent(id)}`);
  const replicas = logReplicas(j);
  const logs = await Promise.all(replicas.map((r) => loadLog(j.id, r)));
  const kept = $('job-action-status') ? $('job-action-status').textContent : '';
  $('job-detail-id').textContent = `${j.id}${j.name ? ' · ' + j.name : ''}`;
  $('job-detail-body').replaceChildren(
    cancelButton(j) || '', el('h3', {}, 'Why'), jobWhy(j), el('h3', {}, 'Spec'), jobSpec(j),
    el('h3', {}, 'Placement'), jobPlacement(j), el('h3', {}, 'History'), jobHistory(j),
    el('h3', {}, replicas.length > 1 ? 'Logs' : 'Log'), logPicker(j, replicas[0]),
    el('div', { id: 'job-log' }, ...replicas.map((r, i) => replicaLog(r, logs[i]))));
  if (kept && $('job-action-status')) $('job-action-status').textContent = kept;
}

/* Sends one change with the session's token; the API's answer in words ("403 ..." when it refuses). */
async function act(method, path, done, body) {
  const session = view.session;
  checkSession(session);
  const init = { method, headers: { Authorization: 'Bearer ' + session.token }, cache: 'no-store' };
  if (body) { init.body = JSON.stringify(body); init.headers['Content-Type'] = 'application/json'; }
  const resp = await fetch(path, init);
  let answer = null;
  try { answer = await resp.json(); } catch (e) { answer = null; }
  checkSession(session);
  if (resp.ok) return done;
  return `refused: ${resp.status} ${answer && answer.error ? answer.error.message : resp.statusText}`;
}

/* Waits (20 s at most: a loaded host) until GET path shows an accepted change: the
 * journal applies it to the node view a moment after the API answered. */
async function settled(path, pred) {
  for (let i = 0; i < 80 && !pred(await api(path)); i++) await new Promise((r) => setTimeout(r, 250));
}

/* ---- deep links: #/jobs/ID, #/nodes/NAME, #/tenants/PATH ---- */

function parseRoute(hash) {
  const m = /^#\/(jobs|nodes|tenants)\/(.+)$/.exec(hash);
  return m ? { kind: m[1], key: decodeURIComponent(m[2]) } : null;
}

/* Shows the view the address names, loading it now. */
async function route() {
  view.route = parseRoute(location.hash);
  if (!view.session || !$('dash') || $('dash').hidden) return;
  const kind = view.route ? view.route.kind : null;
  $('job-detail').hidden = kind !== 'jobs';
  $('node-detail').hidden = kind !== 'nodes';
  try {
    if (kind === 'jobs') await panel('job-detail-body', loadJobDetail);
    if (kind === 'nodes') await panel('node-detail-body', loadNodeDetail);
  } catch (e) {
    if (!(e instanceof SignedOut)) throw e;
  }
}

/* Brings the linked view into sight; a tenant's link also sets the jobs filter to its subtree. */
function scrollToRoute() {
  if (!view.route || !view.session) return;
  if (view.route.kind !== 'tenants') {
    $(view.route.kind === 'jobs' ? 'job-detail' : 'node-detail').scrollIntoView();
    return;
  }
  $('jobs-tenant').value = view.route.key;
  drawJobs();
  const chart = focusTenant();
  if (chart) chart.scrollIntoView();
}

/* Unfolds the usage tree down to the linked tenant and marks its chart; the chart, or null. */
function focusTenant() {
  if (!view.route || view.route.kind !== 'tenants') return null;
  const box = [...document.querySelectorAll('.tenant-usage')].find((t) => t.dataset.tenant === view.route.key);
  if (!box) return null;
  for (let d = box.closest('details'); d; d = d.parentElement.closest('details')) d.open = true;
  box.classList.add('focus');
  return box;
}

/* ---- one node: health, checks, its jobs, GPU use, drain ---- */

const DRAIN_ROLES = new Set(['admin', 'operator']);

/* Drain asks for a reason first (kept on the node with who and when, as
 * `gpupool nodes drain --reason`); Undrain clears it. */
function drainButton(node) {
  if (!DRAIN_ROLES.has($('who').dataset.role)) return null;
  const status = el('span', { id: 'node-action-status', class: 'action-status' });
  const reason = node.draining ? null : el('input', { id: 'node-drain-reason', type: 'text', maxlength: 200,
                                                      placeholder: 'reason (kernel upgrade, RMA ...)' });
  const button = el('button', { id: 'node-drain', type: 'button' }, node.draining ? 'Undrain' : 'Drain');
  button.addEventListener('click', async () => {
    const why = reason ? reason.value.trim() : '';
    if (reason && !why) {
      status.textContent = 'give a reason first';
      reason.focus();
      return;
    }
    button.disabled = true;
    const path = `/v1/nodes/${encodeURIComponent(node.name)}`;
    const done = node.draining ? 'undrained' : 'draining';
    status.textContent = await act('POST', path + '/drain', done, reason ? { drain: true, reason: why } : { drain: false });
    const kept = status.textContent;
    if (kept === done) await settled(path, (n) => n.draining !== node.draining);
    await panel('node-detail-body', loadNodeDetail);
    if ($('node-action-status')) $('node-action-status').textContent = kept;
  });
  return el('div', { class: 'actions' }, reason || '', button, status);
}

/* "kernel 6.19 (by alice since 2026-12-08 01:02:03)"; null when the node does not drain. */
function drainText(drain) {
  if (!drain) return null;
  return `${drain.reason || 'no reason given'} (by ${drain.by} since ${fmtTime(drain.since)})`;
}

function nodeGpuRows(node) {
  const tele = new Map(((node.agent && node.agent.gpus) || []).map((g) => [g.index, g]));
  return node.gpus.map((g) => {
    const t = tele.get(g.index) || {};
    const h = g.health || {};
    const use = g.sm_active_pct !== undefined ? g.sm_active_pct : t.sm_active_pct;
    return el('tr', { dataset: { gpu: g.index } }, el('td', { class: 'num' }, g.index), el('td', {}, g.uuid),
              el('td', {}, g.healthy ? 'healthy' : `unhealthy${h.reason ? ': ' + h.reason : ''}`),
              el('td', { class: 'num sm' }, use === undefined ? '' : `${use} %`),
              el('td', { class: 'num' }, t.temperature_c === undefined ? '' : `${t.temperature_c} °C`),
              el('td', {}, (h.xids || []).map((x) => `XID ${x.xid} (${x.action}) ${fmtTime(x.at)}`).join('; ')));
  });
}

async function loadNodeDetail() {
  const name = view.route && view.route.kind === 'nodes' ? view.route.key : null;
  if (!name) return;
  const path = `/v1/nodes/${encodeURIComponent(name)}`;
  const [node, checks] = await Promise.all([api(path), api(path + '/checks?limit=20')]);
  const jobs = (view.jobs || []).filter((j) => (j.placement || []).some((p) => p.node === name));
  const state = [node.up ? 'up' : 'down', node.drained ? 'drained' : node.draining ? 'draining' : null]
    .filter(Boolean).join(', ');
  $('node-detail-id').textContent = name;
  $('node-detail-body').replaceChildren(
    drainButton(node) || '',
    detailList([['state', state], ['drain', drainText(node.drain)], ['block', node.block], ['zone', node.zone], ['GPUs', `${node.gpu_count} ${node.gpu_type}, ` +
      `${node.gpus_free} free, ${node.gpus_healthy} healthy`], ['agent last seen', node.agent ? fmtTime(node.agent.last_seen) : 'no agent']]),
    el('h3', {}, 'GPUs'), table([['GPU', 'num'], ['uuid'], ['health'], ['SM active', 'num'], ['temp', 'num'], ['XIDs']],
                                nodeGpuRows(node), 'No GPUs.'),
    el('h3', {}, 'Jobs on it (that you may see)'), table(
      [['job', 'num'], ['tenant'], ['user'], ['name'], ['state'], ['GPUs'], ['submitted'], ['for', 'num'], ['reason']],
      jobs.map((j) => jobRow(j, Date.now() / 1000)), 'No job of yours runs here.'),
    el('h3', {}, 'Checks'), table([['when'], ['GPU', 'num'], ['check'], ['result'], ['detail']],
      checks.checks.map((c) => el('tr', {}, timeCell(c.at), el('td', { class: 'num' }, c.gpu), el('td', {}, c.check),
                                  el('td', {}, c.passed ? 'passed' : 'failed'), el('td', { class: 'reason' }, c.detail || ''))),
      'No check reported.'));
}

/* ---- the viewer's bill ---- */

function thisPeriod() {
  const d = new Date();
  return `${d.getUTCFullYear()}-${pad2(d.getUTCMonth() + 1)}`;
}

/* milli-GPU-seconds (an exact integer) as GPU-hours with 2 decimals, in BigInt. */
function gpuHours(milliSeconds) {
  const hundredths = (BigInt(milliSeconds) * 100n + 1800000n) / 3600000n;
  return `${hundredths / 100n}.${String(hundredths % 100n).padStart(2, '0')}`;
}

function billTenantRows(t) {
  const head = el('tr', { class: 'total', dataset: { tenant: t.tenant } },
                  el('td', {}, t.tenant), el('td', {}, t.mode), el('td', { class: 'num' }, t.amount),
                  el('td', { class: 'num' }, t.subtotal), el('td', { class: 'num' }, t.due));
  const lines = (t.lines || []).map((l) =>
    el('tr', { class: 'line', dataset: { tenant: t.tenant, kind: l.kind } },
       el('td', {}, `${l.kind} · ${l.gpu_type}` + (l.topology && l.topology !== 'any' ? ` · ${l.topology}` : '')),
       el('td', {}, `${l.gpu_hours} GPU-h`), el('td', { class: 'num' }, l.amount), el('td', {}), el('td', {})));
  return [head, ...lines];
}

function billFleet(fleet) {
  const cols = ['physical', 'whole', 'mig', 'mps', 'timeslice', 'idle_in_guarantees', 'idle_unowned'];
  const rows = fleet.map((f) => el('tr', { dataset: { type: f.gpu_type } }, el('td', {}, f.gpu_type),
                                   cols.map((c) => el('td', { class: 'num' }, gpuHours(f[c])))));
  return el('div', {}, el('h3', {}, 'Fleet (GPU-hours)'),
            table([['GPU type'], ...cols.map((c) => [c.replace(/_/g, ' '), 'num'])], rows, 'No fleet records.'));
}

async function loadBill() {
  const period = thisPeriod();
  const bill = await api(`/v1/bill?period=${period}`);
  $('bill-period').textContent = `${bill.period} (${bill.currency})`;
  const rows = bill.tenants.flatMap(billTenantRows);
  const parts = [
    el('div', { class: 'bill-meta' }, `From ${fmtTime(bill.from)} to ${fmtTime(bill.to)}, as of ${fmtTime(bill.as_of)} ` +
                                      '(your local time). Amounts are exact, in ' + bill.currency + '.'),
    table([['tenant / line'], ['mode / GPU-hours'], ['amount', 'num'], ['subtotal', 'num'], ['due', 'num']], rows,
          'Nothing billed this month.'),
  ];
  if (bill.fleet) parts.push(billFleet(bill.fleet));
  $('bill-body').replaceChildren(...parts);
}

/* ---- bookings: a calendar per GPU type ---- */

const CALENDAR_DAYS = 7;
const LIVE_BOOKING = new Set(['planned', 'clearing', 'active']);

/* Local midnight of the viewer's today, epoch seconds. */
function localMidnight(epoch) {
  const d = new Date(epoch * 1000);
  d.setHours(0, 0, 0, 0);
  return d.getTime() / 1000;
}

/* The most GPUs the bookings hold at once inside [from, to). */
function peakBooked(bookings, from, to) {
  const edges = [];
  for (const b of bookings) {
    const a = Math.max(b.start, from), e = Math.min(b.end, to);
    if (a < e) edges.push([a, b.gpus], [e, -b.gpus]);
  }
  edges.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let now = 0, peak = 0;
  for (const [, d] of edges) { now += d; peak = Math.max(peak, now); }
  return peak;
}

/* One GPU type's week: a day header, a bar per booking placed by its
 * window, and per day what no booking holds yet (free to book, before
 * the guarantees of others are counted: the engine says at booking). */
function calendarOf(type, capacity, bookings, day0) {
  const W = 700, dayW = W / CALENDAR_DAYS, laneH = 18, span = CALENDAR_DAYS * 86400;
  const x = (t) => Math.max(0, Math.min(W, ((t - day0) / span) * W));
  const days = [];
  for (let i = 0; i < CALENDAR_DAYS; i++) {
    const from = day0 + i * 86400, label = new Date(from * 1000);
    const free = Math.max(0, capacity - peakBooked(bookings, from, from + 86400));
    days.push(el('div', { class: 'day', dataset: { start: from } },
                 el('div', { class: 'day-name' }, label.toLocaleDateString(undefined, { weekday: 'short', day: 'numeric' })),
                 el('div', { class: 'free', dataset: { free } }, `${free} of ${capacity} free`)));
  }
  const bars = bookings.map((b, i) => svg('g', { class: 'booking', 'data-name': b.name, 'data-tenant': b.tenant,
                                                               'data-start': b.start, 'data-gpus': b.gpus, 'data-state': b.state },
    svg('rect', { x: x(b.start), y: i * laneH, width: Math.max(2, x(b.end) - x(b.start)), height: laneH - 3,
                  rx: 3, fill: tenantColour(b.tenant) }),
    svg('title', {}, `${b.name}: ${b.gpus} ${type} for ${b.tenant}, ${fmtTime(b.start)} to ${fmtTime(b.end)} (${b.state})`),
    svg('text', { x: x(b.start) + 4, y: i * laneH + 11 }, `${b.name} · ${b.gpus} · ${b.tenant}`)));
  const grid = [];
  for (let i = 1; i < CALENDAR_DAYS; i++) grid.push(svg('line', { x1: i * dayW, x2: i * dayW, y1: 0, y2: Math.max(1, bookings.length) * laneH, class: 'grid' }));
  return el('div', { class: 'calendar', dataset: { type, capacity } },
            el('h3', {}, `${type}: ${capacity} GPUs`),
            el('div', { class: 'days' }, days),
            svg('svg', { viewBox: `0 0 ${W} ${Math.max(1, bookings.length) * laneH}`, class: 'bars' }, ...grid, ...bars),
            bookings.length ? '' : el('p', { class: 'empty' }, 'No bookings this week.'));
}

async function loadCalendar() {
  const day0 = localMidnight(Date.now() / 1000);
  const [page, nodes] = await Promise.all([
    api(`/v1/bookings?from=${day0}&to=${day0 + CALENDAR_DAYS * 86400}`), api('/v1/nodes')]);
  const capacity = new Map();
  for (const n of nodes.nodes) capacity.set(n.gpu_type, (capacity.get(n.gpu_type) || 0) + n.gpu_count);
  const live = page.bookings.filter((b) => LIVE_BOOKING.has(b.state) && b.gpu_type);
  const parts = [...capacity.keys()].sort().map((type) =>
    calendarOf(type, capacity.get(type), live.filter((b) => b.gpu_type === type), day0));
  for (const a of page.allowances) {
    parts.push(el('p', { class: 'allowance', dataset: { org: a.org } },
                  `Booking allowance of ${a.org} this week: ` +
                  (a.gpu_hours_left === null ? 'unbounded' : `${a.gpu_hours_left.toFixed(1)} of ${a.gpu_hours_per_week} GPU-hours left`)));
  }
  $('calendar-body').replaceChildren(...parts);
}

/* ---- start ---- */

function tick() {
  $('clock').textContent = fmtTime(Date.now() / 1000 | 0);
}

/* The listeners of the dashboard's own controls (again after forget() puts a fresh copy in). */
function bindDash() {
  $('colour-by').addEventListener('change', (ev) => { view.colourBy = ev.target.value; drawFleet(); });
  $('usage-range').addEventListener('change', () => panel('usage-charts', loadUsage).catch((e) => {
    if (e.status === 401) signOut();
  }));
  $('jobs-state').addEventListener('change', jobsStateChanged);
  for (const id of ['jobs-tenant', 'jobs-user', 'jobs-text']) $(id).addEventListener('input', drawJobs);
  $('jobs-csv').addEventListener('click', downloadCsv);
}

function start() {
  view.blankDash = $('dash').cloneNode(true);
  bindDash();
  $('login-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const token = $('token').value.trim();
    $('token').value = '';
    if (token) signIn(token);
  });
  $('signout').addEventListener('click', signOut);
  $('refresh').addEventListener('click', refresh);
  window.addEventListener('hashchange', async () => { await route(); scrollToRoute(); });
  tick();
  setInterval(tick, 1000);
  offerProviders();
  finishOidc().then((redirected) => {
    if (redirected) return;
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) signIn(token, JSON.parse(sessionStorage.getItem(OIDC_KEY) || 'null'));
    else showLogin('');
  });
}

start();
