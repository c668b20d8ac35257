#!/usr/bin/env python3
"""Bad input battery: every request here must get a 4xx JSON error naming
the field, and change nothing (jobs, tenants, nodes, tokens are compared
before and after).  The daemon must still answer afterwards.
"""
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402

GOOD_JOB = {"tenant": "research/nlp", "gpus": 1}


def state(d):
    tokens = d.ok("GET", "/v1/tokens")["tokens"]
    for t in tokens:
        t.pop("last_used", None)  # the requests themselves use the token: not state a bad request may change
    return (d.ok("GET", "/v1/jobs?limit=1000")["jobs"], d.ok("GET", "/v1/tenants")["tenants"],
            [(n["name"], n["draining"]) for n in d.ok("GET", "/v1/nodes")["nodes"]], tokens)


def job_with(**kw):
    j = dict(GOOD_JOB)
    j.update(kw)
    return j


# (method, path, body (dict -> JSON, bytes -> raw), content type, status, field)
CASES = [
    ("POST", "/v1/jobs", b"{", "application/json", 400, "body"),
    ("POST", "/v1/jobs", b"", "application/json", 400, "body"),
    ("POST", "/v1/jobs", b"[1,2]", "application/json", 400, "body"),
    ("POST", "/v1/jobs", b'{"tenant": "research/nlp", "tenant": "x"}', "application/json", 400, "body"),
    ("POST", "/v1/jobs", b'{"tenant": "research/nlp", "name": "\xff\xfe"}', "application/json", 400, "body"),
    ("POST", "/v1/jobs", b'{"tenant": "research/nlp", "name": "a\\u0000b"}', "application/json", 400, "body"),
    ("POST", "/v1/jobs", b"[" * 5000 + b"]" * 5000, "application/json", 400, "body"),
    ("POST", "/v1/jobs", b'{"a":' * 40 + b"1" + b"}" * 40, "application/json", 400, "body"),
    ("POST", "/v1/jobs", job_with(gpus="8"), None, 400, "gpus"),
    ("POST", "/v1/jobs", job_with(gpus=8.5), None, 400, "gpus"),
    ("POST", "/v1/jobs", job_with(gpus=-1), None, 400, "gpus"),
    ("POST", "/v1/jobs", job_with(gpus=0), None, 400, "gpus"),
    ("POST", "/v1/jobs", b'{"tenant": "research/nlp", "gpus": 99999999999999999999999}', "application/json",
     400, "body"),
    ("POST", "/v1/jobs", job_with(replicas=10 ** 15), None, 400, "replicas"),
    ("POST", "/v1/jobs", job_with(priority=5000), None, 400, "priority"),
    ("POST", "/v1/jobs", job_with(checkpoint_grace_s=-5), None, 400, "checkpoint_grace_s"),
    ("POST", "/v1/jobs", job_with(cpu_millis=2 ** 62), None, 400, "cpu_millis"),
    ("POST", "/v1/jobs", job_with(kind="batch"), None, 400, "kind"),
    ("POST", "/v1/jobs", job_with(keep_running_when_partitioned="yes"), None, 400, "keep_running_when_partitioned"),
    ("POST", "/v1/jobs", job_with(topology=1), None, 400, "topology"),
    ("POST", "/v1/jobs", job_with(gpu_types="H100"), None, 400, "gpu_types"),
    ("POST", "/v1/jobs", job_with(gpu_types=["H200"]), None, 400, "gpu_types"),
    ("POST", "/v1/jobs", job_with(gpu_types=["x"] * 9), None, 400, "gpu_types"),
    ("POST", "/v1/jobs", job_with(name="n" * 64), None, 400, "name"),
    ("POST", "/v1/jobs", job_with(command=["a"] * 300), None, 400, "command"),
    ("POST", "/v1/jobs", job_with(command=["x" * 5000]), None, 400, "command"),
    ("POST", "/v1/jobs", job_with(env={"A B": "1"}), None, 400, "env"),
    ("POST", "/v1/jobs", job_with(env={"A": 1}), None, 400, "env.A"),
    ("POST", "/v1/jobs", job_with(share={"mps": 250}), None, 400, "share.mps"),
    ("POST", "/v1/jobs", job_with(share={"mig": "1g.10gb", "mps": 5}), None, 400, "share"),
    ("POST", "/v1/jobs", job_with(colour="blue"), None, 400, "colour"),
    ("POST", "/v1/jobs", job_with(id=5), None, 400, "id"),
    ("POST", "/v1/jobs", {"gpus": 1}, None, 400, "tenant"),
    ("POST", "/v1/jobs", job_with(tenant="nosuch/team"), None, 404, "tenant"),
    ("POST", "/v1/jobs", job_with(tenant="research"), None, 400, "tenant"),
    ("POST", "/v1/jobs", job_with(tenant="../etc/passwd"), None, 400, "tenant"),
    ("POST", "/v1/jobs", job_with(tenant="research//nlp"), None, 400, "tenant"),
    ("POST", "/v1/jobs", job_with(tenant="a/b/c/d/e"), None, 400, "tenant"),
    ("POST", "/v1/jobs", GOOD_JOB, "text/plain", 415, "Content-Type"),
    ("POST", "/v1/jobs", b"x" * (10 * 1024 * 1024), "application/json", 413, "body"),
    ("GET", "/v1/jobs/abc", None, None, 400, "id"),
    ("GET", "/v1/jobs/-1", None, None, 400, "id"),
    ("GET", "/v1/jobs/99999999999999999999999", None, None, 400, "id"),
    ("GET", "/v1/jobs/424242", None, None, 404, "id"),
    ("GET", "/v1/jobs?state=sleeping", None, None, 400, "state"),
    ("GET", "/v1/jobs?limit=0", None, None, 400, "limit"),
    ("GET", "/v1/jobs?limit=abc", None, None, 400, "limit"),
    ("GET", "/v1/jobs?sort=id", None, None, 400, "sort"),
    ("GET", "/v1/jobs?tenant=%2e%2e%2fetc", None, None, 400, "tenant"),
    ("DELETE", "/v1/jobs/0", None, None, 400, "id"),
    ("PUT", "/v1/tenants/research/nlp", {"guarantee": {"gpu": {"H100": -1}}}, None, 400, "guarantee.gpu.H100"),
    ("PUT", "/v1/tenants/research/nlp", {"guarantee": {"gpu": {"H100": 1.0005}}}, None, 400, "guarantee.gpu.H100"),
    ("PUT", "/v1/tenants/research/nlp", {"guarantee": {"gpu": {"H100": "lots"}}}, None, 400, "guarantee.gpu.H100"),
    ("PUT", "/v1/tenants/research/nlp", {"guarantee": {"gpus": {"H100": 1}}}, None, 400, "guarantee.gpus"),
    ("PUT", "/v1/tenants/research/nlp", {"weight": -3}, None, 400, "weight"),
    ("PUT", "/v1/tenants/research/nlp", {"trust": "maybe"}, None, 400, "trust"),
    ("PUT", "/v1/tenants/research/nlp", {"lend": "yes"}, None, 400, "lend"),
    ("PUT", "/v1/tenants/research/nlp", {"guarantee": {"gpu": {"H100": 1000}}}, None, 422, "guarantee"),
    ("PUT", "/v1/tenants/nosuch/child", {}, None, 404, "path"),
    ("PUT", "/v1/tenants/.hidden", {}, None, 400, "path"),
    ("PUT", "/v1/tenants/research/..", {}, None, 400, "path"),
    ("PUT", "/v1/tenants/research/n%20lp", {}, None, 400, "path"),
    ("PUT", "/v1/tenants/" + "a" * 300, {}, None, 400, "path"),
    ("DELETE", "/v1/tenants/research", None, None, 409, "path"),
    ("POST", "/v1/tenants:apply", b"tenants: [", "application/yaml", 400, None),
    ("POST", "/v1/tenants:apply", b"tenants:\n  - path: x\n    colour: red\n", "application/yaml", 400, None),
    ("POST", "/v1/tenants:move", {"from": "research/nlp"}, None, 400, "to"),
    ("POST", "/v1/tenants:move", {"from": "research", "to": "research/x"}, None, 400, "to"),
    ("POST", "/v1/nodes/nosuch/drain", {"drain": True}, None, 404, "node"),
    ("POST", "/v1/nodes/h100-a-0/drain", {"drain": "yes"}, None, 400, "drain"),
    ("GET", "/v1/usage?from=10&to=5", None, None, 400, "to"),
    ("GET", "/v1/usage?from=-1", None, None, 400, "from"),
    ("POST", "/v1/tokens", {"name": "x", "role": "root"}, None, 400, "role"),
    ("POST", "/v1/tokens", {"name": "x", "role": "member"}, None, 400, "scope"),
    ("POST", "/v1/tokens", {"name": "x", "role": "member", "scope": "nosuch", "user": "x"}, None, 404, "scope"),
    ("POST", "/v1/tokens", {"name": "x", "role": "member", "scope": "research/nlp"}, None, 400, "user"),
    ("POST", "/v1/tokens", {"name": "x", "role": "admin", "ttl_s": 0}, None, 400, "ttl_s"),
    ("POST", "/v1/tokens", {"name": "x", "role": "admin", "ttl_s": "30d"}, None, 400, "ttl_s"),
    ("POST", "/v1/tokens", {"name": "x", "role": "admin", "scope": "research"}, None, 400, "scope"),
    ("DELETE", "/v1/tokens/zzz", None, None, 404, "id"),
    ("PATCH", "/v1/jobs", None, None, 405, "method"),
    ("GET", "/v1/nothing", None, None, 404, "path"),
    ("GET", "/v1/audit?after=x", None, None, 400, "after"),
    # the path exactly as sent: %00 must not cut it, no dot or empty segments
    ("PUT", "/v1/tenants/research/audio2%00/../../evil", {}, None, 400, "path"),
    ("DELETE", "/v1/tenants/research/nlp%00", None, None, 400, "path"),
    ("GET", "/v1/tenants/research/nlp%00", None, None, 400, "path"),
    ("PUT", "/v1/tenants/research/nlp%0A", {}, None, 400, "path"),
    ("PUT", "/v1/tenants/research/x%1B%5B31m", {}, None, 400, "path"),
    ("PUT", "/v1/tenants/research/%E2%80%AEevil", {}, None, 400, "path"),
    ("PUT", "/v1/tenants/research/%FF", {}, None, 400, "path"),
    ("GET", "/v1/tenants/research%2Fnlp", None, None, 400, "path"),
    ("GET", "/v1/tenants/research%2fnlp", None, None, 400, "path"),
    ("GET", "/v1/tenants/research/%2e%2e", None, None, 400, "path"),
    ("GET", "/v1/tenants/research/%2E", None, None, 400, "path"),
    ("GET", "/v1/tenants/research/nlp%", None, None, 400, "path"),
    ("GET", "/v1/tenants/research/nlp%4", None, None, 400, "path"),
    ("GET", "/v1/tenants/research/nlp%zz", None, None, 400, "path"),
    ("GET", "/v1/tenants/research//nlp", None, None, 400, "path"),
    ("GET", "/v1/tenants/research/", None, None, 400, "path"),
    ("GET", "/v1/jobs/", None, None, 400, "path"),
    ("GET", "/v1/jobs/1%00", None, None, 400, "path"),
    ("DELETE", "/v1/jobs/1%00", None, None, 400, "path"),
    ("PUT", "/v1/tenants/" + "a" * 256, {}, None, 400, "path"),
    ("PUT", "/v1/tenants/research/a/b/c/d", {}, None, 400, "path"),
    ("PUT", "/v1/tenants/" + "/".join(["a"] * 60), {}, None, 400, "path"),
    ("POST", "/v1/nodes/%FF/drain", {"drain": True}, None, 400, "path"),
    ("POST", "/v1/nodes/h100-a-0%00/drain", {"drain": True}, None, 400, "path"),
    # query strings: same rules, the field is the parameter
    ("GET", "/v1/jobs?tenant=research/nlp%00", None, None, 400, "tenant"),
    ("GET", "/v1/jobs?tenant=research%0Anlp", None, None, 400, "tenant"),
    ("GET", "/v1/jobs?tenant=%FF%FE", None, None, 400, "tenant"),
    ("GET", "/v1/jobs?state=live&state=pending", None, None, 400, "state"),
    ("GET", "/v1/jobs?limit=5&&state=live", None, None, 400, "query"),
    ("GET", "/v1/jobs?limit=5&", None, None, 400, "query"),
    ("GET", "/v1/jobs?=5", None, None, 400, "query"),
    ("GET", "/v1/jobs?%00=1", None, None, 400, "query"),
    ("GET", "/v1/jobs?limit=%zz", None, None, 400, "limit"),
    ("GET", "/v1/jobs?limit=99999999999999999999", None, None, 400, "limit"),
    ("GET", "/v1/jobs?limit=-1", None, None, 400, "limit"),
    ("GET", "/v1/jobs?state=" + "a" * 10000, None, None, 414, "url"),
    # one line of text in every name-like field
    ("POST", "/v1/jobs", job_with(name="a\nb"), None, 400, "name"),
    ("POST", "/v1/jobs", job_with(name="x\x1b[31mred"), None, 400, "name"),
    ("POST", "/v1/jobs", job_with(name="tab\there"), None, 400, "name"),
    ("POST", "/v1/jobs", job_with(name="gpu\u202etxt.exe"), None, 400, "name"),
    ("POST", "/v1/jobs", job_with(name="nel\u0085"), None, 400, "name"),
    ("POST", "/v1/jobs", job_with(user="bob\r"), None, 400, "user"),
    ("POST", "/v1/jobs", job_with(tenant="research/nlp\n"), None, 400, "tenant"),
    ("POST", "/v1/jobs", job_with(gpu_types=["H100\n"]), None, 400, "gpu_types"),
    ("POST", "/v1/jobs", job_with(share={"mig": "1g.10gb\n"}), None, 400, "share.mig"),
    ("POST", "/v1/jobs", job_with(env={"A\nB": "1"}), None, 400, "env"),
    ("POST", "/v1/tokens", {"name": "x\ny", "role": "auditor"}, None, 400, "name"),
    ("POST", "/v1/tenants:move", {"from": "research/nlp\t", "to": "research/x"}, None, 400, "from"),
    # numbers: wrong types, out of range, huge, negative
    ("POST", "/v1/jobs", job_with(priority=-1001), None, 400, "priority"),
    ("POST", "/v1/jobs", job_with(checkpoint_grace_s=86401), None, 400, "checkpoint_grace_s"),
    ("POST", "/v1/jobs", job_with(expected_runtime_s=-1), None, 400, "expected_runtime_s"),
    ("POST", "/v1/jobs", job_with(mem_mib=1.5), None, 400, "mem_mib"),
    ("POST", "/v1/jobs", job_with(cpu_millis="5"), None, 400, "cpu_millis"),
    ("POST", "/v1/jobs", job_with(replicas=True), None, 400, "replicas"),
    ("POST", "/v1/jobs", job_with(replicas=2 ** 63), None, 400, "body"),
    ("POST", "/v1/jobs", job_with(gpus=None), None, 400, "gpus"),
    ("POST", "/v1/jobs", b'{"tenant": "research/nlp", "gpus": 1e400}', "application/json", 400, "body"),
    ("POST", "/v1/jobs", b'{"tenant": "research/nlp", "name": "\xc0\xaf"}', "application/json", 400, "body"),
    ("POST", "/v1/jobs", b'{"tenant": "research/nlp", "name": "\xed\xa0\x80"}', "application/json", 400, "body"),
    ("POST", "/v1/jobs", b'{"tenant": "research/nlp", "name": "\\ud800"}', "application/json", 400, "body"),
    # a weight keeps shares finite: 5e-324 made the tenant unfindable
    ("PUT", "/v1/tenants/research/nlp", {"weight": 5e-324}, None, 400, "weight"),
    ("PUT", "/v1/tenants/research/nlp", {"weight": 0.0005}, None, 400, "weight"),
    ("PUT", "/v1/tenants/research/nlp", {"weight": 1e7}, None, 400, "weight"),
    ("PUT", "/v1/tenants/research/nlp", {"weight": "2"}, None, 400, "weight"),
    ("PUT", "/v1/tenants/research/nlp", {"weight": True}, None, 400, "weight"),
    ("PUT", "/v1/tenants/research/nlp", b'{"weight": 1e400}', "application/json", 400, "body"),
    ("POST", "/v1/tenants:apply", b"tenants:\n  - path: research\n    weight: 5e-324\n", "application/yaml", 400,
     None),
]

