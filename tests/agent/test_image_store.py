#!/usr/bin/env python3
"""The node's image store (src/agent/image) against real registries.

Starts Debian's docker-registry twice on loopback ports (one open, one with
htpasswd auth and a bcrypt password), builds tiny images as OCI layouts with
umoci (busybox-static and a file of their own), pushes them with skopeo, and
pulls through `gpupool-agent image pull`: miss then hit, two concurrent pulls
of one image (one unpack), not found, a wrong password, no password, the
password never on a command line, no space (a tiny bound), eviction that
never removes a held image, a registry that never answers (the timeout), an
OCI layout on disk, references that are not ones, a holder that would climb
out of the store, a layer that decompresses far past the bound, and what a
killed pull leaves.

Exits 77 (skipped, one line) when skopeo, umoci or docker-registry is missing.
"""
import base64
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

TOOLS = ("skopeo", "umoci", "docker-registry", "busybox")
MISSING = [t for t in TOOLS if not shutil.which(t)]
if MISSING:
    print("SKIP: image store tests need skopeo, umoci, docker-registry and busybox-static (missing: %s)"
          % ", ".join(MISSING))
    sys.exit(77)

BIN = os.environ.get("GP_BIN") or os.path.join(os.path.dirname(__file__), "..", "..", "build", "bin")
AGENT = os.path.join(BIN, "gpupool-agent")
USER, PASSWORD = "team-a", "s3cret-%d" % os.getpid()
FAILURES = []


def check(what, expected, seen):
    ok = expected == seen
    print("%s %s: expected %r, seen %r" % ("ok  " if ok else "FAIL", what, expected, seen))
    if not ok:
        FAILURES.append(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_registry(root, name, htpasswd=None):
    """docker-registry on a loopback port, filesystem storage in root/name; (process, HOST:PORT)."""
    folder = os.path.join(root, name)
    os.makedirs(folder)
    port = free_port()
    auth = ""
    if htpasswd:
        path = os.path.join(folder, "htpasswd")
        with open(path, "w") as f:
            f.write(htpasswd)
        auth = "auth:\n  htpasswd:\n    realm: test\n    path: %s\n" % path
    config = os.path.join(folder, "config.yml")
    with open(config, "w") as f:
        f.write("version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: %s/data\n"
                "http:\n  addr: 127.0.0.1:%d\n%s" % (folder, port, auth))
    proc = subprocess.Popen(["docker-registry", "serve", config], stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(folder, "log"), "w"))
    for _ in range(100):
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/v2/" % port, timeout=1)
            break
        except urllib.error.HTTPError:
            break  # 401: up, and asking for credentials
        except OSError:
            time.sleep(0.05)
    return proc, "127.0.0.1:%d" % port


def build_image(root, name, text):
    """An OCI layout root/NAME with tag v1: busybox-static and /hello holding text."""
    layout = os.path.join(root, "layouts", name)
    files = os.path.join(root, "files-" + name)
    os.makedirs(os.path.join(files, "bin"))
    shutil.copy(shutil.which("busybox"), os.path.join(files, "bin", "busybox"))
    with open(os.path.join(files, "hello"), "w") as f:
        f.write(text)
    quiet = {"stdout": subprocess.DEVNULL, "check": True}
    subprocess.run(["umoci", "init", "--layout", layout], **quiet)
    subprocess.run(["umoci", "new", "--image", layout + ":v1"], **quiet)
    subprocess.run(["umoci", "insert", "--image", layout + ":v1", os.path.join(files, "bin"), "/bin"], **quiet)
    subprocess.run(["umoci", "insert", "--image", layout + ":v1", os.path.join(files, "hello"), "/hello"], **quiet)
    subprocess.run(["umoci", "config", "--image", layout + ":v1", "--config.entrypoint", "/bin/busybox",
                    "--config.cmd", "cat", "--config.cmd", "/hello", "--config.env", "GREETING=" + name,
                    "--config.workingdir", "/"], **quiet)
    return layout


def build_bomb(root):
    """An image whose one layer is 100 MiB of zeros: about 100 KiB compressed."""
    layout = build_image(root, "bomb", "the bomb")
    zeros = os.path.join(root, "zeros")
    with open(zeros, "wb") as f:
        f.truncate(100 << 20)
    subprocess.run(["umoci", "insert", "--image", layout + ":v1", zeros, "/zeros"], stdout=subprocess.DEVNULL,
                   check=True)
    return layout


