#!/usr/bin/env python3
"""Jobs that no node or block of the fleet could ever hold are refused at submit (issue 32, item 4).

The fleet is examples/fleet.yaml: 8-GPU nodes, H100 in blocks of two nodes,
no GPU in MPS mode.  A refusal is 422 "never_fits" naming the field to
change, for single jobs, arrays and lists alike, and no job is created;
`"wait_for_fleet": true` (gpupool submit --hold-until-fit) accepts it to
wait for nodes, with a reason that says what is wrong.  Nodes that are
drained or down still count: the check is against what could ever run.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402

NLP = "research/nlp"


def job_count(d):
    return len(d.ok("GET", "/v1/jobs?limit=1000")["jobs"])


def refused(d, path, body, field, says):
    before = job_count(d)
    st, out = d.call("POST", path, body)
    assert st == 422, (body, st, out)
    err = out["error"]
    assert err["code"] == "never_fits" and err["field"] == field, (body, err)
    assert says in err["message"] and "looser topology" not in err["message"], (body, err)
    assert job_count(d) == before, "a refused job was created"
    return err["message"]


def test_a_replica_bigger_than_any_node_is_refused_with_the_right_reason(d):
    d.cli("apply", "-f", gpd.TENANTS)
    refused(d, "/v1/jobs", {"tenant": NLP, "gpus": 16, "gpu_types": ["H100"]}, "gpus",
            "16 H100 GPUs in one replica, but the largest H100 node has 8")
    p = d.cli("submit", "--tenant", NLP, "--gpus", "16", "--gpu-type", "H100", "--", "true", check=False)
    assert p.returncode != 0 and "largest H100 node has 8" in p.stderr, (p.returncode, p.stdout, p.stderr)


def test_gangs_cpu_memory_and_sharing_modes_are_checked(d):
    d.cli("apply", "-f", gpd.TENANTS)
    refused(d, "/v1/jobs", {"tenant": NLP, "replicas": 3, "gpus": 8, "gpu_types": ["H100"], "topology": "block"},
            "replicas", "largest block holds 2")
    refused(d, "/v1/jobs", {"tenant": NLP, "replicas": 2, "gpus": 8, "gpu_types": ["H100"], "topology": "nvlink"},
            "topology", "16 H100 GPUs in one NVLink domain")
    refused(d, "/v1/jobs", {"tenant": NLP, "replicas": 5, "gpus": 8, "gpu_types": ["H100"]},
            "replicas", "the whole fleet holds 4")
    refused(d, "/v1/jobs", {"tenant": NLP, "gpus": 1, "gpu_types": ["A100"], "cpu_millis": 150000},
            "cpu_millis", "largest A100 node has 128000")
    refused(d, "/v1/jobs", {"tenant": NLP, "share": {"mps": 30}}, "share", "MPS mode")
    # what fits is still taken: 4 x 8 H100 anywhere, 2 x 8 in one block
    d.ok("POST", "/v1/jobs", {"tenant": NLP, "replicas": 2, "gpus": 8, "gpu_types": ["H100"], "topology": "block"})


def test_arrays_and_lists_are_refused_whole(d):
    d.cli("apply", "-f", gpd.TENANTS)
    refused(d, "/v1/jobs:batch", {"job": {"tenant": NLP, "gpus": 16, "gpu_types": ["H100"]}, "array": 3},
            "job.gpus", "largest H100 node has 8")
    refused(d, "/v1/jobs:batch", {"jobs": [{"tenant": NLP, "gpus": 1},
                                           {"tenant": NLP, "gpus": 1, "cpu_millis": 500000}]},
            "jobs[1].cpu_millis", "millicores per replica")
    p = d.cli("submit", "--tenant", NLP, "--gpus", "16", "--array", "3", "--", "true", check=False)
    assert p.returncode != 0 and "largest" in p.stderr, (p.returncode, p.stdout, p.stderr)


def test_hold_until_fit_waits_with_a_true_reason(d):
    d.cli("apply", "-f", gpd.TENANTS)
    out = d.cli("submit", "--tenant", NLP, "--gpus", "16", "--gpu-type", "H100", "--hold-until-fit", "--", "true",
                json_out=True)
    gpd.wait_for(lambda: "next scheduling pass" not in d.ok("GET", "/v1/jobs/%d" % out["id"])["reason"], what="a pass")
    view = d.ok("GET", "/v1/jobs/%d" % out["id"])
    assert view["state"] == "pending", view
    assert "largest H100 node has 8" in view["reason"] and "looser topology" not in view["reason"], view
    why = d.cli("why", str(out["id"])).stdout  # its topology is any already: no "looser topology" advice
    assert "largest H100 node has 8" in why and "looser topology" not in why, why
    batch = d.ok("POST", "/v1/jobs:batch", {"job": {"tenant": NLP, "gpus": 16, "wait_for_fleet": True}, "array": 2})
    assert len(batch["ids"]) == 2, batch
    st, bad = d.call("POST", "/v1/jobs", {"tenant": NLP, "wait_for_fleet": "yes"})
    assert st == 400 and bad["error"]["field"] == "wait_for_fleet", bad


def test_drained_nodes_still_count(d):
    d.cli("apply", "-f", gpd.TENANTS)
    d.cli("drain", "a100-c-0")
    d.ok("POST", "/v1/jobs", {"tenant": NLP, "gpus": 8, "gpu_types": ["A100"]})


if __name__ == "__main__":
    gpd.run([test_a_replica_bigger_than_any_node_is_refused_with_the_right_reason,
             test_gangs_cpu_memory_and_sharing_modes_are_checked, test_arrays_and_lists_are_refused_whole,
             test_hold_until_fit_waits_with_a_true_reason, test_drained_nodes_still_count])