# Targets urllib cannot send: raw bytes on the request line.
RAW_CASES = [
    ("GET", b"/v1/jobs/\xff", 400, "path"),
    ("GET", b"/v1/jobs?tenant=\xff\xfe", 400, "tenant"),
    ("POST", b"/v1/nodes/\xff/drain", 400, "path"),
    ("PUT", b"/v1/tenants/research/\xc3", 400, "path"),
    ("GET", b"/v1/./jobs", 400, "path"),
    ("GET", b"/v1/../v1/jobs", 400, "path"),
    ("GET", b"//v1/jobs", 400, "path"),
    ("GET", b"/v1/jobs#x", 400, "path"),
    ("GET", b"/v1/jobs?state=" + b"a" * 40000, 414, "url"),
]


def big_body(d, path, body):
    """Sends headers with the true Content-Length, then as much body as the
    server reads; the server answers 413 after the headers and closes."""
    import json
    s = socket.create_connection(("127.0.0.1", d.port), timeout=30)
    s.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % (path.encode(), d.token.encode(), len(body)))
    try:
        s.sendall(body)
    except OSError:
        pass
    data = b""
    try:
        while True:
            got = s.recv(65536)
            if not got:
                break
            data += got
    except OSError:
        pass
    s.close()
    head, _, text = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(text)


