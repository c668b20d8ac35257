"""Who may read gpupoold's files (issue 29, finding 3; src/server/store_files.c).

  - what gpupoold creates is its own: the store, its -wal and -shm 0600, in a
    folder it makes 0700; the token and port files 0600; the replica logs'
    folder 0700;
  - a store left readable (0644, as gpupoold wrote it before) is refused at
    start with the chmod that fixes it, and served with a warning only under
    --allow-open-store-mode;
  - a store folder others may write is refused (they could plant the -wal).
"""
import os
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def gpupoold(store, *extra):
    """Runs gpupoold on store until it exits (a refused start) or 10 s pass."""
    args = [os.path.join(gpd.BIN, "gpupoold"), "--listen", "127.0.0.1:0", "--store", "sqlite:" + store,
            "--fleet", gpd.FLEET] + list(extra)
    return subprocess.run(args, capture_output=True, text=True, timeout=10)


def start_in(d, folder):
    """gpupoold on folder/gpupool.db (its port file and log in d.dir): a
    gpd.Daemon to talk to it."""
    g = gpd.Daemon(workdir=d.dir)
    port_file, g.log = os.path.join(d.dir, "port2"), os.path.join(d.dir, "fresh.log")
    with open(g.log, "ab") as log:
        g.proc = subprocess.Popen([os.path.join(gpd.BIN, "gpupoold"), "--listen", "127.0.0.1:0", "--store",
                                   "sqlite:" + os.path.join(folder, "gpupool.db"), "--port-file", port_file,
                                   "--fleet", gpd.FLEET], stdout=log, stderr=log)
    gpd.wait_for(lambda: os.path.exists(port_file) or g.proc.poll() is not None, what="the port file")
    assert g.proc.poll() is None, g.read_log()
    with open(port_file) as f:
        g.port = int(f.read())
    with open(os.path.join(folder, "admin.token")) as f:
        g.token = f.read().strip()
    return g, port_file


def test_what_gpupoold_creates_is_0600_in_a_0700_folder(d):
    """A store in a folder that does not exist yet (umask 022 around it):
    the folder is made 0700, every file 0600 (old code: 0644 files, and
    no folder made at all)."""
    folder = os.path.join(d.dir, "fresh")
    old, g = os.umask(0o022), None
    try:
        g, port_file = start_in(d, folder)
        g.ok("PUT", "/v1/tenants/t", {})
        g.ok("POST", "/v1/jobs", {"tenant": "t", "gpus": 1, "command": ["true"], "env": {"SECRET": "s3cret"}})
        store = os.path.join(folder, "gpupool.db")
        assert mode(folder) == 0o700, oct(mode(folder))
        for path in (store, store + "-wal", store + "-shm", os.path.join(folder, "admin.token"), port_file):
            assert mode(path) == 0o600, (path, oct(mode(path)))
        assert mode(store + ".logs") == 0o700, oct(mode(store + ".logs"))
        g.stop()
    finally:
        os.umask(old)
        if g:
            g.kill9()


def test_a_store_others_may_read_is_refused(d):
    """chmod 644 on the store: the next start exits 1 naming the file and
    the chmod; --allow-open-store-mode starts with a warning."""
    d.stop()
    store = os.path.join(d.dir, "gpupool.db")
    os.chmod(store, 0o644)
    p = gpupoold(store)
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert "mode 0644" in p.stderr and "chmod 600 %s*" % store in p.stderr, p.stderr
    assert mode(store) == 0o644  # refused, not repaired behind the operator's back
    os.chmod(store, 0o600)
    with open(store + "-wal", "w"):  # planted readable beside a private store
        pass
    os.chmod(store + "-wal", 0o644)
    p = gpupoold(store)
    assert p.returncode == 1 and "gpupool.db-wal is mode 0644" in p.stderr, p.stderr
    os.unlink(store + "-wal")
    os.chmod(store, 0o644)
    d.extra = ["--allow-open-store-mode"]
    d.start()
    assert "event=store_mode" in d.read_log(None) and "allow-open-store-mode" in d.read_log(None)
    assert d.ok("GET", "/v1/health")["status"] == "ok"


def test_a_store_folder_others_may_write_is_refused(d):
    d.stop()
    os.chmod(d.dir, 0o777)
    store = os.path.join(d.dir, "gpupool.db")
    p = gpupoold(store, "--allow-open-store-mode")
    os.chmod(d.dir, 0o700)
    assert p.returncode == 1 and "chmod 700 %s" % d.dir in p.stderr, p.stderr


if __name__ == "__main__":
    gpd.run([test_what_gpupoold_creates_is_0600_in_a_0700_folder, test_a_store_others_may_read_is_refused,
             test_a_store_folder_others_may_write_is_refused])
