"""test_oidc_provider.py - signing in with a real identity provider (glewlwyd, idp.py).

The provider's side, always (when glewlwyd is installed):
  - the device grant end to end through glewlwyd's own endpoints gives an
    RS256 ID token for the CLI's client with the user's groups and amr
    (["password"]; ["password", "otp"] after the TOTP step);
  - a key rotated while glewlwyd runs signs the next token (new kid, both
    keys published); a group removed at the provider is gone from the next
    token.
The CLI (`gpupool login`, `whoami`, `logout`) against a gpupoold that
trusts the provider (--oidc-issuer; these skip, saying so, with a gpupoold
that lacks it):
  - login by the device grant: the prompt, the poll, the 0600 cache, whoami
    as the signed-in user; logout revokes the refresh token at the provider
    (it no longer refreshes) and forgets the sign-in (whoami: 401);
  - login --browser: the code flow with PKCE and the loopback redirect, a
    redirect with another state ignored;
  - a sign-in about to expire is refreshed before the command: with a
    provider that renews the ID token (a token endpoint in front of
    glewlwyd that does), the new one is cached and used; one that has
    expired and that the provider renews without a new ID token (glewlwyd
    itself) makes the CLI say to run gpupool login;
  - a device code nobody enters expires with a message and caches nothing;
  - a static token still wins over the sign-in (service accounts);
  - the refresh token is never sent to a plain-http endpoint off this host;
  - a key rotated at the provider while gpupoold runs (the old one dropped):
    the next sign-in's token (new kid) is taken without a restart, the old
    token is refused;
  - a tenant-admin (by a group's role binding) signed in with a password
    only changing a quota: 403 second_factor_missing and the CLI's hint;
    signed in again with the TOTP step (amr password, otp): 200;
  - a group removed at the provider: the next token's grants lack the
    role it gave, and a change it allowed is refused.
Exit 77 (skipped) with one line when glewlwyd or oathtool is missing.
"""
import http.server
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse

import gpd
import idp

GPUPOOL = os.path.join(gpd.BIN, "gpupool")
ALICE_TOTP = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"


def gpupoold_has_oidc():
    p = subprocess.run([os.path.join(gpd.BIN, "gpupoold"), "--help"], capture_output=True, text=True)
    return "--oidc-issuer" in p.stdout + p.stderr


def people(p):
    p.add_user("alice", "alice-pw", ["ml-admins", "nlp"], totp_secret=ALICE_TOTP)
    p.add_user("bob", "bob-pw", ["nlp"])