def test_battery(d):
    d.cli("apply", "-f", gpd.TENANTS)
    d.ok("POST", "/v1/jobs", GOOD_JOB)
    before = state(d)
    failures = []
    for method, path, body, ctype, status, field in CASES:
        if isinstance(body, bytes) and len(body) > 1024 * 1024:
            st, out = big_body(d, path, body)
        elif isinstance(body, bytes):
            st, out = d.call(method, path, raw=body, content_type=ctype)
        else:
            st, out = d.call(method, path, body, content_type=ctype or "application/json")
        err = out.get("error") if isinstance(out, dict) else None
        if st != status or not err or (field is not None and err.get("field") != field):
            failures.append("%s %s %r: got %d %s, expected %d field %s" %
                            (method, path, (body if not isinstance(body, bytes) else body[:40]), st, out,
                             status, field))
    assert state(d) == before, "state changed"
    assert not failures, "\n".join(failures)


def raw_call(d, method, target, body=b"", headers=b""):
    """One request with the target exactly as given; (status, JSON)."""
    import json
    s = socket.create_connection(("127.0.0.1", d.port), timeout=30)
    s.sendall(method.encode() + b" " + target + b" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + d.token.encode() +
              b"\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n" % len(body) +
              headers + b"\r\n" + body)
    data = b""
    while True:
        got = s.recv(65536)
        if not got:
            break
        data += got
    s.close()
    head, _, text = data.partition(b"\r\n\r\n")
    try:
        return int(head.split()[1]), json.loads(text)
    except ValueError:
        return int(head.split()[1]), text[:200]


