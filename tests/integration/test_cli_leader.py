"""test_cli_leader.py - the CLI and the agent with several gpupoold URLs, following the leader.

Rules (src/cli/client.h, src/agent/agent_node.h, docs/cli.md "Several replicas"):
  - --server (GPUPOOL_SERVER, server = in the config file) takes a comma-separated list; a URL that
    cannot be reached: the next one.
  - A follower's 307 is followed with the same method, body and token to its Location (http(s) only,
    at most 5 hops), and the leader it names is remembered for the rest of the command.
  - A 503 with Retry-After (no leader yet) is waited out and retried, up to --wait-leader seconds,
    then "no leader: ..." and exit 8.
  - The agent follows a 307 to the leader and waits out a 503's Retry-After the same way.

The followers here are SCRIPTED: a small http.server answering as the fixed decisions say a gpupoold
follower answers (307 + Location + {"error": {"code": "not_leader", "leader": URL}}, or 503 + Retry-After: 1
+ {"error": {"code": "no_leader"}}) in front of one real gpupoold that plays the leader.  Real followers
come with the leader lease (issue 16, part L); the case with real replicas is added when both are merged.
"""
import http.server
import json
import os
import socket
import subprocess
import threading

import agentproc
import gpd


class Follower:
    """A scripted replica: answers each request with what script(n, method, path) returns
    (status, headers, body), n counting from 0; records (method, path, body, authorization)."""

    def __init__(self, script):
        self.script, self.seen, self.lock = script, [], threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                with outer.lock:
                    n = len(outer.seen)
                    outer.seen.append((self.command, self.path, body, self.headers.get("Authorization")))
                status, headers, out = outer.script(n, self.command, self.path)
                data = json.dumps(out).encode()
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = answer

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def count(self, method=None):
        with self.lock:
            return sum(1 for s in self.seen if method is None or s[0] == method)


def not_leader(leader_url, path, location=None):
    return (307, {"Location": location or leader_url + path},
            {"error": {"code": "not_leader", "field": "leader", "message": "this replica follows " + leader_url,
                       "leader": leader_url}})


NO_LEADER = (503, {"Retry-After": "1"}, {"error": {"code": "no_leader", "message": "no leader is known yet"}})


