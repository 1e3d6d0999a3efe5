"""Generated wide records (issue 33): a stream of many columns nested deep, and GitHub-events-like records
(hundreds of keys, objects nested 4-5 deep, arrays of objects giving ~10 child tables, keys only in some
events), deterministic for a given count. Used by the wide tests and `bench/bench_wide.py`."""
from __future__ import annotations

from typing import Any

STAMP = "2023-11-14T22:{:02d}:{:02d}Z"


def deep_record(i: int, columns: int = 1000, depth: int = 8) -> dict[str, Any]:
    """`columns` scalar keys spread evenly over `depth` levels of nested objects (`n0.n1...`), by kind
    bigint / text / bool in turn."""
    record: dict[str, Any] = {"id": i}
    node = record
    for level in range(depth):
        for c in range(columns // depth + (1 if level < columns % depth else 0)):
            node[f"k{level}_{c}"] = (i * 7 + c, f"s{i}_{c}", (i + c) % 2 == 0)[c % 3]
        if level < depth - 1:
            node[f"n{level}"] = node = {}
    return record


def deep_paths(columns: int = 1000, depth: int = 8) -> list[str]:
    """The data columns `deep_record` gives under the `dlt` (and `native`) naming: `n0__k1_0`, ..."""
    names = ["id"]
    for level in range(depth):
        prefix = "".join(f"n{d}__" for d in range(level))
        names += [f"{prefix}k{level}_{c}" for c in range(columns // depth + (1 if level < columns % depth else 0))]
    return names


def _user(i: int, login: str) -> dict[str, Any]:
    base = f"https://api.github.com/users/{login}"
    return {"login": login, "id": 1000 + i, "node_id": f"MDQ6VXNlcj{i}", "avatar_url": f"https://a/{i}?v=4",
            "gravatar_id": "", "url": base, "html_url": f"https://github.com/{login}", "followers_url": base + "/f",
            "following_url": base + "/g{/other_user}", "gists_url": base + "/gists{/gist_id}",
            "starred_url": base + "/starred{/owner}{/repo}", "subscriptions_url": base + "/subscriptions",
            "organizations_url": base + "/orgs", "repos_url": base + "/repos", "events_url": base + "/events{/privacy}",
            "received_events_url": base + "/received_events", "type": "User", "site_admin": i % 11 == 0}


def _repo(i: int, name: str) -> dict[str, Any]:
    owner = _user(i, name.split("/")[0])
    url = f"https://api.github.com/repos/{name}"
    repo: dict[str, Any] = {
        "id": 50_000 + i, "node_id": f"MDEwOlJlcG9zaXRvcn{i}", "name": name.split("/")[1], "full_name": name,
        "private": False, "owner": owner, "html_url": f"https://github.com/{name}", "description": f"repo {i}",
        "fork": i % 4 == 0, "url": url, "created_at": STAMP.format(i % 60, 1), "updated_at": STAMP.format(i % 60, 2),
        "pushed_at": STAMP.format(i % 60, 3), "homepage": None if i % 3 else f"https://{i}.example",
        "size": 100 * i, "stargazers_count": i * 3, "watchers_count": i * 3, "language": ("Python", "Go", None)[i % 3],
        "has_issues": True, "has_projects": i % 2 == 0, "has_downloads": True, "has_wiki": i % 5 != 0,
        "has_pages": False, "forks_count": i, "mirror_url": None, "archived": False, "disabled": False,
        "open_issues_count": i % 7, "allow_forking": True, "is_template": False, "visibility": "public",
        "forks": i, "open_issues": i % 7, "watchers": i * 3, "default_branch": "main",
        "topics": [f"topic{(i + t) % 9}" for t in range(i % 4)],
    }
    repo.update({f"{kind}_url": f"{url}/{kind}" for kind in (
        "archive", "assignees", "blobs", "branches", "collaborators", "comments", "commits", "compare", "contents",
        "contributors", "deployments", "downloads", "events", "forks", "git_commits", "git_refs", "git_tags",
        "hooks", "issue_comment", "issue_events", "issues", "keys", "labels", "languages", "merges", "milestones",
        "notifications", "pulls", "releases", "stargazers", "statuses", "subscribers", "subscription", "tags",
        "teams", "trees")})
    if i % 3 != 1:
        repo["license"] = {"key": "mit", "name": "MIT License", "spdx_id": "MIT", "url": None if i % 2 else
                           "https://api.github.com/licenses/mit", "node_id": "MDc6TGljZW5zZTEz"}
    return repo


def _labels(i: int) -> list[dict[str, Any]]:
    return [{"id": 7000 + i * 10 + n, "node_id": f"LA_{i}_{n}", "url": f"https://l/{n}", "name": f"label {n}",
             "color": "ededed", "default": n == 0, "description": None if n % 2 else f"about {n}"} for n in range(i % 3)]


def _reactions(i: int) -> dict[str, Any]:
    return {"url": f"https://r/{i}", "total_count": i % 5, "+1": i % 3, "-1": 0, "laugh": 0, "hooray": i % 2,
            "confused": 0, "heart": i % 4, "rocket": 0, "eyes": 1}


def _pull_request(i: int, repo: str) -> dict[str, Any]:
    return {"url": f"https://api.github.com/repos/{repo}/pulls/{i}", "id": 900_000 + i, "node_id": f"PR_{i}",
            "number": i, "state": ("open", "closed")[i % 2], "locked": False, "title": f"Change {i}",
            "user": _user(i, f"dev{i % 13}"), "body": None if i % 4 == 0 else f"Body of {i}\nwith lines",
            "created_at": STAMP.format(i % 60, 4), "updated_at": STAMP.format(i % 60, 5),
            "closed_at": None if i % 2 == 0 else STAMP.format(i % 60, 6), "merged_at": None,
            "merge_commit_sha": f"{i:040x}", "assignee": None, "labels": _labels(i),
            "assignees": [_user(i + a, f"rev{a}") for a in range(i % 3)],
            "requested_reviewers": [_user(i + r, f"rev{r}") for r in range(i % 2 + 1)],
            "draft": i % 6 == 0, "head": {"label": f"dev:{i}", "ref": f"branch-{i}", "sha": f"{i + 1:040x}",
                                          "user": _user(i, f"dev{i % 13}"), "repo": _repo(i, f"dev{i % 13}/fork")},
            "base": {"label": "org:main", "ref": "main", "sha": f"{i + 2:040x}", "user": _user(0, "org"),
                     "repo": _repo(i + 1, repo)},
            "_links": {name: {"href": f"https://api.github.com/{name}/{i}"} for name in (
                "self", "html", "issue", "comments", "review_comments", "review_comment", "commits", "statuses")},
            "author_association": "CONTRIBUTOR", "auto_merge": None, "merged": False, "comments": i % 4,
            "commits": 1 + i % 3, "additions": i * 5, "deletions": i, "changed_files": 1 + i % 6}


def _issue(i: int, repo: str) -> dict[str, Any]:
    return {"url": f"https://api.github.com/repos/{repo}/issues/{i}", "id": 800_000 + i, "node_id": f"I_{i}",
            "number": i, "title": f"Issue {i}", "user": _user(i, f"reporter{i % 7}"), "labels": _labels(i + 1),
            "state": "open", "locked": False, "assignee": None,
            "assignees": [_user(i + a, f"owner{a}") for a in range(i % 2)], "milestone": None, "comments": i % 9,
            "created_at": STAMP.format(i % 60, 7), "updated_at": STAMP.format(i % 60, 8), "closed_at": None,
            "author_association": ("NONE", "MEMBER")[i % 2], "body": f"Steps {i}", "reactions": _reactions(i),
            "timeline_url": f"https://t/{i}", "state_reason": None if i % 3 else "reopened"}


def _payload(i: int, kind: str, repo: str) -> dict[str, Any]:
    if kind == "PushEvent":
        return {"push_id": 10_000_000 + i, "size": i % 4, "distinct_size": i % 4, "ref": "refs/heads/main",
                "head": f"{i:040x}", "before": f"{i + 5:040x}", "commits": [
                    {"sha": f"{i * 10 + c:040x}", "author": {"email": f"a{c}@example.com", "name": f"Author {c}"},
                     "message": f"commit {c} of {i}", "distinct": c % 2 == 0, "url": f"https://c/{i}/{c}"}
                    for c in range(i % 4)]}
    if kind == "PullRequestEvent":
        return {"action": ("opened", "closed")[i % 2], "number": i, "pull_request": _pull_request(i, repo)}
    if kind == "IssuesEvent":
        return {"action": "opened", "issue": _issue(i, repo)}
    if kind == "IssueCommentEvent":
        return {"action": "created", "issue": _issue(i, repo), "comment": {
            "url": f"https://c/{i}", "id": 700_000 + i, "node_id": f"IC_{i}", "user": _user(i, f"commenter{i % 5}"),
            "created_at": STAMP.format(i % 60, 9), "updated_at": STAMP.format(i % 60, 10), "body": f"+1 ({i})",
            "author_association": "NONE", "reactions": _reactions(i + 1), "performed_via_github_app": None}}
    if kind == "ReleaseEvent":
        return {"action": "published", "release": {
            "url": f"https://rel/{i}", "id": 600_000 + i, "tag_name": f"v1.{i}", "name": f"Release {i}",
            "draft": False, "prerelease": i % 2 == 0, "author": _user(i, "releaser"),
            "created_at": STAMP.format(i % 60, 11), "published_at": STAMP.format(i % 60, 12), "body": "notes",
            "assets": [{"url": f"https://as/{i}/{a}", "id": 500_000 + i * 10 + a, "name": f"pkg-{a}.tar.gz",
                        "label": None, "uploader": _user(i, "releaser"), "content_type": "application/gzip",
                        "state": "uploaded", "size": 1024 * (a + 1), "download_count": a} for a in range(1 + i % 2)]}}
    if kind == "GollumEvent":
        return {"pages": [{"page_name": f"Page{p}", "title": f"Page {p}", "summary": None, "action": "edited",
                           "sha": f"{i * 3 + p:040x}", "html_url": f"https://w/{i}/{p}"} for p in range(1 + i % 3)]}
    if kind == "ForkEvent":
        return {"forkee": _repo(i + 2, f"forker{i % 5}/fork")}
    return {"action": "started"}  # WatchEvent


KINDS = ("PushEvent", "PullRequestEvent", "IssuesEvent", "IssueCommentEvent", "WatchEvent", "ReleaseEvent",
         "GollumEvent", "ForkEvent", "PullRequestEvent", "PushEvent")


def github_event(i: int) -> dict[str, Any]:
    """One event like GitHub's public events API: its `payload` depends on its `type`, `org` only on some."""
    kind = KINDS[i % len(KINDS)]
    repo = f"org{i % 4}/project{i % 6}"
    event: dict[str, Any] = {
        "id": str(30_000_000_000 + i), "type": kind,
        "actor": {"id": 2000 + i % 17, "login": f"user{i % 17}", "display_login": f"user{i % 17}",
                  "gravatar_id": "", "url": f"https://api.github.com/users/user{i % 17}",
                  "avatar_url": f"https://avatars.githubusercontent.com/u/{2000 + i % 17}?"},
        "repo": {"id": 40_000 + i % 6, "name": repo, "url": f"https://api.github.com/repos/{repo}"},
        "payload": _payload(i, kind, repo), "public": True, "created_at": STAMP.format(i % 60, i % 60),
    }
    if i % 3 == 0:
        event["org"] = {"id": 3000 + i % 4, "login": f"org{i % 4}", "gravatar_id": "",
                        "url": f"https://api.github.com/orgs/org{i % 4}", "avatar_url": f"https://a/o{i % 4}?"}
    return event


def github_events(count: int = 100) -> list[dict[str, Any]]:
    return [github_event(i) for i in range(count)]