def test_raw_targets_and_headers(d):
    """Bytes no client library sends, oversized targets and headers: JSON 4xx
    naming the field, nothing changed, the audit trail whole."""
    d.cli("apply", "-f", gpd.TENANTS)
    before = state(d)
    failures = []
    cases = list(RAW_CASES) + [("GET", b"/v1/jobs", 431, "headers")]
    for method, target, status, field in cases:
        extra = b"X-Padding: " + b"p" * 20000 + b"\r\n" if status == 431 else b""
        st, out = raw_call(d, method, target, b"{}" if method in ("PUT", "POST") else b"", extra)
        err = out.get("error") if isinstance(out, dict) else None
        if st != status or not err or err.get("field") != field:
            failures.append("%s %r: got %d %s, expected %d field %s" % (method, target[:60], st, out, status, field))
    # past libmicrohttpd's per-connection memory (64 KiB): its own page, the same status
    assert raw_call(d, "GET", b"/v1/jobs?state=" + b"a" * 100000)[0] == 414
    assert state(d) == before, "state changed"
    assert not failures, "\n".join(failures)
    for row in d.ok("GET", "/v1/audit")["audit"]:
        assert None not in row.values(), row


def test_a_tenant_with_the_smallest_weight_stays_findable(d):
    """Seen: weight 5e-324 was accepted and, once the tenant used a GPU, its
    share was infinite and it vanished from every answer."""
    d.ok("PUT", "/v1/tenants/light", {"weight": 0.001})
    d.ok("POST", "/v1/jobs", {"tenant": "light", "gpus": 8})
    gpd.wait_for(lambda: d.ok("GET", "/v1/tenants/light")["running_jobs"] == 1, what="job running")
    t = d.ok("GET", "/v1/tenants/light")
    assert t["weight"] == 0.001 and t["dominant_share"] > 0, t
    assert "light" in [x["path"] for x in d.ok("GET", "/v1/tenants")["tenants"]]


