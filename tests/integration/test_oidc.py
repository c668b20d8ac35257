"""Provider tokens at a real gpupoold (issue 33 section 1; src/server/oidc.c,
oidc_keys.c, api_rolebindings.c): a small identity provider of this file on
loopback HTTPS (a discovery document and a JWKS it can rotate while gpupoold
runs), tokens signed here with openssl (RS256, ES256), and the attacks:

  - `none`, HS256 signed with the provider's public key as the secret, a key
    the provider never published, an expired token, another audience,
    another issuer: 401 with the reason, counted on /metrics, audited;
  - key rotation at the provider: the new key's tokens are taken without a
    restart, the retired key's refused;
  - authority from role bindings: no binding -> 403 no_binding; a group
    bound tenant-admin changes a quota only with a second factor (403
    naming it without); the group removed at the provider -> the next token
    loses the role; a submit that could go to two tenants must name one;
  - a tenant-admin never binds admin, nor outside its subtree;
  - a second issuer that cannot be reached: its tokens are refused
    (issuer_unreachable), the first issuer's still taken;
  - a plain-http issuer is refused at start.
Standard library and the openssl command only.
"""
import base64
import http.server
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402

AUD = "gpupool"


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def openssl(*args, data=None):
    return subprocess.run(["openssl"] + list(args), input=data, capture_output=True, check=True).stdout


class Key:
    """A signing key made with openssl: RSA 2048 (RS256) or P-256 (ES256)."""

    def __init__(self, folder, kid, ec=False):
        self.kid, self.ec = kid, ec
        self.path = os.path.join(folder, kid + ".pem")
        if ec:
            openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", self.path)
        else:
            openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", self.path)
        self.public_pem = openssl("pkey", "-in", self.path, "-pubout")

    def jwk(self):
        if self.ec:
            der = openssl("pkey", "-in", self.path, "-pubout", "-outform", "DER")
            point = der[-65:]  # 04 || x || y
            return {"kty": "EC", "crv": "P-256", "kid": self.kid, "use": "sig", "alg": "ES256",
                    "x": b64(point[1:33]), "y": b64(point[33:])}
        text = openssl("rsa", "-in", self.path, "-noout", "-modulus").decode()
        n = bytes.fromhex(text.strip().split("=", 1)[1])
        return {"kty": "RSA", "kid": self.kid, "use": "sig", "alg": "RS256", "n": b64(n), "e": b64(b"\x01\x00\x01")}

    def sign(self, data):
        sig = openssl("dgst", "-sha256", "-sign", self.path, data=data)
        if not self.ec:
            return sig
        return der_to_raw(sig)


def der_to_raw(der):
    """An ECDSA DER signature (SEQUENCE of two INTEGERs) as r || s, 32 bytes each."""
    assert der[0] == 0x30
    i = 2 if der[1] < 0x80 else 2 + (der[1] & 0x7f)
    out = b""
    for _ in range(2):
        assert der[i] == 0x02
        n = der[i + 1]
        out += der[i + 2:i + 2 + n].lstrip(b"\x00").rjust(32, b"\x00")
        i += 2 + n
    return out


