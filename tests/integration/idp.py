"""idp.py - a real OpenID Connect provider for the tests: Debian's glewlwyd on loopback.

Why glewlwyd: it is C, packaged in Debian (`glewlwyd`), starts in well under a
second from a SQLite file and is configured entirely through its own admin
API, and its OIDC plugin has what gpupool needs to meet: RS256 ID tokens,
the device authorization grant (RFC 8628), the code flow with PKCE, refresh
tokens, revocation, JWKS published from a private JWKS the admin can replace
while it runs (key rotation), a TOTP scheme, and `amr` in its ID tokens.
Upstream archived it in 2024 (docs/dependencies.md says so); lemonldap-ng
is maintained but is Perl under a web server and much heavier to start.

What a Provider sets up, each time, in a throw-away directory:
  - a CA and a server certificate for 127.0.0.1 (openssl), HTTPS only;
  - a SQLite database from Debian's init script (admin / password);
  - through the admin API: a `groups` property on users, an OTP (TOTP)
    scheme `otp`, scope `openid` (password) and scope `mfa` (password and
    then TOTP), an OIDC plugin `oidc` signing RS256 with a private JWKS
    (kid `k1`), device grant, code flow with PKCE, refresh, revocation, a
    mandatory `groups` claim, and a public client `gpupool-cli` allowed the
    device grant, the code flow and one loopback redirect
    (http://127.0.0.1:REDIRECT_PORT/callback: glewlwyd matches it exactly);
  - users, each with a password, groups and, for some, a TOTP secret.

Tokens: glewlwyd's ID token carries aud = the client id, `groups`, and
`amr` (["password"], or ["password", "otp"] when the session passed the
TOTP scheme, i.e. asked for scope `mfa`).  Its access token carries neither
groups nor amr (aud is the scope list), so gpupool presents the ID token
(as Kubernetes does).  glewlwyd answers a refresh with a new access token
only (no new ID token).

Helpers (Python standard library only; openssl and oathtool from Debian):
  p.sign_in(user, password, totp=False)   -> token response (id_token, ...)
  p.approve_device(user_code, user, password, totp=False)
  p.set_groups(user, [...]); p.rotate_key(); p.add_redirect(uri)
  p.ca_file, p.issuer, p.client_id
MISSING is a one-line reason when glewlwyd or oathtool is not installed.
"""
import base64
import hashlib
import http.cookiejar
import json
import os
import re
import secrets
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

GLEWLWYD = shutil.which("glewlwyd") or "/usr/bin/glewlwyd"
INIT_SQL = "/usr/share/doc/glewlwyd/database/init.sqlite3.sql.gz"
MODULES = "/usr/lib/glewlwyd"
CLIENT_ID = "gpupool-cli"
ADMIN_PASSWORD = "password"  # Debian's init script's admin


def _missing():
    if not os.path.exists(GLEWLWYD):
        return "glewlwyd is not installed (apt-get install glewlwyd)"
    if not os.path.exists(INIT_SQL):
        return "glewlwyd's database script %s is missing" % INIT_SQL
    for tool in ("oathtool", "openssl", "sqlite3"):
        if not shutil.which(tool):
            return "%s is not installed" % tool
    return None


MISSING = _missing()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _rsa_jwk(pem_path, kid):
    """The private JWK of an RSA key, read from `openssl pkey -text` (no Python crypto library)."""
    text = subprocess.run(["openssl", "pkey", "-in", pem_path, "-noout", "-text"], check=True,
                          capture_output=True, text=True).stdout
    names = {"modulus": "n", "privateExponent": "d", "prime1": "p", "prime2": "q",
             "exponent1": "dp", "exponent2": "dq", "coefficient": "qi"}
    jwk = {"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig", "e": "AQAB"}
    for block in re.finditer(r"^(\w+):\s*\n((?:\s+[0-9a-f:]+\n)+)", text, re.M):
        if block.group(1) in names:
            hexdigits = re.sub(r"[^0-9a-f]", "", block.group(2)).lstrip("0") or "0"
            if len(hexdigits) % 2:
                hexdigits = "0" + hexdigits
            jwk[names[block.group(1)]] = _b64url(bytes.fromhex(hexdigits))
    return jwk


def totp(secret_b32):
    """The current TOTP code for a base32 secret (Debian's oathtool)."""
    return subprocess.run(["oathtool", "--totp", "-b", secret_b32], check=True, capture_output=True,
                          text=True).stdout.strip()


def pkce_pair():
    verifier = _b64url(secrets.token_bytes(32))
    return verifier, _b64url(hashlib.sha256(verifier.encode()).digest())


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