class Scene:
    """A provider, and for the CLI tests a gpupoold that trusts it (examples/tenants.yaml, bob a member of
    research/nlp by a user binding) and a HOME of its own."""

    def __init__(self, with_daemon=False, **provider):
        self.p = idp.Provider(**provider)
        self.d = None
        self.home = tempfile.mkdtemp(prefix="gpupool-home-")
        self.with_daemon = with_daemon

    def start(self):
        self.p.start()
        people(self.p)
        if self.with_daemon:
            self.d = gpd.Daemon(extra=["--oidc-issuer", self.p.issuer, "--oidc-audience", self.p.client_id,
                                       "--oidc-client-id", self.p.client_id, "--oidc-ca", self.p.ca_file,
                                       "--oidc-refresh-min-s", "1"])
            self.d.start()
            self.d.cli("apply", "-f", gpd.TENANTS)
            self.d.ok("POST", "/v1/rolebindings", {"user": "bob", "role": "member", "scope": "research/nlp"})
        return self

    def cleanup(self):
        if self.d:
            self.d.cleanup()
        self.p.cleanup()
        subprocess.run(["rm", "-rf", self.home])

    def env(self, **extra):
        env = dict(os.environ, HOME=self.home, GPUPOOL_SERVER=self.d.url if self.d else "http://127.0.0.1:1")
        for k in ("GPUPOOL_TOKEN", "GPUPOOL_TOKEN_FILE", "XDG_CONFIG_HOME", "BROWSER", "DISPLAY"):
            env.pop(k, None)
        env.update(extra)
        return env

    def cli(self, *args, **extra):
        return subprocess.run([GPUPOOL] + list(args), env=self.env(**extra), capture_output=True, text=True,
                              timeout=60)

    @property
    def cache(self):
        return os.path.join(self.home, ".config", "gpupool", "signin.json")

    def record(self):
        with open(self.cache) as f:
            return json.load(f)[self.d.url]

    def login_device(self, user, totp=False, **env):
        """gpupool login; the person (this test) enters the code shown at the provider.  Its stdout and stderr."""
        cli = subprocess.Popen([GPUPOOL, "login", "--idp-cacert", self.p.ca_file] +
                               (["--scope", "mfa"] if totp else []),
                               env=self.env(**env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = cli.stderr.readline()
        m = re.search(r"open (https://\S+) and enter the code (\S+)", first)
        assert m, "no device prompt: %r" % first
        assert m.group(1) == self.p.issuer + "/device", m.group(1)
        _, auth = self.d.call("GET", "/v1/auth", token="")
        scope = " ".join(auth["oidc"][0]["scopes"] or ["openid"]) + (" mfa" if totp else "")
        self.p.approve_device(m.group(2), user, scope, totp)
        out, err = cli.communicate(timeout=60)
        assert cli.returncode == 0, "login -> %d\n%s%s" % (cli.returncode, out, err)
        return out + err


# ---- the provider alone ----
def test_device_grant_end_to_end_gives_rs256_id_token_with_groups_and_amr(s):
    bob = s.p.sign_in("bob")
    head, claims = idp.header(bob["id_token"]), idp.claims(bob["id_token"])
    assert head["alg"] == "RS256" and head["kid"] == "k1", head
    assert claims["iss"] == s.p.issuer and claims["aud"] == s.p.client_id, claims
    assert claims["preferred_username"] == "bob" and claims["groups"] == ["nlp"], claims
    assert claims["amr"] == ["password"], claims
    assert bob.get("refresh_token"), bob
    alice = idp.claims(s.p.sign_in("alice", totp=True)["id_token"])
    assert alice["amr"] == ["password", "otp"] and alice["groups"] == ["ml-admins", "nlp"], alice


def test_rotated_key_signs_the_next_token_and_both_are_published(s):
    assert idp.header(s.p.sign_in("bob")["id_token"])["kid"] == "k1"
    assert s.p.rotate_key() == "k2"
    assert idp.header(s.p.sign_in("bob")["id_token"])["kid"] == "k2"
    _, _, jwks = idp.Session(s.p).call("GET", "/api/oidc/jwks")
    assert sorted(k["kid"] for k in jwks["keys"]) == ["k1", "k2"], jwks
    assert all("d" not in k for k in jwks["keys"]), "private key material published"


def test_group_removed_at_the_provider_is_gone_from_the_next_token(s):
    assert "ml-admins" in idp.claims(s.p.sign_in("alice")["id_token"])["groups"]
    s.p.set_groups("alice", ["nlp"])
    assert idp.claims(s.p.sign_in("alice")["id_token"])["groups"] == ["nlp"]


# ---- the CLI against gpupoold ----
def test_login_device_grant_whoami_logout(s):
    out = s.login_device("bob")
    assert "Signed in to %s as bob" % s.d.url in out, out
    assert stat.S_IMODE(os.stat(s.cache).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(s.cache)).st_mode) == 0o700
    rec = s.record()
    assert rec["issuer"] == s.p.issuer and idp.claims(rec["id_token"])["preferred_username"] == "bob"
    who = s.cli("whoami")
    assert who.returncode == 0, who.stdout + who.stderr
    assert re.search(r"^user: +bob$", who.stdout, re.M) and "nlp" in who.stdout, who.stdout
    assert "gpupool login" in who.stdout, who.stdout  # where the token came from
    bye = s.cli("logout")
    assert bye.returncode == 0 and "tokens revoked at " + s.p.issuer in bye.stdout, bye.stdout + bye.stderr
    status, _, answer = s.p.token({"grant_type": "refresh_token", "refresh_token": rec["refresh_token"]})
    assert status != 200, "the refresh token still works after logout: %s" % answer
    assert s.d.url not in json.load(open(s.cache))
    again = s.cli("whoami")
    assert again.returncode == 4 and "no token is set" in again.stderr, again.stderr
    assert "Not signed in" in s.cli("logout").stdout


BROWSER_SCRIPT = r'''
import sys, urllib.parse
sys.path.insert(0, %(here)r)
import idp
p = idp.Provider.__new__(idp.Provider)
p.url, p.ca_file = %(url)r, %(ca)r
url = sys.argv[1]
browser = idp.Session(p)
browser.login("bob", "bob-pw")
q = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
assert q["code_challenge_method"] == "S256" and len(q["code_challenge"]) == 43, q
browser.call("PUT", "/api/auth/grant/" + q["client_id"], {"scope": q["scope"]})
_, headers, _ = browser.call("GET", url + "&g_continue", expect=(302,))
back = headers["Location"]
if %(forge)r:  # a page that is not the provider's, with a state of its own
    import urllib.request
    forged = back.split("?")[0] + "?code=stolen&state=not-this-login"
    urllib.request.urlopen(forged).read()
import urllib.request
print(urllib.request.urlopen(back).read().decode())
'''


def browser_script(s, forge=False):
    path = os.path.join(s.home, "browser.py")
    with open(path, "w") as f:
        f.write("#!%s\n" % sys.executable + BROWSER_SCRIPT % {"here": gpd.HERE, "url": s.p.url, "ca": s.p.ca_file,
                                                             "forge": forge})
    os.chmod(path, 0o700)
    return path


def test_login_browser_code_flow_with_pkce_and_loopback_redirect(s):
    browser = browser_script(s, forge=True)
    r = s.cli("login", "--browser", "--port", str(s.p.redirect_port), "--idp-cacert", s.p.ca_file, BROWSER=browser)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "not this login's (ignored)" in r.stderr, r.stderr
    assert "Signed in to %s as bob" % s.d.url in r.stdout, r.stdout
    assert s.cli("whoami").returncode == 0


def test_signin_near_expiry_is_refreshed_before_the_command(s):
    s.login_device("bob")  # the provider's tokens last 30 s: inside the CLI's minute of refresh
    before = s.record()
    who = s.cli("whoami")
    assert who.returncode == 0, who.stdout + who.stderr
    after = s.record()
    assert after["access_token"] != before["access_token"], "no refresh happened"
    assert after["id_token"] == before["id_token"]  # glewlwyd renews no ID token


class RenewingTokenEndpoint:
    """A token endpoint that answers a refresh with a new ID token, as Keycloak, Okta, Entra ID, Dex and
    Google do and glewlwyd does not: it spends the refresh token at glewlwyd (so a revoked one fails)
    and gets the new ID token by a fresh device sign-in of the same user there (real, glewlwyd-signed)."""

    def __init__(self, provider, user):
        scene = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                form = dict(urllib.parse.parse_qsl(self.rfile.read(int(self.headers["Content-Length"])).decode()))
                status, _, answer = provider.token(form)
                if status == 200 and form.get("grant_type") == "refresh_token":
                    answer["id_token"] = provider.sign_in(user)["id_token"]
                    scene.renewed += 1
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.renewed = 0
        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d/token" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


def test_signin_near_expiry_renewed_with_a_new_id_token_is_used(s):
    s.login_device("bob")
    endpoint = RenewingTokenEndpoint(s.p, "bob")
    try:
        with open(s.cache) as f:
            all_records = json.load(f)
        before = all_records[s.d.url]
        before["token_endpoint"] = endpoint.url
        with open(s.cache, "w") as f:
            json.dump(all_records, f)
        time.sleep(1)  # the renewed ID token's iat differs from the first one's
        who = s.cli("whoami")
        assert who.returncode == 0, who.stdout + who.stderr
        after = s.record()
        assert endpoint.renewed == 1 and after["id_token"] != before["id_token"], "no new ID token cached"
        assert after["expires"] > before["expires"] and stat.S_IMODE(os.stat(s.cache).st_mode) == 0o600
        assert re.search(r"^user: +bob$", who.stdout, re.M), who.stdout
    finally:
        endpoint.close()


def test_expired_signin_the_provider_cannot_renew_says_run_login(s):
    s.login_device("bob")
    with open(s.cache) as f:
        all_records = json.load(f)
    all_records[s.d.url]["expires"] = int(time.time()) - 5  # as if its hour had passed
    with open(s.cache, "w") as f:
        json.dump(all_records, f)
    r = s.cli("whoami")
    assert "has expired" in r.stderr and "run gpupool login" in r.stderr, r.stderr


def test_device_code_never_entered_expires_with_a_message(s):
    r = s.cli("login", "--idp-cacert", s.p.ca_file)  # nobody enters the code; it lasts 2 s
    assert r.returncode == 4, r.stdout + r.stderr
    assert "the code expired before it was entered: run gpupool login again" in r.stderr, r.stderr
    assert not os.path.exists(s.cache)


def test_refresh_token_never_goes_to_a_plain_http_endpoint(s):
    s.login_device("bob")
    with open(s.cache) as f:
        all_records = json.load(f)
    all_records[s.d.url].update(expires=int(time.time()) - 5, token_endpoint="http://192.0.2.1/token")
    with open(s.cache, "w") as f:
        json.dump(all_records, f)
    r = s.cli("whoami")
    assert "http://192.0.2.1/token: refused, not HTTPS" in r.stderr, r.stderr


def test_static_token_wins_over_the_signin(s):
    said = s.login_device("bob", GPUPOOL_TOKEN=s.d.token)
    assert "a static token is set (GPUPOOL_TOKEN); commands send it, not this sign-in" in said, said
    noted = s.cli("login", "--idp-cacert", s.p.ca_file, "--issuer", "https://elsewhere.example", GPUPOOL_TOKEN="x")
    assert noted.returncode == 4 and "signs no one in with https://elsewhere.example" in noted.stderr, noted.stderr
    r = s.cli("whoami", GPUPOOL_TOKEN=s.d.token)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "GPUPOOL_TOKEN" in r.stdout and not re.search(r"^user: +bob$", r.stdout, re.M), r.stdout


# ---- gpupoold and the provider together ----
def bind(s, **binding):
    return s.d.ok("POST", "/v1/rolebindings", binding)


def whoami(s):
    r = s.cli("whoami", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def test_key_rotated_at_the_provider_while_gpupoold_runs(s):
    bind(s, group="nlp", role="member", scope="research/nlp")
    s.login_device("bob")
    old = s.record()["id_token"]
    assert idp.header(old)["kid"] == "k1" and whoami(s)["user"] == "bob"
    s.p.rotate_key(keep_old=False)  # k1 is gone from the provider's JWKS
    s.login_device("bob")
    assert idp.header(s.record()["id_token"])["kid"] == "k2"
    assert whoami(s)["user"] == "bob"  # gpupoold fetched the new key without a restart
    status, answer = s.d.call("GET", "/v1/whoami", token=old)
    assert status == 401 and answer.get("reason") in ("unknown_key", "bad_signature"), (status, answer)


def test_second_factor_for_a_quota_change_refused_then_given(s):
    bind(s, group="ml-admins", role="tenant-admin", scope="research")
    s.login_device("alice")  # password only
    assert whoami(s)["second_factor"] is False
    r = s.cli("quota", "set", "research/nlp", "--weight", "3")
    assert r.returncode == 4, r.stdout + r.stderr
    assert "second_factor_missing" in r.stderr and "needs a sign-in with a second factor" in r.stderr, r.stderr
    s.login_device("alice", totp=True)  # scope mfa: password, then the TOTP code
    assert idp.claims(s.record()["id_token"])["amr"] == ["password", "otp"]
    assert whoami(s)["second_factor"] is True
    r = s.cli("quota", "set", "research/nlp", "--weight", "3")
    assert r.returncode == 0, r.stdout + r.stderr
    assert s.d.ok("GET", "/v1/tenants/research/nlp")["weight"] == 3


def test_group_removed_at_the_provider_the_next_token_loses_the_role(s):
    bind(s, group="ml-admins", role="tenant-admin", scope="research")
    bind(s, group="nlp", role="member", scope="research/nlp")
    s.login_device("alice")
    roles = {(g["role"], g["scope"]) for g in whoami(s)["grants"]}
    assert roles == {("tenant-admin", "research"), ("member", "research/nlp")}, roles
    r = s.cli("tenants", "create", "research/speech")  # a tenant-admin's change: only the second factor lacks
    assert r.returncode == 4 and "second_factor_missing" in r.stderr, r.stdout + r.stderr
    s.p.set_groups("alice", ["nlp"])  # out of ml-admins at the provider
    s.login_device("alice")
    who = whoami(s)
    assert who["groups"] == ["nlp"] and [(g["role"], g["scope"]) for g in who["grants"]] == [("member", "research/nlp")]
    r = s.cli("tenants", "create", "research/speech")  # a member's: refused for the role itself
    assert r.returncode == 4 and "second_factor_missing" not in r.stderr, r.stdout + r.stderr


def run(tests, with_daemon=False, **provider):
    failed = 0
    for t in tests:
        s = Scene(with_daemon, **provider)
        t0 = time.time()
        try:
            s.start()
            t(s)
            print("ok   %s (%.1fs)" % (t.__name__, time.time() - t0), flush=True)
        except Exception as e:  # noqa: BLE001 - report every failure and go on
            failed += 1
            where = traceback.extract_tb(e.__traceback__)[-1]
            print("FAIL %s: %s (%s:%d: %s)\n--- glewlwyd log ---\n%s\n--- gpupoold log ---\n%s"
                  % (t.__name__, e, os.path.basename(where.filename), where.lineno, where.line, s.p.read_log(),
                     s.d.read_log() if s.d else ""), flush=True)
        finally:
            s.cleanup()
    return failed


if __name__ == "__main__":
    if idp.MISSING:
        print("skip: " + idp.MISSING)
        sys.exit(77)
    failed = run([test_device_grant_end_to_end_gives_rs256_id_token_with_groups_and_amr,
                  test_rotated_key_signs_the_next_token_and_both_are_published,
                  test_group_removed_at_the_provider_is_gone_from_the_next_token])
    if not gpupoold_has_oidc():
        print("skip: the CLI's sign-in tests: this gpupoold has no --oidc-issuer")
    else:
        failed += run([test_login_device_grant_whoami_logout, test_login_browser_code_flow_with_pkce_and_loopback_redirect,
                       test_expired_signin_the_provider_cannot_renew_says_run_login,
                       test_static_token_wins_over_the_signin, test_refresh_token_never_goes_to_a_plain_http_endpoint,
                       test_key_rotated_at_the_provider_while_gpupoold_runs,
                       test_second_factor_for_a_quota_change_refused_then_given,
                       test_group_removed_at_the_provider_the_next_token_loses_the_role], with_daemon=True)
        failed += run([test_signin_near_expiry_is_refreshed_before_the_command,
                       test_signin_near_expiry_renewed_with_a_new_id_token_is_used], with_daemon=True, access_token_s=30)
        failed += run([test_device_code_never_entered_expires_with_a_message], with_daemon=True, device_code_s=2)
    sys.exit(1 if failed else 0)