class Provider:
    """A loopback HTTPS identity provider: discovery and JWKS only; the tokens are made by token()."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="gpupool-idp-")
        self.cert = os.path.join(self.dir, "cert.pem")
        key = os.path.join(self.dir, "tls.key")
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", self.cert, "-days", "2",
                "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1")
        self.published = []
        self.fetches = 0
        provider = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                provider.fetches += 1
                if self.path == "/.well-known/openid-configuration":
                    body = {"issuer": provider.issuer, "jwks_uri": provider.issuer + "/jwks"}
                elif self.path == "/jwks":
                    body = {"keys": [k.jwk() for k in provider.published]}
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.cert, key)
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.issuer = "https://127.0.0.1:%d" % self.server.server_address[1]
        self.rsa = Key(self.dir, "rsa-1")
        self.ec = Key(self.dir, "ec-1", ec=True)
        self.published = [self.rsa, self.ec]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def token(self, key=None, alg=None, secret=None, iss=None, aud=AUD, exp_in=300, user="alice", groups=(),
              amr=("pwd",), kid=None):
        key = key or self.rsa
        now = int(time.time())
        head = {"alg": alg or ("ES256" if key.ec else "RS256"), "kid": kid or key.kid, "typ": "at+jwt"}
        claims = {"iss": iss or self.issuer, "aud": aud, "sub": "sub-" + user, "preferred_username": user,
                  "groups": list(groups), "amr": list(amr), "iat": now - 5, "exp": now + exp_in,
                  "jti": "%s-%f" % (user, time.time())}
        data = (b64(json.dumps(head).encode()) + "." + b64(json.dumps(claims).encode())).encode()
        if head["alg"] == "none":
            return data.decode() + "."
        if head["alg"] == "HS256":
            import hmac
            import hashlib
            return data.decode() + "." + b64(hmac.new(secret, data, hashlib.sha256).digest())
        return data.decode() + "." + b64(key.sign(data))

    def close(self):
        self.server.shutdown()
        shutil.rmtree(self.dir, ignore_errors=True)


IDP = None
DOWN = "https://127.0.0.1:1"  # a second issuer nothing listens for


def refused(d, tok, reason, status=401, method="GET", path="/v1/whoami", body=None):
    code, out = d.call(method, path, body, token=tok)
    assert code == status and out.get("reason") == reason, (reason, code, out)
    return out


def refusal_count(d, reason):
    for line in d.call("GET", "/metrics")[1].splitlines():
        if line.startswith('gpupool_auth_refusals_total{reason="%s"}' % reason):
            return int(line.split()[-1])
    raise AssertionError("no refusal counter " + reason)


def test_sign_in_contract(d):
    auth = d.call("GET", "/v1/auth", token="")[1]
    scopes = ["openid", "profile", "groups", "offline_access"]
    assert auth == {"oidc": [{"issuer": IDP.issuer, "client_id": "gpupool-cli", "audience": AUD, "scopes": scopes},
                             {"issuer": DOWN, "client_id": "gpupool-cli", "audience": "other-aud",
                              "scopes": scopes}]}, auth
    d.cli("apply", "-f", gpd.TENANTS)
    tok = IDP.token(groups=["ml-admins"])
    refused(d, tok, "no_binding", status=403)
    out = d.cli("rolebinding", "create", "--group", "ml-admins", "--role", "tenant-admin", "--scope", "research")
    assert out.stdout.strip() == "rolebinding 1: group ml-admins holds tenant-admin at research", out.stdout
    b = d.cli("rolebinding", "create", "--user", "alice", "--role", "member", "--scope", "product/ads",
              json_out=True)
    assert b["user"] == "alice" and b["role"] == "member" and b["id"] == 2, b
    listed = d.cli("rolebindings").stdout
    assert "group:ml-admins" in listed and "user:alice" in listed, listed
    who = d.ok("GET", "/v1/whoami", token=tok)
    assert who["oidc"] is True and who["name"] == "alice" and who["groups"] == ["ml-admins"], who
    assert who["role"] == "tenant-admin" and who["second_factor"] is False, who
    assert [(g["role"], g["scope"], g["from"]) for g in who["grants"]] == [
        ("tenant-admin", "research", "group:ml-admins"), ("member", "product/ads", "user:alice")], who
    es = IDP.token(key=IDP.ec, groups=["ml-admins"])
    assert d.ok("GET", "/v1/whoami", token=es)["name"] == "alice"
    # the union: both tenants visible, nothing else
    seen = {t["path"] for t in d.ok("GET", "/v1/tenants", token=tok)["tenants"]}
    assert "research/nlp" in seen and "product/ads" in seen and "product/search" not in seen, seen
    # a submit that could go to either must name one
    code, out = d.call("POST", "/v1/jobs", {"gpus": 1, "command": ["true"]}, token=tok)
    assert code == 400 and out["error"]["field"] == "tenant" and "name one" in out["error"]["message"], out
    # sign-ins and binding changes are audit rows
    rows = d.ok("GET", "/v1/audit?limit=1000")["audit"]
    actions = [r["action"] for r in rows]
    assert actions.count("rolebinding.create") == 2 and "oidc.signin" in actions, actions
    sign_in = [r for r in rows if r["action"] == "oidc.signin"][0]
    assert sign_in["target"].startswith("user/alice second_factor=no groups=ml-admins"), sign_in


def test_second_factor_for_a_quota(d):
    d.cli("apply", "-f", gpd.TENANTS)
    d.ok("POST", "/v1/rolebindings", {"group": "ml-admins", "role": "tenant-admin", "scope": "research"})
    patch = {"limit": {"gpu": {"H100": 20}}}
    before = refusal_count(d, "second_factor_missing")
    out = refused(d, IDP.token(groups=["ml-admins"]), "second_factor_missing", status=403, method="PATCH",
                  path="/v1/tenants/research/nlp", body=patch)
    assert out["need"] == "second_factor", out
    assert refusal_count(d, "second_factor_missing") == before + 1
    otp = IDP.token(groups=["ml-admins"], amr=("pwd", "otp"))
    code, out = d.call("PATCH", "/v1/tenants/research/nlp", patch, token=otp)
    assert code == 200, (code, out)
    # reads never need it
    assert d.call("GET", "/v1/tenants/research/nlp", token=IDP.token(groups=["ml-admins"]))[0] == 200
    # a tenant-admin never binds admin, nor outside its subtree
    assert d.call("POST", "/v1/rolebindings", {"user": "eve", "role": "admin"}, token=otp)[0] == 403
    assert d.call("POST", "/v1/rolebindings", {"user": "eve", "role": "member", "scope": "product"},
                  token=otp)[0] == 403
    mine = d.ok("POST", "/v1/rolebindings", {"user": "bob", "role": "member", "scope": "research/nlp"}, token=otp)
    listed = d.ok("GET", "/v1/rolebindings", token=otp)["rolebindings"]
    assert {b["id"] for b in listed} >= {mine["id"]}, listed
    # a member's own submit needs no second factor, and goes to its one tenant
    job = d.ok("POST", "/v1/jobs", {"gpus": 1}, token=IDP.token(user="bob"))
    assert d.ok("GET", "/v1/jobs/%d" % job["id"])["tenant"] == "research/nlp", job
    # nor does a tenant-admin's read or a job's cancel
    code, out = d.call("DELETE", "/v1/jobs/%d" % job["id"], token=IDP.token(groups=["ml-admins"]))
    assert code in (200, 202) and out["state"] in ("preempting", "cancelled"), (code, out)
    # the group removed at the provider: the next token loses the role
    gone = IDP.token(groups=["other"], amr=("pwd", "otp"))
    refused(d, gone, "no_binding", status=403)
    d.ok("DELETE", "/v1/rolebindings/%d" % mine["id"], token=otp)
    assert d.call("DELETE", "/v1/rolebindings/%d" % mine["id"], token=otp)[0] == 404
    out = d.cli("rolebinding", "delete", "1")  # the admin's CLI (its token: the static admin token)
    assert out.stdout.strip() == "rolebinding 1 deleted", out.stdout
    refused(d, otp, "no_binding", status=403)


def test_rights_follow_the_grant_at_each_tenant(d):
    d.cli("apply", "-f", gpd.TENANTS)
    d.ok("POST", "/v1/rolebindings", {"group": "ml-admins", "role": "tenant-admin", "scope": "research"})
    d.ok("POST", "/v1/rolebindings", {"user": "alice", "role": "member", "scope": "product/search"})
    carol_search = d.ok("POST", "/v1/tokens", {"name": "c1", "role": "member", "scope": "product/search",
                                               "user": "carol"})["token"]
    dave_nlp = d.ok("POST", "/v1/tokens", {"name": "d1", "role": "member", "scope": "research/nlp",
                                           "user": "dave"})["token"]
    theirs = d.ok("POST", "/v1/jobs", {"gpus": 1, "replicas": 20}, token=carol_search)["id"]
    below = d.ok("POST", "/v1/jobs", {"gpus": 1, "replicas": 20}, token=dave_nlp)["id"]
    alice = IDP.token(groups=["ml-admins"])
    # a member where the job is: another user's job is not hers to cancel
    code, out = d.call("DELETE", "/v1/jobs/%d" % theirs, token=alice)
    assert code == 403, (code, out)
    # a tenant-admin above the job's tenant: hers to cancel
    code, out = d.call("DELETE", "/v1/jobs/%d" % below, token=alice)
    assert code in (200, 202), (code, out)
    # and a tenant elsewhere does not exist for her
    assert d.call("GET", "/v1/tenants/product/ads", token=alice)[0] == 404


def test_refused_tokens(d):
    d.ok("POST", "/v1/rolebindings", {"user": "alice", "role": "admin"})
    good = IDP.token()
    assert d.ok("GET", "/v1/whoami", token=good)["role"] == "admin"
    refused(d, IDP.token(alg="none"), "bad_algorithm")
    refused(d, IDP.token(alg="HS256", secret=IDP.rsa.public_pem), "bad_algorithm")
    stranger = Key(IDP.dir, "never-published")
    refused(d, IDP.token(key=stranger), "unknown_key")
    refused(d, IDP.token(key=stranger, kid="rsa-1"), "bad_signature")
    refused(d, IDP.token(exp_in=-3600), "expired")
    refused(d, IDP.token(aud="another-app"), "wrong_audience")
    refused(d, IDP.token(iss="https://evil.example.com"), "unknown_issuer")
    # the second issuer cannot be reached: its tokens only are refused, quickly
    out = refused(d, IDP.token(iss=DOWN, aud="other-aud"), "issuer_unreachable")
    assert DOWN in out["error"]["message"], out
    assert d.ok("GET", "/v1/whoami", token=IDP.token())["role"] == "admin"
    for reason in ("bad_algorithm", "unknown_key", "bad_signature", "expired", "wrong_audience", "unknown_issuer"):
        assert refusal_count(d, reason) >= 1, reason
    rows = d.ok("GET", "/v1/audit?limit=1000")["audit"]
    reasons = [r["result"] for r in rows if r["action"] == "request.refused"]
    assert any("provider token refused (expired)" in r for r in reasons), reasons
    assert any("provider token refused (bad_algorithm)" in r for r in reasons), reasons


def test_key_rotation_without_restart(d):
    d.cli("apply", "-f", gpd.TENANTS)
    d.ok("POST", "/v1/rolebindings", {"user": "alice", "role": "member", "scope": "research"})
    assert d.ok("GET", "/v1/whoami", token=IDP.token())["name"] == "alice"
    old = IDP.rsa
    IDP.rsa = Key(IDP.dir, "rsa-2")
    IDP.published = [IDP.rsa, IDP.ec]  # rotated: rsa-1 retired
    time.sleep(1.1)  # --oidc-refresh-min-s 1
    assert d.ok("GET", "/v1/whoami", token=IDP.token())["name"] == "alice"
    time.sleep(1.1)
    refused(d, IDP.token(key=old), "unknown_key")


def test_plain_http_issuer_refused(d):
    d.stop()
    bad = gpd.Daemon(workdir=d.dir, extra=["--oidc-issuer", "http://idp.example.com", "--oidc-audience", AUD])
    try:
        bad.start(timeout=5)
    except RuntimeError:
        pass
    else:
        raise AssertionError("gpupoold started with a plain-http issuer")
    finally:
        bad.kill9()
    assert "must be https" in bad.read_log(), bad.read_log()


if __name__ == "__main__":
    if not shutil.which("openssl"):
        print("skip: openssl missing (it signs the test's tokens)")
        sys.exit(0)
    IDP = Provider()
    try:
        gpd.run([test_sign_in_contract, test_second_factor_for_a_quota, test_rights_follow_the_grant_at_each_tenant,
                 test_refused_tokens,
                 test_key_rotation_without_restart, test_plain_http_issuer_refused],
                extra=["--oidc-issuer", IDP.issuer, "--oidc-audience", AUD, "--oidc-client-id", "gpupool-cli",
                       "--oidc-issuer", DOWN, "--oidc-audience", "other-aud",
                       "--oidc-ca", IDP.cert, "--oidc-refresh-min-s", "1", "--metrics-open"])
    finally:
        IDP.close()
