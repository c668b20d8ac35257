#!/usr/bin/env python3
"""Agents that prove who they are (issue 33 section 4), each tried as the
attacker would, against a real gpupoold serving HTTPS with a throw-away
server certificate and real agents (sim backend):

  - an agent joins and gets a certificate for its node only (its key 0600
    in its state folder, never sent); with a short --agent-cert-ttl it
    renews before the certificate expires and keeps working after the
    first one expired;
  - `gpupool nodes remove NODE`: the node's next heartbeat and renewal
    are refused at once, with the certificate it still holds;
  - another node's certificate with this node's credential is refused, and
    so is a certificate issued to the credential the node had before it
    registered again;
  - the node credential replayed from "another host": without the
    certificate, and with a self-made certificate naming the node, refused;
  - --agent-mtls optional lets an agent without a certificate in and logs
    it, but still refuses a wrong one;
  - the node CA is made once, kept in the store with its key sealed, and
    is the same after a restart (and new after --rotate-node-ca); a
    follower that takes the lead accepts the certificates the first
    leader signed, and refuses the credential without one;
    --agent-mtls without HTTPS is refused.
Skipped (77) when openssl (the throw-away certificates) is missing.
"""
import json
import os
import shutil
import sqlite3
import ssl
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402
from agentproc import Agent, join_token, sim_nodes, write_node_file  # noqa: E402


def openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True, capture_output=True)


class TlsDaemon(gpd.Daemon):
    """gpupoold on HTTPS (a self-signed certificate for 127.0.0.1) with --agent-mtls."""

    def __init__(self, mode="required", extra=()):
        super().__init__(fleet=None)
        self.server_cert, key = os.path.join(self.dir, "server.pem"), os.path.join(self.dir, "server.key")
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", self.server_cert,
                "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1")
        self.extra = ["--tls-cert", self.server_cert, "--tls-key", key, "--agent-mtls", mode] + list(extra)

    @property
    def url(self):
        return "https://127.0.0.1:%d" % self.port

    def tls_context(self, cert):
        ctx = ssl.create_default_context(cafile=self.server_cert)
        if cert:
            ctx.load_cert_chain(*cert)
        return ctx

    def cli(self, *args, token=None, check=True, json_out=False):
        return super().cli("--cacert", self.server_cert, *args, token=token, check=check, json_out=json_out)


def agent(d, nodes, name="agent"):
    node_file = write_node_file(d.dir, sim_nodes("n", 2))
    return Agent(d, node_file, nodes=nodes, extra=["--cacert", d.server_cert], name=name).start()


def node_files(a, node):
    """The agent's key, its current certificate (the newer file) and its credential for node, once it
    has them all (the node is up at gpupoold a moment before its agent has written them)."""
    folder = os.path.join(a.state_dir, node)

    def found():
        certs = [os.path.join(folder, f) for f in ("cert.a.pem", "cert.b.pem")
                 if os.path.exists(os.path.join(folder, f))]
        if not certs or not os.path.exists(os.path.join(folder, "credential")):
            return None
        with open(os.path.join(folder, "credential")) as f:
            return os.path.join(folder, "node.key"), max(certs, key=os.path.getmtime), f.read().strip()
    return gpd.wait_for(found, 20, "node %s's certificate and credential" % node)


def subject(cert):
    out = subprocess.run(["openssl", "x509", "-noout", "-subject", "-in", cert], capture_output=True, text=True)
    return out.stdout


def heartbeat(d, node, token, cert=None):
    return d.call("POST", "/v1/agents/%s/heartbeat" % node, {"running": [], "gpus": []}, token=token, cert=cert)


def csr_for(folder, name):
    """A key and a PEM certificate request for CN=name, made by openssl (not the agent)."""
    key, csr = os.path.join(folder, name + ".key"), os.path.join(folder, name + ".csr")
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
            "-out", csr, "-subj", "/CN=" + name)
    with open(csr) as f:
        return key, f.read()


def inventory(name):
    return {"name": name, "gpu_type": "T4", "gpu_count": 2, "zone": "z1", "block": "blk-t",
            "gpu_uuids": ["GPU-%s-%d" % (name, i) for i in range(2)], "gpu_mem_mib": 16384}


