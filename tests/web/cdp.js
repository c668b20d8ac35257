/* cdp.js - a headless Chromium driven over the DevTools protocol (CDP).
 *
 * Debian's chromium and Debian's node-ws (/usr/share/nodejs/ws), nothing
 * from npm: launch() starts `chromium --headless` on a free port with a
 * fresh profile, reads the browser's WebSocket address from the profile's
 * DevToolsActivePort file and opens one page; send() is one CDP command
 * (a promise of its result), on() listens to one event of that page.
 *
 *   const b = await launch();
 *   b.on('Page.loadEventFired', () => ...);
 *   await b.send('Page.navigate', {url});
 *   await b.close();
 */
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const WebSocket = require(process.env.GP_NODE_WS || '/usr/share/nodejs/ws');

const CHROMIUM = process.env.GP_CHROMIUM || '/usr/bin/chromium';

function sleep(ms) { return new Promise((r) => setTimeout(r, ms)); }

async function devtoolsAddress(profile, proc, timeoutMs) {
  const file = path.join(profile, 'DevToolsActivePort');
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`chromium exited with ${proc.exitCode}`);
    try {
      const [port, p] = fs.readFileSync(file, 'utf8').split('\n');
      if (port && p) return `ws://127.0.0.1:${port}${p}`;
    } catch (e) { /* not written yet */ }
    await sleep(50);
  }
  throw new Error('chromium did not open its DevTools port');
}

class Browser {
  constructor(proc, profile, ws) {
    this.proc = proc;
    this.profile = profile;
    this.ws = ws;
    this.nextId = 1;
    this.pending = new Map();
    this.listeners = new Map();
    this.sessionId = null;
    ws.on('message', (data) => this.dispatch(JSON.parse(data)));
  }

  dispatch(msg) {
    if (msg.id && this.pending.has(msg.id)) {
      const { resolve, reject, method } = this.pending.get(msg.id);
      this.pending.delete(msg.id);
      if (msg.error) reject(new Error(`${method}: ${msg.error.message}`));
      else resolve(msg.result);
      return;
    }
    for (const fn of this.listeners.get(msg.method) || []) fn(msg.params);
  }

  /* A command to the page (or to the browser with browser = true). */
  send(method, params = {}, browser = false) {
    const id = this.nextId++;
    const msg = { id, method, params };
    if (!browser && this.sessionId) msg.sessionId = this.sessionId;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, method });
      this.ws.send(JSON.stringify(msg));
    });
  }

  on(method, fn) {
    if (!this.listeners.has(method)) this.listeners.set(method, []);
    this.listeners.get(method).push(fn);
  }

  /* The value of a JavaScript expression in the page (awaited when a promise). */
  async evaluate(expression) {
    const r = await this.send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true });
    if (r.exceptionDetails) throw new Error('evaluate: ' + JSON.stringify(r.exceptionDetails).slice(0, 500));
    return r.result.value;
  }

  /* Polls a page expression until it is truthy; its value. */
  async waitFor(expression, what, timeoutMs = 60000) {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const v = await this.evaluate(expression);
      if (v) return v;
      await sleep(100);
    }
    throw new Error('timed out waiting for ' + what);
  }

  /* Browser.close, then the process group (/usr/bin/chromium is a shell
   * script: the browser is its child) if anything is left, then the profile. */
  async close() {
    const exited = new Promise((r) => (this.proc.exitCode !== null ? r() : this.proc.once('exit', r)));
    try { await Promise.race([this.send('Browser.close', {}, true), sleep(3000)]); } catch (e) { /* gone */ }
    try { this.ws.close(); } catch (e) { /* gone */ }
    await Promise.race([exited, sleep(5000)]);
    try { process.kill(-this.proc.pid, 'SIGKILL'); } catch (e) { /* the group is gone: good */ }
    fs.rmSync(this.profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  }
}

async function launch({ width = 1400, height = 900 } = {}) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'gpupool-chromium-'));
  const args = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--no-default-browser-check',
                '--disable-extensions', '--disable-background-networking', '--disable-component-update',
                '--disable-sync', '--hide-scrollbars', '--remote-debugging-port=0', `--user-data-dir=${profile}`,
                `--window-size=${width},${height}`, 'about:blank'];
  const proc = spawn(CHROMIUM, args, { stdio: ['ignore', 'ignore', 'ignore'], detached: true });
  const address = await devtoolsAddress(profile, proc, 30000);
  const ws = new WebSocket(address, { perMessageDeflate: false, maxPayload: 256 * 1024 * 1024 });
  await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
  const b = new Browser(proc, profile, ws);
  const { targetId } = await b.send('Target.createTarget', { url: 'about:blank' }, true);
  const { sessionId } = await b.send('Target.attachToTarget', { targetId, flatten: true }, true);
  b.sessionId = sessionId;
  return b;
}

module.exports = { launch, sleep };