def test_raw_protocol_abuse(d):
    """Garbage on the socket, a lying Content-Length, a chunked 10 MB body."""
    for payload in (b"GARBAGE\r\n\r\n", b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n",
                    b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\n\r\n"):
        s = socket.create_connection(("127.0.0.1", d.port), timeout=10)
        s.sendall(payload)
        try:
            s.shutdown(socket.SHUT_WR)  # gpupoold may have closed on the garbage already (ENOTCONN)
            s.recv(4096)
        except OSError:
            pass
        s.close()
    s = socket.create_connection(("127.0.0.1", d.port), timeout=30)
    s.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + d.token.encode() +
              b"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunk = b"x" * 65536
    try:
        for _ in range(160):
            s.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
        s.sendall(b"0\r\n\r\n")
    except OSError:
        pass  # the server may stop reading early
    reply = s.recv(4096)
    s.close()
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    assert d.ok("GET", "/v1/health")["status"] == "ok"


def test_rate_limit(d):
    """A token over --rate-limit gets 429 naming Authorization; others are unaffected."""
    d.stop()
    limited = gpd.Daemon(workdir=d.dir, extra=["--rate-limit", "5"])  # later flags win
    limited.start()
    try:
        other = limited.ok("POST", "/v1/tokens", {"name": "other", "role": "auditor"})["token"]
        statuses = [limited.call("GET", "/v1/nodes")[0] for _ in range(40)]
        assert 429 in statuses, statuses
        st, err = limited.call("GET", "/v1/nodes")
        assert st == 429 and err["error"]["field"] == "Authorization", (st, err)
        assert limited.call("GET", "/v1/nodes", token=other)[0] == 200
    finally:
        limited.stop()
    d.start()


if __name__ == "__main__":
    gpd.run([test_battery, test_raw_targets_and_headers, test_a_tenant_with_the_smallest_weight_stays_findable,
             test_raw_protocol_abuse, test_rate_limit])
