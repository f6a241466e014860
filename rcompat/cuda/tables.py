"""The CUDA compatibility tables (rcompat/data/*.csv) and lookups over them.

Each lookup answers one question a layer of the stack asks ("which driver does CUDA 12.4 need?",
"which LibTorch does R torch 0.14.2 use?"). Versions in the tables are prefixes at the granularity the
vendors publish (torch "2.4" covers 2.4.1; cuDNN "9.1.0" covers 9.1.0.70); `prefix_match` is that rule.
A `tables_dir` (for `rcompat matrix validate --tables DIR` and for tests) replaces the packaged files
that it contains.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rcompat.data import DATA_DIR, load_csv
from rcompat.errors import DataError
from rcompat.versions import Version

# file name -> required columns
TABLE_FILES: dict[str, tuple[str, ...]] = {
    "cuda_driver.csv": ("cuda", "min_driver", "kind", "source"),
    "cuda_cublas.csv": ("cuda", "cublas", "source"),
    "cuda_cudnn.csv": ("cudnn", "cuda_min", "cuda_max", "source"),
    "torch_builds.csv": ("torch", "cuda", "source"),
    "rtorch_libtorch.csv": ("rtorch", "libtorch", "cuda_builds", "source"),
    "tensorflow_cuda.csv": ("tensorflow", "cuda", "cudnn", "source"),
}


def version(text: "str | Version | None") -> Version | None:
    """Parse leniently: a table cell or a user's flag that is not a version yields None."""
    if text is None or str(text).strip() == "":
        return None
    try:
        return Version.parse(str(text).strip())
    except ValueError:
        return None


def prefix_match(prefix: str, candidate: "str | Version") -> bool:
    """'2.4' matches 2.4.1 and 2.4.1+cu121; '9.1.0' matches 9.1.0.70; '12' matches 12.6."""
    p, c = version(prefix), version(candidate)
    if p is None or c is None:
        return False
    return c.release[: len(p.release)] == p.release or (
        len(c.release) < len(p.release) and c.release + (0,) * (len(p.release) - len(c.release)) == p.release)


def major_minor(text: "str | Version | None") -> str | None:
    v = version(text)
    return None if v is None else f"{v.major}.{v.minor}"


def cuda_from_build_tag(tag: str) -> str | None:
    """cu121 -> 12.1, cu118 -> 11.8, cu102 -> 10.2, cu92 -> 9.2; anything else -> None."""
    tag = tag.strip().lower()
    if not tag.startswith("cu") or not tag[2:].isascii() or not tag[2:].isdigit() or len(tag) < 4:
        return None
    digits = tag[2:]
    return f"{int(digits[:-1])}.{digits[-1]}"


def build_tag(cuda: str) -> str:
    v = version(cuda)
    return f"cu{v.major}{v.minor}" if v else f"cu{cuda}"


@dataclass
class Tables:
    """All CUDA tables, loaded from the packaged data or a directory that overrides some of them."""

    driver: list[dict[str, str]]
    cublas: list[dict[str, str]]
    cudnn: list[dict[str, str]]
    torch: list[dict[str, str]]
    rtorch: list[dict[str, str]]
    tensorflow: list[dict[str, str]]
    files: dict[str, str] = field(default_factory=dict)

    # -- CUDA toolkit -> driver --------------------------------------------------------------
    def driver_rows(self, cuda: str) -> tuple[dict | None, dict | None]:
        """(toolkit row, family row) for a CUDA version; the most specific toolkit row wins."""
        v = version(cuda)
        if v is None:
            return None, None
        toolkit = [r for r in self.driver if r["kind"] == "toolkit" and prefix_match(r["cuda"], v)
                   and version(r["cuda"]).major == v.major]
        toolkit.sort(key=lambda r: len(version(r["cuda"]).release), reverse=True)
        family = [r for r in self.driver if r["kind"] == "family" and version(r["cuda"]).major == v.major]
        return (toolkit[0] if toolkit else None), (family[0] if family else None)

    def min_driver(self, cuda: str) -> str | None:
        """The driver a CUDA version names first: its toolkit row's minimum, else its family's."""
        toolkit, family = self.driver_rows(cuda)
        return (toolkit or family or {}).get("min_driver")

    # -- cuBLAS / cuDNN ----------------------------------------------------------------------
    def cublas_row(self, cuda: str) -> dict | None:
        rows = [r for r in self.cublas if major_minor(r["cuda"]) == major_minor(cuda)]
        return rows[0] if rows else None

    def cudnn_rows(self, cudnn: str) -> list[dict]:
        """Rows for a cuDNN version; a table prefix ('9.1.0') or a short query ('8.9') both match."""
        return [r for r in self.cudnn if prefix_match(r["cudnn"], cudnn) or prefix_match(cudnn, r["cudnn"])]

    # -- frameworks --------------------------------------------------------------------------
    def torch_rows(self, torch: str) -> list[dict]:
        """Rows of the most specific torch prefix that matches (a '2.4.1' row beats '2.4')."""
        return _most_specific(self.torch, "torch", torch)

    def tensorflow_rows(self, tensorflow: str) -> list[dict]:
        return _most_specific(self.tensorflow, "tensorflow", tensorflow)

    def rtorch_row(self, rtorch: str) -> dict | None:
        """The row of the same major.minor with the greatest version not above `rtorch`.

        R torch development versions (0.16.0.9000) map to their release row: LibTorch changes only
        between minor releases.
        """
        v = version(rtorch)
        if v is None:
            return None
        same_minor = [r for r in self.rtorch if major_minor(r["rtorch"]) == f"{v.major}.{v.minor}"
                      and version(r["rtorch"]) <= v.truncate(3)]
        return max(same_minor, key=lambda r: version(r["rtorch"]), default=None)


