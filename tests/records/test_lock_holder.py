"""The run lock names its holder, also when asked in the instant between the holder taking the lock
and writing its pid (two `h2hmem evaluate` at once: the refused one said "another process")."""

import fcntl
import threading
import time

from h2hmem.records import exclusive_lock
from h2hmem.records._store import lock_holder


def test_the_holder_is_named_when_asked_before_it_wrote_its_pid(tmp_path):
    path = tmp_path / ".lock"
    with open(path, "a+", encoding="utf-8") as holder:
        fcntl.flock(holder.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # locked, nothing written yet

        def write_pid_soon():
            time.sleep(0.02)
            holder.write("pid 4242, h2hmem evaluate")
            holder.flush()

        writer = threading.Thread(target=write_pid_soon)
        writer.start()
        with exclusive_lock(path) as held_by:
            assert held_by == "pid 4242, h2hmem evaluate"
        writer.join()
        assert lock_holder(path) == "pid 4242, h2hmem evaluate"
    assert lock_holder(path) is None  # released with its handle
    with exclusive_lock(path, "me") as held_by:
        assert held_by is None and path.read_text().startswith("pid ")