class Session:
    """One browser: a cookie jar, no automatic redirects, the provider's CA trusted."""

    def __init__(self, provider):
        self.p = provider
        ctx = ssl.create_default_context(cafile=provider.ca_file)
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()),
            urllib.request.HTTPSHandler(context=ctx), _NoRedirect())

    def call(self, method, url, body=None, form=None, expect=(200,)):
        """(status, headers, parsed JSON or text); url may be a path under the provider."""
        if url.startswith("/"):
            url = self.p.url + url
        data, ctype = None, None
        if body is not None:
            data, ctype = json.dumps(body).encode(), "application/json"
        elif form is not None:
            data, ctype = urllib.parse.urlencode(form).encode(), "application/x-www-form-urlencoded"
        req = urllib.request.Request(url, data=data, method=method)
        if ctype:
            req.add_header("Content-Type", ctype)
        try:
            with self.opener.open(req, timeout=30) as r:
                status, headers, text = r.status, r.headers, r.read().decode()
        except urllib.error.HTTPError as e:
            status, headers, text = e.code, e.headers, e.read().decode()
        try:
            out = json.loads(text)
        except ValueError:
            out = text
        if expect and status not in expect:
            raise AssertionError("glewlwyd %s %s -> %d %s" % (method, url, status, out))
        return status, headers, out

    def login(self, user, password, totp_secret=None):
        """Signs this browser in through glewlwyd's login API: password, then the TOTP code."""
        self.call("POST", "/api/auth/", {"username": user, "password": password})
        if totp_secret:
            self.call("POST", "/api/auth/", {"username": user, "scheme_type": "otp", "scheme_name": "otp",
                                             "value": {"value": totp(totp_secret)}})