def _most_specific(rows: list[dict], column: str, query: str) -> list[dict]:
    hits = [r for r in rows if prefix_match(r[column], query)]
    if not hits:
        return []
    depth = max(len(version(r[column]).release) for r in hits)
    return [r for r in hits if len(version(r[column]).release) == depth]


def load_tables(tables_dir: "str | Path | None" = None) -> Tables:
    """Load every table; files present in `tables_dir` replace the packaged ones."""
    if tables_dir is not None:
        from rcompat.inputs import require_dir

        tables_dir = require_dir(tables_dir, "tables directory")
        return _load(str(tables_dir.resolve()))
    return _load_packaged()


@functools.lru_cache(maxsize=1)
def _load_packaged() -> Tables:
    return _load(None)


def _load(directory: str | None) -> Tables:
    loaded: dict[str, list[dict[str, str]]] = {}
    files: dict[str, str] = {}
    for name, required in TABLE_FILES.items():
        path = DATA_DIR / name
        if directory is not None and (Path(directory) / name).is_file():
            path = Path(directory) / name
        rows = load_csv(path, required=("source",))
        lines = _data_line_numbers(path)
        missing = [c for c in required if rows and c not in rows[0]]
        if missing:
            raise DataError(f"{path}: missing column(s) {', '.join(missing)}")
        for i, row in enumerate(rows, 2):
            row["_file"], row["_line"] = name, str(lines[i - 2] if i - 2 < len(lines) else i)
            for col in required:
                if col in ("cuda", "min_driver", "cudnn", "torch", "rtorch", "tensorflow", "libtorch",
                           "cuda_min", "cuda_max") and row.get(col) and version(row[col]) is None:
                    raise DataError(f"{path}: row {i}: {col} {row[col]!r} is not a version")
        loaded[name] = rows
        files[name] = str(path)
    return Tables(driver=loaded["cuda_driver.csv"], cublas=loaded["cuda_cublas.csv"],
                  cudnn=loaded["cuda_cudnn.csv"], torch=loaded["torch_builds.csv"],
                  rtorch=loaded["rtorch_libtorch.csv"], tensorflow=loaded["tensorflow_cuda.csv"], files=files)


def _data_line_numbers(path: Path) -> list[int]:
    """Physical line numbers of the data rows (load_csv drops comments, so its indices are not lines)."""
    numbers = [n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
               if line.strip() and not line.lstrip().startswith("#")]
    return numbers[1:]  # after the header


def row_ref(row: dict[str, Any]) -> str:
    """Where a row lives, for messages: 'torch_builds.csv:12'."""
    return f"{row.get('_file', '?')}:{row.get('_line', '?')}"


def public_row(row: dict[str, Any]) -> dict[str, Any]:
    """A row as evidence: its cells plus where it lives, without the bookkeeping keys."""
    out = {k: v for k, v in row.items() if not k.startswith("_") and v != ""}
    out["row"] = row_ref(row)
    return out


# -- R torch <-> LibTorch (read by the co-loading predictor) ------------------------------------

def rtorch_to_libtorch(rtorch_version: str, tables_dir: "str | Path | None" = None) -> str | None:
    """The LibTorch version R torch `rtorch_version` is built against, or None when not recorded."""
    row = load_tables(tables_dir).rtorch_row(rtorch_version)
    return row["libtorch"] if row and row.get("libtorch") else None


def libtorch_to_rtorch(libtorch_version: str, tables_dir: "str | Path | None" = None) -> list[str]:
    """R torch releases built against `libtorch_version` (a local tag like +cu121 is ignored)."""
    wanted = version(str(libtorch_version).split("+")[0])
    if wanted is None:
        return []
    out = []
    for row in load_tables(tables_dir).rtorch:
        candidates = [row.get("libtorch", "")] + row.get("libtorch_other", "").split()
        if any(version(c) == wanted for c in candidates if version(c) is not None):
            out.append(row["rtorch"])
    return out


def rtorch_cuda_builds(row: dict[str, str]) -> list[str]:
    return row.get("cuda_builds", "").split()
