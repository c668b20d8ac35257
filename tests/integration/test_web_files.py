#!/usr/bin/env python3
"""The web dashboard's files as gpupoold serves them (issue 15, section 5;
src/server/api_web.c), and the two API additions the dashboard reads:
  - GET / is web/index.html and GET /web/NAME the other files, without a
    token, each with its content type, no-cache and a Content-Security-
    Policy that keeps the page on this daemon (no CDN, no inline script);
  - only GET; nothing outside the web root: "..", hidden names, other file
    types and symlinks out of the root are refused;
  - --web-root serves another folder; one without index.html stops gpupoold;
  - GET /v1/whoami: the caller's own token (role, scope, user), no secret;
  - GET /v1/nodes shows a MIG GPU's instances (mig_layout).
The browser end to end test is tests/web/test_dashboard.py.
"""
import http.client
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402

WEB = os.path.join(gpd.ROOT, "web")


def raw(d, method, target, headers=None):
    """(status, headers, body) of a request sent with its target exactly as given."""
    c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30)
    try:
        c.putrequest(method, target, skip_host=False, skip_accept_encoding=True)
        for k, v in (headers or {}).items():
            c.putheader(k, v)
        c.endheaders()
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def test_the_dashboard_files_are_served_without_a_token_with_their_types(d):
    status, h, body = raw(d, "GET", "/")
    with open(os.path.join(WEB, "index.html"), "rb") as f:
        assert status == 200 and body == f.read(), (status, body[:200])
    assert h["content-type"] == "text/html; charset=utf-8", h
    assert h["cache-control"] == "no-cache" and h["x-content-type-options"] == "nosniff", h
    assert "default-src 'self'" in h["content-security-policy"], h
    for name, ctype in (("app.js", "text/javascript; charset=utf-8"), ("style.css", "text/css; charset=utf-8")):
        status, h, body = raw(d, "GET", "/web/" + name)
        with open(os.path.join(WEB, name), "rb") as f:
            assert status == 200 and body == f.read(), (name, status)
        assert h["content-type"] == ctype, (name, h)
    # what the page loads is all on this daemon: no http(s):// reference anywhere in it
    for name in ("index.html", "app.js", "style.css"):
        with open(os.path.join(WEB, name)) as f:
            text = f.read().replace("http://www.w3.org/2000/svg", "")  # SVG's namespace: a name, not a load
        assert "http://" not in text and "https://" not in text, name
    # the API still wants a token
    assert raw(d, "GET", "/v1/jobs")[0] == 401


def test_only_get_and_nothing_outside_the_web_root(d):
    status, _, body = raw(d, "POST", "/web/app.js")
    assert status == 405, (status, body)
    assert raw(d, "PUT", "/")[0] == 405
    for target in ("/web/../src/server/http.c", "/web/%2e%2e/CMakeLists.txt", "/web/..%2fREADME.md"):
        status, _, body = raw(d, "GET", target)
        assert status in (400, 404), (target, status, body)
        assert b"#include" not in body and b"cmake_minimum" not in body, target
    for target in ("/web/.hidden.js", "/web/app", "/web/index.html.bak", "/web/nope.js", "/web/a.b.js"):
        status, _, body = raw(d, "GET", target)
        assert status == 404, (target, status, body)
    for target in ("/web/", "/web//app.js", "/web/app.js/"):  # empty segments: uri.h refuses them first
        status, _, body = raw(d, "GET", target)
        assert status == 400 and b"empty segment" in body, (target, status, body)


