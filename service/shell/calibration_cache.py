"""Full calibration fits kept on disk between CLI runs, one file per database.

A full fit takes seconds; a CLI call that made it again every time took ~6 s. The published
cross-GPU transfer model (fitted on the shipped tables) is kept beside it. The fit is a pure
function of the catalog and the measurements (their watermarks), the estimator's code and the
read settings, so a fit stored under those is reused as it is, and any change among them
(a new benchmark run, an edited spec, an upgrade) misses and refits. The key also holds when
the watermarks last moved (``epoch``): a database dropped and made again under the same URL
can reach the same watermark numbers with other data, never at the same instant.

The file is a pickle: it is only read when this user owns it and nobody else can write it, in
a directory only this user can enter. Why a file in the user's cache rather than a table: the
CLI's reads stay reads (no write on every call, nothing on a read-only replica), one place
serves SQLite and PostgreSQL alike, and a pickle is never loaded from where any writer of the
database could put one (it would run their code in every CLI user).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import stat
import tempfile
from dataclasses import replace
from pathlib import Path

from service import __version__
from service.core.estimation.calibration import CalibrationSet
from service.core.estimation.estimate import ESTIMATOR_VERSION
from service.core.estimation.transfer import TransferModel
from service.core.estimation.transfer_fit import adopt_published_model, published_model

CACHE_ENV = "GPU_ADVISOR_CACHE_DIR"


def cache_dir() -> Path:
    """``$GPU_ADVISOR_CACHE_DIR``, else ``$XDG_CACHE_HOME/gpu-advisor``, else ``~/.cache/gpu-advisor``."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpu-advisor"


class FileCalibrationStore:
    """:class:`service.usecases.read_model.CalibrationStore` in one file per database URL."""

    def __init__(
        self,
        database_url: str,
        *,
        min_points: int,
        window: int,
        epoch: str = "",
        directory: Path | None = None,
    ) -> None:
        ident = f"{database_url}\0{min_points}\0{window}".encode()
        self.path = (
            directory or cache_dir()
        ) / f"calibrations-{hashlib.sha256(ident).hexdigest()[:24]}.pickle"
        self.stamp = (__version__, ESTIMATOR_VERSION, epoch)  # with the watermarks: the key
        self.hits = 0
        self.saves = 0

    def _trusted(self) -> bool:
        try:
            st = self.path.stat()
            parent = self.path.parent.stat()
        except OSError:
            return False
        mine = st.st_uid == os.getuid() and parent.st_uid == os.getuid()
        private = not (st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)) and not (parent.st_mode & 0o077)
        return mine and private and stat.S_ISREG(st.st_mode)

    def load(self, catalog_watermark: int, measurement_watermark: int) -> CalibrationSet | None:
        if not self._trusted():
            return None
        try:
            with self.path.open("rb") as f:
                stored = pickle.load(f)
        except Exception:  # a truncated or older file is a miss, never an error
            return None
        if not isinstance(stored, dict) or stored.get("key") != (
            self.stamp,
            catalog_watermark,
            measurement_watermark,
        ):
            return None
        fits, published = stored.get("fits"), stored.get("published")
        if not isinstance(fits, CalibrationSet):
            return None
        if isinstance(published, TransferModel):
            adopt_published_model(published)
        self.hits += 1
        return fits

    def save(self, catalog_watermark: int, measurement_watermark: int, fits: CalibrationSet) -> None:
        """Written to a temporary file and renamed: a concurrent reader sees the old file or
        the new one. A directory that cannot be written is skipped (the next run refits)."""
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(self.path.parent, 0o700)
            doc = {
                "key": (self.stamp, catalog_watermark, measurement_watermark),
                "fits": replace(fits, _picked={}),
                "published": published_model(),  # fitted by fit_calibrations already: no cost
            }
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".calibrations-")
            with os.fdopen(fd, "wb") as f:
                pickle.dump(doc, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self.path)
            self.saves += 1
        except OSError:
            return
