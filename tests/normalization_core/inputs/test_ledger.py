"""A normalized file listed again with another size or time (SPEC §2.4, §10), judged without Spark: touched with its
bytes unchanged, replaced by other bytes (a warning), the replacement touched (said no more), and a ledger row of
an earlier lakenorm, which holds no checksum."""
from __future__ import annotations

import os
from dataclasses import replace

from normalization_core.inputs.checksums import checksum
from normalization_core.inputs.ledger import ChangedFile, FileState, LedgerEntry, compare
from normalization_core.inputs.listing import list_files


def rewrite(path, data: bytes, seconds_later: int):
    """`path` holding `data`, modified `seconds_later` than the first listing; its listing entry."""
    first = path.stat().st_mtime
    path.write_bytes(data)
    os.utime(path, (first + seconds_later,) * 2)
    [entry] = list_files(path.parent, (".jsonl",))
    return entry


def test_touched_replaced_and_replacement_touched(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"id": 1}\n')
    [read] = list_files(tmp_path, (".jsonl",))
    done = LedgerEntry("101", FileState(read, checksum(tmp_path, read)))

    touched = rewrite(path, b'{"id": 1}\n', 10)  # a copy without -p, a sync, a restore
    assert not done.lists(touched)
    assert compare(tmp_path, done, touched) == ChangedFile("101", FileState(touched, done.read.checksum), False)

    other = rewrite(path, b'{"id": 2}\n', 20)  # same size, other bytes
    change = compare(tmp_path, done, other)
    assert (change.load_id, change.replaced, change.now.file) == ("101", True, other)
    assert change.warning == ("file 'a.jsonl', normalized in load '101', was replaced by other content (10 bytes; it "
                              "had 10); the new content is not read: `lakenorm normalize --load-id 101` re-normalizes "
                              "that load from its files as they are now")
    reported = replace(done, replaced=change.now)
    assert reported.lists(other)  # recorded: the next listing says nothing
    again = rewrite(path, b'{"id": 2}\n', 30)
    assert compare(tmp_path, reported, again) == ChangedFile("101", FileState(again, change.now.checksum), True)

    longer = rewrite(path, b'{"id": 10}\n', 40)
    assert "other content (11 bytes; it had 10)" in compare(tmp_path, reported, longer).warning


def test_a_row_without_checksum_is_the_same_file_until_it_changes_then_said_once(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"id": 1}\n')
    [read] = list_files(tmp_path, (".jsonl",))
    earlier = LedgerEntry("101", FileState(read))  # written before checksums were kept
    assert earlier.lists(read)
    touched = rewrite(path, b'{"id": 1}\n', 10)
    change = compare(tmp_path, earlier, touched)
    assert change.replaced and "was modified since, and whether its bytes changed is not known" in change.warning
    assert change.now.checksum == checksum(tmp_path, touched)  # kept with the warning: a later touch is silent
    path.unlink()  # gone between its listing and its comparison: nothing to say yet
    assert compare(tmp_path, earlier, replace(touched, modified_ms=touched.modified_ms + 1)) is None