def register(d, name, token, csr=None):
    body = {"node": inventory(name)}
    if csr:
        body["csr"] = csr
    return d.call("POST", "/v1/agents:register", body, token=token)


def keep(d, text, name):
    path = os.path.join(d.dir, name)
    with open(path, "w") as f:
        f.write(text)
    return path


# ---- the tests ----

def test_an_agent_joins_gets_its_certificate_and_renews_it(d):
    a = agent(d, ["n-0"])
    try:
        a.wait_up(["n-0"])
        key, cert, _ = node_files(a, "n-0")
        assert os.stat(key).st_mode & 0o777 == 0o600, oct(os.stat(key).st_mode)
        assert cert and "CN = n-0" in subject(cert), subject(cert)
        with open(key) as f:
            secret = f.read()
        assert "PRIVATE KEY" in secret and secret not in d.read_log(None)
        # --agent-cert-ttl 6: renewed at ~4 s, and again; the node stays up past the first one's expiry
        gpd.wait_for(lambda: len([r for r in d.ok("GET", "/v1/audit?limit=1000")["audit"]
                                  if r["action"] == "agent.certificate"]) >= 2, 30, "two renewals")
        time.sleep(3)
        key, cert, token = node_files(a, "n-0")
        assert heartbeat(d, "n-0", token, cert=(cert, key))[0] == 200
        assert "registering again" not in a.read_log(None), a.read_log()
        assert "renewal:" not in a.read_log(None), a.read_log()
    finally:
        a.stop()


def test_a_removed_node_can_neither_heartbeat_nor_renew(d):
    a = agent(d, ["n-0"])
    try:
        a.wait_up(["n-0"])
        key, cert, token = node_files(a, "n-0")
        stolen = (shutil.copy(cert, os.path.join(d.dir, "stolen.pem")), shutil.copy(key, os.path.join(d.dir, "s.key")))
        assert heartbeat(d, "n-0", token, cert=stolen)[0] == 200
        out = d.cli("nodes", "remove", "n-0")
        assert "removed" in out.stdout, out.stdout
        status, out = heartbeat(d, "n-0", token, cert=stolen)
        assert status == 401, (status, out)
        _, csr = csr_for(d.dir, "n-0")
        status, out = d.call("POST", "/v1/agents/n-0/certificate", {"csr": csr}, token=token, cert=stolen)
        assert status == 401, (status, out)
        assert not [n for n in d.ok("GET", "/v1/nodes")["nodes"] if n["name"] == "n-0" and n["up"]]
        # the agent itself is turned away: its credential refused, its join token alone may not take the node
        gpd.wait_for(lambda: "409" in a.read_log(None), 30, "the agent's registration refused")
        rows = [r for r in d.ok("GET", "/v1/audit?limit=1000")["audit"] if r["action"] == "node.remove"]
        assert rows and rows[0]["target"] == "node/n-0", rows
    finally:
        a.stop()
    status, out = d.call("DELETE", "/v1/nodes/nosuch")
    assert status == 404, (status, out)
    operator = d.cli("token", "create", "--name", "ops", "--role", "operator", json_out=True)["token"]
    status, out = d.call("DELETE", "/v1/nodes/n-1", token=operator)
    assert status == 403, (status, out)


def test_another_nodes_certificate_with_this_credential_is_refused(d):
    a = agent(d, ["n-0", "n-1"])
    try:
        a.wait_up(["n-0", "n-1"])
        key0, cert0, token0 = node_files(a, "n-0")
        key1, cert1, _ = node_files(a, "n-1")
        assert heartbeat(d, "n-0", token0, cert=(cert0, key0))[0] == 200
        status, out = heartbeat(d, "n-0", token0, cert=(cert1, key1))
        assert status == 403 and out["error"]["field"] == "certificate", (status, out)
        assert "node n-1's" in out["error"]["message"], out
    finally:
        a.stop()
    # a certificate issued to the credential the node held before it registered again
    join = join_token(d)
    key, csr = csr_for(d.dir, "py-0")
    status, first = register(d, "py-0", join, csr)
    assert status == 201 and "BEGIN CERTIFICATE" in first["certificate"], (status, first)
    old = (keep(d, first["certificate"], "old.pem"), key)
    status, second = d.call("POST", "/v1/agents:register", {"node": inventory("py-0"), "csr": csr},
                            token=first["token"], cert=old)
    assert status == 201, (status, second)
    status, out = heartbeat(d, "py-0", second["token"], cert=old)
    assert status == 403 and "issued to credential" in out["error"]["message"], (status, out)
    assert heartbeat(d, "py-0", second["token"], cert=(keep(d, second["certificate"], "new.pem"), key))[0] == 200
    # a request naming another node is refused at join, nothing made
    _, other = csr_for(d.dir, "py-9")
    status, out = register(d, "py-1", join, other)
    assert status == 400 and out["error"]["field"] == "csr", (status, out)
    assert "py-1" not in {n["name"] for n in d.ok("GET", "/v1/nodes")["nodes"]}


