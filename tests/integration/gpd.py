"""gpd.py - start a real gpupoold for a test and talk to it over HTTP.

Every integration test uses this: a daemon on an ephemeral loopback port
(--listen 127.0.0.1:0, the port read back from --port-file), a fresh
SQLite file in a temporary directory, the bootstrap admin token read from
the 0600 file the daemon writes, and helpers for raw HTTP (urllib) and for
the gpupool CLI.  Python standard library only.
"""
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BIN = os.environ.get("GP_BIN", os.path.join(ROOT, "build", "bin"))
FLEET = os.path.join(ROOT, "examples", "fleet.yaml")
TENANTS = os.path.join(ROOT, "examples", "tenants.yaml")


class Process:
    """A child process writing to a log file: what Daemon and agentproc.Agent share."""
    proc = None
    log = None

    def read_log(self, tail=4000):
        """The log's last tail characters (all of it for None)."""
        try:
            with open(self.log, errors="replace") as f:
                text = f.read()
        except OSError:
            return ""
        return text if tail is None else text[-tail:]

    def kill9(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()


class Daemon(Process):
    def __init__(self, workdir=None, fleet=FLEET, extra=None):
        self.own_dir = workdir is None
        self.dir = workdir or tempfile.mkdtemp(prefix="gpupool-test-")
        self.fleet = fleet
        self.extra = extra or []
        self.proc = None
        self.port = None
        self.token = None
        self.log = os.path.join(self.dir, "gpupoold.log")

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def start(self, timeout=30):
        port_file = os.path.join(self.dir, "port")
        if os.path.exists(port_file):
            os.unlink(port_file)
        args = [os.path.join(BIN, "gpupoold"), "--listen", "127.0.0.1:0",
                "--store", "sqlite:" + os.path.join(self.dir, "gpupool.db"),
                "--port-file", port_file, "--tick-ms", "100", "--pass-min-ms", "0", "--rate-limit", "0"] + self.extra
        if self.fleet:
            args += ["--fleet", self.fleet]
        logf = open(self.log, "ab")
        self.proc = subprocess.Popen(args, stdout=logf, stderr=logf)
        logf.close()
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("gpupoold exited with %d:\n%s" % (self.proc.returncode, self.read_log()))
            if os.path.exists(port_file):
                with open(port_file) as f:
                    text = f.read().strip()
                if text:
                    self.port = int(text)
                    break
            time.sleep(0.02)
        else:
            raise RuntimeError("gpupoold did not start:\n" + self.read_log())
        with open(os.path.join(self.dir, "admin.token")) as f:
            self.token = f.read().strip()
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill9()
                raise RuntimeError("gpupoold did not stop on SIGTERM")
            if self.proc.returncode != 0:
                raise RuntimeError("gpupoold exited %d:\n%s" % (self.proc.returncode, self.read_log()))

    def cleanup(self):
        self.kill9()
        if self.own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    # ---- HTTP ----
    def tls_context(self, cert):
        """The ssl context of a call (None: plain HTTP); cert: the client's (certificate, key) files."""
        return None

    def call(self, method, path, body=None, token=None, raw=None, content_type="application/json",
             headers=None, cert=None):
        """Returns (status, parsed JSON or text)."""
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.url + path, data=data, method=method)
        tok = self.token if token is None else token
        if tok:
            req.add_header("Authorization", "Bearer " + tok)
        if data is not None and content_type:
            req.add_header("Content-Type", content_type)
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=60, context=self.tls_context(cert)) as resp:
                status, text = resp.status, resp.read().decode()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read().decode()
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def ok(self, method, path, body=None, token=None, expect=(200, 201, 202)):
        status, out = self.call(method, path, body, token)
        if status not in expect:
            raise AssertionError("%s %s -> %d %s" % (method, path, status, out))
        return out

    # ---- CLI ----
    def cli(self, *args, token=None, check=True, json_out=False):
        cmd = [os.path.join(BIN, "gpupool")] + (["--json"] if json_out else []) + list(args)
        env = dict(os.environ, GPUPOOL_SERVER=self.url, GPUPOOL_TOKEN=token or self.token, HOME=self.dir)
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
        if check and p.returncode != 0:
            raise AssertionError("gpupool %s -> %d\n%s%s" % (" ".join(args), p.returncode, p.stdout, p.stderr))
        if json_out and p.returncode == 0:
            return json.loads(p.stdout)
        return p


def store_bytes(d):
    """Every byte of the daemon's SQLite store (the file, its WAL and shared memory)."""
    data = b""
    for path in glob.glob(os.path.join(d.dir, "gpupool.db*")):
        if os.path.isfile(path):
            with open(path, "rb") as f:
                data += f.read()
    return data


def wait_for(pred, timeout=20, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError("timed out waiting for " + what)


def run(tests, make=None, **daemon_args):
    """Runs test functions; each gets a fresh started daemon (Daemon(**daemon_args), or make(test))."""
    failed = 0
    for t in tests:
        d = make(t) if make else Daemon(**daemon_args)
        t0 = time.time()
        try:
            d.start()
            t(d)
            d.stop()
            print("ok   %s (%.1fs)" % (t.__name__, time.time() - t0), flush=True)
        except Exception as e:  # noqa: BLE001 - report every failure and go on
            failed += 1
            where = traceback.extract_tb(e.__traceback__)[-1]  # a bare assert names no cause: say its line
            print("FAIL %s: %s (%s:%d: %s)\n--- daemon log ---\n%s"
                  % (t.__name__, e, os.path.basename(where.filename), where.lineno, where.line, d.read_log()),
                  flush=True)
        finally:
            d.cleanup()
    sys.exit(1 if failed else 0)
