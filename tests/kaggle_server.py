"""A fake Kaggle API on 127.0.0.1 for tests: real HTTP, the JSON the official client expects.

It serves real competitions (local folders, prepared as agentk's harness prepares them: part of
train.csv held out as the answers): `competition` (titanic by default) and any in `more`, each by its
slug, under the official client's URL scheme `POST /api/v1/competitions.CompetitionApiService/<Method>`
(datasets, kernels and code submissions: kaggle_kernels.py),
plus the redirect targets that downloads and uploads go to, and the competitions list/search
(category, search text, page or page token). Submissions and daily limits are per slug. Public and private scores come from `agentk.grading` on two halves
of the held-out answers. Faults are scripted per method (`fail`), per slug (`forbidden`) and for the
archive GET (`truncate_downloads`, `stall_downloads_after`); `serve_archive` swaps in any archive.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import io
import json
import re
import threading
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import pandas as pd

from agentk.grading import grade_submission
from kaggle_kernels import FakeKernels, code_submission
from agentk.sources import load_competition

USERNAME, KEY = "agentk-test-user", "test-key-0123456789abcdef"
TOKEN = "KGAT_test_token_0123456789"
_API = re.compile(r"^/api/v1/(\w+\.\w+)/(\w+)$")
_STARTED = datetime(2026, 1, 1, 12, 0, 0)


def _utc(dt: datetime) -> str:
    return dt.isoformat(timespec="milliseconds") + "Z"


@dataclass
class Submission:
    ref: int
    file_name: str
    description: str
    date: datetime
    content: bytes
    polls_left: int
    public: float | None = None
    private: float | None = None
    error: str | None = None
    slug: str = "titanic"


@dataclass
class FakeCompetition:
    """The competition as the fake Kaggle serves it, built from a local competition folder."""

    slug: str
    title: str
    archive: bytes
    files: dict[str, int]
    pages: dict[str, str]
    answers: pd.DataFrame
    grading: Any
    leaderboard_csv: bytes
    category: str = "gettingStarted"  # the official client's spelling (playground, featured ...)
    kernels_only: bool = False  # a code competition: submissions are kernels (kaggle_kernels.py)

    @classmethod
    def from_folder(cls, folder: Path, work: Path, slug: str, category: str = "gettingStarted") -> FakeCompetition:
        comp = load_competition(folder)
        raw = work / "raw"
        comp.prepare(raw)
        files = {p.relative_to(raw / "data").as_posix(): p.stat().st_size
                 for p in sorted((raw / "data").rglob("*")) if p.is_file()}
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
            for name in files:
                zf.write(raw / "data" / name, name)
        pages = _pages((raw / "description.md").read_text())
        # 40 teams between 0.60 and 0.84: enough rows for every medal band.
        scores = [round(0.60 + 0.006 * i, 5) for i in range(40)][::-1]
        board = pd.DataFrame({
            "Rank": range(1, 41), "TeamId": range(1001, 1041), "TeamName": [f"team {i}" for i in range(1, 41)],
            "LastSubmissionDate": "2026-01-01 00:00:00", "Score": scores, "SubmissionCount": 3,
        })
        return cls(slug, comp.title, buffer.getvalue(), files, pages, comp.answers(), comp.grading,
                   board.to_csv(index=False).encode(), category)


def with_extra_file(comp: FakeCompetition, name: str, data: bytes) -> FakeCompetition:
    """`comp` with one more data file, stored uncompressed (to make archives of a chosen size)."""
    buffer = io.BytesIO(comp.archive)
    with zipfile.ZipFile(buffer, "a", zipfile.ZIP_STORED) as zf:
        zf.writestr(name, data)
    return dataclasses.replace(comp, archive=buffer.getvalue(), files={**comp.files, name: len(data)})


def _segment(category: str) -> str:
    """The HostSegment enum name the official client sends for a category (gettingStarted -> ..._GETTING_STARTED)."""
    return "HOST_SEGMENT_" + re.sub(r"(?<!^)(?=[A-Z])", "_", category).upper()


def _pages(description: str) -> dict[str, str]:
    """Kaggle-style pages from a description.md: HTML with the noise real pages carry."""
    sections = re.split(r"^## +", description, flags=re.MULTILINE)
    named = {s.split("\n", 1)[0].strip().lower(): s.split("\n", 1)[1] if "\n" in s else "" for s in sections[1:]}
    noise = '<p><img src="https://storage.googleapis.com/banner.png" alt="banner"> 🚢 <a href="https://www.kaggle.com/learn">Learn</a></p>'
    return {
        "description": noise + "<div>" + named.get("overview", description) + "</div>",
        "evaluation": "<div>" + named.get("evaluation", "") + "</div>",
        "data-description": "<div>" + named.get("data", "") + "</div>",
    }


@dataclass
class FakeKaggle:
    """State and scripted faults; the handler reads and mutates it under `lock`."""

    competition: FakeCompetition
    more: dict[str, FakeCompetition] = field(default_factory=dict)  # further competitions, by slug
    forbidden: set[str] = field(default_factory=set)  # slugs whose rules the user has not accepted
    fail: dict[str, list[int]] = field(default_factory=dict)  # method -> statuses to answer first
    truncate_downloads: int = 0  # archive GETs to cut short (after half the bytes)
    stall_downloads_after: int | None = None  # archive GETs send this many bytes, then nothing
    stopped: threading.Event = field(default_factory=threading.Event)  # ends stalls at shutdown
    delay: dict[str, float] = field(default_factory=dict)  # method or web path -> seconds before answering
    web_pages: dict[str, str] = field(default_factory=dict)  # web path -> HTML (the kaggle.com pages)
    user_agents: list[str] = field(default_factory=list)  # of the web page GETs
    daily_limit: int = 5
    daily_limits: dict[str, int] = field(default_factory=dict)  # slug -> its own limit (else daily_limit)
    page_tokens: bool = True  # list pages carry nextPageToken; False: the client must page by number
    polls_until_scored: int = 1
    calls: list[str] = field(default_factory=list)
    uploads: dict[str, bytes | None] = field(default_factory=dict)
    submissions: list[Submission] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    base_url: str = ""
    username: str = USERNAME
    kernels: FakeKernels = field(init=False)  # datasets, kernels and their runs (kaggle_kernels.py)

    def __post_init__(self) -> None:
        self.kernels = FakeKernels(self.lock)

    def add_file(self, name: str, data: bytes) -> None:
        self.competition = with_extra_file(self.competition, name, data)

    def serve_archive(self, archive: bytes, files: dict[str, int]) -> None:
        """Serve `archive` as the competition's data, listed as `files` (name -> size)."""
        self.competition = dataclasses.replace(self.competition, archive=archive, files=files)

    @property
    def competitions(self) -> dict[str, FakeCompetition]:
        """Every served competition by slug, `competition` first (the list's order)."""
        return {self.competition.slug: self.competition, **self.more}

    def add(self, comp: FakeCompetition) -> None:
        self.more[comp.slug] = comp

    def limit_of(self, slug: str) -> int:
        return self.daily_limits.get(slug, self.daily_limit)

    def submissions_to(self, slug: str) -> list[Submission]:
        return [s for s in self.submissions if s.slug == slug]

    # -------------------------------------------------------------- API methods

    def api(self, method: str, body: dict[str, Any]) -> tuple[int, Any]:
        if method == "ListCompetitions":  # the one call not about a single competition
            return self.list_competitions(body)
        slug = body.get("competitionName", "")
        if slug in self.forbidden:
            return 403, {"code": 403, "message": "You must accept this competition's rules before you'll be able to download files."}
        comp = self.competitions.get(slug)
        if comp is None:
            return 404, {"code": 404, "message": "Competition not found"}
        handler = getattr(self, f"do_{method}", None)
        if handler is None:
            return 404, {"code": 404, "message": f"no method {method}"}
        return handler(comp, body)

    def list_competitions(self, body: dict[str, Any]) -> tuple[int, Any]:
        """Kaggle's list: filtered by category (a HostSegment name) and search text, then one page."""
        segment = body.get("category", "HOST_SEGMENT_UNSPECIFIED")
        text = str(body.get("search") or "").lower()
        found = [c for c in self.competitions.values()
                 if segment in ("HOST_SEGMENT_UNSPECIFIED", _segment(c.category))
                 and (text in c.title.lower() or text in c.slug)]
        size = int(body.get("pageSize") or 20)
        page = int(body.get("pageToken") or body.get("page") or 1)
        chunk = found[(page - 1) * size: page * size]
        more = page * size < len(found)
        listed = [{"id": 3000 + i, "ref": f"https://www.kaggle.com/competitions/{c.slug}", "title": c.title,
                   "url": f"https://www.kaggle.com/competitions/{c.slug}", "category": c.category,
                   "deadline": "2030-01-01T23:59:00Z", "teamCount": 40, "userHasEntered": True}
                  for i, c in enumerate(chunk)]
        return 200, {"competitions": listed, "nextPageToken": str(page + 1) if more and self.page_tokens else ""}

    def do_GetCompetition(self, c: FakeCompetition, body: dict[str, Any]) -> tuple[int, Any]:
        return 200, {
            "id": 3136, "ref": c.slug, "title": c.title, "url": f"https://www.kaggle.com/competitions/{c.slug}",
            "deadline": "2030-01-01T23:59:00Z", "category": "Getting Started", "teamCount": 40,
            "maxDailySubmissions": self.limit_of(c.slug), "evaluationMetric": "Categorization Accuracy",
            "maxTeamSize": 5, "userHasEntered": True, "isKernelsSubmissionsOnly": c.kernels_only,
        }

    def do_ListCompetitionPages(self, c: FakeCompetition, body: dict[str, Any]) -> tuple[int, Any]:
        pages = [{"name": n, "content": t, "isPublished": True, "mimeType": "text/html"}
                 for n, t in c.pages.items()]
        return 200, {"pages": pages}

    def do_ListDataFiles(self, c: FakeCompetition, body: dict[str, Any]) -> tuple[int, Any]:
        files = [{"ref": n, "name": n, "totalBytes": s, "creationDate": _utc(_STARTED)}
                 for n, s in c.files.items()]
        return 200, {"files": files}

    def do_DownloadDataFiles(self, c: FakeCompetition, body: dict[str, Any]) -> tuple[int, Any]:
        return 302, f"{self.base_url}/files/{c.slug}.zip"

    def do_GetSubmissionLimits(self, c: FakeCompetition, body: dict[str, Any]) -> tuple[int, Any]:
        today = len(self.submissions_to(c.slug))
        return 200, {"numToday": today, "numTotal": today, "numAllowedNow": max(0, self.limit_of(c.slug) - today)}

    def do_StartSubmissionUpload(self, c: FakeCompetition, body: dict[str, Any]) -> tuple[int, Any]:
        token = hashlib.sha1(f"{body.get('fileName')}:{len(self.uploads)}".encode()).hexdigest()[:16]
        self.uploads[token] = None
        return 200, {"token": token, "createUrl": f"{self.base_url}/upload/{token}"}

    def do_CreateSubmission(self, c: FakeCompetition, body: dict[str, Any]) -> tuple[int, Any]:
        content = self.uploads.get(body.get("blobFileTokens", ""))
        if content is None:
            return 400, {"code": 400, "message": "Upload token is unknown or the upload did not finish"}
        return self._accept(c, None, body.get("submissionDescription", ""), content)

    def _accept(self, c: FakeCompetition, name: str | None, description: str, content: bytes) -> tuple[int, Any]:
        """A submission within the daily limit, pending until polled (a file's or a kernel's output)."""
        limit = self.limit_of(c.slug)
        if len(self.submissions_to(c.slug)) >= limit:
            return 400, {"code": 400, "message": f"Your team has used its daily Submission allowance ({limit}) today"}
        ref = 50_000 + len(self.submissions)  # unique over every competition, as Kaggle's refs are
        self.submissions.append(Submission(ref, name or f"submission-{ref}.csv", description,
                                           _STARTED + timedelta(minutes=len(self.submissions)), content,
                                           self.polls_until_scored, slug=c.slug))
        return 200, {"ref": ref, "message": "Successfully submitted to " + c.title}

    def do_CreateCodeSubmission(self, c: FakeCompetition, body: dict[str, Any]) -> tuple[int, Any]:
        status, content, error = code_submission(self, c, body)
        if content is None:
            return status, {"code": status, "message": error}
        return self._accept(c, body.get("fileName"), body.get("submissionDescription", ""), content)

    def do_ListSubmissions(self, c: FakeCompetition, body: dict[str, Any]) -> tuple[int, Any]:
        out = []
        for sub in reversed(self.submissions_to(c.slug)):
            if sub.polls_left > 0:
                sub.polls_left -= 1
            elif sub.public is None and sub.error is None:
                self._score(c, sub)
            status = "PENDING" if sub.public is None and sub.error is None else "ERROR" if sub.error else "COMPLETE"
            item = {"ref": sub.ref, "fileName": sub.file_name, "description": sub.description,
                    "date": _utc(sub.date), "status": status, "totalBytes": len(sub.content)}
            if status == "COMPLETE":
                item |= {"publicScore": f"{sub.public:.5f}", "privateScore": f"{sub.private:.5f}"}
            if sub.error:
                item["errorDescription"] = sub.error
            out.append(item)
        return 200, {"submissions": out}

    def do_DownloadLeaderboard(self, c: FakeCompetition, body: dict[str, Any]) -> tuple[int, Any]:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as zf:
            zf.writestr(f"{c.slug}-publicleaderboard.csv", c.leaderboard_csv)
        return 200, buffer.getvalue()

    def _score(self, comp: FakeCompetition, sub: Submission) -> None:
        """Public = first half of the held-out answers, private = the rest (Kaggle's split, simplified)."""
        facts = comp.grading
        answers = comp.answers
        try:
            frame = pd.read_csv(io.BytesIO(sub.content), dtype={facts.id_column: str})
        except Exception as exc:  # noqa: BLE001 - any unreadable upload is a scoring error, as on Kaggle
            sub.error = f"could not read the submission: {type(exc).__name__}"
            return
        half = len(answers) // 2
        scores = []
        for part in (answers.iloc[:half], answers.iloc[half:]):
            ids = set(part[facts.id_column].astype(str))
            rows = frame[frame[facts.id_column].astype(str).isin(ids)] if facts.id_column in frame else frame
            report = grade_submission(rows, part.reset_index(drop=True), facts, comp.slug)
            if not report.valid:
                sub.error = report.error
                return
            scores.append(report.score)
        sub.public, sub.private = scores


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def _authorised(self) -> bool:
        expected = "Basic " + base64.b64encode(f"{USERNAME}:{KEY}".encode()).decode()
        return self.headers.get("Authorization") in (expected, f"Bearer {TOKEN}")

    def _send(self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, payload: Any) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json")

    def do_POST(self) -> None:
        fake = self.server.fake
        match = _API.match(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if match is None:
            return self._json(404, {"code": 404, "message": "not found"})
        service, method = match.groups()
        with fake.lock:
            fake.calls.append(method)
        time.sleep(fake.delay.get(method, 0.0))  # outside the lock: a slow answer must not block others
        with fake.lock:
            if not self._authorised():
                return self._json(401, {"code": 401, "message": "Unauthenticated"})
            queued = fake.fail.get(method)
            if queued:
                status = queued.pop(0)
                return self._json(status, {"code": status, "message": f"scripted failure {status}"})
            if service == "competitions.CompetitionApiService":
                status, payload = fake.api(method, body)
            else:
                status, payload = fake.kernels.api(fake, service, method, body)
        if status == 302:
            return self._send(302, b"", "text/plain", {"Location": payload})
        if isinstance(payload, bytes):
            return self._send(status, payload, "application/zip")
        return self._json(status, payload)

    def do_GET(self) -> None:
        fake = self.server.fake
        if self.path.startswith("/competitions/"):
            return self._web_page()
        if self.path.startswith("/kernel-output/"):
            output = fake.kernels.output_file(self.path)
            if output is None:
                return self._json(404, {"code": 404, "message": "not found"})
            return self._send(200, output, "application/octet-stream")
        served = re.fullmatch(r"/files/([a-z0-9-]+)\.zip", self.path)
        comp = fake.competitions.get(served.group(1)) if served else None
        if comp is None:
            return self._json(404, {"code": 404, "message": "not found"})
        data = comp.archive
        headers = {"Accept-Ranges": "bytes", "ETag": '"v1"',
                   "Last-Modified": format_datetime(_STARTED, usegmt=False).replace("-0000", "GMT")}
        start = 0
        ranged = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range", ""))
        if ranged and self.headers.get("If-Range") in (None, '"v1"'):
            start = int(ranged.group(1))
        with fake.lock:
            fake.calls.append(f"GET {self.path} from {start}")
            truncate = fake.truncate_downloads > 0
            fake.truncate_downloads -= int(truncate)
            stall_after = fake.stall_downloads_after
        status = 206 if start else 200
        if start:
            headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
        body = data[start:]
        self.send_response(status)
        self.send_header("Content-Type", "application/zip")
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        if stall_after is not None:
            # A stalled stream: promise every byte, send a few, then keep the connection open and silent.
            self.wfile.write(body[:stall_after])
            self.wfile.flush()
            fake.stopped.wait(60)
            self.close_connection = True
            return
        # A cut connection: promise every byte, send half, hang up.
        self.wfile.write(body[: len(body) // 2] if truncate else body)
        self.wfile.flush()
        if truncate:
            self.close_connection = True

    def _web_page(self) -> None:
        """kaggle.com's HTML pages: no auth, as a browser sees them; unknown paths get Kaggle's 404 page."""
        fake = self.server.fake
        path = self.path.split("?", 1)[0]
        with fake.lock:
            fake.calls.append(f"GET {path}")
            fake.user_agents.append(self.headers.get("User-Agent", ""))
        time.sleep(fake.delay.get(path, 0.0))
        html = fake.web_pages.get(path)
        if html is None:
            return self._send(404, b"<html><body><h1>404</h1></body></html>", "text/html; charset=utf-8")
        self._send(200, html.encode(), "text/html; charset=utf-8")

    def do_PUT(self) -> None:
        fake = self.server.fake
        token = self.path.rsplit("/", 1)[-1]
        length = int(self.headers.get("Content-Length") or 0)
        content = self.rfile.read(length)
        with fake.lock:
            if not self.path.startswith("/upload/") or token not in fake.uploads:
                return self._json(404, {"code": 404, "message": "unknown upload"})
            fake.uploads[token] = content
        self._send(200, b"{}", "application/json")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeKaggle


def start(fake: FakeKaggle) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """Serve `fake` on 127.0.0.1 at a free port; stop with `server.shutdown(); server.server_close()`."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.fake = fake
    fake.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    return server, thread


# ------------------------------------------------------------------ pytest fixtures
# Test files load them with `pytest_plugins = ["kaggle_server"]`: fake_kaggle (titanic), fake_kaggle_many
# (titanic and playground-series-s3e5), kaggle_client (bound to fake_kaggle; with fake_kaggle_many, make
# a KaggleClient in the test).

TITANIC = Path(__file__).resolve().parents[2] / "shared" / "competitions" / "titanic"
PLAYGROUND = TITANIC.parent / "playground-series-s3e5"


@pytest.fixture(scope="session")
def titanic_fake(tmp_path_factory: pytest.TempPathFactory) -> FakeCompetition:
    return FakeCompetition.from_folder(TITANIC, tmp_path_factory.mktemp("titanic-fake"), "titanic")


@pytest.fixture(scope="session")
def playground_fake(tmp_path_factory: pytest.TempPathFactory) -> FakeCompetition:
    """A second, small competition in another category, for tests over several competitions."""
    return FakeCompetition.from_folder(PLAYGROUND, tmp_path_factory.mktemp("playground-fake"),
                                       PLAYGROUND.name, category="playground")


@contextlib.contextmanager
def serving(fake: FakeKaggle, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeKaggle]:
    """`fake` running, with the official client pointed at it and test credentials only."""
    from kagglesdk.kaggle_env import KaggleEnv, _env_to_endpoint

    server, thread = start(fake)
    fake.kernels.work = tmp_path / "kaggle-kernels"  # where pushed kernels run
    assert fake.base_url.startswith("http://127.0.0.1:")
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    for name in ("KAGGLE_API_TOKEN", "KAGGLE_IAP_TOKEN", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))  # never read the developer's own kaggle.json or tokens
    monkeypatch.setenv("KAGGLE_CONFIG_DIR", str(tmp_path / "kaggle-config"))
    monkeypatch.setenv("KAGGLE_USERNAME", USERNAME)
    monkeypatch.setenv("KAGGLE_KEY", KEY)
    monkeypatch.setenv("KAGGLE_API_ENVIRONMENT", "LOCALHOST")
    # Tests only: kagglesdk maps LOCALHOST to http://localhost (port 80); send it to our port instead.
    monkeypatch.setitem(_env_to_endpoint, KaggleEnv.LOCAL, fake.base_url)
    # The same for agentk processes a test starts (a campaign's runs): they read it from here.
    monkeypatch.setenv("AGENTK_KAGGLE_LOCAL_ENDPOINT", fake.base_url)
    try:
        yield fake
    finally:
        fake.stopped.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def fake_kaggle(titanic_fake: FakeCompetition, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """A running fake Kaggle with the official client pointed at it, and test credentials only."""
    with serving(FakeKaggle(titanic_fake), monkeypatch, tmp_path) as fake:
        yield fake


@pytest.fixture
def fake_kaggle_many(titanic_fake: FakeCompetition, playground_fake: FakeCompetition,
                     monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """The fake Kaggle serving two competitions at once: titanic (gettingStarted) and
    playground-series-s3e5 (playground), each with its own submissions and daily limit."""
    fake = FakeKaggle(titanic_fake, more={playground_fake.slug: playground_fake})
    with serving(fake, monkeypatch, tmp_path) as running:
        yield running


@pytest.fixture
def kaggle_client(fake_kaggle: FakeKaggle):
    from agentk.kaggle import KaggleClient, RetryPolicy

    return KaggleClient(retry=RetryPolicy(attempts=4, base_delay_s=0.01, max_delay_s=0.05))
