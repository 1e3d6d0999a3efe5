"""The jar cache: where it is by default, and under concurrent first use (one process resolves, the others wait
for it and take its jars)."""
import fcntl
import subprocess
import sys
import time
from pathlib import Path

from normalization_core.runtime.jars import JARS_DIR_ENV, cached_jars, jars_dir

CHILD = """
import sys
from pathlib import Path
from normalization_core.runtime.jars import ensure_jars
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


def test_the_default_cache_is_the_checkouts_whatever_the_working_directory(tmp_path, monkeypatch):
    """A Dagster run works in its instance's folder: the cache `make` filled must still be the one it uses."""
    monkeypatch.delenv(JARS_DIR_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    checkout = Path(__file__).resolve().parents[3]
    assert jars_dir() == checkout / ".lakenorm" / "jars"
    monkeypatch.setenv(JARS_DIR_ENV, str(tmp_path / "elsewhere"))
    assert jars_dir() == tmp_path / "elsewhere"
