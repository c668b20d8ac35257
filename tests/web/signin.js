/* signin.js - the dashboard's sign-in with an identity provider, in headless
 * Chromium (tests/web/test_dashboard_signin.py runs it; cdp.js drives it).
 *
 *   node signin.js --url DASHBOARD_URL --provider PROVIDER_URL --user U --password P --client ID
 *
 * 1. The person signs in at the provider first (glewlwyd's login API, from a
 *    page of the provider, so its session cookie is the browser's) and
 *    grants the dashboard's client the openid scope.
 * 2. The dashboard: "Sign in with HOST" is clicked; the browser goes to the
 *    provider's authorization endpoint.  glewlwyd then sends it to its own
 *    page (login.html, not served by the test's glewlwyd) whose Continue
 *    button requests the same authorization URL with g_continue: this does
 *    that, and the provider redirects back to the dashboard with ?code&state.
 * 3. Signed in: who the header names, the page's address, sessionStorage.
 *    Then Sign out: sessionStorage again.
 * 4. A forged redirect (?code=...&state=... this tab never sent): what the
 *    sign-in page says.
 * Prints one JSON object; exceptions thrown in the page are in "errors".
 * The provider's certificate is from the test's throw-away CA: certificate
 * errors are ignored in this browser only.
 */
'use strict';
const { launch, sleep } = require('./cdp');

function args() {
  const a = {};
  for (let i = 2; i < process.argv.length; i += 2) a[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
  return a;
}

async function loaded(b, urlPrefix, what) {
  const deadline = Date.now() + 30000;
  while (Date.now() < deadline) {
    const href = await b.evaluate('location.href').catch(() => '');
    if (href.startsWith(urlPrefix) && (await b.evaluate('document.readyState').catch(() => '')) === 'complete') {
      return href;
    }
    await sleep(100);
  }
  throw new Error('timed out waiting for ' + what);
}

async function signInAtProvider(b, o) {
  await b.send('Page.navigate', { url: o.provider + '/api/oidc/.well-known/openid-configuration' });
  await loaded(b, o.provider, 'the provider');
  const login = `fetch('/api/auth/', {method: 'POST', headers: {'Content-Type': 'application/json'},
    body: JSON.stringify({username: ${JSON.stringify(o.user)}, password: ${JSON.stringify(o.password)}})})
    .then((r) => r.status)`;
  const grant = `fetch('/api/auth/grant/${o.client}', {method: 'PUT', headers: {'Content-Type': 'application/json'},
    body: JSON.stringify({scope: 'openid'})}).then((r) => r.status)`;
  return { login: await b.evaluate(login), grant: await b.evaluate(grant) };
}

async function main() {
  const o = args();
  const b = await launch();
  const errors = [];
  const authRequests = [];
  const out = { errors };
  try {
    b.on('Runtime.exceptionThrown', (e) => errors.push(JSON.stringify(e.exceptionDetails).slice(0, 400)));
    b.on('Network.requestWillBeSent', (e) => {
      if (e.request.url.startsWith(o.provider + '/api/oidc/auth')) authRequests.push(e.request.url);
    });
    await b.send('Security.setIgnoreCertificateErrors', { ignore: true });
    await b.send('Network.enable');
    await b.send('Runtime.enable');
    out.provider_session = await signInAtProvider(b, o);

    await b.send('Page.navigate', { url: o.url });
    await loaded(b, o.url, 'the dashboard');
    out.button = await b.waitFor(`(() => { const x = document.querySelector('#login-oidc button');
      return x && !document.getElementById('login-oidc').hidden ? x.textContent : ''; })()`, 'the provider button');
    await b.evaluate(`document.querySelector('#login-oidc button').click()`);
    const deadline = Date.now() + 30000;
    while (!authRequests.length && Date.now() < deadline) await sleep(100);
    if (!authRequests.length) {
      throw new Error(`no authorization request (${errors.join('; ')}); the page says ` +
                      `"${await b.evaluate("(document.getElementById('login-error') || {}).textContent")}"`);
    }
    const asked = authRequests[0];
    out.authorization_request = asked;
    await b.send('Page.navigate', { url: asked + '&g_continue' }); /* what glewlwyd's Continue button does */
    await loaded(b, o.url, 'the redirect back');
    out.who = await b.waitFor(`document.getElementById('who').textContent`, 'the signed-in header');
    out.address = await b.evaluate('location.href');
    out.session = await b.evaluate(`JSON.stringify(Object.fromEntries(Object.entries(sessionStorage)))`);

    await b.evaluate(`document.getElementById('signout').click()`);
    await b.waitFor(`!document.getElementById('login').hidden`, 'the sign-in page');
    await sleep(500); /* the revocation is sent without waiting for it */
    out.after_signout = await b.evaluate(`JSON.stringify(Object.fromEntries(Object.entries(sessionStorage)))`);

    await b.send('Page.navigate', { url: o.url + '?code=stolen&state=forged' });
    await loaded(b, o.url, 'the forged redirect');
    out.forged = await b.waitFor(`document.getElementById('login-error').textContent`, 'the refusal');
    out.forged_session = await b.evaluate(`sessionStorage.getItem('gpupool.token')`);
  } finally {
    await b.close();
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => { process.stderr.write(String(e.stack || e) + '\n'); process.exit(1); });