def test_another_web_root_and_links_out_of_it(d):
    d.stop()
    root = tempfile.mkdtemp(prefix="gpupool-web-", dir=d.dir)
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write("<!doctype html><title>mine</title>")
    with open(os.path.join(d.dir, "secret.js"), "w") as f:
        f.write("secret")
    os.symlink(os.path.join(d.dir, "secret.js"), os.path.join(root, "out.js"))
    for name in (".hidden.js", "notes.txt", "a.b.js"):  # present, yet not names or types it serves
        with open(os.path.join(root, name), "w") as f:
            f.write("not served")
    os.makedirs(os.path.join(root, "img"))
    with open(os.path.join(root, "img", "logo.svg"), "w") as f:
        f.write("<svg xmlns='http://www.w3.org/2000/svg'/>")
    d.extra = ["--web-root", root]
    d.start()
    status, h, body = raw(d, "GET", "/")
    assert status == 200 and b"<title>mine</title>" in body, (status, body)
    status, h, body = raw(d, "GET", "/web/img/logo.svg")
    assert status == 200 and h["content-type"] == "image/svg+xml", (status, h)
    status, _, body = raw(d, "GET", "/web/out.js")
    assert status == 404 and b"secret" not in body, (status, body)
    for name in (".hidden.js", "notes.txt", "a.b.js"):
        status, _, body = raw(d, "GET", "/web/" + name)
        assert status == 404 and b"not served" not in body, (name, status, body)
    d.stop()
    empty = tempfile.mkdtemp(prefix="gpupool-noweb-", dir=d.dir)
    p = subprocess.run([os.path.join(gpd.BIN, "gpupoold"), "--listen", "127.0.0.1:0", "--store",
                        "sqlite:" + os.path.join(d.dir, "gpupool.db"), "--web-root", empty],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 1 and "web_root" in p.stderr and "index.html" in p.stderr, (p.returncode, p.stderr)
    d.extra = []
    d.start()


def test_whoami_answers_the_callers_own_token(d):
    me = d.ok("GET", "/v1/whoami")
    assert me["role"] == "admin" and me["scope"] == "" and me["expires"] is None, me
    d.cli("apply", "-f", gpd.TENANTS)
    made = d.ok("POST", "/v1/tokens", {"name": "ana", "role": "member", "scope": "research/vision", "user": "ana",
                                       "ttl_s": 3600})
    me = d.ok("GET", "/v1/whoami", token=made["token"])
    assert (me["id"], me["name"], me["role"], me["scope"], me["user"], me["expires"]) == \
        (made["id"], "ana", "member", "research/vision", "ana", made["expires"]), me
    assert "token" not in me and "hash" not in me, me
    assert d.call("GET", "/v1/whoami", token="gpt_nope")[0] == 401
    status, body = d.call("GET", "/v1/whoami?x=1")
    assert status == 400 and body["error"]["field"] == "x", body


def test_nodes_show_a_mig_gpus_instances(d):
    d.cli("apply", "-f", gpd.TENANTS)
    job = d.ok("POST", "/v1/jobs", {"tenant": "product/search", "gpus": 1, "gpu_types": ["A100"],
                                    "share": {"mig": "3g.40gb"}})
    gpd.wait_for(lambda: d.ok("GET", "/v1/jobs/%d" % job["id"])["state"] == "running", what="the MIG job")
    placed = d.ok("GET", "/v1/jobs/%d" % job["id"])["placement"][0]
    node = d.ok("GET", "/v1/nodes/" + placed["node"])
    gpu = [g for g in node["gpus"] if g["uuid"] == placed["gpus"][0]][0]
    assert gpu["sharing"] == "mig" and gpu["mig_layout"] == "3g.40gb@%d" % placed["slice"]["mig_start"], gpu
    assert all("mig_layout" not in g for n in d.ok("GET", "/v1/nodes")["nodes"] for g in n["gpus"]
               if g["sharing"] != "mig")


if __name__ == "__main__":
    gpd.run([test_the_dashboard_files_are_served_without_a_token_with_their_types,
             test_only_get_and_nothing_outside_the_web_root,
             test_another_web_root_and_links_out_of_it,
             test_whoami_answers_the_callers_own_token,
             test_nodes_show_a_mig_gpus_instances],
            fleet=os.path.join(gpd.ROOT, "examples", "fleet-mixed.yaml"))
