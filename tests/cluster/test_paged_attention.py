"""The paged-attention example: two engine processes share one store; the second loads the shared
prefix's K/V blocks, and its output equals a full recompute exactly."""
import functools
import json
import os
import subprocess

import pytest

pytest.importorskip("yuebing")
pytest.importorskip("numpy")

ENGINE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "paged_attention", "engine.py")


def run_instance(cluster, seed, connector="vllm"):
    r = subprocess.run(["/usr/bin/python3", ENGINE, "--master", cluster.address, "--prompt-seed", str(seed),
                        "--connector", connector],
                       capture_output=True, text=True, timeout=120, env=os.environ)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("connector", ["vllm", "lmcache"])
def test_second_instance_loads_the_shared_prefix_and_matches_a_full_recompute(cluster, connector):
    """Through vLLM's calls (multi-buffer batches) and LMCache's default ones (put_parts and
    batch_get_buffer with a metadata header)."""
    cluster.start_master()
    cluster.start_client("gpu-node", size="128MB")
    run = functools.partial(run_instance, cluster, connector=connector)
    a = run(1)
    assert a["hit_blocks"] == 0 and a["saved_blocks"] == a["blocks"] == 32
    assert a["exact_match"]
    b = run(2)
    assert b["hit_blocks"] == 16 and b["hit_rate"] == 0.5  # 256 shared tokens = 16 blocks
    assert b["saved_blocks"] == 16                          # only its own blocks were new
    assert b["exact_match"]
    c = run(2)  # the same prompt again: all hits
    assert c["hit_blocks"] == 32 and c["exact_match"]