class Provider:
    def __init__(self, access_token_s=600, device_code_s=600):
        # tmpfs when there is one: glewlwyd commits each change to SQLite, and an fsync per request
        # on a loaded disk made a sign-in take seconds
        shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
        self.dir = tempfile.mkdtemp(prefix="gpupool-idp-", dir=shm)
        self.port = _free_port()
        self.redirect_port = _free_port()  # the client's one loopback redirect (glewlwyd matches it exactly)
        self.url = "https://127.0.0.1:%d" % self.port
        self.issuer = self.url + "/api/oidc"
        self.client_id = CLIENT_ID
        self.ca_file = os.path.join(self.dir, "ca.pem")
        self.log = os.path.join(self.dir, "glewlwyd.log")
        self.access_token_s = access_token_s  # also the ID token's lifetime
        self.device_code_s = device_code_s
        self.proc = None
        self.users = {}     # name -> {"password", "totp"}
        self.keys = []      # private JWKs, the signing one first
        self.admin = None

    # ---- start and stop ----
    def start(self):
        self._make_certificates()
        self._make_database()
        self._write_config()
        logf = open(os.path.join(self.dir, "stdout.log"), "ab")
        self.proc = subprocess.Popen([GLEWLWYD, "-c", os.path.join(self.dir, "glewlwyd.conf")],
                                     stdout=logf, stderr=logf)
        logf.close()
        self._wait_listening()
        self.admin = Session(self)
        self.admin.login("admin", ADMIN_PASSWORD)
        self._configure()
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def read_log(self, tail=3000):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()[-tail:]
        except OSError:
            return ""

    def _openssl(self, *args):
        subprocess.run(["openssl"] + list(args), check=True, capture_output=True, cwd=self.dir)

    def _make_certificates(self):
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]  # fast to make; only signing is RS256
        self._openssl("req", "-x509", *ec, "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
                      "-days", "2", "-subj", "/CN=gpupool test identity CA")
        self._openssl("req", *ec, "-nodes", "-keyout", "server.key", "-out", "server.csr",
                      "-subj", "/CN=127.0.0.1")
        with open(os.path.join(self.dir, "san.ext"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        self._openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                      "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.ext")

    def _make_database(self):
        sql = b"BEGIN;\n" + subprocess.run(["zcat", INIT_SQL], check=True, capture_output=True).stdout + b"\nCOMMIT;\n"
        subprocess.run(["sqlite3", os.path.join(self.dir, "glewlwyd.db")], input=sql, check=True,
                       capture_output=True)

    def _write_config(self):
        conf = """
port=%(port)d
bind_address="127.0.0.1"
external_url="%(url)s"
login_url="login.html"
api_prefix="api"
allow_origin="*"
log_mode="file"
log_level="INFO"
log_file="%(dir)s/glewlwyd.log"
cookie_secure=1
cookie_same_site="empty"
session_expiration=3600
session_key="GLEWLWYD2_SESSION_ID"
admin_session_authentication="cookie"
profile_session_authentication="cookie"
allow_multiple_user_per_session=false
login_api_enabled=true
admin_scope="g_admin"
profile_scope="g_profile"
user_module_path="%(mods)s/user"
client_module_path="%(mods)s/client"
user_auth_scheme_module_path="%(mods)s/scheme"
plugin_module_path="%(mods)s/plugin"
use_secure_connection=true
secure_connection_key_file="%(dir)s/server.key"
secure_connection_pem_file="%(dir)s/server.pem"
hash_algorithm="SHA512"
database = { type = "sqlite3" path = "%(dir)s/glewlwyd.db" };
""" % {"port": self.port, "url": self.url, "dir": self.dir, "mods": MODULES}
        with open(os.path.join(self.dir, "glewlwyd.conf"), "w") as f:
            f.write(conf)

    def _wait_listening(self, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("glewlwyd exited %d:\n%s" % (self.proc.returncode, self.read_log()))
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("glewlwyd did not listen:\n" + self.read_log())

    # ---- configuration through the admin API ----
    def _configure(self):
        a = self.admin
        _, _, mod = a.call("GET", "/api/mod/user/database")
        mod["parameters"]["data-format"]["groups"] = {"multiple": True, "read": True, "write": True,
                                                     "profile-read": True, "profile-write": False}
        a.call("PUT", "/api/mod/user/database", mod)
        a.call("PUT", "/api/mod/user/database/reset")
        a.call("POST", "/api/mod/scheme/", {
            "module": "otp", "name": "otp", "display_name": "TOTP", "expiration": 600, "max_use": 0,
            "allow_user_register": True,
            "parameters": {"issuer": "gpupool-test", "secret-minimum-size": 16, "otp-length": 6,
                           "hotp-allow": False, "hotp-window": 0, "totp-allow": True, "totp-window": 30,
                           "totp-start-offset": 0}})
        a.call("PUT", "/api/scope/openid", {"display_name": "Open ID", "description": "sign in",
                                            "password_required": True, "password_max_age": 0, "scheme": {}})
        a.call("POST", "/api/scope/", {"name": "mfa", "display_name": "second factor",
                                       "description": "sign in with a second factor", "password_required": True,
                                       "password_max_age": 0,
                                       "scheme": {"2fa": [{"scheme_type": "otp", "scheme_name": "otp"}]}})
        self.keys = [_rsa_jwk(self._new_rsa_key("k1"), "k1")]
        a.call("POST", "/api/mod/plugin/", {"module": "oidc", "name": "oidc", "display_name": "OIDC",
                                            "enabled": True, "parameters": self._plugin_parameters()})
        a.call("POST", "/api/client/", {
            "client_id": CLIENT_ID, "name": "gpupool command line", "confidential": False, "enabled": True,
            "redirect_uri": ["http://127.0.0.1:%d/callback" % self.redirect_port],
            "authorization_type": ["code", "device_authorization", "refresh_token", "delete_token"],
            "scope": []})

    def _new_rsa_key(self, kid):
        path = os.path.join(self.dir, "sign-%s.pem" % kid)
        self._openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", path)
        return path

    def _plugin_parameters(self):
        return {
            "iss": self.issuer, "jwks-private": json.dumps({"keys": self.keys}), "default-kid": self.keys[0]["kid"],
            "jwks-show": True, "subject-type": "public",
            "access-token-duration": self.access_token_s, "refresh-token-duration": 3600,
            "code-duration": 600, "refresh-token-rolling": False, "allow-non-oidc": False,
            "auth-type-code-enabled": True, "auth-type-token-enabled": False, "auth-type-id-token-enabled": True,
            "auth-type-password-enabled": False, "auth-type-client-enabled": False,
            "auth-type-device-enabled": True, "auth-type-refresh-enabled": True,
            "device-authorization-expiration": self.device_code_s, "device-authorization-interval": 1,
            "pkce-allowed": True, "pkce-method-plain-allowed": False,
            "introspection-revocation-allowed": True, "introspection-revocation-allow-target-client": True,
            "introspection-revocation-auth-scope": ["openid"],
            "scope": [], "name-claim": "no", "email-claim": "no", "scope-claim": "no", "address-claim": {"type": "no"},
            "claims": [{"name": "groups", "user-property": "groups", "type": "string", "mandatory": True,
                        "on-demand": False, "scope": []},
                       {"name": "preferred_username", "user-property": "username", "type": "string",
                        "mandatory": True, "on-demand": False, "scope": []}],
            "restrict-scope-client-property": "", "request-parameter-allow": False,
        }

    def add_user(self, name, password, groups=(), totp_secret=None):
        self.admin.call("POST", "/api/user/", {"username": name, "password": password, "enabled": True,
                                               "name": name, "email": "", "scope": ["openid", "mfa"],
                                               "groups": list(groups)})
        if totp_secret:
            self.admin.call("POST", "/api/delegate/%s/profile/scheme/register/" % name, {
                "username": name, "scheme_type": "otp", "scheme_name": "otp",
                "value": {"type": "TOTP", "secret": totp_secret, "time_step_size": 30}})
        self.users[name] = {"password": password, "totp": totp_secret}

    def add_redirect(self, uri):
        """One more redirect URI for the client (the dashboard's own address, once gpupoold listens)."""
        _, _, client = self.admin.call("GET", "/api/client/" + CLIENT_ID)
        client["redirect_uri"] = client.get("redirect_uri", []) + [uri]
        self.admin.call("PUT", "/api/client/" + CLIENT_ID, client)

    def set_groups(self, name, groups):
        """Replaces a user's groups (removing one from a group: the next token loses it)."""
        _, _, user = self.admin.call("GET", "/api/user/" + name)
        self.admin.call("PUT", "/api/user/" + name, {"name": user.get("name", name), "email": "",
                                                     "enabled": True, "scope": user["scope"],
                                                     "groups": list(groups)})

    def rotate_key(self, keep_old=True):
        """Signs with a new RS256 key from now on (kid k2, k3, ...), while running; the old key stays
        published when keep_old.  Returns the new kid."""
        kid = "k%d" % (int(self.keys[0]["kid"][1:]) + 1)
        new = _rsa_jwk(self._new_rsa_key(kid), kid)
        self.keys = [new] + (self.keys if keep_old else [])
        _, _, plugin = self.admin.call("GET", "/api/mod/plugin/oidc")
        plugin["parameters"].update({"jwks-private": json.dumps({"keys": self.keys}), "default-kid": kid})
        self.admin.call("PUT", "/api/mod/plugin/oidc", plugin)
        self.admin.call("PUT", "/api/mod/plugin/oidc/reset", expect=(200,))
        return kid

    # ---- signing a user in through the provider's own endpoints ----
    def device_start(self, scope="openid"):
        _, _, out = Session(self).call("POST", "/api/oidc/device_authorization/",
                                       form={"grant_type": "device_authorization", "client_id": CLIENT_ID,
                                             "scope": scope})
        return out

    def approve_device(self, user_code, user, scope="openid", totp=False):
        """What the person does in a browser: signs in (password, then TOTP when totp), grants the
        scopes to the CLI's client and enters the code."""
        u = self.users[user]
        browser = Session(self)
        browser.login(user, u["password"], u["totp"] if totp else None)
        browser.call("PUT", "/api/auth/grant/" + CLIENT_ID, {"scope": scope})
        status, headers, _ = browser.call("GET", "/api/oidc/device?code=%s&g_continue" % user_code,
                                          expect=(302,))
        where = headers.get("Location", "")
        if "deviceComplete" not in where:
            raise AssertionError("glewlwyd did not complete the device code: " + where)

    def token(self, form):
        return Session(self).call("POST", "/api/oidc/token/", form=dict(form, client_id=CLIENT_ID),
                                  expect=None)

    def sign_in(self, user, totp=False):
        """The device grant end to end: returns glewlwyd's token answer (id_token, access_token,
        refresh_token, ...).  totp: sign in with the second factor (scope mfa, amr has otp)."""
        scope = "openid mfa" if totp else "openid"
        start = self.device_start(scope)
        self.approve_device(start["user_code"], user, scope, totp)
        status, _, out = self.token({"grant_type": "urn:ietf:params:oauth:grant-type:device_code",
                                     "device_code": start["device_code"]})
        if status != 200:
            raise AssertionError("device token -> %d %s" % (status, out))
        return out


def header(jwt):
    """The header of a JWT (alg, kid)."""
    part = jwt.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def claims(jwt):
    """The payload of a JWT (no verification: a test's look inside)."""
    payload = jwt.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


if __name__ == "__main__":
    import sys
    if MISSING:
        print("skip: " + MISSING)
        sys.exit(0)
    p = Provider()
    try:
        p.start()
        p.add_user("alice", "alice-pw", ["ml-admins", "nlp"], totp_secret="JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP")
        p.add_user("bob", "bob-pw", ["nlp"])
        for who, second in (("bob", False), ("alice", True)):
            t = p.sign_in(who, totp=second)
            print(who, json.dumps(claims(t["id_token"]), sort_keys=True))
        print("rotated to", p.rotate_key())
        t = p.sign_in("alice")["id_token"]
        print("alice", header(t), claims(t).get("amr"), claims(t).get("preferred_username"))
    except Exception:
        print(p.read_log())
        raise
    finally:
        p.cleanup()