def build_list(root):
    """An OCI layout whose tag v1 is an index of two platforms: image one as
    this machine's, image two as another architecture's."""
    layout = os.path.join(root, "layouts", "multi")
    shutil.copytree(os.path.join(root, "layouts", "one"), layout)
    blobs = os.path.join(layout, "blobs", "sha256")
    for b in os.listdir(os.path.join(root, "layouts", "two", "blobs", "sha256")):
        shutil.copy(os.path.join(root, "layouts", "two", "blobs", "sha256", b), blobs)
    mine = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)
    other = "s390x" if mine != "s390x" else "amd64"
    entries = []
    for name, arch in (("two", other), ("one", mine)):
        m = json.load(open(os.path.join(root, "layouts", name, "index.json")))["manifests"][0]
        entries.append({"mediaType": m["mediaType"], "digest": m["digest"], "size": m["size"],
                        "platform": {"os": "linux", "architecture": arch}})
    index = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                        "manifests": entries}).encode()
    digest = hashlib.sha256(index).hexdigest()
    with open(os.path.join(blobs, digest), "wb") as f:
        f.write(index)
    with open(os.path.join(layout, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [{
            "mediaType": "application/vnd.oci.image.index.v1+json", "digest": "sha256:" + digest,
            "size": len(index), "annotations": {"org.opencontainers.image.ref.name": "v1"}}]}, f)
    return layout


def push(layout, dest, authfile=None, docker_format=False):
    cmd = ["skopeo", "copy", "--all", "--dest-tls-verify=false"] + (["--format", "v2s2"] if docker_format else [])
    if authfile:
        cmd.append("--dest-authfile=" + authfile)
    subprocess.run(cmd + ["oci:%s:v1" % layout, dest], stdout=subprocess.DEVNULL, check=True)


def pull(store, ref, *args, creds=None, timeout=60, hosts=()):
    """(exit status, [JSON lines]) of one `image pull`."""
    cmd = [AGENT, "image", "pull", "--store", store] + list(args)
    for h in hosts:
        cmd += ["--insecure-registry", h]
    if creds is not None:
        cmd.append("--creds-stdin")
    r = subprocess.run(cmd + [ref], input=json.dumps(creds) if creds is not None else None,
                       capture_output=True, text=True, timeout=timeout)
    lines = [json.loads(ln) for ln in r.stdout.splitlines() if ln.strip()]
    return r.returncode, lines