def dead_url():
    """A loopback URL where nothing listens."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return "http://127.0.0.1:%d" % port


def cli(d, server, *args, extra=()):
    cmd = [os.path.join(gpd.BIN, "gpupool"), "--server", server] + list(extra) + list(args)
    env = dict(os.environ, GPUPOOL_TOKEN=d.token, HOME=d.dir)
    env.pop("GPUPOOL_SERVER", None)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)


def submit(d, server, extra=()):
    if not getattr(d, "tenants_applied", False):
        d.cli("apply", "-f", gpd.TENANTS)
        d.tenants_applied = True
    return cli(d, server, "--json", "submit", "--tenant", "research/nlp", "--gpus", "1", "--", "sleep", "1",
               extra=extra)


def jobs_on(d):
    return {j["id"] for j in d.ok("GET", "/v1/jobs")["jobs"]}


def test_a_dead_url_first_in_the_list_is_skipped(d):
    server = dead_url() + "," + d.url + "/"
    p = submit(d, server)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["id"] in jobs_on(d)
    p = cli(d, server, "jobs")
    assert p.returncode == 0, p.stderr
    # the same list from GPUPOOL_SERVER and from the config file
    bare = [os.path.join(gpd.BIN, "gpupool"), "jobs"]
    env = dict(os.environ, GPUPOOL_TOKEN=d.token, HOME=d.dir, GPUPOOL_SERVER=server)
    p = subprocess.run(bare, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    os.makedirs(os.path.join(d.dir, ".config", "gpupool"), exist_ok=True)
    with open(os.path.join(d.dir, ".config", "gpupool", "config"), "w") as f:
        f.write("server = %s\n" % server)
    env.pop("GPUPOOL_SERVER")
    p = subprocess.run(bare, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    os.unlink(os.path.join(d.dir, ".config", "gpupool", "config"))
    p = cli(d, dead_url() + "," + dead_url(), "jobs")
    assert p.returncode == 3 and p.stderr.count("127.0.0.1") == 2, (p.returncode, p.stderr)


def test_a_write_to_a_follower_follows_the_307_with_its_body_and_token(d):
    f = Follower(lambda n, method, path: not_leader(d.url, path))
    try:
        p = submit(d, f.url)
        assert p.returncode == 0, p.stderr
        assert json.loads(p.stdout)["id"] in jobs_on(d)  # the body and the token reached the leader
        method, path, body, auth = f.seen[0]
        assert (method, path, auth) == ("POST", "/v1/jobs", "Bearer " + d.token), f.seen
        assert json.loads(body)["tenant"] == "research/nlp"
    finally:
        f.close()


def test_the_leader_is_remembered_for_the_rest_of_the_command(d):
    ids = [str(json.loads(submit(d, d.url).stdout)["id"]) for _ in range(3)]
    f = Follower(lambda n, method, path: not_leader(d.url, path))
    try:
        p = cli(d, f.url, "cancel", *ids)
        assert p.returncode == 0, p.stderr
        # cancel first reads each id (an array's id means the whole array); reads go to the replica named, and
        # the first read's 307 named the leader: every cancel (a write) went to the leader directly
        assert f.count("DELETE") == 0 and f.count("GET") == 3, f.seen
        states = [d.ok("GET", "/v1/jobs/" + i)["state"] for i in ids]
        assert all(s in ("cancelled", "preempting") for s in states), states  # running ones stop in their grace
    finally:
        f.close()


def test_a_307_to_a_non_http_url_is_not_followed(d):
    f = Follower(lambda n, method, path: not_leader("file:///etc", path, location="file:///etc/passwd"))
    try:
        p = submit(d, f.url)
        assert p.returncode != 0 and "not followed" in p.stderr, (p.returncode, p.stderr)
        assert f.count() == 1
    finally:
        f.close()


def test_at_most_five_hops_are_followed(d):
    f = Follower(lambda n, method, path: not_leader(f.url, path))
    try:
        p = submit(d, f.url)
        assert p.returncode != 0 and "5 hops" in p.stderr, (p.returncode, p.stderr)
        assert f.count() == 6, f.seen  # the request, then five hops
    finally:
        f.close()


def test_a_503_with_retry_after_is_waited_out_then_the_leader_answers(d):
    f = Follower(lambda n, method, path: NO_LEADER if n < 2 else not_leader(d.url, path))
    try:
        p = submit(d, f.url)
        assert p.returncode == 0, p.stderr
        assert json.loads(p.stdout)["id"] in jobs_on(d)
        assert f.count() == 3, f.seen
    finally:
        f.close()


def test_no_leader_within_wait_leader_exits_8_saying_so(d):
    f = Follower(lambda n, method, path: NO_LEADER)
    try:
        p = submit(d, f.url + "," + dead_url(), extra=["--wait-leader", "2"])
        assert p.returncode == 8, (p.returncode, p.stderr)
        assert "no leader:" in p.stderr and "no_leader" in p.stderr, p.stderr
        assert f.count() >= 2, f.seen  # waited and asked again
        p = submit(d, f.url, extra=["--wait-leader", "0"])
        assert p.returncode == 8 and "no leader:" in p.stderr, (p.returncode, p.stderr)
        p = submit(d, f.url, extra=["--wait-leader", "soon"])
        assert p.returncode == 2 and "--wait-leader" in p.stderr, (p.returncode, p.stderr)
    finally:
        f.close()


def test_reads_go_to_the_first_url_that_answers(d):
    f = Follower(lambda n, method, path: not_leader(d.url, path))
    try:
        p = cli(d, dead_url() + "," + f.url + "," + d.url, "jobs")
        assert p.returncode == 0, p.stderr
        assert f.count("GET") == 1, f.seen  # the follower answered (307 here), not the third URL
    finally:
        f.close()


def test_the_agent_follows_the_307_and_waits_out_the_503(d):
    f = Follower(lambda n, method, path: NO_LEADER if n < 2 else not_leader(d.url, path))
    nodes = agentproc.write_node_file(d.dir, agentproc.sim_nodes("lead", 1, zone="us-east-1a"))
    a = agentproc.Agent(d, nodes)
    a.command = lambda: [os.path.join(gpd.BIN, "gpupool-agent"), "run", "--server", dead_url() + "," + f.url,
                         "--join-token-file", a.token_file, "--backend", "sim", "--node-file", nodes,
                         "--state-dir", a.state_dir, "--on-exit", "stop"]
    try:
        a.start()
        a.wait_up(["lead-0"], timeout=60)
        log = a.read_log(None)
        assert "knows no leader (503)" in log and "following the leader " + d.url in log, log
        with f.lock:
            paths = [s[1] for s in f.seen]
        # once it knows the leader, its polls and heartbeats go there, not through the follower
        assert paths.count("/v1/agents:register") == 3 and len(paths) == 3, paths
    finally:
        a.stop()
        f.close()


if __name__ == "__main__":
    gpd.run([test_a_dead_url_first_in_the_list_is_skipped,
             test_a_write_to_a_follower_follows_the_307_with_its_body_and_token,
             test_the_leader_is_remembered_for_the_rest_of_the_command,
             test_a_307_to_a_non_http_url_is_not_followed,
             test_at_most_five_hops_are_followed,
             test_a_503_with_retry_after_is_waited_out_then_the_leader_answers,
             test_no_leader_within_wait_leader_exits_8_saying_so,
             test_reads_go_to_the_first_url_that_answers,
             test_the_agent_follows_the_307_and_waits_out_the_503])