def test_a_credential_replayed_from_another_host_is_refused(d):
    a = agent(d, ["n-0"])
    try:
        a.wait_up(["n-0"])
        _, _, token = node_files(a, "n-0")
        for path in ("heartbeat", "reports", "assignments?after=0&wait=0", "certificate"):
            method = "GET" if path.startswith("assignments") else "POST"
            body = None if method == "GET" else {}
            status, out = d.call(method, "/v1/agents/n-0/" + path, body, token=token)
            assert status == 403 and out["error"]["field"] == "certificate", (path, status, out)
        status, out = register(d, "n-0", token)
        assert status == 403, (status, out)
        # a certificate the thief made himself, naming the node and the credential's id
        key = os.path.join(d.dir, "forged.key")
        forged = os.path.join(d.dir, "forged.pem")
        token_id = [t for t in d.ok("GET", "/v1/tokens")["tokens"] if t["role"] == "node"][0]["id"]
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
                "-out", forged, "-days", "1", "-subj", "/OU=%s/CN=n-0" % token_id)
        status, out = heartbeat(d, "n-0", token, cert=(forged, key))
        assert status == 403 and "not signed by" in out["error"]["message"], (status, out)
        gpd.wait_for(lambda: [r for r in d.ok("GET", "/v1/audit?limit=1000")["audit"]
                              if r["action"] == "request.refused" and "certificate" in r["result"]], 10,
                     "the refusal audited")
    finally:
        a.stop()


def test_optional_lets_an_agent_without_a_certificate_in_and_logs_it(d):
    join = join_token(d)
    status, out = register(d, "old-0", join)
    assert status == 201 and "certificate" not in out, (status, out)
    assert heartbeat(d, "old-0", out["token"])[0] == 200
    gpd.wait_for(lambda: "event=agent_without_certificate node=old-0" in d.read_log(None), 10, "the log line")
    key, csr = csr_for(d.dir, "new-0")
    status, new = register(d, "new-0", join, csr)
    assert status == 201 and new["certificate"], (status, new)
    cert = (keep(d, new["certificate"], "new.pem"), key)
    status, out = heartbeat(d, "old-0", out["token"], cert=cert)  # a wrong certificate is refused all the same
    assert status == 403 and "node new-0's" in out["error"]["message"], (status, out)
    # an agent upgraded in place (a credential, no certificate yet) asks for one and gets it
    a = agent(d, ["n-0"])
    try:
        a.wait_up(["n-0"])
        node_files(a, "n-0")
        a.stop()
        for f in ("cert.a.pem", "cert.b.pem"):
            if os.path.exists(os.path.join(a.state_dir, "n-0", f)):
                os.unlink(os.path.join(a.state_dir, "n-0", f))
        a.start()
        node_files(a, "n-0")
        rows = [r for r in d.ok("GET", "/v1/audit?limit=1000")["audit"] if r["action"] == "agent.certificate"]
        assert rows and rows[-1]["target"] == "node/n-0", rows
        assert "event=node_certificate_unproven node=n-0" in d.read_log(None)  # the credential alone got it
    finally:
        a.stop()


