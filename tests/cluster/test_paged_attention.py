"""The paged-attention example: two engine processes share one store; the second loads the shared
prefix's K/V blocks, and its output equals a full recompute exactly."""
import json
import os
import subprocess

import pytest

pytest.importorskip("yuebing")
pytest.importorskip("numpy")

ENGINE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "paged_attention", "engine.py")


def run_instance(cluster, seed):
    r = subprocess.run(["/usr/bin/python3", ENGINE, "--master", cluster.address, "--prompt-seed", str(seed)],
                       capture_output=True, text=True, timeout=120, env=os.environ)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_second_instance_loads_the_shared_prefix_and_matches_a_full_recompute(cluster):
    cluster.start_master()
    cluster.start_client("gpu-node", size="128MB")
    a = run_instance(cluster, 1)
    assert a["hit_blocks"] == 0 and a["saved_blocks"] == a["blocks"] == 32
    assert a["exact_match"]
    b = run_instance(cluster, 2)
    assert b["hit_blocks"] == 16 and b["hit_rate"] == 0.5  # 256 shared tokens = 16 blocks
    assert b["saved_blocks"] == 16                          # only its own blocks were new
    assert b["exact_match"]
    c = run_instance(cluster, 2)                            # the same prompt again: all hits
    assert c["hit_blocks"] == 32 and c["exact_match"]