def listing(store):
    r = subprocess.run([AGENT, "image", "list", "--store", store], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def final(lines):
    return lines[-1] if lines else {}


def test_miss_then_hit(root, reg, host):
    store = os.path.join(root, "s-hit")
    rc, lines = pull(store, "docker://%s/test/one:v1" % reg, hosts=[host])
    last = final(lines)
    check("first pull: ready", ("ready", False), (last.get("phase"), last.get("hit")))
    with open(os.path.join(last.get("rootfs", "/nonexistent"), "hello")) as f:
        check("the rootfs holds the image's file", "image one", f.read())
    check("the image config", (["/bin/busybox"], ["GREETING=one"]),
          (last["config"].get("Entrypoint"), last["config"].get("Env")))
    progress = [ln for ln in lines if ln.get("phase") == "pulling"]
    check("progress ends at its total", True,
          bool(progress) and progress[-1]["done_bytes"] == progress[-1]["total_bytes"] > 0)
    rc, lines = pull(store, "docker://%s/test/one:v1" % reg, hosts=[host])
    check("second pull: a hit, same digest, nothing copied", ("ready", True, last["digest"], 1),
          (final(lines).get("phase"), final(lines).get("hit"), final(lines).get("digest"), len(lines)))
    first = final(pull(store, "docker://%s/test/docker-format:v1" % reg, hosts=[host])[1])
    rc, lines = pull(store, "docker://%s/test/docker-format:v1" % reg, hosts=[host])
    check("a Docker-format image (stored converted to OCI): the second pull a hit, nothing copied",
          ("ready", True, first.get("digest"), 1),
          (final(lines).get("phase"), final(lines).get("hit"), final(lines).get("digest"), len(lines)))
    check("its served digest remembered apart", 1, len(os.listdir(os.path.join(store, "served"))))
    rc, lines = pull(store, "docker://%s/test/one:v1" % reg, "--warm", hosts=[host])
    seen = listing(store)
    check("counters: two misses, two hits, one warm", (2, 2, 1, 0.5),
          (seen["misses"], seen["hits"], seen["warm"], seen["hit_rate"]))
    check("the shared layout's index lists each image once", sorted([last["digest"], first.get("digest")]),
          sorted(m["digest"] for m in json.load(open(os.path.join(store, "layout", "index.json")))["manifests"]))
    check("nothing left in tmp/", [], os.listdir(os.path.join(store, "tmp")))
    return last["digest"]


def test_manifest_list(root, reg, host, digest):
    store = os.path.join(root, "s-list")
    rc, lines = pull(store, "docker://%s/test/multi:v1" % reg, hosts=[host])
    check("a multi-platform image: this machine's manifest, with a known total", ("ready", digest, True),
          (final(lines).get("phase"), final(lines).get("digest"),
           any(ln.get("total_bytes", 0) > 0 for ln in lines if ln.get("phase") == "pulling")))
    rc, lines = pull(store, "docker://%s/test/multi:v1" % reg, hosts=[host])
    check("and again: a hit, nothing copied", (True, 1), (final(lines).get("hit"), len(lines)))


def test_concurrent(root, reg, host):
    store = os.path.join(root, "s-two")
    cmd = [AGENT, "image", "pull", "--store", store, "--insecure-registry", host]
    procs = [subprocess.Popen(cmd + ["--hold", "r%d" % i, "docker://%s/test/one:v1" % reg],
                              stdout=subprocess.PIPE, text=True) for i in range(2)]
    finals = [json.loads(p.communicate(timeout=60)[0].splitlines()[-1]) for p in procs]
    check("two concurrent pulls: both ready, one digest", (["ready", "ready"], 1),
          ([f["phase"] for f in finals], len({f["digest"] for f in finals})))
    check("one unpacked it, the other waited and found it", [False, True], sorted(f["hit"] for f in finals))
    seen = listing(store)
    check("one image, held by both", (1, ["r0", "r1"]), (len(seen["images"]), sorted(seen["images"][0]["holders"])))


def test_not_found_and_bad_refs(root, reg, host):
    store = os.path.join(root, "s-nf")
    rc, lines = pull(store, "docker://%s/test/one:nope" % reg, hosts=[host])
    check("unknown tag: failed not_found, exit 1", (1, "failed", "not_found"),
          (rc, final(lines).get("phase"), final(lines).get("reason")))
    rc, lines = pull(store, "docker://%s/test/nobody:v1" % reg, hosts=[host])
    check("unknown repository: not_found", "not_found", final(lines).get("reason"))
    rc, lines = pull(store, "oci:%s/layouts/none:v1" % root)
    check("missing OCI layout: not_found", "not_found", final(lines).get("reason"))
    for ref in ["docker://-x/y:1", "docker://%s/a b:1" % reg, "oci:relative/path", "dir:/srv/x",
                "docker://%s/x@sha256:abc" % reg, "oci:/a/../etc:v1", "docker://%s/x\n:1" % reg]:
        rc, lines = pull(store, ref)
        check("bad reference %r: bad_ref" % ref, (1, "bad_ref"), (rc, final(lines).get("reason")))


def scan_cmdlines(secret, stop, seen):
    """Every process's argv, until stop: the secret must never be there."""
    while not stop.is_set():
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    with open("/proc/%s/cmdline" % pid, "rb") as f:
                        if secret.encode() in f.read():
                            seen.append(pid)
                except OSError:
                    pass
        time.sleep(0.005)


def test_auth(root, reg, host):
    store = os.path.join(root, "s-auth")
    rc, lines = pull(store, "docker://%s/test/private:v1" % reg, hosts=[host])
    check("no credentials: unauthorized", "unauthorized", final(lines).get("reason"))
    rc, lines = pull(store, "docker://%s/test/private:v1" % reg, hosts=[host],
                     creds={"username": USER, "password": "wrong"})
    check("a wrong password: unauthorized", "unauthorized", final(lines).get("reason"))
    home = os.path.join(root, "home")
    os.makedirs(os.path.join(home, ".docker"))
    with open(os.path.join(home, ".docker", "config.json"), "w") as f:
        json.dump({"auths": {reg: {"auth": base64.b64encode(("%s:%s" % (USER, PASSWORD)).encode()).decode()}}}, f)
    env_home = os.environ.get("HOME")
    os.environ["HOME"] = home
    rc, lines = pull(store, "docker://%s/test/private:v1" % reg, hosts=[host])
    os.environ["HOME"] = env_home or "/root"
    check("the node's own ~/.docker credentials are not used", "unauthorized", final(lines).get("reason"))
    stop, seen = threading.Event(), []
    scanner = threading.Thread(target=scan_cmdlines, args=(PASSWORD, stop, seen))
    scanner.start()
    rc, lines = pull(store, "docker://%s/test/private:v1" % reg, hosts=[host],
                     creds={"username": USER, "password": PASSWORD})
    stop.set()
    scanner.join()
    check("the right password: ready", "ready", final(lines).get("phase"))
    rc, again = pull(store, "docker://%s/test/private:v1" % reg, hosts=[host])
    check("then no credentials: still unauthorized, the image in the store notwithstanding", "unauthorized",
          final(again).get("reason"))
    check("the password on no process's command line", [], seen)
    check("the auth file is gone", [], os.listdir(os.path.join(store, "tmp")))
    out = json.dumps(lines) + json.dumps(listing(store))
    check("the password in no output", False, PASSWORD in out)


def test_no_space(root, reg, host):
    store = os.path.join(root, "s-tiny")
    rc, lines = pull(store, "docker://%s/test/one:v1" % reg, "--max-gib", "0.0001", hosts=[host])
    check("a 100 KiB store: no_space", (1, "no_space"), (rc, final(lines).get("reason")))
    check("and nothing kept", [], listing(store)["images"])
    rc, lines = pull(store, "docker://%s/test/bomb:v1" % reg, "--max-gib", "0.02", hosts=[host])
    print("     (the bomb's message: %s)" % final(lines).get("message"))
    check("100 MiB of zeros in a 100 KiB layer, a 20 MiB store: no_space", (1, "no_space"),
          (rc, final(lines).get("reason")))
    check("and nothing kept of it", ([], []), (listing(store)["images"], os.listdir(os.path.join(store, "tmp"))))
    check("nor left in the shared index (so gc takes its blobs)", [],
          json.load(open(os.path.join(store, "layout", "index.json")))["manifests"])


def test_eviction_keeps_held(root, reg, host):
    store = os.path.join(root, "s-lru")
    refs = ["docker://%s/test/%s:v1" % (reg, n) for n in ("one", "two", "three")]
    a = final(pull(store, refs[0], "--hold", "replica-a", hosts=[host])[1])
    b = final(pull(store, refs[1], hosts=[host])[1])
    used = listing(store)["used_bytes"]
    bound_gib = "%.9f" % ((used + b["bytes"]) / (1 << 30))  # room for one more image, not two
    c = final(pull(store, refs[2], "--max-gib", bound_gib, hosts=[host])[1])
    check("the third pull fits by evicting", "ready", c.get("phase") if c.get("phase") == "ready" else c)
    kept = [im["digest"] for im in listing(store)["images"]]
    check("the held, older image stays; the unheld one goes", (True, False, True),
          (a["digest"] in kept, b["digest"] in kept, c["digest"] in kept))
    layers = json.load(open(os.path.join(root, "layouts", "two", "blobs", "sha256",
                                         b["digest"][7:])))["layers"]
    check("its own layer's blob is collected", False,
          os.path.exists(os.path.join(store, "layout", "blobs", "sha256", layers[-1]["digest"][7:])))
    r = subprocess.run([AGENT, "image", "prune", "--store", store], capture_output=True, text=True)
    check("prune keeps a held image", [a["digest"]], [im["digest"] for im in listing(store)["images"]])
    r = subprocess.run([AGENT, "image", "release", "--store", store, "--hold", "replica-a", a["digest"]])
    r = subprocess.run([AGENT, "image", "prune", "--store", store], capture_output=True, text=True)
    check("released, prune removes it and every blob", ([], []),
          (listing(store)["images"], os.listdir(os.path.join(store, "layout", "blobs", "sha256"))))
    rc, lines = pull(store, refs[0], "--hold", "../../escape", hosts=[host])
    check("a holder climbing out of the store is refused", (1, False),
          (rc, os.path.exists(os.path.join(root, "escape"))))


def test_oci_layout(root, digest):
    store = os.path.join(root, "s-hit")
    rc, lines = pull(store, "oci:%s/layouts/one:v1" % root)
    check("an OCI layout on disk: the same image, a hit", ("ready", digest, True),
          (final(lines).get("phase"), final(lines).get("digest"), final(lines).get("hit")))


def silent_server():
    """A port that accepts and never answers."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    return s


def test_timeout(root):
    store = os.path.join(root, "s-slow")
    s = silent_server()
    host = "127.0.0.1:%d" % s.getsockname()[1]
    rc, lines = pull(store, "docker://%s/test/one:v1" % host, "--pull-timeout-s", "2", hosts=[host])
    s.close()
    check("a registry that never answers: the pull ends, failed other, timed out", ("other", True),
          (final(lines).get("reason"), "timed out" in final(lines).get("message", "")))


def test_killed_pull(root, reg, host):
    store = os.path.join(root, "s-kill")
    half = os.path.join(store, "tmp", "pull-dead00", "image", "rootfs")
    os.makedirs(half)
    with open(os.path.join(half, "partial"), "w") as f:
        f.write("x")
    rc, lines = pull(store, "docker://%s/test/one:v1" % reg, hosts=[host])
    check("beside a killed pull's half-unpacked folder: a fresh unpack", ("ready", False),
          (final(lines).get("phase"), final(lines).get("hit")))
    check("the half folder is not the image", False,
          os.path.exists(os.path.join(final(lines).get("rootfs", "/x"), "partial")))
    subprocess.run([AGENT, "image", "prune", "--store", store, "--max-gib", "1"], capture_output=True)
    check("prune sweeps what the killed pull left, and the lock files of pulls", ([], ["counters", "index"]),
          (os.listdir(os.path.join(store, "tmp")), sorted(os.listdir(os.path.join(store, "locks")))))


def test_agent_option(root):
    env = dict(os.environ, GPUPOOL_JOIN_TOKEN="x")
    fleet = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "fleet.yaml")
    r = subprocess.run([AGENT, "run", "--server", "http://127.0.0.1:1", "--backend", "sim", "--node-file", fleet,
                        "--state-dir", os.path.join(root, "agent-state"), "--image-store", "relative/store"],
                       capture_output=True, text=True, env=env, timeout=30)
    check("agent run with a relative --image-store stops at start", (1, True),
          (r.returncode, "--image-store relative/store" in r.stderr))


def main():
    import crypt  # deprecated in 3.11, still in Debian 12's Python: bcrypt through libxcrypt, as htpasswd -B
    root = tempfile.mkdtemp(prefix="gp-image-")
    salt = crypt.mksalt(crypt.METHOD_BLOWFISH)
    registries = []
    try:
        open_reg, open_host = start_registry(root, "open")
        auth_reg, auth_host = start_registry(root, "auth", "%s:%s\n" % (USER, crypt.crypt(PASSWORD, salt)))
        registries = [open_reg, auth_reg]
        authfile = os.path.join(root, "push-auth.json")
        with open(authfile, "w") as f:
            json.dump({"auths": {auth_host: {"auth": base64.b64encode(
                ("%s:%s" % (USER, PASSWORD)).encode()).decode()}}}, f)
        for name in ("one", "two", "three"):
            push(build_image(root, name, "image " + name), "docker://%s/test/%s:v1" % (open_host, name))
        push(os.path.join(root, "layouts", "one"), "docker://%s/test/private:v1" % auth_host, authfile)
        push(os.path.join(root, "layouts", "two"), "docker://%s/test/docker-format:v1" % open_host, docker_format=True)
        push(build_bomb(root), "docker://%s/test/bomb:v1" % open_host)
        push(build_list(root), "docker://%s/test/multi:v1" % open_host)
        digest = test_miss_then_hit(root, open_host, open_host)
        test_oci_layout(root, digest)
        test_manifest_list(root, open_host, open_host, digest)
        test_concurrent(root, open_host, open_host)
        test_not_found_and_bad_refs(root, open_host, open_host)
        test_auth(root, auth_host, auth_host)
        test_no_space(root, open_host, open_host)
        test_eviction_keeps_held(root, open_host, open_host)
        test_timeout(root)
        test_agent_option(root)
        test_killed_pull(root, open_host, open_host)
    finally:
        for p in registries:
            p.terminate()
            p.wait()
        shutil.rmtree(root, ignore_errors=True)
    if FAILURES:
        print("%d failed: %s" % (len(FAILURES), "; ".join(FAILURES)))
        return 1
    print("all image store checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
