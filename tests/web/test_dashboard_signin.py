#!/usr/bin/env python3
"""The dashboard's sign-in with a real identity provider, in headless Chromium (issue 33, section 2).

glewlwyd on loopback (tests/integration/idp.py) and a gpupoold that trusts
it (--oidc-issuer); the dashboard's address is one of the client's
redirect URIs.  tests/web/signin.js (Chromium over the DevTools protocol):

  - the sign-in page offers "Sign in with 127.0.0.1:PORT" (GET /v1/auth);
  - the authorization request is the code flow with PKCE: S256 challenge,
    a state and a nonce, the dashboard's own address as redirect URI;
  - back from the provider, the dashboard is signed in as the user, the
    code and state are gone from the address, and sessionStorage holds the
    ID token (the provider's, for this client), never the PKCE verifier;
  - Sign out leaves nothing in sessionStorage and revokes the provider's
    refresh token (it no longer refreshes);
  - a redirect with a code and a state this tab never sent is refused with
    a message and signs no one in.
Exit 77 (skipped, one line) without chromium, node, node-ws, glewlwyd or
oathtool, or with a gpupoold that has no --oidc-issuer.
"""
import json
import os
import shutil
import subprocess
import sys
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
import gpd  # noqa: E402
import idp  # noqa: E402

CHROMIUM = os.environ.get("GP_CHROMIUM", "/usr/bin/chromium")
NODE_WS = "/usr/share/nodejs/ws"


def missing():
    if not os.path.exists(CHROMIUM) or not shutil.which("node") or not os.path.isdir(NODE_WS):
        return "chromium, node or node-ws is not installed"
    if idp.MISSING:
        return idp.MISSING
    p = subprocess.run([os.path.join(gpd.BIN, "gpupoold"), "--help"], capture_output=True, text=True)
    if "--oidc-issuer" not in p.stdout + p.stderr:
        return "this gpupoold has no --oidc-issuer"
    return None


def main():
    why = missing()
    if why:
        print("skip: " + why)
        sys.exit(77)
    p = idp.Provider()
    d = None
    try:
        p.start()
        p.add_user("bob", "bob-pw", ["nlp"])
        d = gpd.Daemon(extra=["--oidc-issuer", p.issuer, "--oidc-audience", p.client_id,
                              "--oidc-client-id", p.client_id, "--oidc-ca", p.ca_file]).start()
        d.cli("apply", "-f", gpd.TENANTS)
        d.ok("POST", "/v1/rolebindings", {"user": "bob", "role": "member", "scope": "research/nlp"})
        p.add_redirect(d.url + "/")
        run = subprocess.run(["node", os.path.join(HERE, "signin.js"), "--url", d.url + "/", "--provider", p.url,
                              "--user", "bob", "--password", "bob-pw", "--client", p.client_id],
                             capture_output=True, text=True, timeout=180)
        assert run.returncode == 0, "signin.js failed:\n" + run.stderr[-4000:]
        out = json.loads(run.stdout)
        assert not out["errors"], out["errors"]
        assert out["provider_session"] == {"login": 200, "grant": 200}, out
        assert out["button"] == "Sign in with " + urllib.parse.urlsplit(p.url).netloc, out["button"]
        q = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(out["authorization_request"]).query))
        assert q["response_type"] == "code" and q["client_id"] == p.client_id, q
        assert q["code_challenge_method"] == "S256" and len(q["code_challenge"]) == 43, q
        assert q["redirect_uri"] == d.url + "/" and len(q["state"]) >= 16 and len(q["nonce"]) >= 16, q
        assert out["who"] == "bob (member of research/nlp)", out["who"]
        assert "code=" not in out["address"] and "state=" not in out["address"], out["address"]
        session = json.loads(out["session"])
        claims = idp.claims(session["gpupool.token"])
        assert claims["iss"] == p.issuer and claims["aud"] == p.client_id and claims["preferred_username"] == "bob"
        assert "gpupool.oidc.pending" not in session and "verifier" not in out["session"], session
        refresh_token = json.loads(session["gpupool.oidc"])["refresh_token"]
        assert json.loads(out["after_signout"]) == {}, out["after_signout"]
        status, _, answer = p.token({"grant_type": "refresh_token", "refresh_token": refresh_token})
        assert status != 200, "the refresh token still works after sign-out: %s" % answer
        assert "not started in this tab" in out["forged"], out["forged"]
        assert out["forged_session"] is None
        print("ok   dashboard sign-in with the provider (code flow, PKCE), sign-out, a forged redirect")
    except Exception:
        print("--- glewlwyd log ---\n" + p.read_log() + "\n--- gpupoold log ---\n" + (d.read_log() if d else ""))
        raise
    finally:
        if d:
            d.cleanup()
        p.cleanup()


if __name__ == "__main__":
    main()
