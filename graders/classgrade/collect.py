"""Finding the submissions of a class in the layouts that exports give.

Accepted layouts of ``SUBMISSIONS`` (a folder, or a zip of one):

- **one entry per student**: a folder or a ``.zip`` per student; the entry's name is the
  student's name in the gradebook (a zip's name without ``.zip``);
- **Gradescope's export** ("Download Submissions"): ``submission_metadata.yml`` beside one
  ``submission_<id>/`` folder per submission; the metadata gives each submission's
  submitters (name, SID, email) and its time (``:created_at:``);
- **GitHub Classroom** (``gh classroom clone student-repos``): a folder
  ``<assignment>-submissions/`` of repositories named ``<assignment>-<username>``; the
  username becomes the student's name. Submission times come from the grades CSV that
  ``gh classroom assignment-grades`` downloads (``--submission-times``).

Inside an entry the submission is found as the grader's Gradescope entry point finds it:
the folder that holds ``tinytrain/`` (the entry itself, or the one folder a zip or a
repository download wraps it in), or the package uploaded on its own (an entry whose top
level has ``__init__.py``).
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import stat
import zipfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

PACKAGE = "tinytrain"
GRADESCOPE_METADATA = "submission_metadata.yml"
SKIPPED = {"__pycache__", ".git", ".hg", ".svn", ".ipynb_checkpoints", "__MACOSX"}

# a student's zip is refused beyond these (a zip bomb must cost only its own row)
MAX_ZIP_FILES = 5_000
MAX_ZIP_BYTES = 200 * 2**20


class SubmissionProblem(Exception):
    """A submission that cannot be graded at all (its row says why)."""


@dataclass
class Entry:
    """One student's submission as found in SUBMISSIONS."""

    name: str  # unique, safe as a folder name and in HTML
    source: Path  # the folder or zip it came from
    names: list[str] = field(default_factory=list)  # submitters (Gradescope) or username
    sids: list[str] = field(default_factory=list)
    emails: list[str] = field(default_factory=list)
    submitted_at: datetime | None = None
    root: Path | None = None  # the folder to grade, once prepared
    problem: str | None = None  # why it cannot be graded, once prepared
    content_hash: str = ""

    @property
    def display(self) -> str:
        return ", ".join(self.names) or self.name


def safe_name(raw: str) -> str:
    """A folder name from an entry name: letters, digits, ``._-@+``, nothing hidden."""
    name = re.sub(r"[^A-Za-z0-9._@+-]+", "_", raw).strip("._") or "submission"
    return name[:100]


def discover(submissions: Path, work: Path) -> tuple[list[Entry], list[str]]:
    """The entries of ``submissions`` (a folder or a zip, extracted under ``work``) and
    notes about what was skipped."""
    notes: list[str] = []
    if submissions.is_file():
        if not zipfile.is_zipfile(submissions):
            raise SubmissionProblem(f"{submissions} is neither a folder nor a zip file")
        target = work / "export"
        if target.exists():
            shutil.rmtree(target)
        safe_extract(submissions, target)
        submissions = target
    if not submissions.is_dir():
        raise SubmissionProblem(f"submissions folder {str(submissions)!r} does not exist")
    submissions = _unwrap(submissions, extracted=submissions.parent == work)
    metadata = submissions / GRADESCOPE_METADATA
    if metadata.is_file():
        entries = _gradescope_entries(submissions, metadata, notes)
    else:
        entries = _plain_entries(submissions, notes)
    _make_unique(entries)
    return entries, notes


def _unwrap(folder: Path, extracted: bool) -> Path:
    """The folder that holds the entries: where ``submission_metadata.yml`` is, down single
    wrapping folders (an export zip has one top folder); otherwise ``folder`` itself, or for
    an extracted zip, the folder inside its single top folder."""
    level, chain = folder, [folder]
    for _ in range(3):
        if (level / GRADESCOPE_METADATA).is_file():
            return level
        children = [c for c in level.iterdir() if c.name not in SKIPPED
                    and not c.name.startswith(".")]
        if len(children) != 1 or not children[0].is_dir() or _is_submission(children[0]):
            break
        level = children[0]
        chain.append(level)
    if (level / GRADESCOPE_METADATA).is_file():
        return level
    return chain[1] if extracted and len(chain) > 1 else folder


