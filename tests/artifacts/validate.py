"""The real tools, offline: Kubernetes manifests through kubernetes-validate (built-in kinds) or
the vendored CRD's openAPIV3Schema (JobSet, LeaderWorkerSet), strictly (an unknown field is an
error, as ``kubectl apply --validate=strict`` makes it); sbatch scripts through shellcheck."""

from __future__ import annotations

import functools
import gzip
import hashlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

K8S_VERSION = "1.37.0"
HERE = Path(__file__).parent
CRDS = {
    ("jobset.x-k8s.io", "JobSet"): (
        "crds/jobset.x-k8s.io_jobsets.yaml.gz",
        "d022b87624512cf0b6741b31b24a2bea9945b5a838b50713af29332c878bb6fe",
    ),
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): (
        "crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml.gz",
        "c5dcad8ed943e495490241f00b9a1b45d51203b6d484020db3636d5bf553568e",
    ),
}


@functools.cache
def _crd_schema(group: str, kind: str, version: str) -> dict[str, Any]:
    path, sha = CRDS[(group, kind)]
    raw = gzip.decompress((HERE / path).read_bytes())
    assert hashlib.sha256(raw).hexdigest() == sha, f"{path} is not the vendored release"
    crd = yaml.safe_load(raw)
    for v in crd["spec"]["versions"]:
        if v["name"] == version and v.get("served"):
            return dict(v["schema"]["openAPIV3Schema"])
    raise AssertionError(f"{kind} {group}/{version} is not served by the vendored CRD")


def _unknown_fields(doc: Any, schema: dict[str, Any], path: str) -> list[str]:
    """Fields the API server would prune (the CRD's structural schema does not name them)."""
    if isinstance(doc, dict) and "properties" in schema:
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            return []
        out: list[str] = []
        for k, v in doc.items():
            sub = schema["properties"].get(k)
            if sub is None:
                if path == "" and k in ("apiVersion", "kind", "metadata"):
                    continue
                out.append(f"{path}.{k}")
            else:
                out += _unknown_fields(v, sub, f"{path}.{k}")
        return out
    if isinstance(doc, list) and isinstance(schema.get("items"), dict):
        return [e for i, x in enumerate(doc) for e in _unknown_fields(x, schema["items"], f"{path}[{i}]")]
    return []


def kubernetes(text: str) -> list[dict[str, Any]]:
    """Every document of a multi-document manifest, validated; returns them parsed."""
    docs = [d for d in yaml.safe_load_all(text) if d is not None]
    assert docs, "no manifest"
    for d in docs:
        group, _, version = d["apiVersion"].rpartition("/")
        if (group, d["kind"]) in CRDS:
            schema = _crd_schema(group, d["kind"], version)
            jsonschema.validate(d, schema)
            unknown = _unknown_fields(d, schema, "")
            assert not unknown, f"{d['kind']}: fields the CRD does not have: {unknown}"
        else:
            kubernetes_validate.validate(d, K8S_VERSION, strict=True)
    return docs


def shellcheck(text: str) -> None:
    """shellcheck at its default severity (style and up): any finding fails."""
    exe = Path(sys.executable).with_name("shellcheck")
    r = subprocess.run(
        [str(exe), "--shell=bash", "--external-sources", "-"], input=text, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stdout + r.stderr
