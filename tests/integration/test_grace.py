#!/usr/bin/env python3
"""Grace is whole in wall-clock time, measured over HTTP.

gpupoold runs its engine on whole seconds of wall-clock time.  A borrower
told to stop within g seconds must keep its GPUs for g seconds of real
time, so the job that reclaims them may not run before that.  The test
needs no clock inside the daemon: the preemption happens while the
reclaimer's submit is being answered (the daemon runs a pass right after a
change), so the wall-clock time just before that request is sent is a
lower bound of the preemption; the first answer showing the reclaimer
running comes after its bind.  first_seen_running >= submit_sent + g is
then a correctness bound (never a false alarm), not a performance figure.
The submit is sent half-way through a wall-clock second, where a
whole-second deadline would come up to half a second early.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402

GRACE = 2


def job(d, tenant, gpus, grace):
    return d.ok("POST", "/v1/jobs", {"tenant": tenant, "gpus": gpus, "gpu_types": ["H100"],
                                     "checkpoint_grace_s": grace})["id"]


def state_of(d, job_id):
    return d.ok("GET", "/v1/jobs/%d" % job_id)["state"]


def at_half_second():
    """Sleeps until the wall clock is half-way through a second."""
    time.sleep((0.5 - time.time() % 1.0) % 1.0)


def first_running(d, job_id, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if state_of(d, job_id) == "running":
            return time.time()
        time.sleep(0.01)
    raise AssertionError("job %d never ran" % job_id)


def test_reclaimer_waits_the_victims_whole_grace(d):
    d.ok("PUT", "/v1/tenants/owner", {"guarantee": {"gpu": {"H100": 8}}})
    d.ok("PUT", "/v1/tenants/borrower", {})
    borrowers = [job(d, "borrower", 8, GRACE) for _ in range(4)]  # all 32 H100
    gpd.wait_for(lambda: all(state_of(d, b) == "running" for b in borrowers), what="borrowers running")
    at_half_second()
    sent = time.time()
    owner = job(d, "owner", 8, 0)
    victims = [b for b in borrowers if state_of(d, b) == "preempting"]
    assert len(victims) == 1, [state_of(d, b) for b in borrowers]
    seen = first_running(d, owner, timeout=GRACE + 5)
    assert seen >= sent + GRACE, "reclaimer ran %.3f s after the preemption, grace is %d s" % (seen - sent, GRACE)
    assert state_of(d, victims[0]) == "pending"


def test_job_waiting_for_a_cancelled_job_waits_its_whole_grace(d):
    d.ok("PUT", "/v1/tenants/team", {})
    big = job(d, "team", 8, GRACE)
    others = [job(d, "team", 8, GRACE) for _ in range(3)]
    gpd.wait_for(lambda: all(state_of(d, j) == "running" for j in [big] + others), what="jobs running")
    waiting = job(d, "team", 8, 0)
    assert state_of(d, waiting) == "pending"
    at_half_second()
    sent = time.time()
    d.ok("DELETE", "/v1/jobs/%d" % big)
    seen = first_running(d, waiting, timeout=GRACE + 5)
    assert seen >= sent + GRACE, "waiting job ran %.3f s after the cancel, grace is %d s" % (seen - sent, GRACE)
    assert state_of(d, big) == "cancelled"


if __name__ == "__main__":
    gpd.run([test_reclaimer_waits_the_victims_whole_grace, test_job_waiting_for_a_cancelled_job_waits_its_whole_grace])
