"""The environment's AWS credentials (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`): never
configuration. A session hands them to Hadoop's S3A connector; the object-store clients of `io.storage` use them
as they are."""
from __future__ import annotations

import os

_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "fs.s3a.access.key", "AWS_SECRET_ACCESS_KEY": "fs.s3a.secret.key",
                "AWS_SESSION_TOKEN": "fs.s3a.session.token"}


def env_credentials() -> dict[str, str]:
    return {name: os.environ[name] for name in _CREDENTIALS if os.environ.get(name)}


def hadoop_credentials() -> dict[str, str]:
    """The environment's AWS credentials as S3A settings (so executors on other hosts get them too)."""
    creds = env_credentials()
    if "AWS_ACCESS_KEY_ID" not in creds or "AWS_SECRET_ACCESS_KEY" not in creds:
        return {}
    return {_CREDENTIALS[name]: value for name, value in creds.items()}
