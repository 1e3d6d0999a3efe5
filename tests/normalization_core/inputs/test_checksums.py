"""What a producer file holds (SPEC §2.4): a local file's SHA-256, an object's ETag, and the same bytes recognized
whatever parts an upload cut them into (moto's S3 server computes ETags as S3 does)."""
from __future__ import annotations

import hashlib
import io
import os

from boto3.s3.transfer import TransferConfig

from normalization_core.inputs.checksums import MIB, checksum, part_sizes, same_bytes
from normalization_core.inputs.listing import list_files
from normalization_core.io.storage import ObjectStore, StorePath


def test_a_local_file_is_its_sha256_and_a_touch_keeps_it(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"id": 1}\n')
    expected = "sha256:" + hashlib.sha256(b'{"id": 1}\n').hexdigest()
    [before] = list_files(tmp_path, (".jsonl",))
    os.utime(path, (path.stat().st_mtime + 10,) * 2)
    [after] = list_files(tmp_path, (".jsonl",))
    assert before != after
    assert checksum(tmp_path, before) == checksum(tmp_path, after) == expected
    path.write_bytes(b'{"id": 2}\n')  # same size, other bytes
    os.utime(path, (path.stat().st_mtime + 20,) * 2)
    [other] = list_files(tmp_path, (".jsonl",))
    assert not same_bytes(checksum(tmp_path, before), checksum(tmp_path, other), tmp_path, other)
    assert not same_bytes(None, checksum(tmp_path, other), tmp_path, other)  # nothing recorded: not known


def test_part_sizes_that_cut_an_object_into_its_parts():
    assert part_sizes(12 * MIB, 3) == [5 * MIB, 6_000_000]  # at least 5 MiB; 6 MB parts make 3 too
    assert 8 * MIB in part_sizes(20 * MIB, 3) and all(-(-20 * MIB // p) == 3 for p in part_sizes(20 * MIB, 3))
    assert part_sizes(7, 1) == [7] and part_sizes(6 * MIB, 3) == []  # 3 parts of 5 MiB hold more


def test_an_object_uploaded_again_in_other_parts_holds_the_same_bytes(s3_bucket):
    data = os.urandom(11 * MIB)
    root = StorePath(s3_bucket.uri("landing"), ObjectStore(endpoint=s3_bucket.endpoint))

    def upload(body: bytes, part_size: int | None) -> str | None:
        if part_size is None:
            s3_bucket.client.put_object(Bucket=s3_bucket.name, Key="landing/a.jsonl", Body=body)
        else:
            s3_bucket.client.upload_fileobj(io.BytesIO(body), s3_bucket.name, "landing/a.jsonl", Config=TransferConfig(
                multipart_threshold=part_size, multipart_chunksize=part_size))
        [entry] = list_files(root, (".jsonl",))
        checksum.cache_clear()  # (S3 times are whole seconds: these uploads may share size and time)
        return checksum(root, entry), entry

    single, _ = upload(data, None)
    five, entry = upload(data, 5 * MIB)
    assert single == "etag:" + hashlib.md5(data).hexdigest() and five.endswith("-3") and five != single
    assert same_bytes(single, five, root, entry)  # the recorded MD5, computed from the object's bytes
    six, entry = upload(data, 6 * MIB)
    assert six.endswith("-2") and six != five
    assert same_bytes(five, six, root, entry)  # the 5 MiB parts' ETag, computed from the bytes
    other, entry = upload(data[:-1] + bytes([data[-1] ^ 1]), None)  # one bit flipped
    assert not same_bytes(five, other, root, entry) and not same_bytes(six, other, root, entry)