def _is_submission(folder: Path) -> bool:
    return (folder / PACKAGE).is_dir() or (folder / "__init__.py").is_file()


def _plain_entries(folder: Path, notes: list[str]) -> list[Entry]:
    entries = []
    children = sorted(c for c in folder.iterdir() if c.name not in SKIPPED
                      and not c.name.startswith("."))
    # gh classroom clone student-repos: <slug>-submissions/<slug>-<username>
    prefix = folder.name[: -len("-submissions")] + "-" if folder.name.endswith("-submissions") else ""
    for child in children:
        if child.is_dir():
            raw = child.name
        elif child.suffix.lower() == ".zip":
            raw = child.stem
        else:
            notes.append(f"skipped {child.name}: not a folder or a zip")
            continue
        username = raw[len(prefix):] if prefix and raw.startswith(prefix) and raw != prefix else ""
        entry = Entry(name=safe_name(username or raw), source=child)
        if username:
            entry.names = [username]
        entries.append(entry)
    return entries


def _gradescope_entries(folder: Path, metadata: Path, notes: list[str]) -> list[Entry]:
    import yaml  # the Gradescope export's metadata is YAML (Ruby symbols as keys)

    try:
        data = yaml.safe_load(metadata.read_text()) or {}
    except yaml.YAMLError as exc:
        raise SubmissionProblem(f"{metadata} is not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise SubmissionProblem(f"{metadata} does not map submission folders to metadata")
    entries = []
    for key in sorted(data, key=str):
        record = data[key] if isinstance(data[key], dict) else {}
        source = folder / str(key)
        if not source.exists() and (folder / f"{key}.zip").is_file():
            source = folder / f"{key}.zip"
        if not source.exists():
            notes.append(f"{key}: listed in {GRADESCOPE_METADATA} but not in the export")
            continue
        submitters = [s for s in _get(record, "submitters") or [] if isinstance(s, dict)]
        names = [str(_get(s, "name") or "") for s in submitters]
        entry = Entry(
            name=safe_name(str(key)),
            source=source,
            names=[n for n in names if n],
            sids=[str(_get(s, "sid")) for s in submitters if _get(s, "sid") is not None],
            emails=[str(_get(s, "email")) for s in submitters if _get(s, "email")],
            submitted_at=parse_time(_get(record, "created_at")),
        )
        entries.append(entry)
    listed = {e.source.name for e in entries}
    for child in sorted(folder.iterdir()):
        if child.name not in listed and child.name != GRADESCOPE_METADATA \
                and not child.name.startswith(".") and child.name not in SKIPPED:
            notes.append(f"skipped {child.name}: not listed in {GRADESCOPE_METADATA}")
    return entries


def _get(record: dict, key: str) -> object:
    """A Gradescope metadata field: written ``:key:`` (a Ruby symbol), or plain ``key``."""
    return record.get(f":{key}", record.get(key))


def parse_time(value: object) -> datetime | None:
    """A time from metadata or a CSV: a datetime YAML already parsed, or ISO 8601 text
    (``2024-03-01 23:59:12.5 -0800`` as Gradescope writes it too)."""
    from .late import parse_datetime

    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value
    return parse_datetime(str(value))


def _make_unique(entries: list[Entry]) -> None:
    seen: dict[str, int] = {}
    for entry in entries:
        base = entry.name
        count = seen.get(base, 0)
        seen[base] = count + 1
        if count:
            entry.name = f"{base}-{count + 1}"


def prepare(entry: Entry, work: Path) -> None:
    """Find the folder to grade (extracting a zip under ``work``) and hash its content;
    sets ``entry.problem`` instead of raising when the entry cannot be graded."""
    try:
        folder = entry.source
        if entry.source.is_file():
            folder = work / "unzipped" / entry.name
            if folder.exists():
                shutil.rmtree(folder)
            safe_extract(entry.source, folder)
        entry.root = find_root(folder)
        entry.content_hash = hash_tree(entry.root)
    except SubmissionProblem as exc:
        entry.problem = str(exc)
        entry.content_hash = hash_bytes(entry.source) if entry.source.is_file() else ""


def missing_package(root: Path | None) -> str | None:
    """Why ``root`` (a prepared entry's folder) holds no package to grade, or None: it has
    ``tinytrain/__init__.py`` or is the package itself (``__init__.py`` at its top)."""
    if root is None:
        return None
    if (root / PACKAGE / "__init__.py").is_file() or (root / "__init__.py").is_file():
        return None
    shown = sorted(p.relative_to(root).as_posix() + ("/" if p.is_dir() else "")
                   for p in root.rglob("*") if not any(s in SKIPPED for s in p.parts))
    listing = ", ".join(shown[:10]) + (f" and {len(shown) - 10} more" if len(shown) > 10 else "")
    return (f"no tinytrain package (a folder tinytrain/ holding __init__.py) in the "
            f"submission; it holds: {listing or 'nothing'}")


def find_root(folder: Path) -> Path:
    """The folder holding ``tinytrain/`` within ``folder`` (itself or up to two levels of
    wrapping folders), or ``folder`` itself (the grader then reports the missing package)."""
    if not (folder / PACKAGE).is_dir() and (folder / "__init__.py").is_file():
        return folder  # the package uploaded on its own
    level = [folder]
    for _ in range(3):
        found = [f for f in level if (f / PACKAGE).is_dir()]
        if len(found) > 1:
            names = ", ".join(str(f.relative_to(folder)) for f in found)
            raise SubmissionProblem(f"more than one tinytrain/ package in the submission ({names})")
        if found:
            return found[0]
        level = [c for f in level for c in sorted(f.iterdir())
                 if c.is_dir() and not c.is_symlink() and c.name not in SKIPPED]
    return folder


def iter_files(root: Path):
    """The regular files under ``root`` in a stable order, skipping caches and VCS data;
    symbolic links are never followed."""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED)
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if name.endswith(".pyc") or not stat.S_ISREG(path.lstat().st_mode):
                continue
            yield path