def test_the_node_ca_is_made_once_sealed_and_kept_across_restarts(d):
    join = join_token(d)
    _, csr = csr_for(d.dir, "c-0")
    ca = register(d, "c-0", join, csr)[1]["ca"]
    db = sqlite3.connect(os.path.join(d.dir, "gpupool.db"))
    sealed = db.execute("SELECT key_sealed FROM node_ca").fetchall()
    db.close()
    assert len(sealed) == 1 and sealed[0][0].startswith("v1:"), sealed
    assert b"PRIVATE KEY" not in gpd.store_bytes(d)
    d.stop()
    d.start()
    _, csr = csr_for(d.dir, "c-1")
    assert register(d, "c-1", join, csr)[1]["ca"] == ca
    d.stop()
    d.extra.append("--rotate-node-ca")
    d.start()
    _, csr = csr_for(d.dir, "c-2")
    assert register(d, "c-2", join, csr)[1]["ca"] != ca


def test_a_follower_that_takes_the_lead_checks_with_the_same_ca(d):
    """Two replicas on one SQLite store: a certificate the first leader signed holds on the next."""
    join = join_token(d)
    key, csr = csr_for(d.dir, "ha-0")
    status, out = register(d, "ha-0", join, csr)
    assert status == 201, (status, out)
    cert, token = (keep(d, out["certificate"], "ha.pem"), key), out["token"]
    port_file = os.path.join(d.dir, "follower.port")
    with open(os.path.join(d.dir, "follower.log"), "ab") as log:
        follower = subprocess.Popen([os.path.join(gpd.BIN, "gpupoold"), "--listen", "127.0.0.1:0", "--store",
                                     "sqlite:" + os.path.join(d.dir, "gpupool.db"), "--port-file", port_file,
                                     "--rate-limit", "0", "--holder", "follower"] + d.extra, stdout=log, stderr=log)
    try:
        gpd.wait_for(lambda: os.path.exists(port_file) and open(port_file).read().strip(), 30, "the follower")
        d.kill9()
        d.port = int(open(port_file).read())
        gpd.wait_for(lambda: d.call("GET", "/v1/leader", token="")[1].get("role") == "leader", 30,
                     "the follower to lead")
        status, out = heartbeat(d, "ha-0", token, cert=cert)
        assert status == 200, (status, out)
        status, out = heartbeat(d, "ha-0", token)
        assert status == 403 and out["error"]["field"] == "certificate", (status, out)
    finally:
        follower.kill()
        follower.wait()


def test_agent_mtls_needs_https(d):
    work = tempfile.mkdtemp(prefix="gpupool-mtls-", dir=d.dir)
    try:
        for args, says in ((["--agent-mtls", "required"], "needs HTTPS"), (["--agent-mtls", "sometimes"],
                                                                          "bad value for --agent-mtls")):
            p = subprocess.run([os.path.join(gpd.BIN, "gpupoold"), "--listen", "127.0.0.1:0", "--store",
                                "sqlite:" + os.path.join(work, "db")] + args, capture_output=True, text=True,
                               timeout=30)
            assert p.returncode != 0 and says in p.stdout + p.stderr, (args, p.returncode, p.stdout, p.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def tls_daemon(test):
    """The daemon a test runs against: --agent-mtls MODE and its flags (the test's `mtls` attribute)."""
    mode, extra = getattr(test, "mtls", ("required", []))
    return TlsDaemon(mode, extra)


test_an_agent_joins_gets_its_certificate_and_renews_it.mtls = ("required", ["--agent-cert-ttl", "6"])
test_optional_lets_an_agent_without_a_certificate_in_and_logs_it.mtls = ("optional", [])

if __name__ == "__main__":
    if not shutil.which("openssl"):
        print("openssl missing: the throw-away certificates cannot be made")
        sys.exit(77)
    gpd.run([test_an_agent_joins_gets_its_certificate_and_renews_it,
             test_a_removed_node_can_neither_heartbeat_nor_renew,
             test_another_nodes_certificate_with_this_credential_is_refused,
             test_a_credential_replayed_from_another_host_is_refused,
             test_optional_lets_an_agent_without_a_certificate_in_and_logs_it,
             test_the_node_ca_is_made_once_sealed_and_kept_across_restarts,
             test_a_follower_that_takes_the_lead_checks_with_the_same_ca,
             test_agent_mtls_needs_https], make=tls_daemon)
