"""The jar cache under concurrent first use: one process resolves, the others wait for it and take its jars."""
import fcntl
import subprocess
import sys
import time

from normalization_core.io.jars import cached_jars

CHILD = """
import sys
from pathlib import Path
from normalization_core.io.jars import ensure_jars
print(ensure_jars("org.example:not-a-real-artifact:0.0.1", Path(sys.argv[1])))
"""


def test_a_process_waiting_on_a_resolution_takes_the_jars_it_left_instead_of_resolving_again(tmp_path):
    cache = tmp_path / "jars"
    with open(tmp_path / ".jars.lock", "w") as lock:  # another process is resolving into `cache`
        fcntl.flock(lock, fcntl.LOCK_EX)
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(cache)], stdout=subprocess.PIPE, text=True)
        time.sleep(1)
        assert child.poll() is None, "the child did not wait for the resolution under way"
        cache.mkdir()
        (cache / "a.jar").write_bytes(b"jar")
        (cache / "jars.txt").write_text("a.jar\n")
        fcntl.flock(lock, fcntl.LOCK_UN)
    out, _ = child.communicate(timeout=60)
    assert child.returncode == 0
    assert out.strip() == str([str(cache / "a.jar")])
    assert cached_jars(cache) == [str(cache / "a.jar")]