def hash_tree(root: Path) -> str:
    """A content hash of the files that grading reads (names and bytes)."""
    digest = hashlib.sha256()
    package = root / PACKAGE
    for path in iter_files(package if package.is_dir() else root):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def hash_bytes(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pack(root: Path) -> bytes:
    """The submission as zip bytes: what a grading job (local or on a cluster) unpacks.
    The package uploaded on its own (``__init__.py`` at the top) is packed as ``tinytrain/``."""
    buffer = io.BytesIO()
    wrap = not (root / PACKAGE).is_dir() and (root / "__init__.py").is_file()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for path in iter_files(root):
            rel = path.relative_to(root)
            archive.write(path, str(Path(PACKAGE) / rel) if wrap else str(rel))
    return buffer.getvalue()


def safe_extract(archive_path: Path | bytes, target: Path) -> None:
    """Extract a zip refusing absolute paths, ``..``, links and oversized content."""
    source = io.BytesIO(archive_path) if isinstance(archive_path, bytes) else archive_path
    try:
        archive = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError) as exc:
        raise SubmissionProblem(f"not a valid zip file ({exc})") from exc
    with archive:
        infos = archive.infolist()
        if len(infos) > MAX_ZIP_FILES:
            raise SubmissionProblem(f"zip has {len(infos)} entries (limit {MAX_ZIP_FILES})")
        total = sum(i.file_size for i in infos)
        if total > MAX_ZIP_BYTES:
            raise SubmissionProblem(f"zip unpacks to {total} bytes (limit {MAX_ZIP_BYTES})")
        target.mkdir(parents=True, exist_ok=True)
        resolved = target.resolve()
        written = 0
        for info in infos:
            name = info.filename.replace("\\", "/")
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise SubmissionProblem(f"zip entry {name!r} is a symbolic link")
            dest = (target / name).resolve()
            if name.startswith("/") or not dest.is_relative_to(resolved):
                raise SubmissionProblem(f"zip entry {name!r} points outside the submission")
            if info.is_dir():
                dest.mkdir(parents=True, exist_ok=True)
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            try:
                with archive.open(info) as src, open(dest, "wb") as out:
                    while chunk := src.read(1 << 20):
                        written += len(chunk)
                        if written > MAX_ZIP_BYTES:  # the sizes in the header can lie
                            raise SubmissionProblem(
                                f"zip unpacks to more than {MAX_ZIP_BYTES} bytes")
                        out.write(chunk)
            except (zipfile.BadZipFile, OSError, EOFError) as exc:
                raise SubmissionProblem(f"zip entry {name!r} cannot be read ({exc})") from exc
